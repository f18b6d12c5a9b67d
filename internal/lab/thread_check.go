package lab

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// CheckThreads compares sampled outputs of a grid of threads (one output per thread, blocks of
// block threads) bit for bit with want(tid), recomputed on all cores: for kernels where one
// thread's work is too long to recompute for every thread. It samples the first and last threads
// of the grid and of its first and last blocks, and random ones (deterministic in seed), up to
// samples. Wrong outputs are named by thread, and Checked counts every output (the caller checks
// them all some other way too: a sum, a NaN count).
func CheckThreads[T check.Number](out []T, block, samples int, seed uint64, want func(tid int) T) check.Report {
	n, seen := len(out), map[int]bool{}
	for _, t := range []int{0, 1, block - 1, block, n - block, n - 1} {
		if t >= 0 && t < n {
			seen[t] = true
		}
	}
	for rng := rand.New(rand.NewPCG(seed, 0xF3A)); len(seen) < min(n, samples); {
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
