//go:build cgo

package emu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

var (
	theBackend     *backend
	theBackendOnce sync.Once
)

// Open returns the emulator backend (one per process: its devices share the process).
func Open() (gpu.Backend, error) {
	theBackendOnce.Do(func() { theBackend = &backend{inflight: map[uint64]string{}} })
	return theBackend, nil
}

type backend struct {
	allocMu sync.Mutex
	allocs  []*allocation // sorted by ptr, all devices
	next    uintptr       // where the next allocation's reservation starts (never reused)

	flightMu  sync.Mutex
	flightSeq uint64
	inflight  map[uint64]string // launches running now: kernel names
}

type allocation struct {
	ptr   gpu.Ptr
	bytes int64
	dev   *device
	site  string  // where the Go code allocated it
	base  uintptr // the start of its reservation (fences included)
	fd    int     // the memfd that holds it, for launchers to map
	// Shared between rank processes: the file that holds a buffer this process shares, or
	// foreign for a peer's buffer mapped here (its owner checks its guard zones).
	shmPath string
	foreign bool
}

// Device memory lives at addresses labrun picks, in a window far from where the kernel places
// mappings and the Go heap grows, so that a sandboxed launcher can map each buffer at the same
// address as this process. Addresses are never reused: a stale pointer to a freed buffer faults.
const memoryWindow = uintptr(0x2000_0000_0000) // 32 TiB

// reserve picks the address of a new allocation's reservation.
func (b *backend) reserve(bytes int64) uintptr {
	b.allocMu.Lock()
	defer b.allocMu.Unlock()
	if b.next == 0 {
		b.next = windowBase()
	}
	base := b.next
	b.next += uintptr(cReserve(bytes)) + uintptr(fenceSize())
	return base
}

func (b *backend) Name() string      { return "emu" }
func (b *backend) Toolchain() string { return "c++" }

func (b *backend) DeviceCount() (int, error) { return DeviceCount() }

func (b *backend) DeviceInfo(index int) (gpu.DeviceInfo, error) {
	n, err := DeviceCount()
	if err != nil {
		return gpu.DeviceInfo{}, err
	}
	if index < 0 || index >= n {
		return gpu.DeviceInfo{}, fmt.Errorf("emu: no device %d (there are %d emulated devices; set %s for more)", index, n, EnvDevices)
	}
	sms, err := SMs()
	if err != nil {
		return gpu.DeviceInfo{}, err
	}
	warp, err := WarpSize()
	if err != nil {
		return gpu.DeviceInfo{}, err
	}
	mem, err := DeviceMemory()
	if err != nil {
		return gpu.DeviceInfo{}, err
	}
	return gpu.DeviceInfo{
		Backend:            "emu",
		Index:              index,
		Name:               DeviceName,
		Emulated:           true,
		ComputeMajor:       8,
		ComputeMinor:       0,
		SMs:                sms,
		MemoryBytes:        mem,
		WarpSize:           warp,
		MaxThreadsPerBlock: maxThreadsPerBlock,
		MaxSharedPerBlock:  defaultDynShared,
		MaxSharedOptin:     maxDynShared,
		RuntimeVersion:     fmt.Sprintf("kl-emu ABI %d", abiVersion),
		UUID:               fmt.Sprintf("EMU-00000000-0000-0000-0000-%012d", index),
		PCIBusID:           fmt.Sprintf("emu:%d", index),
	}, nil
}

func (b *backend) Open(index int) (gpu.Device, error) {
	info, err := b.DeviceInfo(index)
	if err != nil {
		return nil, err
	}
	d := &device{b: b, info: info, streams: map[*stream]bool{}, peers: map[int]bool{}}
	d.def = newStream(d)
	return d, nil
}

// ---- allocations (backend-wide, for peer pointers, fault reports and guard checks) ----

func (b *backend) addAlloc(a *allocation) {
	b.allocMu.Lock()
	defer b.allocMu.Unlock()
	i := sort.Search(len(b.allocs), func(i int) bool { return b.allocs[i].ptr >= a.ptr })
	b.allocs = append(b.allocs, nil)
	copy(b.allocs[i+1:], b.allocs[i:])
	b.allocs[i] = a
}

func (b *backend) removeAlloc(p gpu.Ptr) *allocation {
	b.allocMu.Lock()
	defer b.allocMu.Unlock()
	i := sort.Search(len(b.allocs), func(i int) bool { return b.allocs[i].ptr >= p })
	if i < len(b.allocs) && b.allocs[i].ptr == p {
		a := b.allocs[i]
		b.allocs = append(b.allocs[:i], b.allocs[i+1:]...)
		return a
	}
	return nil
}

// release unmaps a removed allocation here and closes its memfd: a launcher that mapped it keeps
// its mapping until it next syncs (it needs the memfd only to map a buffer that is still live).
func (b *backend) release(a *allocation) {
	cUnmap(a.base, a.bytes)
	if a.shmPath != "" {
		os.Remove(a.shmPath) // mapped peers keep their mappings; the name goes
	}
	closeFD(a.fd)
}

// find returns the allocation that holds [p, p+n).
func (b *backend) find(p gpu.Ptr, n int64) *allocation {
	b.allocMu.Lock()
	defer b.allocMu.Unlock()
	i := sort.Search(len(b.allocs), func(i int) bool { return b.allocs[i].ptr > p }) - 1
	if i < 0 {
		return nil
	}
	a := b.allocs[i]
	if p >= a.ptr && uint64(p)+uint64(n) <= uint64(a.ptr)+uint64(a.bytes) {
		return a
	}
	return nil
}

// describeAddr says where an address is relative to the buffers, for fault reports.
func (b *backend) describeAddr(addr uint64) string {
	if addr < 4096 {
		return "a null pointer (or one a small offset from null)"
	}
	b.allocMu.Lock()
	defer b.allocMu.Unlock()
	fence := uint64(fenceSize())
	for _, a := range b.allocs {
		start, end := uint64(a.ptr), uint64(a.ptr)+uint64(a.bytes)
		lo := start - uint64(dataOffset(a.bytes)) - fence
		hi := start - uint64(dataOffset(a.bytes)) + uint64(innerSize(a.bytes)) + fence
		if addr >= lo && addr < start {
			return fmt.Sprintf("%d bytes before the start of a buffer of %d bytes on device %d allocated at %s",
				start-addr, a.bytes, a.dev.info.Index, a.site)
		}
		if addr >= end && addr < hi {
			return fmt.Sprintf("%d bytes past the end of a buffer of %d bytes on device %d allocated at %s (offset +%d)",
				addr-end+1, a.bytes, a.dev.info.Index, a.site, addr-start)
		}
		if addr >= start && addr < end {
			return fmt.Sprintf("inside a buffer of %d bytes on device %d allocated at %s (offset +%d): was it freed?",
				a.bytes, a.dev.info.Index, a.site, addr-start)
		}
	}
	return "not in or near any buffer: a wild pointer (check the index arithmetic, or a freed buffer)"
}

// checkGuards checks the guard zones of every buffer after a launch of kernel.
func (b *backend) checkGuards(kernel string, others []string) error {
	b.allocMu.Lock()
	allocs := append([]*allocation(nil), b.allocs...)
	b.allocMu.Unlock()
	var msgs []string
	for _, a := range allocs {
		if a.foreign {
			continue // its owner checks it
		}
		bad, lo, hi := cGuardCheck(a.ptr, a.bytes)
		if bad == 0 {
			continue
		}
		where := ""
		switch {
		case lo >= a.bytes:
			where = fmt.Sprintf("wrote past the end of a buffer of %d bytes allocated at %s (offset +%d, %d bytes past its end",
				a.bytes, a.site, lo, lo-a.bytes+1)
			if hi != lo {
				where += fmt.Sprintf("; the furthest at offset +%d", hi)
			}
			where += ")"
		case hi < 0:
			where = fmt.Sprintf("wrote before the start of a buffer of %d bytes allocated at %s (offset %d)", a.bytes, a.site, lo)
		default:
			where = fmt.Sprintf("wrote outside a buffer of %d bytes allocated at %s (offsets %d to +%d)", a.bytes, a.site, lo, hi)
		}
		msgs = append(msgs, where)
	}
	if len(msgs) == 0 {
		return nil
	}
	msg := fmt.Sprintf("kernel %s %s", kernel, msgs[0])
	if len(msgs) > 1 {
		msg += fmt.Sprintf(", and outside %d more buffer(s)", len(msgs)-1)
	}
	if len(others) > 0 {
		msg += fmt.Sprintf(" (or a kernel that ran at the same time: %s)", strings.Join(others, ", "))
	}
	return gpu.NewCallError("emu", "kernel "+kernel, stFault, "EMU_OUT_OF_BOUNDS_WRITE", msg, false)
}

func (b *backend) beginLaunch(name string) uint64 {
	b.flightMu.Lock()
	defer b.flightMu.Unlock()
	b.flightSeq++
	b.inflight[b.flightSeq] = name
	return b.flightSeq
}

// endLaunch returns the names of the other launches that ran at the same time.
func (b *backend) endLaunch(id uint64) []string {
	b.flightMu.Lock()
	defer b.flightMu.Unlock()
	delete(b.inflight, id)
	var others []string
	for _, n := range b.inflight {
		others = append(others, n)
	}
	sort.Strings(others)
	return others
}

// allocSite is the first caller outside the gpu packages: the lab code that allocated.
func allocSite() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		dir := filepath.ToSlash(filepath.Dir(f.File))
		inAPI := strings.HasSuffix(dir, "/internal/gpu") || strings.HasSuffix(dir, "/internal/gpu/emu") ||
			strings.HasSuffix(f.File, "/internal/lab/case.go") || // the engine allocates a case's buffers for the driver
			strings.HasSuffix(f.File, "/internal/grade/worker.go") // and the grader's guard under it
		if f.File != "" && (!inAPI || strings.HasSuffix(f.File, "_test.go")) {
			return fmt.Sprintf("%s:%d", filepath.Join(filepath.Base(filepath.Dir(f.File)), filepath.Base(f.File)), f.Line)
		}
		if !more {
			return "an unknown place"
		}
	}
}

// ---- devices ----

type device struct {
	b    *backend
	info gpu.DeviceInfo

	mu      sync.Mutex
	closed  bool
	used    int64
	streams map[*stream]bool
	def     *stream
	sticky  error
	peers   map[int]bool
}

func (d *device) Info() gpu.DeviceInfo { return d.info }

func callErr(call, name, msg string) error {
	return gpu.NewCallError("emu", call, stInvalid, name, msg, false)
}

func (d *device) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return callErr("device", "EMU_DEVICE_CLOSED", fmt.Sprintf("emulated device %d is closed", d.info.Index))
	}
	return d.sticky
}

func (d *device) setSticky(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sticky == nil {
		d.sticky = err
	}
}

func (d *device) stickyErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sticky
}

func (d *device) Attributes() ([]gpu.Attribute, error) {
	i := d.info
	return []gpu.Attribute{
		{Name: "EMULATED", Value: 1},
		{Name: "COMPUTE_CAPABILITY_MAJOR", Value: int64(i.ComputeMajor)},
		{Name: "COMPUTE_CAPABILITY_MINOR", Value: int64(i.ComputeMinor)},
		{Name: "MULTIPROCESSOR_COUNT", Value: int64(i.SMs)},
		{Name: "WARP_SIZE", Value: 32},
		{Name: "MAX_THREADS_PER_BLOCK", Value: maxThreadsPerBlock},
		{Name: "MAX_THREADS_PER_MULTIPROCESSOR", Value: maxThreadsPerBlock},
		{Name: "MAX_BLOCKS_PER_MULTIPROCESSOR", Value: 1},
		{Name: "MAX_BLOCK_DIM_X", Value: maxBlockX},
		{Name: "MAX_BLOCK_DIM_Y", Value: maxBlockY},
		{Name: "MAX_BLOCK_DIM_Z", Value: maxBlockZ},
		{Name: "MAX_GRID_DIM_X", Value: maxGridX},
		{Name: "MAX_GRID_DIM_Y", Value: maxGridY},
		{Name: "MAX_GRID_DIM_Z", Value: maxGridZ},
		{Name: "MAX_SHARED_MEMORY_PER_BLOCK", Value: defaultDynShared, Unit: "B"},
		{Name: "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", Value: maxDynShared, Unit: "B"},
		{Name: "TOTAL_MEMORY", Value: i.MemoryBytes, Unit: "B"},
		{Name: "CONCURRENT_KERNELS", Value: 1},
		{Name: "UNIFIED_ADDRESSING", Value: 1},
		{Name: "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", Value: 1},
	}, nil
}

func (d *device) MemInfo() (free, total int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.info.MemoryBytes - d.used, d.info.MemoryBytes, nil
}

func (d *device) Malloc(bytes int64) (gpu.Ptr, error) {
	if err := d.usable(); err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, callErr("Malloc", "EMU_INVALID_VALUE", fmt.Sprintf("cannot allocate %d bytes", bytes))
	}
	d.mu.Lock()
	if d.used+bytes > d.info.MemoryBytes {
		free := d.info.MemoryBytes - d.used
		d.mu.Unlock()
		return 0, gpu.NewCallError("emu", "Malloc", stInvalid, "EMU_OUT_OF_MEMORY",
			fmt.Sprintf("out of memory: %s asked, %s free of %s on emulated device %d (set %s for more)",
				gpu.HumanBytes(bytes), gpu.HumanBytes(free), gpu.HumanBytes(d.info.MemoryBytes), d.info.Index, EnvMemory), false)
	}
	d.used += bytes
	d.mu.Unlock()
	p, err := d.allocate(bytes, -1)
	if err != nil {
		d.mu.Lock()
		d.used -= bytes
		d.mu.Unlock()
	}
	return p, err
}

// allocate maps a new buffer, in a file of its own (fd, or a new memfd when fd < 0).
func (d *device) allocate(bytes int64, fd int) (gpu.Ptr, error) {
	base := d.b.reserve(bytes)
	p, fd := cAllocIn(base, bytes, fd)
	if p == 0 {
		return 0, gpu.NewCallError("emu", "Malloc", stInvalid, "EMU_OUT_OF_MEMORY",
			fmt.Sprintf("the host could not map %s", gpu.HumanBytes(bytes)), false)
	}
	d.b.addAlloc(&allocation{ptr: p, bytes: bytes, dev: d, site: allocSite(), base: base, fd: fd})
	return p, nil
}

func (d *device) Free(p gpu.Ptr) error {
	if p == 0 {
		return nil
	}
	a := d.b.find(p, 1)
	if a == nil || a.ptr != p {
		return callErr("Free", "EMU_INVALID_VALUE", fmt.Sprintf("0x%x is not the start of a buffer (freed twice?)", uint64(p)))
	}
	if a.dev != d {
		return callErr("Free", "EMU_INVALID_VALUE", fmt.Sprintf("0x%x belongs to device %d, not %d", uint64(p), a.dev.info.Index, d.info.Index))
	}
	// Work still queued may use the buffer: wait for the device first, as cuMemFree does.
	d.syncAll()
	d.b.removeAlloc(p)
	d.b.release(a)
	if !a.foreign { // a peer's buffer counts against the peer's memory
		d.mu.Lock()
		d.used -= a.bytes
		d.mu.Unlock()
	}
	return nil
}

type hostMem struct {
	p     unsafe.Pointer
	bytes int64
}

func (h *hostMem) Pointer() unsafe.Pointer { return h.p }
func (h *hostMem) Bytes() int64            { return h.bytes }
func (h *hostMem) Free() error {
	if h.p != nil {
		cFreeHost(h.p)
		h.p = nil
	}
	return nil
}

func (d *device) MallocHost(bytes int64) (gpu.HostMem, error) {
	if bytes <= 0 {
		return nil, callErr("MallocHost", "EMU_INVALID_VALUE", fmt.Sprintf("cannot allocate %d bytes", bytes))
	}
	p := cMalloc(bytes)
	if p == nil {
		return nil, callErr("MallocHost", "EMU_OUT_OF_MEMORY", fmt.Sprintf("cannot allocate %s of host memory", gpu.HumanBytes(bytes)))
	}
	return &hostMem{p: p, bytes: bytes}, nil
}

// checkRange checks that [p, p+n) lies in a buffer (of dev, when dev is not nil).
func (d *device) checkRange(call, what string, p gpu.Ptr, n int64, dev *device) error {
	if n < 0 {
		return callErr(call, "EMU_INVALID_VALUE", fmt.Sprintf("negative size %d", n))
	}
	a := d.b.find(p, n)
	if a == nil {
		return callErr(call, "EMU_INVALID_VALUE", fmt.Sprintf("the %s range 0x%x + %d bytes is not inside a buffer: %s",
			what, uint64(p), n, d.b.describeAddr(uint64(p))))
	}
	if dev != nil && a.dev != dev {
		return callErr(call, "EMU_INVALID_VALUE", fmt.Sprintf("the %s 0x%x is on device %d, not device %d",
			what, uint64(p), a.dev.info.Index, dev.info.Index))
	}
	return nil
}

// span is one range a memory operation touches: its end (destination, source) and, where it
// must be on one, the device.
type span struct {
	what string
	p    gpu.Ptr
	dev  *device
}

// memOp checks the ranges of bytes that an operation touches and queues work on s; wait runs it
// before returning, for a copy to or from host memory that Go owns (as a copy from pageable
// memory is). Nothing to do is no error.
func (d *device) memOp(call string, bytes int64, s gpu.Stream, wait bool, work func(), ranges ...span) error {
	if bytes == 0 {
		return nil
	}
	for _, r := range ranges {
		if err := d.checkRange(call, r.what, r.p, bytes, r.dev); err != nil {
			return err
		}
	}
	st, err := d.stream(s)
	if err != nil {
		return err
	}
	job := func() error { work(); return nil }
	if wait {
		return st.run(job)
	}
	return st.enqueue(job, false)
}

func (d *device) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, bytes int64, s gpu.Stream) error {
	return d.memOp("CopyHtoD", bytes, s, true, func() { cCopyIn(dst, src, bytes) }, span{"destination", dst, nil})
}

func (d *device) CopyDtoH(dst unsafe.Pointer, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return d.memOp("CopyDtoH", bytes, s, true, func() { cCopyOut(dst, src, bytes) }, span{"source", src, nil})
}

func (d *device) CopyDtoD(dst, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return d.memOp("CopyDtoD", bytes, s, false, func() { cCopy(dst, src, bytes) },
		span{"destination", dst, nil}, span{"source", src, nil})
}

func (d *device) CopyPeer(dst gpu.Ptr, dstDev gpu.Device, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	if bytes == 0 {
		return nil
	}
	pd, ok := gpu.Unwrap(dstDev).(*device)
	if !ok || pd.b != d.b {
		return callErr("CopyPeer", "EMU_INVALID_VALUE", "the destination device is not an emulated device")
	}
	return d.memOp("CopyPeer", bytes, s, false, func() { cCopy(dst, src, bytes) },
		span{"source", src, d}, span{"destination", dst, pd})
}

func (d *device) MemsetD8(dst gpu.Ptr, value uint8, count int64, s gpu.Stream) error {
	return d.memOp("MemsetD8", count, s, false, func() { cSet8(dst, value, count) }, span{"destination", dst, nil})
}

func (d *device) MemsetD32(dst gpu.Ptr, value uint32, count int64, s gpu.Stream) error {
	return d.memOp("MemsetD32", count*4, s, false, func() { cSet32(dst, value, count) }, span{"destination", dst, nil})
}

func (d *device) LoadModule(path string) (gpu.Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	l, err := dlopenModule(path)
	if err != nil {
		return nil, gpu.NewCallError("emu", "LoadModule", stInvalid, "EMU_MODULE_LOAD", err.Error(), false)
	}
	m := &module{dev: d, path: path, lib: l, kernels: map[string]*kernel{}}
	for i := range l.entries {
		e := &l.entries[i]
		if err := d.checkWarp(path, e); err != nil {
			return nil, err // the library stays loaded, as every module does (no dlclose)
		}
		m.kernels[e.name] = &kernel{mod: m, e: e, maxDyn: defaultDynShared}
	}
	return m, nil
}

// LoadUntrustedModule loads a module whose code must not run in this process (a submission):
// a sandboxed launcher loads it and runs its launches (launcher.go).
func (d *device) LoadUntrustedModule(path string) (gpu.Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	l, entries, err := d.b.startLauncher(path)
	if err != nil {
		return nil, gpu.NewCallError("emu", "LoadUntrustedModule", stInvalid, "EMU_MODULE_LOAD", err.Error(), false)
	}
	m := &module{dev: d, path: path, remote: l, kernels: map[string]*kernel{}}
	for i, e := range entries {
		info := &entryInfo{name: e.Name, sizes: e.Sizes, types: e.Types, maxThreads: e.MaxThreads, warpSize: e.WarpSize, index: i}
		if err := d.checkWarp(path, info); err != nil {
			m.Close()
			return nil, err
		}
		m.kernels[e.Name] = &kernel{mod: m, e: info, maxDyn: defaultDynShared}
	}
	return m, nil
}

// checkWarp refuses a kernel compiled for another warp width than the device's: its lane masks
// and warpSize would not match the warps it runs in.
func (d *device) checkWarp(path string, e *entryInfo) error {
	if e.warpSize == d.info.WarpSize {
		return nil
	}
	return gpu.NewCallError("emu", "LoadModule", stInvalid, "EMU_MODULE_LOAD",
		fmt.Sprintf("%s: kernel %s was built for %d-lane warps, this emulated device has %d (%s=%d): rebuild it "+
			"with -DKL_EMU_WARP_SIZE=%d, as labrun does for the device it runs on",
			path, e.name, e.warpSize, d.info.WarpSize, EnvWarp, d.info.WarpSize, d.info.WarpSize), false)
}

func (d *device) NewStream() (gpu.Stream, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return newStream(d), nil
}

func (d *device) NewEvent() (gpu.Event, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return &event{dev: d}, nil
}

func (d *device) allStreams() []*stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []*stream{d.def}
	for s := range d.streams {
		out = append(out, s)
	}
	return out
}

// syncAll waits for every stream of the device, without consuming their errors.
func (d *device) syncAll() {
	for _, s := range d.allStreams() {
		s.wait()
	}
}

func (d *device) Synchronize() error {
	var first error
	for _, s := range d.allStreams() {
		if err := s.Synchronize(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (d *device) CanAccessPeer(peer gpu.Device) (bool, error) {
	p, ok := gpu.Unwrap(peer).(*device)
	return ok && p.b == d.b && p.info.Index != d.info.Index, nil
}

func (d *device) EnablePeerAccess(peer gpu.Device) error {
	ok, _ := d.CanAccessPeer(peer)
	if !ok {
		return callErr("EnablePeerAccess", "EMU_PEER_ACCESS_UNSUPPORTED",
			"peer access needs two different emulated devices of this process")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.peers[peer.Info().Index] = true
	return nil
}

func (d *device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	d.syncAll()
	for _, s := range d.allStreams() {
		s.shutdown()
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	// Free what the device still holds.
	d.b.allocMu.Lock()
	var mine []*allocation
	for _, a := range d.b.allocs {
		if a.dev == d {
			mine = append(mine, a)
		}
	}
	d.b.allocMu.Unlock()
	for _, a := range mine {
		d.b.removeAlloc(a.ptr)
		d.b.release(a)
	}
	return nil
}

func (d *device) stream(s gpu.Stream) (*stream, error) {
	if s == nil {
		return d.def, nil
	}
	st, ok := s.(*stream)
	if !ok || st.dev != d {
		return nil, callErr("stream", "EMU_INVALID_HANDLE", "the stream does not belong to this emulated device")
	}
	return st, nil
}

// ---- modules and kernels ----

type module struct {
	dev     *device
	path    string
	lib     *lib      // loaded here, or
	remote  *launcher // loaded in a sandboxed launcher
	kernels map[string]*kernel
}

func (m *module) Kernel(name string) (gpu.Kernel, error) {
	if k, ok := m.kernels[name]; ok {
		return k, nil
	}
	names := make([]string, 0, len(m.kernels))
	for n := range m.kernels {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, gpu.NewCallError("emu", "Kernel", stInvalid, "EMU_NOT_FOUND",
		fmt.Sprintf("no kernel %q in %s (its extern \"C\" __global__ functions: %s)", name, filepath.Base(m.path),
			strings.Join(names, ", ")), false)
}

// Close forgets the module. A shared object loaded here stays loaded (a lost worker thread may
// still run its code, and the runtime it links keeps its threads); a launcher is ended.
func (m *module) Close() error {
	if m.remote != nil {
		m.remote.stop()
	}
	return nil
}

type kernel struct {
	mod *module
	e   *entryInfo

	mu     sync.Mutex
	maxDyn int
}

func (k *kernel) Name() string { return k.e.name }

func (k *kernel) Params() ([]gpu.Param, error) {
	ps := make([]gpu.Param, len(k.e.sizes))
	off := 0
	for i, sz := range k.e.sizes {
		align := 8
		for align > 1 && sz%align != 0 {
			align /= 2
		}
		off = (off + align - 1) / align * align
		ps[i] = gpu.Param{Index: i, Offset: off, Size: sz}
		if k.e.types != nil {
			ps[i].Type = k.e.types[i]
		}
		off += sz
	}
	return ps, nil
}

func (k *kernel) Attrs() (gpu.KernelAttrs, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	mt := maxThreadsPerBlock
	if k.e.maxThreads > 0 && k.e.maxThreads < mt {
		mt = k.e.maxThreads
	}
	return gpu.KernelAttrs{MaxThreadsPerBlock: mt, MaxDynamicShared: k.maxDyn}, nil
}

func (k *kernel) SetMaxDynamicShared(bytes int) error {
	if bytes < 0 || bytes > maxDynShared {
		return callErr("SetMaxDynamicShared", "EMU_INVALID_VALUE",
			fmt.Sprintf("%d bytes of dynamic shared memory is over the limit of %d bytes (227 KiB) per block", bytes, maxDynShared))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.maxDyn = bytes
	return nil
}

// checkLaunch refuses the shapes and shared memory sizes that a GPU refuses.
func (k *kernel) checkLaunch(cfg gpu.LaunchConfig) error {
	bad := func(name, msg string) error {
		return gpu.NewCallError("emu", "launch "+k.e.name, stInvalid, name, msg, false)
	}
	b, g := cfg.Block, cfg.Grid
	threads := b.Count()
	if threads > maxThreadsPerBlock || b.X > maxBlockX || b.Y > maxBlockY || b.Z > maxBlockZ {
		return bad("EMU_INVALID_LAUNCH", fmt.Sprintf("block %v has %d threads: a block holds at most %d threads, "+
			"and at most %d×%d×%d in x, y and z", b, threads, maxThreadsPerBlock, maxBlockX, maxBlockY, maxBlockZ))
	}
	if k.e.maxThreads > 0 && threads > int64(k.e.maxThreads) {
		return bad("EMU_INVALID_LAUNCH", fmt.Sprintf("block %v has %d threads, but the kernel's __launch_bounds__ allows at most %d",
			b, threads, k.e.maxThreads))
	}
	if uint64(g.X) > maxGridX || g.Y > maxGridY || g.Z > maxGridZ {
		return bad("EMU_INVALID_LAUNCH", fmt.Sprintf("grid %v is too large: at most %d×%d×%d blocks", g, uint64(maxGridX), maxGridY, maxGridZ))
	}
	k.mu.Lock()
	limit := k.maxDyn
	k.mu.Unlock()
	if cfg.SharedBytes > limit {
		msg := fmt.Sprintf("%d bytes of dynamic shared memory is over the kernel's limit of %d bytes", cfg.SharedBytes, limit)
		if cfg.SharedBytes <= maxDynShared {
			msg += fmt.Sprintf("; raise it with SetMaxDynamicShared (cuFuncSetAttribute), up to %d bytes", maxDynShared)
		} else {
			msg += fmt.Sprintf("; no GPU block has more than %d bytes (227 KiB)", maxDynShared)
		}
		return bad("EMU_SHARED_LIMIT", msg)
	}
	return nil
}

func (k *kernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	d := k.mod.dev
	if err := d.usable(); err != nil {
		return err
	}
	if len(args) != len(k.e.sizes) {
		return callErr("launch "+k.e.name, "EMU_INVALID_VALUE", fmt.Sprintf("%d arguments for %d parameters", len(args), len(k.e.sizes)))
	}
	for i, a := range args {
		if len(a) != k.e.sizes[i] {
			return callErr("launch "+k.e.name, "EMU_INVALID_VALUE",
				fmt.Sprintf("argument %d is %d bytes, the parameter is %d", i, len(a), k.e.sizes[i]))
		}
	}
	if err := k.checkLaunch(cfg); err != nil {
		return err
	}
	st, err := d.stream(cfg.Stream)
	if err != nil {
		return err
	}
	// The residency the device reported when it was opened: a persistent kernel sized from
	// Info().SMs must find exactly that many blocks running at once.
	sms := d.info.SMs
	limit, err := TimeLimit()
	if err != nil {
		return err
	}
	own := make([][]byte, len(args))
	for i, a := range args {
		own[i] = append([]byte(nil), a...)
	}
	return st.enqueue(func() error { return k.run(cfg, own, sms, limit.Milliseconds()) }, false)
}

// run executes the launch on the stream's goroutine.
func (k *kernel) run(cfg gpu.LaunchConfig, args [][]byte, sms int, limitMs int64) error {
	b := k.mod.dev.b
	id := b.beginLaunch(k.e.name)
	var r launchResult
	if k.mod.remote != nil {
		var err error
		if r, err = k.mod.remote.launch(k.e.index, args, cfg.Grid, cfg.Block, cfg.SharedBytes, sms, limitMs); err != nil {
			b.endLaunch(id)
			return err
		}
	} else {
		r = cLaunch(k.mod.lib, k.e, args, cfg.Grid, cfg.Block, cfg.SharedBytes, sms, limitMs)
	}
	others := b.endLaunch(id)
	if len(r.output) > 0 || r.truncated {
		w := printfWriter()
		printfMu.Lock()
		w.Write(r.output)
		if r.truncated {
			fmt.Fprintf(w, "[emu: printf output of kernel %s truncated at 4 MiB]\n", k.e.name)
		}
		printfMu.Unlock()
	}
	guardErr := b.checkGuards(k.e.name, others)
	if r.status == stOK {
		return guardErr
	}
	name, sticky := statusName(r.status)
	msg := fmt.Sprintf("grid %v block %v: %s", cfg.Grid, cfg.Block, r.message)
	switch r.status {
	case stTimeout:
		msg += fmt.Sprintf(". If the kernel is only slow, raise the limit with %s (e.g. %s=2m)", EnvTimeLimit, EnvTimeLimit)
	case stFault:
		msg += " (" + b.describeAddr(r.faultAddr) + ")"
	}
	if guardErr != nil {
		msg += "; also: " + guardErr.(*gpu.CallError).Message
	}
	return gpu.NewCallError("emu", "kernel "+k.e.name, r.status, name, msg, sticky || r.sticky)
}

var printfMu sync.Mutex

// statusName names a launch status and says whether it is sticky (the device is then unusable:
// a timed-out kernel may still run, a wild write may have hit any memory of the process).
func statusName(st int) (string, bool) {
	switch st {
	case stInvalid:
		return "EMU_INVALID_LAUNCH", false
	case stDivergence:
		return "EMU_BARRIER_DIVERGENCE", false
	case stDeadlock:
		return "EMU_DEADLOCK", false
	case stTimeout:
		return "EMU_TIMEOUT", true
	case stFault:
		return "EMU_ILLEGAL_ADDRESS", true
	case stArith:
		return "EMU_ARITHMETIC_TRAP", false
	case stTrap:
		return "EMU_TRAP", false
	case stMisuse:
		return "EMU_MISUSE", false
	case stStack:
		return "EMU_STACK_OVERFLOW", false
	case stInternal:
		return "EMU_INTERNAL", true
	case stMisaligned:
		return "EMU_MISALIGNED_ADDRESS", true
	}
	return fmt.Sprintf("EMU_STATUS_%d", st), true
}
