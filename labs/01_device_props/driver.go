// Package devprops is lab 01, "the device and how to measure it": it records every property of
// the device (CUDA attributes and NVML) and measures the ceilings that later labs compare with —
// HBM and L2 copy bandwidth, the FP32 FMA rate, the bf16 tensor-core rate through cuBLAS, the
// cost of a kernel launch, and the host link.
//
// Like every lab it only supplies what differs: problems on the device, one call per variant,
// a check and the work counts (lab.Driver); the engine builds, checks, times and records. It also
// implements lab.Describer (the property tables) and lab.Summarizer (the measured ceilings).
package devprops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// LabDir is the lab's directory name, under which the driver registers.
const LabDir = "01_device_props"

// Suite names (lab.yaml).
const (
	SuiteHBM      = "hbm_bandwidth"
	SuiteL2       = "l2_bandwidth"
	SuiteFMA      = "fp32_fma"
	SuiteTensor   = "tensor_bf16"
	SuiteLaunch   = "launch_latency"
	SuiteHostLink = "host_link"
)

// Library calls that variants name in lab.yaml (library: ...). The driver makes these calls
// itself, through the device API.
const (
	LibMemcpyDtoD   = "memcpy_dtod"   // Device.CopyDtoD (cuMemcpyDtoDAsync)
	LibMemcpyHtoD   = "memcpy_htod"   // Device.CopyHtoD (cuMemcpyHtoDAsync)
	LibMemcpyDtoH   = "memcpy_dtoh"   // Device.CopyDtoH (cuMemcpyDtoHAsync)
	LibCublasGemmEx = "cublas_gemmex" // BLAS.GemmEx, bf16 in, f32 out, f32 accumulation
)

// FillEntry is the helper kernel that generates inputs on the device (kernels/00_fill.cu).
const FillEntry = "fill_f32"

// Lab is the driver of lab 01.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var (
	_ lab.Driver     = Lab{}
	_ lab.Describer  = Lab{}
	_ lab.Summarizer = Lab{}
)

// Prepare allocates and fills the problem p of suite s.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	var (
		c   lab.Case
		err error
	)
	switch s.Name {
	case SuiteHBM:
		c, err = prepareCopy(env, p)
	case SuiteL2:
		c, err = prepareL2(env, p)
	case SuiteFMA:
		c, err = prepareFMA(env, p)
	case SuiteTensor:
		c, err = prepareTensor(env, s, p)
	case SuiteLaunch:
		c, err = prepareLaunch(env, p)
	case SuiteHostLink:
		c, err = prepareHostLink(env, p)
	default:
		return nil, fmt.Errorf("lab %s has no suite %q", LabDir, s.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// ---- helpers shared by the cases ----

// nanBits is the float32 NaN that outputs are poisoned with; no correct kernel writes it.
const nanBits = 0x7FC00000

// param reads a launch parameter of a variant, with a default.
func param(v *lab.Variant, key string, def int64) int64 {
	if x, ok := v.Params[key]; ok {
		return x
	}
	return def
}

// blockSize reads the variant's block size and checks it against the device.
func blockSize(env *lab.Env, v *lab.Variant, def int64) (int, error) {
	b := param(v, "block", def)
	limit := int64(env.Device.Info().MaxThreadsPerBlock)
	if limit <= 0 {
		limit = 1024
	}
	if b < 1 || b > limit {
		return 0, fmt.Errorf("variant %s: block %d is outside 1..%d (params.block in lab.yaml)", v.Name, b, limit)
	}
	return int(b), nil
}

// smCount is the number of SMs, used to size grids (at least 1, even for odd backends).
func smCount(env *lab.Env) int64 { return int64(max(env.Device.Info().SMs, 1)) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// cfg is a 1-D launch on the lab's stream.
func cfg(env *lab.Env, grid, block int64) gpu.LaunchConfig {
	return gpu.LaunchConfig{Grid: gpu.D1(int(grid)), Block: gpu.D1(int(block)), Stream: env.Stream}
}

// syncStream waits for the lab's stream (or the whole device when there is none).
func syncStream(env *lab.Env) error {
	if env.Stream != nil {
		return env.Stream.Synchronize()
	}
	return env.Device.Synchronize()
}

// checkFits refuses problems that cannot fit in the device's free memory, with a clear message
// instead of an out-of-memory error halfway through the allocations.
func checkFits(env *lab.Env, bytes int64) error {
	free, total, err := env.Device.MemInfo()
	if err != nil || total == 0 {
		return nil // no figure: let the allocation say
	}
	if bytes > free {
		return fmt.Errorf("needs %s of device memory, %s of %s is free (use a smaller problem, or a device with more memory)",
			gpu.HumanBytes(bytes), gpu.HumanBytes(free), gpu.HumanBytes(total))
	}
	return nil
}

// hostFloats views n float32 values of page-locked memory as a slice.
func hostFloats(h gpu.HostMem, n int) []float32 {
	return unsafe.Slice((*float32)(h.Pointer()), n)
}

// hostBytes views page-locked memory as a byte slice.
func hostBytes(h gpu.HostMem) []byte {
	return unsafe.Slice((*byte)(h.Pointer()), int(h.Bytes()))
}

// stagingFloats is the size of the host buffer that fills and checks stream through.
const stagingFloats = 16 << 20 // 64 MiB

// fillHash writes element i = HashFloat(seed, i) for i in [0, n) at ptr, with the helper kernel
// fill_f32 (lab.yaml helpers:): gigabytes of input are generated faster on the device than
// uploaded.
func fillHash(env *lab.Env, ptr gpu.Ptr, n int64, seed uint64) error {
	k, err := env.KernelByEntry(FillEntry)
	if err != nil {
		return fmt.Errorf("the input generator %s (kernels/00_fill.cu, a helper in lab.yaml) is not loaded: did it build? %w", FillEntry, err)
	}
	const block = 256
	grid := max(min(smCount(env)*8, ceilDiv(n, block)), 1)
	if err := gpu.Launch(k, cfg(env, grid, block), ptr, n, seed); err != nil {
		return fmt.Errorf("filling the input on the device: %w", err)
	}
	return syncStream(env)
}

// fillBytes sets every byte of b to v (fast: doubling copies).
func fillBytes(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for filled := 1; filled < len(b); filled *= 2 {
		copy(b[filled:], b[:filled])
	}
}

// isNaN32 reports whether a float32 is NaN without converting.
func isNaN32(f float32) bool { return f != f }

// finite32 reports whether f is neither NaN nor ±Inf.
func finite32(f float32) bool { return !isNaN32(f) && !math.IsInf(float64(f), 0) }
