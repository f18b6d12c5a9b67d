// Package fake is an in-memory backend for testing the engine and drivers without a GPU or a
// compiler. Kernels are Go functions registered by entry name; "compiling" a file just returns
// its path. It is imported by tests only.
package fake

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda/nvcc"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// KernelFunc runs a fake kernel. args are the packed parameters.
type KernelFunc func(cfg gpu.LaunchConfig, args [][]byte) error

type kernelDef struct {
	params []gpu.Param
	fn     KernelFunc
}

var (
	mu      sync.Mutex
	kernels = map[string]kernelDef{}
)

// RegisterKernel defines a kernel entry with C parameter types ("float*", "int", ...).
func RegisterKernel(entry string, ctypes []string, fn KernelFunc) {
	mu.Lock()
	defer mu.Unlock()
	var ps []gpu.Param
	off := 0
	for i, t := range ctypes {
		size := 8
		if t == "int" || t == "float" || t == "unsigned" {
			size = 4
		}
		off = (off + size - 1) / size * size
		ps = append(ps, gpu.Param{Index: i, Offset: off, Size: size, Type: t})
		off += size
	}
	kernels[entry] = kernelDef{params: ps, fn: fn}
}

func init() {
	backends.Register(backends.Registration{
		Name:     "fake",
		Title:    "fake GPU (--backend fake, tests only)",
		Open:     func() (gpu.Backend, error) { return backend{}, nil },
		Compiler: compiler{},
		Rules:    rules{},
		Doctor:   func() ([]backends.Check, bool) { return nil, true },
	})
}

// compiler "compiles" a file by returning its path: the kernels are Go functions.
type compiler struct{}

func (compiler) Family() string { return "fake" }
func (compiler) Build(_ context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	return toolchain.Artifact{Path: r.Source}, nil
}
func (compiler) Version() (string, error) { return "fake 1.0", nil }

// rules make the fake device an NVIDIA-like GPU of compute capability 9.0 that has every
// library: only architectures it lacks and more devices than it has are refused.
type rules struct{}

func (rules) SkipReason(dev gpu.DeviceInfo, req backends.Requirements) string {
	if why := backends.TooFewDevices(dev, req, "set LABRUN_FAKE_DEVICES"); why != "" {
		return why
	}
	for _, n := range req.Needs {
		if why := nvcc.ArchSkipReason(dev, n, true); why != "" {
			return why
		}
	}
	return ""
}
func (rules) Target(dev gpu.DeviceInfo, needs []string) string { return nvcc.Target(dev, needs) }
func (rules) BuildFlags(gpu.DeviceInfo) []string               { return nil }

type backend struct{}

func (backend) Name() string { return "fake" }

// DeviceCount is 1, or $LABRUN_FAKE_DEVICES (an environment variable, so that worker processes
// see the same count as the test that starts them).
func (backend) DeviceCount() (int, error) {
	if n, err := strconv.Atoi(os.Getenv("LABRUN_FAKE_DEVICES")); err == nil && n > 0 {
		return n, nil
	}
	return 1, nil
}
func (backend) Toolchain() string { return "fake" }
func (backend) DeviceInfo(i int) (gpu.DeviceInfo, error) {
	return gpu.DeviceInfo{Backend: "fake", Index: i, Name: "Fake Device", ComputeMajor: 9, SMs: 4,
		MemoryBytes: 1 << 30, L2Bytes: 1 << 20, WarpSize: 32, MaxThreadsPerBlock: 1024}, nil
}
func (b backend) Open(i int) (gpu.Device, error) {
	info, _ := b.DeviceInfo(i)
	return &Device{info: info}, nil
}

// Device keeps allocations as Go byte slices; a Ptr is the address of the slice's first byte.
// All fake devices share one address space, so fake kernels can reach memory by pointer alone.
type Device struct {
	info gpu.DeviceInfo
}

var (
	memMu sync.Mutex
	mem   = map[gpu.Ptr][]byte{}
)

func (d *Device) Info() gpu.DeviceInfo { return d.info }
func (d *Device) Attributes() ([]gpu.Attribute, error) {
	return []gpu.Attribute{{Name: "MULTIPROCESSOR_COUNT", Value: 4}}, nil
}
func (d *Device) MemInfo() (int64, int64, error) { return 1 << 30, 1 << 30, nil }

func (d *Device) Malloc(n int64) (gpu.Ptr, error) {
	b := make([]byte, n)
	p := gpu.Ptr(uintptr(unsafe.Pointer(&b[0])))
	memMu.Lock()
	mem[p] = b
	memMu.Unlock()
	return p, nil
}

func (d *Device) Free(p gpu.Ptr) error {
	memMu.Lock()
	defer memMu.Unlock()
	if _, ok := mem[p]; !ok {
		return fmt.Errorf("fake: free of unknown pointer %#x", p)
	}
	delete(mem, p)
	return nil
}

type hostMem struct{ b []byte }

func (h *hostMem) Pointer() unsafe.Pointer { return unsafe.Pointer(&h.b[0]) }
func (h *hostMem) Bytes() int64            { return int64(len(h.b)) }
func (h *hostMem) Free() error             { return nil }

func (d *Device) MallocHost(n int64) (gpu.HostMem, error) { return &hostMem{make([]byte, n)}, nil }

func slice(p unsafe.Pointer, n int64) []byte { return unsafe.Slice((*byte)(p), n) }

// at returns n bytes of device memory from p, which may point inside an allocation.
func (d *Device) at(p gpu.Ptr, n int64) []byte { return at(p, n) }

func at(p gpu.Ptr, n int64) []byte {
	memMu.Lock()
	defer memMu.Unlock()
	for base, b := range mem {
		if p >= base && int64(p-base)+n <= int64(len(b)) {
			return b[p-base : int64(p-base)+n]
		}
	}
	panic(fmt.Sprintf("fake: %d bytes at %#x are outside every allocation", n, uint64(p)))
}

// Float32s views n float32 of device memory from p, for fake kernels.
func Float32s(p gpu.Ptr, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&at(p, int64(n)*4)[0])), n)
}

func (d *Device) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, n int64, _ gpu.Stream) error {
	copy(d.at(dst, n), slice(src, n))
	return nil
}
func (d *Device) CopyDtoH(dst unsafe.Pointer, src gpu.Ptr, n int64, _ gpu.Stream) error {
	copy(slice(dst, n), d.at(src, n))
	return nil
}
func (d *Device) CopyDtoD(dst, src gpu.Ptr, n int64, _ gpu.Stream) error {
	copy(d.at(dst, n), d.at(src, n))
	return nil
}
func (d *Device) CopyPeer(dst gpu.Ptr, _ gpu.Device, src gpu.Ptr, n int64, s gpu.Stream) error {
	return d.CopyDtoD(dst, src, n, s)
}
func (d *Device) MemsetD8(dst gpu.Ptr, v uint8, n int64, _ gpu.Stream) error {
	b := d.at(dst, n)
	for i := range b {
		b[i] = v
	}
	return nil
}
func (d *Device) MemsetD32(dst gpu.Ptr, v uint32, n int64, s gpu.Stream) error {
	w := Uint32s(dst, int(n))
	for i := range w {
		w[i] = v
	}
	return nil
}

// Uint32s views n uint32 of device memory from p.
func Uint32s(p gpu.Ptr, n int) []uint32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&at(p, int64(n)*4)[0])), n)
}

func (d *Device) LoadModule(path string) (gpu.Module, error) { return module{}, nil }

// LoadUntrustedModule is LoadModule: the fake device runs no code from the module at all.
func (d *Device) LoadUntrustedModule(path string) (gpu.Module, error) { return module{}, nil }
func (d *Device) NewStream() (gpu.Stream, error)                      { return stream{}, nil }
func (d *Device) NewEvent() (gpu.Event, error)                        { return &event{}, nil }
func (d *Device) Synchronize() error                                  { return nil }
func (d *Device) CanAccessPeer(gpu.Device) (bool, error)              { return true, nil }
func (d *Device) EnablePeerAccess(gpu.Device) error                   { return nil }
func (d *Device) Close() error                                        { return nil }

type module struct{}

func (module) Close() error { return nil }
func (module) Kernel(name string) (gpu.Kernel, error) {
	mu.Lock()
	def, ok := kernels[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("fake: no kernel %q registered", name)
	}
	return &kernel{name: name, def: def}, nil
}

type kernel struct {
	name string
	def  kernelDef
}

func (k *kernel) Name() string                    { return k.name }
func (k *kernel) Params() ([]gpu.Param, error)    { return k.def.params, nil }
func (k *kernel) Attrs() (gpu.KernelAttrs, error) { return gpu.KernelAttrs{NumRegs: 32}, nil }
func (k *kernel) SetMaxDynamicShared(int) error   { return nil }
func (k *kernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	return k.def.fn(cfg, args)
}

type stream struct{}

func (stream) Synchronize() error        { return nil }
func (stream) WaitEvent(gpu.Event) error { return nil }
func (stream) Close() error              { return nil }

type event struct{ t time.Time }

func (e *event) Record(gpu.Stream) error { e.t = time.Now(); return nil }
func (e *event) Synchronize() error      { return nil }
func (e *event) Close() error            { return nil }
func (e *event) ElapsedMs(start gpu.Event) (float64, error) {
	return float64(e.t.Sub(start.(*event).t).Nanoseconds()) / 1e6, nil
}
