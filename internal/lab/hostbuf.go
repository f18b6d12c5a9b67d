package lab

import (
	"bytes"
	"fmt"
	"unsafe"
)

// Host memory of a case (lab 01's host-link copies): like device buffers, the engine frees it with
// the case and refills a host output with its poison before every checked run.

// PinnedHost allocates n bytes of page-locked host memory for the current case (an input a copy
// reads; contents undefined).
func PinnedHost(env *Env, name string, n int) ([]byte, error) {
	return hostBuffer(env, name, n, true, nil)
}

// HostOutput allocates n bytes of host memory that a variant writes (a device-to-host copy):
// page-locked when pinned, ordinary Go memory otherwise. Only byte poisons apply (PoisonBytes).
func HostOutput(env *Env, name string, n int, pinned bool, p Poison) ([]byte, error) {
	if p.fill32 || p.src != nil {
		return nil, fmt.Errorf("%s: a host output takes a byte poison (PoisonBytes)", name)
	}
	return hostBuffer(env, name, n, pinned, &p)
}

func hostBuffer(env *Env, name string, n int, pinned bool, p *Poison) ([]byte, error) {
	if n < 1 {
		return nil, fmt.Errorf("%s: %d bytes of host memory (at least 1)", name, n)
	}
	cb := &caseBuf{name: name, free: func() error { return nil }}
	var b []byte
	if pinned {
		h, err := env.Device.MallocHost(int64(n))
		if err != nil {
			return nil, fmt.Errorf("allocating %s (pinned host memory): %w", name, err)
		}
		b, cb.free = unsafe.Slice((*byte)(h.Pointer()), n), h.Free
	} else {
		b = make([]byte, n)
	}
	if p != nil {
		cb.output = true
		cb.read = func() ([]byte, error) { return bytes.Clone(b), nil }
		cb.poison = func() error {
			// A copy still in flight from an earlier run must not land after the poison.
			if err := env.Stream.Synchronize(); err != nil {
				return err
			}
			b[0] = p.b
			for done := 1; done < len(b); done *= 2 {
				copy(b[done:], b[:done])
			}
			return nil
		}
	}
	a := env.arena()
	a.bufs = append(a.bufs, cb)
	return b, nil
}
