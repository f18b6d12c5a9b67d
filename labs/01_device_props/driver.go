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
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
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

var _ lab.DeviceRecorder = Lab{}
var _ lab.Deriver = Lab{}

// prepares are the suites' Prepare functions.
var prepares = map[string]func(*lab.Env, *lab.Suite, lab.Problem) (lab.Case, error){
	SuiteHBM: prepareCopy, SuiteL2: prepareL2, SuiteFMA: prepareFMA,
	SuiteTensor: prepareTensor, SuiteLaunch: prepareLaunch, SuiteHostLink: prepareHostLink,
}

// Prepare allocates and fills the problem p of suite s.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	prepare, ok := prepares[s.Name]
	if !ok {
		return nil, fmt.Errorf("lab %s has no suite %q", LabDir, s.Name)
	}
	c, err := prepare(env, s, p)
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// ---- helpers shared by the cases ----

// blockSize reads the variant's block size and checks it against the device.
func blockSize(env *lab.Env, v *lab.Variant, def int64) (int, error) {
	b, limit := v.Int("block", def), cmp.Or(int64(max(env.Device.Info().MaxThreadsPerBlock, 0)), 1024) // 1024 if unknown
	if b < 1 || b > limit {
		return 0, fmt.Errorf("variant %s: block %d is outside 1..%d (params.block in lab.yaml)", v.Name, b, limit)
	}
	return int(b), nil
}

// kernelOf is the variant's kernel and its block size (blockSize).
func kernelOf(env *lab.Env, v *lab.Variant, defBlock int64) (gpu.Kernel, int, error) {
	k, err := env.Kernel(v)
	if err != nil {
		return nil, 0, err
	}
	block, err := blockSize(env, v, defBlock)
	return k, block, err
}

// smCount is the number of SMs, used to size grids (at least 1, even for odd backends).
func smCount(env *lab.Env) int { return max(env.Device.Info().SMs, 1) }

// cfg is a 1-D launch on the lab's stream.
func cfg(env *lab.Env, grid, block int) gpu.LaunchConfig {
	return gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(block), Stream: env.Stream}
}

// threadSamples is how many threads a check recomputes on the CPU, at most.
const threadSamples = 96

// checkThreads compares sampled outputs of a grid of threads (blocks of block) bit for bit with
// want(tid), recomputed on all cores (one thread's work can be millions of steps): the first and
// last threads of the grid and of its first and last blocks, and random ones (deterministic in
// seed), up to threadSamples. Wrong outputs are named by thread, and Checked counts every output
// (the caller checks them all some other way too).
func checkThreads[T check.Number](out []T, block int, seed uint64, want func(tid int) T) check.Report {
	n, seen := len(out), map[int]bool{}
	for _, t := range []int{0, 1, block - 1, block, n - block, n - 1} {
		if t >= 0 && t < n {
			seen[t] = true
		}
	}
	for rng := rand.New(rand.NewPCG(seed, 0xF3A)); len(seen) < min(n, threadSamples); {
		seen[rng.IntN(n)] = true
	}
	tids := slices.Sorted(maps.Keys(seen))
	got, ref := make([]T, len(tids)), make([]T, len(tids))
	matref.ParallelFor(len(tids), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			got[s], ref[s] = out[tids[s]], want(tids[s])
		}
	})
	rep := check.Exact(got, ref)
	for i := range rep.Mismatches {
		rep.Mismatches[i].Index = tids[rep.Mismatches[i].Index]
	}
	if rep.MaxErrAt >= 0 {
		rep.MaxErrAt = tids[rep.MaxErrAt]
	}
	rep.Checked = n
	return rep
}

// failWith fails rep for a reason found beside its comparison, said first in its note.
func failWith(rep *check.Report, reason string) {
	if rep.Note != "" {
		reason += "; " + rep.Note
	}
	rep.OK, rep.Note = false, reason
}
