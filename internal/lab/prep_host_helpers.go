package lab

// Host memory through a Prep (prep_helpers.go), as PrepAlloc and PrepOutput are for device
// buffers: a Prepare that also copies to or from the host lists every buffer the same way.

// PinnedHost is lab.PinnedHost through p.
func (p *Prep) PinnedHost(name string, n int) []byte {
	return keep(p, func() ([]byte, error) { return PinnedHost(p.Env, name, n) })
}

// HostOutput is lab.HostOutput through p.
func (p *Prep) HostOutput(name string, n int, pinned bool, poison Poison) []byte {
	return keep(p, func() ([]byte, error) { return HostOutput(p.Env, name, n, pinned, poison) })
}
