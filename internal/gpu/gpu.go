// Package gpu is the device API that lab drivers use: backends, devices, memory, modules,
// kernels, streams and events. Backends (CUDA, the CPU emulator, later HIP) implement the
// interfaces here and register themselves; lab code never imports a backend directly.
//
// The API is deliberately small and close to the CUDA driver API, so that a student who reads a
// lab driver recognises every call: Malloc, Memcpy, LoadModule, Launch, EventRecord.
//
// # A HIP backend: what it adds and where it plugs in
//
// There is no HIP backend yet: nothing below has run on an AMD GPU. What exists is the kernel
// side: labs/common/kl.cuh maps warps, lane masks, collectives, atomics, acquire/release, bf16
// and launch bounds for HIP; `labrun hip-check` compiles every portable kernel (variants without
// needs: [nvidia]) for gfx90a and gfx942 (the Targets of internal/gpu/hip, the backend's folder,
// which holds only that compiler today); and the emulator runs them with 64-lane warps
// (--emu-warp 64). The backend "hip" (its runtime, rules and one backends.Register call in that
// folder, as internal/gpu/cuda and internal/gpu/emu do; autoOrder already tries it after
// "cuda") adds:
//
//   - The HIP runtime through dlopen: libamdhip64.so.N opened at run time by a C shim, as
//     internal/gpu/cuda opens libcuda.so.1, so that labrun builds and its tests run with no ROCm
//     installed. Backend.DeviceCount/DeviceInfo/Open map to hipGetDeviceCount, hipGetDeviceProperties
//     (DeviceInfo: CUs as SMs, warpSize 64, sharedMemPerBlock, and gcnArchName such as gfx942,
//     which DeviceInfo has no field for yet: its rules' Target would return the gfx name, the
//     compile target the engine passes to its compiler). One HIP context per device
//     (hipSetDevice per call, in the shim, as the CUDA shim sets the context).
//   - Code objects: the registration's Compiler (family "hipcc") compiles a kernel file with
//     --offload-arch=<gfx name> --cuda-device-only into a code object (the gfx90a command of
//     hip.Compile, cached through toolchain.Workspace as nvcc.Build caches cubins), and
//     Device.LoadModule loads it with hipModuleLoad; Module.Kernel is hipModuleGetFunction,
//     Kernel.LaunchPacked is hipModuleLaunchKernel with the packed arguments, Kernel.Attrs is
//     hipFuncGetAttribute, and SetMaxDynamicShared is hipFuncSetAttribute. Streams and events are hipStream_t and
//     hipEvent_t behind Stream and Event, unchanged for the drivers.
//   - Baselines: BLASProvider with rocBLAS (rocblas_sgemm, rocblas_gemm_ex for bf16 in, fp32
//     accumulation), LtBLAS with hipBLASLt (hipblasLtMatmul, heuristic algorithm), GroupedBLAS
//     with hipBLASLt's grouped GEMM; RankCommunicatorProvider with RCCL (librccl.so, NCCL's API: the
//     calls of internal/gpu/cuda's nccl.go with another library name). The lab.yaml needs cublas
//     and nccl would then mean "the backend's BLAS" and "its collectives library" (the HIP
//     rules' SkipReason and its doctor checks probe rocBLAS and RCCL).
//   - Peer memory: CanAccessPeer and EnablePeerAccess map to hipDeviceCanAccessPeer and
//     hipDeviceEnablePeerAccess (xGMI / Infinity Fabric between the GPUs of a node). Buffers that
//     one GPU writes while a kernel on another polls them (labs 04 and 05: flags and the rows
//     they guard) must be fine-grained memory, hipExtMallocWithFlags(hipDeviceMallocFinegrained):
//     coarse-grained memory, what hipMalloc returns, is made coherent only at kernel boundaries.
//     Device.Malloc would allocate fine-grained on devices that have peer access enabled, or the
//     API gains a flag for peer buffers that the collective drivers pass.
//   - Not provided: TensorMapEncoder (TMA) and everything NVIDIA-only; the engine skips variants
//     with needs: [nvidia] on it (its rules), as the emulator does with 64-lane warps. Lab 03's
//     timelines would scale kl_globaltimer_ns (wall_clock64 ticks) by
//     hipDeviceAttributeWallClockRate.
package gpu

import (
	"fmt"
	"unsafe"
)

// Ptr is a device address. On CUDA it is a CUdeviceptr; on the emulator a host address.
type Ptr uint64

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// D1, D2 and D3 build launch shapes; unset dimensions are 1.
func D1(x int) Dim3       { return Dim3{uint32(x), 1, 1} }
func D2(x, y int) Dim3    { return Dim3{uint32(x), uint32(y), 1} }
func D3(x, y, z int) Dim3 { return Dim3{uint32(x), uint32(y), uint32(z)} }

// Count is the number of threads (or blocks) the shape describes.
func (d Dim3) Count() int64 { return int64(d.X) * int64(d.Y) * int64(d.Z) }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// Backend is one way of running kernels: "cuda", "emu", later "hip".
type Backend interface {
	// Name is the short name used on the command line ("cuda", "emu").
	Name() string
	// DeviceCount says how many devices the backend sees.
	DeviceCount() (int, error)
	// DeviceInfo reads a device's identity and limits without creating a context,
	// so that a parent process can plan (pick compile targets) without touching the GPU.
	DeviceInfo(index int) (DeviceInfo, error)
	// Open creates a context on the device. Close the device when done.
	Open(index int) (Device, error)
	// Toolchain names the compiler family that builds kernels for this backend ("nvcc", "hipcc",
	// "c++"): the Family of the Compiler its registration gives (internal/gpu/backends), which
	// the engine builds with.
	Toolchain() string
}

// DeviceInfo identifies a device and its main limits. It is what results files record.
type DeviceInfo struct {
	Backend            string `json:"backend"`
	Index              int    `json:"index"`
	Name               string `json:"name"`
	Emulated           bool   `json:"emulated,omitempty"`
	ComputeMajor       int    `json:"compute_major"`
	ComputeMinor       int    `json:"compute_minor"`
	SMs                int    `json:"sms"`
	MemoryBytes        int64  `json:"memory_bytes"`
	L2Bytes            int64  `json:"l2_bytes"`
	WarpSize           int    `json:"warp_size"`
	MaxThreadsPerBlock int    `json:"max_threads_per_block"`
	MaxSharedPerBlock  int    `json:"max_shared_per_block"`       // without opt-in
	MaxSharedOptin     int    `json:"max_shared_per_block_optin"` // with cuFuncSetAttribute
	SMClockKHz         int    `json:"sm_clock_khz"`
	MemClockKHz        int    `json:"mem_clock_khz"`
	MemBusWidthBits    int    `json:"mem_bus_width_bits"`
	DriverVersion      string `json:"driver_version,omitempty"`  // e.g. "13.0" (CUDA driver API version)
	RuntimeVersion     string `json:"runtime_version,omitempty"` // toolkit or emulator version
	UUID               string `json:"uuid,omitempty"`
	PCIBusID           string `json:"pci_bus_id,omitempty"`
}

// Arch is the compute capability as nvcc spells it, e.g. "sm_90", for NVIDIA devices and the
// results files that record them. The compile target of a run is its backend's rules' Target
// (internal/gpu/backends), which a backend with other target names (gfx942) names its own way.
func (d DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", d.ComputeMajor, d.ComputeMinor) }

// Attribute is one named device attribute, for lab 01's full property table.
type Attribute struct {
	Name  string `json:"name"`  // the CUDA enum name without its prefix, e.g. "MULTIPROCESSOR_COUNT"
	Value int64  `json:"value"` // the raw value
	Unit  string `json:"unit,omitempty"`
}

// Device is an open device (a CUDA context, or an emulated device).
type Device interface {
	Info() DeviceInfo
	// Attributes lists every attribute the backend can read, in a stable order.
	Attributes() ([]Attribute, error)
	MemInfo() (free, total int64, err error)

	Malloc(bytes int64) (Ptr, error)
	Free(p Ptr) error
	// MallocHost allocates page-locked host memory (for honest host-link measurements).
	MallocHost(bytes int64) (HostMem, error)

	// Copies and sets are ordered on stream s (nil means the default stream) and may return
	// before they finish; synchronize the stream before reading host memory.
	CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64, s Stream) error
	CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64, s Stream) error
	CopyDtoD(dst, src Ptr, bytes int64, s Stream) error
	// CopyPeer copies from this device's memory to dst on another device.
	CopyPeer(dst Ptr, dstDev Device, src Ptr, bytes int64, s Stream) error
	MemsetD8(dst Ptr, value uint8, count int64, s Stream) error
	MemsetD32(dst Ptr, value uint32, count int64, s Stream) error

	// LoadModule loads a compiled kernel image (cubin, fatbin, or the emulator's shared object).
	LoadModule(path string) (Module, error)

	NewStream() (Stream, error)
	NewEvent() (Event, error)
	// Synchronize waits for all work on the device and returns the first asynchronous error.
	Synchronize() error

	CanAccessPeer(peer Device) (bool, error)
	EnablePeerAccess(peer Device) error

	Close() error
}

// HostMem is page-locked host memory.
type HostMem interface {
	Pointer() unsafe.Pointer
	Bytes() int64
	Free() error
}

// Module is a loaded kernel image.
type Module interface {
	Kernel(name string) (Kernel, error)
	Close() error
}

// Param describes one kernel parameter as the backend knows it.
type Param struct {
	Index  int    `json:"index"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Type   string `json:"type,omitempty"` // C type when the backend knows it (the emulator does), else ""
}

// KernelAttrs are the compiled kernel's resource figures (registers, shared memory, spills).
type KernelAttrs struct {
	NumRegs            int `json:"num_regs"`
	StaticSharedBytes  int `json:"static_shared_bytes"`
	LocalBytes         int `json:"local_bytes"`
	MaxThreadsPerBlock int `json:"max_threads_per_block"`
	MaxDynamicShared   int `json:"max_dynamic_shared"`
}

// Kernel is an entry point of a module. Launch it with gpu.Launch, which checks arguments.
type Kernel interface {
	Name() string
	Params() ([]Param, error)
	Attrs() (KernelAttrs, error)
	// SetMaxDynamicShared raises the kernel's dynamic shared-memory limit (needed above 48 KiB).
	SetMaxDynamicShared(bytes int) error
	// LaunchPacked launches with arguments already packed and checked by gpu.Launch:
	// args[i] holds exactly Params()[i].Size bytes.
	LaunchPacked(cfg LaunchConfig, args [][]byte) error
}

// OccupancyKernel is implemented by kernels whose backend can say how many blocks of them run
// on one multiprocessor at once (CUDA's cuOccupancyMaxActiveBlocksPerMultiprocessor): what a
// persistent kernel whose blocks wait on each other needs to know to size its grid.
type OccupancyKernel interface {
	MaxActiveBlocksPerSM(blockThreads, dynamicSharedBytes int) (int, error)
}

// MaxActiveBlocksPerSM asks k's backend, under any wrappers, how many blocks of blockThreads
// threads with dynamicSharedBytes of dynamic shared memory fit on one SM at once. ok is false
// when the backend cannot say (the emulator, the test device).
func MaxActiveBlocksPerSM(k Kernel, blockThreads, dynamicSharedBytes int) (n int, ok bool, err error) {
	for {
		if o, yes := k.(OccupancyKernel); yes {
			n, err = o.MaxActiveBlocksPerSM(blockThreads, dynamicSharedBytes)
			return n, true, err
		}
		w, yes := k.(interface{ Unwrap() Kernel })
		if !yes {
			return 0, false, nil
		}
		k = w.Unwrap()
	}
}

// Stream is an ordered queue of device work.
type Stream interface {
	Synchronize() error
	// WaitEvent makes work queued on the stream after this call wait until e (as last recorded,
	// possibly on another stream or device) has completed; the host does not wait.
	WaitEvent(e Event) error
	Close() error
}

// Event marks a point in a stream; two events give an elapsed device time.
type Event interface {
	Record(s Stream) error
	Synchronize() error
	// ElapsedMs returns the milliseconds from start to this event (both recorded and complete).
	ElapsedMs(start Event) (float64, error)
	Close() error
}

// Wrapper is implemented by devices that wrap a backend's device (the grader's guarded device,
// which watches allocations): backends unwrap a peer to find their own device.
type Wrapper interface {
	Unwrap() Device
}

// Unwrap returns the backend's own device under any wrappers.
func Unwrap(d Device) Device {
	for {
		w, ok := d.(Wrapper)
		if !ok {
			return d
		}
		d = w.Unwrap()
	}
}

// UntrustedLoader is implemented by backends that can load a module whose code may be hostile (a
// student's submission) without running any of it in this process. The emulator runs such a
// module in a sandboxed process of its own; a GPU backend loads device code only (a cubin has no
// host code), so its LoadModule already qualifies.
type UntrustedLoader interface {
	LoadUntrustedModule(path string) (Module, error)
}

// LoadUntrusted loads a hostile module through d's backend, under any wrappers, or says that the
// backend cannot.
func LoadUntrusted(d Device, path string) (Module, error) {
	if u, ok := Unwrap(d).(UntrustedLoader); ok {
		return u.LoadUntrustedModule(path)
	}
	return nil, fmt.Errorf("the %s backend cannot load untrusted code in isolation", d.Info().Backend)
}

// Sharer is implemented by devices whose buffers other processes — the ranks of a job on the
// same node, one process per GPU — can map, so that kernels read and write their peers' memory
// through plain pointers: the emulator through shared-memory files, a GPU through allocations
// exported by the driver.
type Sharer interface {
	// MallocShared allocates a buffer that other processes can map; handle is what they need to
	// do so (send it through the rendezvous). Free releases it here.
	MallocShared(bytes int64) (p Ptr, handle []byte, err error)
	// OpenShared maps another process's shared buffer from its handle. Free unmaps it here.
	OpenShared(handle []byte) (Ptr, error)
}

// MallocShared allocates a buffer on d that other processes can map, or says that d's backend
// cannot share memory between processes.
func MallocShared(d Device, bytes int64) (Ptr, []byte, error) {
	if s, ok := Unwrap(d).(Sharer); ok {
		return s.MallocShared(bytes)
	}
	return 0, nil, fmt.Errorf("the %s backend cannot share device memory between processes", d.Info().Backend)
}

// OpenShared maps on d a buffer another process shared.
func OpenShared(d Device, handle []byte) (Ptr, error) {
	if s, ok := Unwrap(d).(Sharer); ok {
		return s.OpenShared(handle)
	}
	return 0, fmt.Errorf("the %s backend cannot share device memory between processes", d.Info().Backend)
}
