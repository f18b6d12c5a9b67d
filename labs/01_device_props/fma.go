package devprops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// fmaCase is one problem of fp32_fma: threads_per_sm threads on every SM, each doing `fmas`
// fused multiply-adds (split over the variant's chains). The problem fixes the total work, so the
// variants (1, 4 or 8 chains per thread) are compared on equal terms.
type fmaCase struct {
	env          *lab.Env
	threadsPerSM int64
	sms          int64 // SMs of the device
	fmas         int64 // per thread
	seed         uint64
	out          *gpu.Buffer[float32]
}

// fmaSamples is how many threads the check recomputes on the CPU (plus the first and last
// threads of the grid and of a few blocks).
const fmaSamples = 96

func prepareFMA(env *lab.Env, p lab.Problem) (lab.Case, error) {
	c := &fmaCase{
		env:          env,
		threadsPerSM: p.Int("threads_per_sm", 2048),
		sms:          int64(smCount(env)),
		fmas:         p.Int("fmas", 4096),
		seed:         env.RNG.Uint64(),
	}
	if c.threadsPerSM < 1 {
		return nil, fmt.Errorf("threads_per_sm = %d must be at least 1", c.threadsPerSM)
	}
	if c.fmas < maxFMAChains || c.fmas%maxFMAChains != 0 || c.fmas/maxFMAChains > math.MaxInt32 {
		return nil, fmt.Errorf("fmas = %d must be a positive multiple of %d (so that every chain count divides it)", c.fmas, maxFMAChains)
	}
	var err error
	if c.out, err = lab.Output[float32](env, "out", int(c.threads()), lab.PoisonNaN32); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *fmaCase) threads() int64 { return c.sms * c.threadsPerSM }

// shape returns the variant's chain count, steps per chain, block and grid.
func (c *fmaCase) shape(v *lab.Variant) (chains, iters int, block, grid int64, err error) {
	ch := v.Int("chains", 0)
	if ch < 1 || ch > maxFMAChains || c.fmas%ch != 0 {
		return 0, 0, 0, 0, fmt.Errorf("variant %s: params.chains = %d must match the kernel's CHAINS (1..%d, dividing fmas = %d)",
			v.Name, ch, maxFMAChains, c.fmas)
	}
	b, err := blockSize(c.env, v, 256)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	block = min(int64(b), c.threadsPerSM)
	if c.threadsPerSM%block != 0 {
		return 0, 0, 0, 0, fmt.Errorf("variant %s: threads_per_sm = %d is not a multiple of the block size %d", v.Name, c.threadsPerSM, block)
	}
	// Every SM gets threads_per_sm/block blocks: one wave, all blocks resident at once (as long as
	// threads_per_sm is within the SM's limit), so no SM idles while a last partial wave runs.
	grid = c.sms * (c.threadsPerSM / block)
	return int(ch), int(c.fmas / ch), block, grid, nil
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
	return gpu.Launch(k, cfg(c.env, int(grid), int(block)), c.out, int32(iters), c.seed)
}

func (c *fmaCase) Check(v *lab.Variant, outs *lab.Outputs) (check.Report, error) {
	chains, iters, block, _, err := c.shape(v)
	if err != nil {
		return check.Report{}, err
	}
	out, err := outs.Float32(c.out)
	if err != nil {
		return check.Report{}, err
	}
	// Every output must be written and finite...
	bad := 0
	firstBad := -1
	for i, x := range out {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			bad++
			if firstBad < 0 {
				firstBad = i
			}
		}
	}
	// ...and the sampled threads must match the CPU's chain bit for bit.
	tids := c.sampleThreads(block)
	got := make([]float32, len(tids))
	want := make([]float32, len(tids))
	for s, t := range tids {
		got[s] = out[t]
	}
	// Each sample is a whole chain (up to millions of FMAs): spread them over the cores.
	matref.ParallelFor(len(tids), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			want[s] = FMAChainRef(c.seed, uint64(tids[s]), chains, iters)
		}
	})
	rep := check.Exact(got, want)
	rep.Method = fmt.Sprintf("exact against the FMA chains recomputed on the CPU (FMA32) for %d sampled threads; every output checked for NaN", len(tids))
	for i := range rep.Mismatches { // report thread ids, not sample numbers
		rep.Mismatches[i].Index = tids[rep.Mismatches[i].Index]
	}
	if rep.MaxErrAt >= 0 {
		rep.MaxErrAt = tids[rep.MaxErrAt]
	}
	rep.Checked = len(out)
	if bad > 0 {
		rep.OK = false
		rep.Unwritten = bad
		note := fmt.Sprintf("%d of %d outputs are NaN or Inf (first at thread %d)", bad, len(out), firstBad)
		if rep.Note != "" {
			note += "; " + rep.Note
		}
		rep.Note = note
	}
	return rep, nil
}

// sampleThreads picks the threads to recompute: the first and last of the grid, of the first and
// last blocks, and random ones (deterministic in the case's seed).
func (c *fmaCase) sampleThreads(block int64) []int {
	n := int(c.threads())
	seen := map[int]bool{}
	add := func(t int) {
		if t >= 0 && t < n {
			seen[t] = true
		}
	}
	b := int(block)
	for _, t := range []int{0, 1, b - 1, b, n - b, n - 1} {
		add(t)
	}
	rng := rand.New(rand.NewPCG(c.seed, 0xF3A))
	for len(seen) < min(n, fmaSamples) {
		add(rng.IntN(n))
	}
	tids := make([]int, 0, len(seen))
	for t := range seen {
		tids = append(tids, t)
	}
	sort.Ints(tids)
	return tids
}

// Work counts 2 FLOPs per FMA. The few additions that sum the chains at the end are not counted.
func (c *fmaCase) Work() lab.Work {
	return lab.Work{FLOPs: 2 * float64(c.threads()) * float64(c.fmas), Bytes: 4 * float64(c.threads())}
}
