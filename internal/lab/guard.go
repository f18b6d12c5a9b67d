package lab

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// In grading, the driver sees the device through a guardDevice. It changes nothing a correct
// kernel can observe, and lets the worker see what a wrong or dishonest one did:
//
//   - Every allocation is surrounded by red zones of RedZone bytes filled with 0xFF (a NaN in
//     every floating-point format, -1 as an integer). A kernel that reads a little past the end (or
//     before the start) of an input computes with NaN, and its output shows it; a kernel that writes
//     there changes a red zone, which is checked after every run. (Beyond the red zone the
//     emulator's own guard pages fault; on a GPU, far accesses may go unnoticed.)
//   - It records which buffers the host writes while the case poisons its outputs (the outputs)
//     and while it runs (workspaces reset by the driver), and which buffers kernels receive as
//     pointers to writable memory. Every other buffer of the case is an input, and must hold the
//     same bytes after the run as before it.

// guardPhase is what the host is doing with the case.
type guardPhase int

const (
	phaseIdle   guardPhase = iota
	phasePoison            // Case.Poison: host writes mark outputs
	phaseRun               // Case.Run: host writes mark workspaces
)

type guardAlloc struct {
	user, base gpu.Ptr
	bytes      int64
	gen        int // the run that allocated it
	order      int // allocation order within its run
}

type guardDevice struct {
	gpu.Device
	pad int64

	mu       sync.Mutex
	allocs   map[gpu.Ptr]*guardAlloc // by the address handed out
	phase    guardPhase
	gen      int
	order    int
	poisoned map[*guardAlloc]bool // written by the host while poisoning: outputs
	hostRun  map[*guardAlloc]bool // written by the host while running
	writable map[*guardAlloc]bool // passed to a kernel as a pointer it may write through
	constArg map[*guardAlloc]int  // passed to the graded kernel as this const pointer parameter
}

func newGuardDevice(d gpu.Device, pad int64) *guardDevice {
	return &guardDevice{Device: d, pad: pad, allocs: map[gpu.Ptr]*guardAlloc{}}
}

// Unwrap gives backends the device under the guard (to enable peer access with it, say).
func (g *guardDevice) Unwrap() gpu.Device { return g.Device }

// begin starts a new run: allocations from now on belong to it.
func (g *guardDevice) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	g.order = 0
	g.phase = phaseIdle
	g.poisoned = map[*guardAlloc]bool{}
	g.hostRun = map[*guardAlloc]bool{}
	g.writable = map[*guardAlloc]bool{}
	g.constArg = map[*guardAlloc]int{}
}

func (g *guardDevice) setPhase(p guardPhase) {
	g.mu.Lock()
	g.phase = p
	g.mu.Unlock()
}

func (g *guardDevice) Malloc(bytes int64) (gpu.Ptr, error) {
	base, err := g.Device.Malloc(bytes + 2*g.pad)
	if err != nil {
		return 0, err
	}
	a := &guardAlloc{user: base + gpu.Ptr(g.pad), base: base, bytes: bytes}
	if err := g.fillZones(a); err != nil {
		g.Device.Free(base)
		return 0, fmt.Errorf("filling the red zones of a new buffer: %w", err)
	}
	g.mu.Lock()
	a.gen, a.order = g.gen, g.order
	g.order++
	g.allocs[a.user] = a
	if g.phase == phaseRun {
		g.hostRun[a] = true // a buffer the driver makes while running is its workspace
	}
	g.mu.Unlock()
	return a.user, nil
}

func (g *guardDevice) fillZones(a *guardAlloc) error {
	if g.pad == 0 {
		return nil
	}
	if err := g.Device.MemsetD8(a.base, 0xFF, g.pad, nil); err != nil {
		return err
	}
	if err := g.Device.MemsetD8(a.user+gpu.Ptr(a.bytes), 0xFF, g.pad, nil); err != nil {
		return err
	}
	return g.Device.Synchronize()
}

func (g *guardDevice) Free(p gpu.Ptr) error {
	g.mu.Lock()
	a, ok := g.allocs[p]
	delete(g.allocs, p)
	g.mu.Unlock()
	if !ok {
		return g.Device.Free(p)
	}
	return g.Device.Free(a.base)
}

// find returns the allocation that holds p (nil when none does).
func (g *guardDevice) find(p gpu.Ptr) *guardAlloc {
	for _, a := range g.allocs {
		if p >= a.user && p < a.user+gpu.Ptr(max(a.bytes, 1)) {
			return a
		}
	}
	return nil
}

func (g *guardDevice) noteWrite(dst gpu.Ptr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.find(dst)
	if a == nil {
		return
	}
	switch g.phase {
	case phasePoison:
		g.poisoned[a] = true
	case phaseRun:
		g.hostRun[a] = true
	}
}

func (g *guardDevice) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, bytes int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.CopyHtoD(dst, src, bytes, s)
}

func (g *guardDevice) CopyDtoD(dst, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.CopyDtoD(dst, src, bytes, s)
}

func (g *guardDevice) MemsetD8(dst gpu.Ptr, value uint8, count int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.MemsetD8(dst, value, count, s)
}

func (g *guardDevice) MemsetD32(dst gpu.Ptr, value uint32, count int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.MemsetD32(dst, value, count, s)
}

func unwrapDevice(d gpu.Device) gpu.Device {
	if g, ok := d.(*guardDevice); ok {
		return g.Device
	}
	return d
}

func (g *guardDevice) CopyPeer(dst gpu.Ptr, dstDev gpu.Device, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return g.Device.CopyPeer(dst, unwrapDevice(dstDev), src, bytes, s)
}

func (g *guardDevice) CanAccessPeer(peer gpu.Device) (bool, error) {
	return g.Device.CanAccessPeer(unwrapDevice(peer))
}

func (g *guardDevice) EnablePeerAccess(peer gpu.Device) error {
	return g.Device.EnablePeerAccess(unwrapDevice(peer))
}

// BLAS and EncodeTensorMap pass the backend's optional interfaces through.
func (g *guardDevice) BLAS() (gpu.BLAS, error) { return gpu.OpenBLAS(g.Device) }

func (g *guardDevice) EncodeTensorMap(d gpu.TensorMapDesc) (gpu.RawArg, error) {
	return gpu.EncodeTensorMap(g.Device, d)
}

// noteLaunch records the buffers a kernel receives. readOnly[i] says that parameter i points at
// data the kernel must not change (const T* in the course's own signature); nil means unknown.
func (g *guardDevice) noteLaunch(readOnly []bool, args [][]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, b := range args {
		if len(b) == 8 {
			a := g.find(gpu.Ptr(binary.LittleEndian.Uint64(b)))
			if a == nil {
				continue
			}
			if i < len(readOnly) && readOnly[i] {
				if _, seen := g.constArg[a]; !seen {
					g.constArg[a] = i
				}
			} else {
				g.writable[a] = true
			}
			continue
		}
		// A struct by value may hold pointers: whatever it points into may be written.
		for off := 0; off+8 <= len(b); off += 8 {
			if a := g.find(gpu.Ptr(binary.LittleEndian.Uint64(b[off:]))); a != nil {
				g.writable[a] = true
			}
		}
	}
}

// caseAllocs lists the current run's live allocations in allocation order.
func (g *guardDevice) caseAllocs() []*guardAlloc {
	g.mu.Lock()
	defer g.mu.Unlock()
	var as []*guardAlloc
	for _, a := range g.allocs {
		if a.gen == g.gen {
			as = append(as, a)
		}
	}
	sort.Slice(as, func(i, j int) bool { return as[i].order < as[j].order })
	return as
}

func (g *guardDevice) read(p gpu.Ptr, n int64) ([]byte, error) {
	buf := make([]byte, n)
	if n == 0 {
		return buf, nil
	}
	if err := g.Device.CopyDtoH(unsafe.Pointer(&buf[0]), p, n, nil); err != nil {
		return nil, err
	}
	return buf, g.Device.Synchronize()
}

// snapshot reads every buffer of the current run.
func (g *guardDevice) snapshot() (map[*guardAlloc][]byte, error) {
	snap := map[*guardAlloc][]byte{}
	for _, a := range g.caseAllocs() {
		b, err := g.read(a.user, a.bytes)
		if err != nil {
			return nil, fmt.Errorf("reading a buffer of %d bytes: %w", a.bytes, err)
		}
		snap[a] = b
	}
	return snap, nil
}

// outputs lists the current run's buffers that the host poisoned (the outputs), in order.
func (g *guardDevice) outputs() []*guardAlloc {
	var out []*guardAlloc
	for _, a := range g.caseAllocs() {
		g.mu.Lock()
		p := g.poisoned[a]
		g.mu.Unlock()
		if p {
			out = append(out, a)
		}
	}
	return out
}

// describe names a buffer for a student: its size, its place among the case's buffers, and how
// the kernel got it.
func (g *guardDevice) describe(a *guardAlloc) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := fmt.Sprintf("buffer #%d of the problem (%s)", a.order+1, gpu.HumanBytes(a.bytes))
	switch {
	case g.poisoned[a]:
		s += ", an output"
	case g.hasConst(a):
		s += fmt.Sprintf(", the input passed as kernel argument %d", g.constArg[a])
	default:
		s += ", which the kernel is not given"
	}
	return s
}

func (g *guardDevice) hasConst(a *guardAlloc) bool { _, ok := g.constArg[a]; return ok }

// checkZones verifies the red zones of every live buffer and repairs them. It returns a
// description of the first violation ("" when none).
func (g *guardDevice) checkZones() (string, error) {
	if g.pad == 0 {
		return "", nil
	}
	g.mu.Lock()
	all := make([]*guardAlloc, 0, len(g.allocs))
	for _, a := range g.allocs {
		all = append(all, a)
	}
	g.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].user < all[j].user })
	var first string
	for _, a := range all {
		front, err := g.read(a.base, g.pad)
		if err != nil {
			return "", err
		}
		back, err := g.read(a.user+gpu.Ptr(a.bytes), g.pad)
		if err != nil {
			return "", err
		}
		lo, hi, n := -1, -1, 0
		for i, b := range front {
			if b != 0xFF {
				if lo < 0 {
					lo = i
				}
				n++
			}
		}
		bf, bl := -1, -1
		for i, b := range back {
			if b != 0xFF {
				if bf < 0 {
					bf = i
				}
				bl = i
				n++
			}
		}
		if n == 0 {
			continue
		}
		if first == "" {
			where := ""
			switch {
			case bf >= 0:
				where = fmt.Sprintf("past the end of %s: up to %d bytes past it", g.describe(a), bl+1)
			default:
				where = fmt.Sprintf("before the start of %s: from %d bytes before it", g.describe(a), int(g.pad)-lo)
			}
			_ = hi
			first = fmt.Sprintf("wrote %d bytes %s", n, where)
		}
		if err := g.fillZones(a); err != nil {
			return "", err
		}
	}
	return first, nil
}

// changedInputs compares the inputs of the current run with their snapshot taken before the run:
// every buffer of the case except the outputs, the buffers the host wrote while running, and those
// a kernel got as a pointer to writable memory.
func (g *guardDevice) changedInputs(before map[*guardAlloc][]byte) (string, error) {
	for _, a := range g.caseAllocs() {
		g.mu.Lock()
		skip := g.poisoned[a] || g.hostRun[a] || g.writable[a]
		g.mu.Unlock()
		old, ok := before[a]
		if skip || !ok {
			continue
		}
		now, err := g.read(a.user, a.bytes)
		if err != nil {
			return "", err
		}
		diff, at := 0, -1
		for i := range now {
			if now[i] != old[i] {
				if at < 0 {
					at = i
				}
				diff++
			}
		}
		if diff > 0 {
			return fmt.Sprintf("changed its input: %s — %d byte(s) differ after the run, the first at offset %d",
				g.describe(a), diff, at), nil
		}
	}
	return "", nil
}

// guardKernel records the buffers each launch receives.
type guardKernel struct {
	gpu.Kernel
	g        *guardDevice
	readOnly []bool
}

// Unwrap gives the kernel under the guard, for gpu.MaxActiveBlocksPerSM.
func (k *guardKernel) Unwrap() gpu.Kernel { return k.Kernel }

func (k *guardKernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	k.g.noteLaunch(k.readOnly, args)
	return k.Kernel.LaunchPacked(cfg, args)
}
