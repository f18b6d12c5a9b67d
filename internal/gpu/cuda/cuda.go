//go:build cgo && linux

// Package cuda is the NVIDIA backend of package gpu: the CUDA driver API, plus cuBLAS for the
// baselines. Both libraries are opened at run time with dlopen, never linked, so that the binary
// builds, and its tests run, on machines with no GPU, no driver and no CUDA toolkit.
//
// Import it for its side effect, which registers the backend as "cuda":
//
//	import _ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
//
// A Device uses the device's primary context, the one the CUDA runtime (and so cuBLAS) uses too.
// CUDA makes a context current per OS thread while goroutines move between threads, so every
// call here sets the context and makes the API call inside one C function (shim.c).
//
// Host memory: a copy to or from memory that MallocHost returned (page-locked) is asynchronous on
// the given stream, as in CUDA, and the caller synchronizes before using the host side. A copy
// to or from any other memory (a Go slice, say) is synchronous: it returns once the host memory
// has been read or written, so Go memory is never left in use by the device after the call.
// Such copies are ordered after earlier work on every blocking stream (the streams NewStream
// makes), as CUDA's legacy default stream is.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// DefaultLibrary is the driver library Open loads: the NVIDIA driver installs it.
const DefaultLibrary = "libcuda.so.1"

func init() {
	gpu.Register("cuda", func() (gpu.Backend, error) { return Open() })
}

// loadMu serialises loading: the C function table is one per process.
var loadMu sync.Mutex

// Open loads the CUDA driver from DefaultLibrary and returns the backend. It fails with an error
// wrapping gpu.ErrLibraryMissing when the driver is not installed, and gpu.ErrNoDevice when it
// sees no GPU.
func Open() (gpu.Backend, error) { return OpenLibrary(DefaultLibrary) }

// OpenLibrary is Open with an explicit driver library (a file name that the dynamic loader
// searches for, or a path). One process uses one driver: once a library is loaded, opening a
// different one fails.
func OpenLibrary(path string) (gpu.Backend, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	if rc := C.kl_cuda_load(cpath, &cerr); rc != 0 {
		msg := C.GoString(cerr)
		C.kl_free_err(cerr)
		if rc == -2 {
			return nil, fmt.Errorf("cuda: cannot load %s: %s", path, msg)
		}
		return nil, fmt.Errorf("cuda: %w: cannot load the CUDA driver library %s (%s); "+
			"install the NVIDIA driver, which provides it, or run with --backend emu to use the CPU emulator",
			gpu.ErrLibraryMissing, path, msg)
	}
	switch r := C.kl_init(); r {
	case cudaSuccess:
	case cudaErrorNoDevice:
		return nil, fmt.Errorf("cuda: %w: the NVIDIA driver is installed but sees no GPU (%v)",
			gpu.ErrNoDevice, callError("cuInit", r))
	case cudaErrorStubLibrary:
		return nil, fmt.Errorf("cuda: %w: %s is the CUDA toolkit's stub, not the driver; "+
			"install the NVIDIA driver, or run with --backend emu to use the CPU emulator",
			gpu.ErrLibraryMissing, path)
	default:
		return nil, fmt.Errorf("cuda: the driver failed to start (is the GPU visible to this machine or container?): %w",
			callError("cuInit", r))
	}
	b := &backend{}
	n, err := b.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("cuda: %w: the NVIDIA driver reports 0 devices", gpu.ErrNoDevice)
	}
	return b, nil
}

// backend is the loaded driver. It holds no state: the function table is in C.
type backend struct{}

func (*backend) Name() string      { return "cuda" }
func (*backend) Toolchain() string { return "nvcc" }

func (*backend) DeviceCount() (int, error) {
	var n C.int
	if err := check("cuDeviceGetCount", C.kl_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// cuDevice returns the driver's handle of device index, checking the range first.
func (b *backend) cuDevice(index int) (C.CUdevice, error) {
	n, err := b.DeviceCount()
	if err != nil {
		return 0, err
	}
	if index < 0 || index >= n {
		return 0, fmt.Errorf("cuda: no device %d (this machine has %d: 0..%d)", index, n, n-1)
	}
	var d C.CUdevice
	if err := check("cuDeviceGet", C.kl_device_get(&d, C.int(index))); err != nil {
		return 0, err
	}
	return d, nil
}

// DeviceInfo reads the device's identity and limits without creating a context.
func (b *backend) DeviceInfo(index int) (gpu.DeviceInfo, error) {
	d, err := b.cuDevice(index)
	if err != nil {
		return gpu.DeviceInfo{}, err
	}
	return describe(index, d)
}

// Open retains the device's primary context.
func (b *backend) Open(index int) (gpu.Device, error) {
	info, err := b.DeviceInfo(index)
	if err != nil {
		return nil, err
	}
	d, err := b.cuDevice(index)
	if err != nil {
		return nil, err
	}
	var ctx C.CUcontext
	if err := check("cuDevicePrimaryCtxRetain", C.kl_primary_ctx_retain(&ctx, d)); err != nil {
		return nil, fmt.Errorf("cuda: open device %d (%s): %w", index, info.Name, err)
	}
	return &device{dev: d, ctx: ctx, info: info}, nil
}

func describe(index int, d C.CUdevice) (gpu.DeviceInfo, error) {
	info := gpu.DeviceInfo{Backend: "cuda", Index: index}

	var name [256]C.char
	if err := check("cuDeviceGetName", C.kl_device_name(&name[0], C.int(len(name)), d)); err != nil {
		return info, err
	}
	info.Name = C.GoString(&name[0])

	// The identity and the limits every lab needs: failing to read one is an error.
	device := func(attr int) (int, error) { return deviceAttribute(d, attr) }
	if err := readAttrs(device, false, []intAttr{
		{attrComputeCapabilityMajor, &info.ComputeMajor},
		{attrComputeCapabilityMinor, &info.ComputeMinor},
		{attrMultiprocessorCount, &info.SMs},
		{attrWarpSize, &info.WarpSize},
		{attrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{attrMaxSharedMemoryPerBlock, &info.MaxSharedPerBlock},
		{attrMaxSharedMemoryPerBlockOptin, &info.MaxSharedOptin},
	}); err != nil {
		return info, err
	}
	// Figures a driver may stop reporting (CUDA 13 deprecates the clock rates): 0 when absent.
	_ = readAttrs(device, true, []intAttr{
		{attrClockRate, &info.SMClockKHz},
		{attrMemoryClockRate, &info.MemClockKHz},
		{attrGlobalMemoryBusWidth, &info.MemBusWidthBits},
	})
	if l2, err := deviceAttribute(d, attrL2CacheSize); err == nil {
		info.L2Bytes = int64(l2)
	}

	var total C.size_t
	if err := check("cuDeviceTotalMem_v2", C.kl_device_total_mem(&total, d)); err != nil {
		return info, err
	}
	info.MemoryBytes = int64(total)

	var version C.int
	if err := check("cuDriverGetVersion", C.kl_driver_version(&version)); err != nil {
		return info, err
	}
	info.DriverVersion = driverVersionString(int(version))

	var uuid C.CUuuid
	if check("cuDeviceGetUuid_v2", C.kl_device_uuid(&uuid, d)) == nil {
		info.UUID = uuidString(C.GoBytes(unsafe.Pointer(&uuid.bytes[0]), 16))
	}
	var bus [64]C.char
	if check("cuDeviceGetPCIBusId", C.kl_device_pci_bus_id(&bus[0], C.int(len(bus)), d)) == nil {
		info.PCIBusID = C.GoString(&bus[0])
	}
	return info, nil
}

// intAttr is an attribute the driver reports as an int, and where it goes.
type intAttr struct {
	attr int
	dst  *int
}

// readAttrs reads each of attrs with read into its place. The first failure is the error unless
// the attributes are optional; then one that cannot be read is left as it is.
func readAttrs(read func(attr int) (int, error), optional bool, attrs []intAttr) error {
	for _, a := range attrs {
		v, err := read(a.attr)
		if err != nil {
			if optional {
				continue
			}
			return err
		}
		*a.dst = v
	}
	return nil
}

func deviceAttribute(d C.CUdevice, attr int) (int, error) {
	var v C.int
	if err := check("cuDeviceGetAttribute", C.kl_device_attribute(&v, C.int(attr), d)); err != nil {
		return 0, fmt.Errorf("reading %s: %w", attributeName(attr), err)
	}
	return int(v), nil
}

// driverVersionString turns cuDriverGetVersion's 1000·major + 10·minor into "13.0".
func driverVersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10) }

// uuidString formats the 16 bytes as nvidia-smi does: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func uuidString(b []byte) string {
	if len(b) != 16 {
		return ""
	}
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
