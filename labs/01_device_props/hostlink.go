package devprops

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// hostLinkCase is one problem of host_link: copies of `bytes` random bytes between host and
// device, from page-locked (pinned) or ordinary (pageable) host memory.
//
// The case holds both directions' buffers, because Prepare does not know the variant:
//
//	host src (pinned; a pageable twin)  --h2d-->  devDst
//	host dst (pinned; a pageable twin) <--d2h--   devSrc (a copy of host src, uploaded in Prepare)
//
// The destinations of both directions are outputs the engine poisons, so each check proves that
// the timed copy moved the data: h2d is checked by reading devDst back, d2h by comparing host dst.
type hostLinkCase struct {
	env              *lab.Env
	bytes            int
	pinSrc, pinDst   []byte
	pageSrc, pageDst []byte
	devSrc, devDst   *gpu.Buffer[uint8]
}

// poisonByte fills destinations before each checked run.
const poisonByte = 0xA5

func prepareHostLink(env *lab.Env, p lab.Problem) (lab.Case, error) {
	n := p.Int("bytes", 0)
	if n < 1 {
		return nil, fmt.Errorf("bytes = %d must be at least 1", n)
	}
	if err := lab.NeedMemory(env, 2*n); err != nil {
		return nil, err
	}
	c := &hostLinkCase{env: env, bytes: int(n)}
	var err error
	if c.pinSrc, err = lab.PinnedHost(env, "pinned source", c.bytes); err != nil {
		return nil, err
	}
	randomBytes(env, c.pinSrc)
	c.pageSrc = bytes.Clone(c.pinSrc)
	if c.pinDst, err = lab.HostOutput(env, "pinned destination", c.bytes, true, lab.PoisonBytes(poisonByte)); err != nil {
		return nil, err
	}
	if c.pageDst, err = lab.HostOutput(env, "pageable destination", c.bytes, false, lab.PoisonBytes(poisonByte)); err != nil {
		return nil, err
	}
	if c.devSrc, err = lab.Upload(env, "device source", c.pinSrc); err != nil {
		return nil, err
	}
	if c.devDst, err = lab.Output[uint8](env, "device destination", c.bytes, lab.PoisonBytes(poisonByte)); err != nil {
		return nil, err
	}
	return c, nil
}

// randomBytes fills b from the lab's seeded generator, eight bytes at a time.
func randomBytes(env *lab.Env, b []byte) {
	var word [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(word[:], env.RNG.Uint64())
		copy(b[i:], word[:])
	}
}

// direction returns the variant's library call and whether it uses pinned memory.
func (c *hostLinkCase) direction(v *lab.Variant) (lib string, pinned bool, err error) {
	switch v.Library {
	case LibMemcpyHtoD, LibMemcpyDtoH:
		return v.Library, v.Int("pinned", 1) != 0, nil
	}
	return "", false, fmt.Errorf("variant %s: %s knows the library calls %s and %s, not %q",
		v.Name, SuiteHostLink, LibMemcpyHtoD, LibMemcpyDtoH, v.Library)
}

func (c *hostLinkCase) Run(v *lab.Variant) error {
	lib, pinned, err := c.direction(v)
	if err != nil {
		return err
	}
	n := int64(c.bytes)
	if lib == LibMemcpyHtoD {
		src := c.pinSrc
		if !pinned {
			src = c.pageSrc
		}
		return c.env.Device.CopyHtoD(c.devDst.DevicePtr(), unsafe.Pointer(&src[0]), n, c.env.Stream)
	}
	dst := c.pinDst
	if !pinned {
		dst = c.pageDst
	}
	return c.env.Device.CopyDtoH(unsafe.Pointer(&dst[0]), c.devSrc.DevicePtr(), n, c.env.Stream)
}

func (c *hostLinkCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	lib, pinned, err := c.direction(v)
	if err != nil {
		return check.Report{}, err
	}
	got := c.pageDst
	switch {
	case lib == LibMemcpyHtoD:
		if got, err = lab.Raw(out, c.devDst); err != nil {
			return check.Report{}, err
		}
	case pinned:
		got = c.pinDst
	}
	rep := check.Exact(got, c.pinSrc)
	rep.Method = "exact: random bytes after a round trip through the link"
	return rep, nil
}

func (c *hostLinkCase) Work() lab.Work { return lab.Work{Bytes: float64(c.bytes)} }
