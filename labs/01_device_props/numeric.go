package devprops

// The host twins of the kernels' numerics (hash.cuh, 02_fma.cu), and the fp32_fma and tensor_bf16 suites.

import (
	"cmp"
	"fmt"
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// UnitFloat maps the top 24 bits of h to an odd multiple of 2⁻²⁴ in (−1, 1): exact in float32,
// never zero. It is kl_unit_float in kernels/hash.cuh.
func UnitFloat(h uint64) float32 {
	u := int32(h >> 40)
	return float32(2*u+1-(1<<24)) * (1.0 / 16777216.0)
}

// HashFloat is element i of the float stream for seed (kl_hash_float on the device), from
// matref.SplitMix64 (kl_splitmix64 in kernels/hash.cuh).
func HashFloat(seed, i uint64) float32 { return UnitFloat(matref.SplitMix64(seed, i)) }

// fmaKeysPerThread is the stride of hash indices between threads in kernels/02_fma.cu, and
// maxFMAChains the largest CHAINS its hash layout allows (indices 2..9 of 16).
const fmaKeysPerThread, maxFMAChains = 16, 8

// FMAChainRef computes on the CPU what thread tid of fma_chains<chains> writes: chains
// independent chains x = fma(x, a, b) of iters steps each, summed in order x0 + x1 + … .
func FMAChainRef(seed, tid uint64, chains, iters int) float32 {
	key := tid * fmaKeysPerThread
	a := float32(0x8000+uint32(matref.SplitMix64(seed, key)>>49)) * (1.0 / 65536.0)
	b := HashFloat(seed, key+1)
	var x [maxFMAChains]float32
	for j := 0; j < chains; j++ {
		x[j] = HashFloat(seed, key+2+uint64(j))
	}
	for i := 0; i < iters; i++ {
		for j := 0; j < chains; j++ {
			x[j] = matref.FMA32(x[j], a, b)
		}
	}
	s := x[0]
	for j := 1; j < chains; j++ {
		s += x[j]
	}
	return s
}

// prepareFMA is one problem of fp32_fma: threads_per_sm threads on every SM, each doing `fmas`
// FMAs split over the variant's chains, so the variants are compared on equal work. Work counts 2
// FLOPs per FMA (not the few additions that sum the chains).
func prepareFMA(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	perSM, fmas, seed := p.Int("threads_per_sm", 2048), p.Int("fmas", 4096), env.RNG.Uint64()
	if perSM < 1 {
		return nil, fmt.Errorf("threads_per_sm = %d must be at least 1", perSM)
	}
	if fmas < maxFMAChains || fmas%maxFMAChains != 0 || fmas/maxFMAChains > math.MaxInt32 {
		return nil, fmt.Errorf("fmas = %d must be a positive multiple of %d (so that every chain count divides it)", fmas, maxFMAChains)
	}
	threads := int64(env.SMs()) * perSM
	out, err := lab.Output[float32](env, "out", int(threads), lab.PoisonNaN32)
	if err != nil {
		return nil, err
	}
	// shape is the variant's chains, steps per chain and block. Every SM gets threads_per_sm/block
	// blocks: one wave, all resident at once, so no SM idles while a last partial wave runs.
	shape := func(v *lab.Variant) (chains, iters, block int, err error) {
		ch := v.Int("chains", 0)
		if ch < 1 || ch > maxFMAChains || fmas%ch != 0 {
			return 0, 0, 0, fmt.Errorf("variant %s: params.chains = %d must match the kernel's CHAINS (1..%d, dividing fmas = %d)",
				v.Name, ch, maxFMAChains, fmas)
		}
		b, err := env.Block(v, "block", 256)
		if err != nil {
			return 0, 0, 0, err
		}
		if b = min(b, int(perSM)); perSM%int64(b) != 0 {
			return 0, 0, 0, fmt.Errorf("variant %s: threads_per_sm = %d is not a multiple of the block size %d", v.Name, perSM, b)
		}
		return int(ch), int(fmas / ch), b, nil
	}
	run := func(v *lab.Variant) error {
		_, iters, block, err := shape(v)
		if err != nil {
			return err
		}
		k, err := env.Kernel(v)
		if err != nil {
			return err
		}
		return gpu.Launch(k, env.Config1D(int(threads)/block, block), out, int32(iters), seed)
	}
	chk := func(v *lab.Variant, outs *lab.Outputs) (check.Report, error) {
		chains, iters, block, err := shape(v)
		if err != nil {
			return check.Report{}, err
		}
		got, err := outs.Float32(out)
		if err != nil {
			return check.Report{}, err
		}
		rep := lab.CheckThreads(got, block, threadSamples, seed, func(tid int) float32 { return FMAChainRef(seed, uint64(tid), chains, iters) })
		rep.Method = fmt.Sprintf("exact against the FMA chains recomputed on the CPU (FMA32) for %d sampled threads; every output checked for NaN",
			min(len(got), threadSamples))
		if rep.Unwritten = matref.NonFinite(got); rep.Unwritten > 0 {
			rep.FailWith(fmt.Sprintf("%d of %d outputs are NaN or Inf (first at thread %d)", rep.Unwritten, len(got), matref.FirstNonFinite(got)))
		}
		return rep, nil
	}
	return lab.CaseOf(run, chk, lab.Work{FLOPs: 2 * float64(threads) * float64(fmas), Bytes: 4 * float64(threads)}), nil
}

// defaultTensorTol is the tolerance when the suite sets none (lab.yaml says why 1e-5).
const defaultTensorTol = 1e-5

// prepareTensor is one problem of tensor_bf16: C = A·B with row-major bf16 A (m×k) and B (k×n)
// and a float32 C (m×n), through the vendor BLAS: the ceiling lab 02's GEMM kernels are compared
// with. A CPU reference of an 8192³ product would take minutes, so the check is Freivalds' test
// on every row, plus a few entries recomputed exactly.
func prepareTensor(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	m, n, k := int(p.Int("m", 0)), int(p.Int("n", 0)), int(p.Int("k", 0))
	if m < 1 || n < 1 || k < 1 {
		return nil, fmt.Errorf("m, n, k = %d, %d, %d: all three must be at least 1", m, n, k)
	}
	if err := lab.NeedMemory(env, int64(m*k+k*n)*2+int64(m*n)*4); err != nil {
		return nil, err
	}
	blas, err := env.BLAS()
	if err != nil {
		return nil, fmt.Errorf("this suite needs the vendor BLAS: %w", err)
	}
	// A and B are uniform in [-1, 1), rounded to bf16 in place by UploadAs: the host keeps
	// exactly the values the device multiplies.
	a, b := lab.Uniform(env, m*k), lab.Uniform(env, k*n)
	bufs := lab.NewPrep(env)
	dA, dB := bufs.UploadAs("A", lab.BF16, a), bufs.UploadAs("B", lab.BF16, b)
	dC := lab.PrepOutput[float32](bufs, "C", m*n, lab.PoisonNaN32)
	if bufs.Err != nil {
		return nil, bufs.Err
	}
	freivalds, err := matref.NewRowFreivalds(a, b, m, n, k, matref.RowFreivaldsVector(env.RNG, n))
	if err != nil {
		return nil, err
	}
	prod := matref.Product{M: m, N: n, K: k, Alpha: 1, A: a, B: b}
	samples := matref.ExactSamples(&prod, matref.SampleEntries(m, n, 16, env.RNG.Uint64()))
	run := func(v *lab.Variant) error {
		if v.Library != LibCublasGemmEx {
			return fmt.Errorf("variant %s: %s only knows the library call %q", v.Name, SuiteTensor, LibCublasGemmEx)
		}
		return blas.GemmEx(env.Stream, gpu.RowMajorGemm(m, n, k, dA, dB, dC.DevicePtr(), gpu.BF16, gpu.F32))
	}
	chk := func(_ *lab.Variant, outs *lab.Outputs) (check.Report, error) {
		got, err := outs.Float32(dC)
		if err != nil {
			return check.Report{}, err
		}
		tol := cmp.Or(outs.Tolerance(), defaultTensorTol)
		return check.All(freivalds.Check(got, tol), matref.CheckExactSamples(samples, got, n, tol)), nil
	}
	fm, fn, fk := float64(m), float64(n), float64(k)
	return lab.CaseOf(run, chk, lab.Work{FLOPs: 2 * fm * fn * fk, Bytes: 2*(fm*fk+fk*fn) + 4*fm*fn}), nil
}
