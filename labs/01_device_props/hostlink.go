package devprops

import (
	"bytes"
	"encoding/binary"
	"errors"
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
// Poison overwrites the destinations of both directions, so each check proves that the timed
// copy moved the data: h2d is checked by reading devDst back, d2h by comparing host dst.
type hostLinkCase struct {
	env              *lab.Env
	bytes            int64
	pinSrc, pinDst   gpu.HostMem
	pageSrc, pageDst []byte
	devSrc, devDst   *gpu.Buffer[uint8]
}

// poisonByte fills destinations before each run.
const poisonByte = 0xA5

func prepareHostLink(env *lab.Env, p lab.Problem) (lab.Case, error) {
	n := p.Int("bytes", 0)
	if n < 1 {
		return nil, fmt.Errorf("bytes = %d must be at least 1", n)
	}
	if err := checkFits(env, 2*n); err != nil {
		return nil, err
	}
	c := &hostLinkCase{env: env, bytes: n}
	var err error
	if c.pinSrc, err = env.Device.MallocHost(n); err != nil {
		return nil, fmt.Errorf("pinned host memory: %w", err)
	}
	if c.pinDst, err = env.Device.MallocHost(n); err != nil {
		c.Release()
		return nil, fmt.Errorf("pinned host memory: %w", err)
	}
	src := hostBytes(c.pinSrc)
	randomBytes(env, src)
	c.pageSrc = bytes.Clone(src)
	c.pageDst = make([]byte, n)
	if c.devSrc, err = gpu.Alloc[uint8](env.Device, int(n)); err != nil {
		c.Release()
		return nil, err
	}
	if c.devDst, err = gpu.Alloc[uint8](env.Device, int(n)); err != nil {
		c.Release()
		return nil, err
	}
	if err := env.Device.CopyHtoD(c.devSrc.DevicePtr(), c.pinSrc.Pointer(), n, env.Stream); err != nil {
		c.Release()
		return nil, err
	}
	if err := syncStream(env); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// randomBytes fills b from the lab's seeded generator, eight bytes at a time.
func randomBytes(env *lab.Env, b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], env.RNG.Uint64())
	}
	if i < len(b) {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], env.RNG.Uint64())
		copy(b[i:], tail[:])
	}
}

func (c *hostLinkCase) Poison() error {
	// The host writes below must not race a copy still in flight from an earlier run.
	if err := syncStream(c.env); err != nil {
		return err
	}
	if err := c.devDst.FillBytes(poisonByte, c.env.Stream); err != nil {
		return err
	}
	fillBytes(hostBytes(c.pinDst), poisonByte)
	fillBytes(c.pageDst, poisonByte)
	return syncStream(c.env)
}

// direction returns the variant's library call and whether it uses pinned memory.
func (c *hostLinkCase) direction(v *lab.Variant) (lib string, pinned bool, err error) {
	switch v.Library {
	case LibMemcpyHtoD, LibMemcpyDtoH:
		return v.Library, param(v, "pinned", 1) != 0, nil
	}
	return "", false, fmt.Errorf("variant %s: %s knows the library calls %s and %s, not %q",
		v.Name, SuiteHostLink, LibMemcpyHtoD, LibMemcpyDtoH, v.Library)
}

func (c *hostLinkCase) Run(v *lab.Variant) error {
	lib, pinned, err := c.direction(v)
	if err != nil {
		return err
	}
	d := c.env.Device
	if lib == LibMemcpyHtoD {
		src := c.pinSrc.Pointer()
		if !pinned {
			src = unsafe.Pointer(&c.pageSrc[0])
		}
		return d.CopyHtoD(c.devDst.DevicePtr(), src, c.bytes, c.env.Stream)
	}
	dst := c.pinDst.Pointer()
	if !pinned {
		dst = unsafe.Pointer(&c.pageDst[0])
	}
	return d.CopyDtoH(dst, c.devSrc.DevicePtr(), c.bytes, c.env.Stream)
}

func (c *hostLinkCase) Check(v *lab.Variant) (check.Report, error) {
	lib, pinned, err := c.direction(v)
	if err != nil {
		return check.Report{}, err
	}
	want := hostBytes(c.pinSrc)
	var got []byte
	switch {
	case lib == LibMemcpyHtoD:
		// Read the device copy back (into the pinned destination, which h2d does not use).
		if err := c.env.Device.CopyDtoH(c.pinDst.Pointer(), c.devDst.DevicePtr(), c.bytes, c.env.Stream); err != nil {
			return check.Report{}, err
		}
		if err := syncStream(c.env); err != nil {
			return check.Report{}, err
		}
		got = hostBytes(c.pinDst)
	case pinned:
		got = hostBytes(c.pinDst)
	default:
		got = c.pageDst
	}
	rep := check.Exact(got, want)
	rep.Method = "exact: random bytes after a round trip through the link"
	return rep, nil
}

func (c *hostLinkCase) Work() lab.Work { return lab.Work{Bytes: float64(c.bytes)} }

func (c *hostLinkCase) Release() error {
	var errs []error
	for _, h := range []gpu.HostMem{c.pinSrc, c.pinDst} {
		if h != nil {
			errs = append(errs, h.Free())
		}
	}
	errs = append(errs, c.devSrc.Free(), c.devDst.Free())
	c.pinSrc, c.pinDst, c.pageSrc, c.pageDst = nil, nil, nil, nil
	return errors.Join(errs...)
}
