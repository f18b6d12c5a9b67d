package devprops

import (
	"fmt"
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// fmaCase is one problem of fp32_fma: threads_per_sm threads on every SM, each doing `fmas`
// fused multiply-adds (split over the variant's chains). The problem fixes the total work, so the
// variants (1, 4 or 8 chains per thread) are compared on equal terms.
type fmaCase struct {
	env                         *lab.Env
	threadsPerSM, threads, fmas int64 // threads: threads_per_sm on every SM; fmas: per thread
	seed                        uint64
	out                         *gpu.Buffer[float32]
}

func prepareFMA(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	c := &fmaCase{env: env, threadsPerSM: p.Int("threads_per_sm", 2048), fmas: p.Int("fmas", 4096), seed: env.RNG.Uint64()}
	if c.threadsPerSM < 1 {
		return nil, fmt.Errorf("threads_per_sm = %d must be at least 1", c.threadsPerSM)
	}
	if c.fmas < maxFMAChains || c.fmas%maxFMAChains != 0 || c.fmas/maxFMAChains > math.MaxInt32 {
		return nil, fmt.Errorf("fmas = %d must be a positive multiple of %d (so that every chain count divides it)", c.fmas, maxFMAChains)
	}
	c.threads = int64(smCount(env)) * c.threadsPerSM
	var err error
	c.out, err = lab.Output[float32](env, "out", int(c.threads), lab.PoisonNaN32)
	return c, err
}

// shape returns the variant's chain count, steps per chain, block and grid.
func (c *fmaCase) shape(v *lab.Variant) (chains, iters, block, grid int, err error) {
	ch := v.Int("chains", 0)
	if ch < 1 || ch > maxFMAChains || c.fmas%ch != 0 {
		return 0, 0, 0, 0, fmt.Errorf("variant %s: params.chains = %d must match the kernel's CHAINS (1..%d, dividing fmas = %d)",
			v.Name, ch, maxFMAChains, c.fmas)
	}
	b, err := blockSize(c.env, v, 256)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	b = min(b, int(c.threadsPerSM))
	if c.threadsPerSM%int64(b) != 0 {
		return 0, 0, 0, 0, fmt.Errorf("variant %s: threads_per_sm = %d is not a multiple of the block size %d", v.Name, c.threadsPerSM, b)
	}
	// Every SM gets threads_per_sm/block blocks: one wave, all blocks resident at once (as long as
	// threads_per_sm is within the SM's limit), so no SM idles while a last partial wave runs.
	return int(ch), int(c.fmas / ch), b, int(c.threads) / b, nil
}

func (c *fmaCase) Run(v *lab.Variant) error {
	_, iters, block, grid, err := c.shape(v)
	if err != nil {
		return err
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	return gpu.Launch(k, cfg(c.env, grid, block), c.out, int32(iters), c.seed)
}

// Check compares sampled threads bit for bit with the CPU's chains, and every output must be
// written and finite.
func (c *fmaCase) Check(v *lab.Variant, outs *lab.Outputs) (check.Report, error) {
	chains, iters, block, _, err := c.shape(v)
	if err != nil {
		return check.Report{}, err
	}
	out, err := outs.Float32(c.out)
	if err != nil {
		return check.Report{}, err
	}
	rep := checkThreads(out, block, c.seed, func(tid int) float32 { return FMAChainRef(c.seed, uint64(tid), chains, iters) })
	rep.Method = fmt.Sprintf("exact against the FMA chains recomputed on the CPU (FMA32) for %d sampled threads; every output checked for NaN",
		min(len(out), threadSamples))
	if rep.Unwritten = matref.NonFinite(out); rep.Unwritten > 0 {
		first := matref.FirstNonFinite(out)
		failWith(&rep, fmt.Sprintf("%d of %d outputs are NaN or Inf (first at thread %d)", rep.Unwritten, len(out), first))
	}
	return rep, nil
}

// Work counts 2 FLOPs per FMA. The few additions that sum the chains at the end are not counted.
func (c *fmaCase) Work() lab.Work {
	return lab.Work{FLOPs: 2 * float64(c.threads) * float64(c.fmas), Bytes: 4 * float64(c.threads)}
}
