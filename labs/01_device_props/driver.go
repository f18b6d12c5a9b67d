// Package devprops is lab 01, "the device and how to measure it": it records every property of
// the device (CUDA attributes and NVML) and measures the ceilings that later labs compare with —
// HBM and L2 copy bandwidth, the FP32 FMA rate, the bf16 tensor-core rate through cuBLAS, the
// cost of a kernel launch, and the host link.
//
// Like every lab it only supplies what differs: problems on the device, one call per variant,
// a check and the work counts (lab.Driver); the engine allocates, poisons, checks, times, records
// and frees. It also implements lab.DeviceRecorder (the property tables) and lab.Deriver (the
// measured ceilings).
package devprops

import (
	"fmt"

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
	_ lab.Driver         = Lab{}
	_ lab.DeviceRecorder = Lab{}
	_ lab.Deriver        = Lab{}
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
		c, err = prepareL2(env, s, p)
	case SuiteFMA:
		c, err = prepareFMA(env, p)
	case SuiteTensor:
		c, err = prepareTensor(env, p)
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

// blockSize reads the variant's block size and checks it against the device.
func blockSize(env *lab.Env, v *lab.Variant, def int64) (int, error) {
	b := v.Int("block", def)
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
func smCount(env *lab.Env) int { return max(env.Device.Info().SMs, 1) }

// cfg is a 1-D launch on the lab's stream.
func cfg(env *lab.Env, grid, block int) gpu.LaunchConfig {
	return gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(block), Stream: env.Stream}
}

// fillHash writes element i = HashFloat(seed, i) for i in [0, n) of buf, with the helper kernel
// fill_f32 (lab.yaml helpers:): gigabytes of input are generated faster on the device than
// uploaded.
func fillHash(env *lab.Env, buf *gpu.Buffer[float32], seed uint64) error {
	k, err := env.KernelByEntry(FillEntry)
	if err != nil {
		return fmt.Errorf("the input generator %s (kernels/00_fill.cu, a helper in lab.yaml) is not loaded: did it build? %w", FillEntry, err)
	}
	const block = 256
	n := buf.Len()
	grid := max(min(smCount(env)*8, lab.CeilDiv(n, block)), 1)
	if err := gpu.Launch(k, cfg(env, grid, block), buf, int64(n), seed); err != nil {
		return fmt.Errorf("filling the input on the device: %w", err)
	}
	return env.Stream.Synchronize()
}
