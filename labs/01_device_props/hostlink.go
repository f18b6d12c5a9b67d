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
	hostSrc, hostDst map[bool][]byte // by pinned
	devSrc, devDst   *gpu.Buffer[uint8]
}

// poisonByte fills destinations before each checked run.
const poisonByte = 0xA5

func prepareHostLink(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	n := p.Int("bytes", 0)
	if n < 1 {
		return nil, fmt.Errorf("bytes = %d must be at least 1", n)
	}
	c := &hostLinkCase{env: env, bytes: int(n), hostSrc: map[bool][]byte{}, hostDst: map[bool][]byte{}}
	a := lab.NewPrep(env)
	a.Need(2 * n)
	src := a.PinnedHost("pinned source", c.bytes)
	for i := 0; i < len(src); i += 8 { // random bytes from the lab's seeded generator (none if src failed: Done says why)
		copy(src[i:], binary.LittleEndian.AppendUint64(nil, env.RNG.Uint64()))
	}
	c.hostSrc[true], c.hostSrc[false] = src, bytes.Clone(src)
	c.hostDst[true] = a.HostOutput("pinned destination", c.bytes, true, lab.PoisonBytes(poisonByte))
	c.hostDst[false] = a.HostOutput("pageable destination", c.bytes, false, lab.PoisonBytes(poisonByte))
	c.devSrc = lab.PrepUpload(a, "device source", src)
	c.devDst = lab.PrepOutput[uint8](a, "device destination", c.bytes, lab.PoisonBytes(poisonByte))
	return lab.Done[lab.Case](a, c)
}

// direction says whether the variant copies host to device (else device to host), and from or to
// pinned memory.
func (c *hostLinkCase) direction(v *lab.Variant) (h2d, pinned bool, err error) {
	if v.Library != LibMemcpyHtoD && v.Library != LibMemcpyDtoH {
		return false, false, fmt.Errorf("variant %s: %s knows the library calls %s and %s, not %q",
			v.Name, SuiteHostLink, LibMemcpyHtoD, LibMemcpyDtoH, v.Library)
	}
	return v.Library == LibMemcpyHtoD, v.Int("pinned", 1) != 0, nil
}

func (c *hostLinkCase) Run(v *lab.Variant) error {
	h2d, pinned, err := c.direction(v)
	if err != nil {
		return err
	}
	if h2d {
		return c.env.Device.CopyHtoD(c.devDst.DevicePtr(), unsafe.Pointer(&c.hostSrc[pinned][0]), int64(c.bytes), c.env.Stream)
	}
	return c.env.Device.CopyDtoH(unsafe.Pointer(&c.hostDst[pinned][0]), c.devSrc.DevicePtr(), int64(c.bytes), c.env.Stream)
}

func (c *hostLinkCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	h2d, pinned, err := c.direction(v)
	if err != nil {
		return check.Report{}, err
	}
	got := c.hostDst[pinned]
	if h2d {
		if got, err = lab.Raw(out, c.devDst); err != nil {
			return check.Report{}, err
		}
	}
	rep := check.Exact(got, c.hostSrc[true])
	rep.Method = "exact: random bytes after a round trip through the link"
	return rep, nil
}

func (c *hostLinkCase) Work() lab.Work { return lab.Work{Bytes: float64(c.bytes)} }
