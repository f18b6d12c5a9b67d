package gemm

import (
	"fmt"
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// EpilogueSamples is how many elements, computed exactly, check a bias + ReLU product above
// matref.FullCheckLimit: the ReLU is not linear, so Freivalds' check does not apply to its output.
const EpilogueSamples = 4096

// BiasReLU applies the fused epilogue in place to float64 references of elements of alpha·A·B +
// beta·C0 (M×N, row-major): ref[s] = max(0, ref[s] + bias[j]), j the column of the element at
// index at[s] (s itself when at is nil: the whole product). The error scale of each element grows
// by |bias[j]|; an element the ReLU clamps keeps its scale, so a kernel that clamps a value that
// should be slightly positive (or the reverse) within rounding still passes.
func BiasReLU(ref, scale []float64, bias []float32, at []int, n int) {
	for s := range ref {
		i := s
		if at != nil {
			i = at[s]
		}
		b := float64(bias[i%n])
		ref[s] = math.Max(0, ref[s]+b)
		scale[s] += math.Abs(b)
	}
}

// checkBiasReLU compares C with max(0, alpha·A·B + beta·C0 + bias): every element up to
// matref.FullCheckLimit, else every element for NaN and EpilogueSamples exactly computed ones.
func (c *gemmCase) checkBiasReLU(out []float32, tol float64) check.Report {
	m, n := c.sh.M, c.sh.N
	if int64(m)*int64(n)*int64(c.sh.K) <= matref.FullCheckLimit {
		ref, scale := c.prod.Reference()
		BiasReLU(ref, scale, c.bias, nil, n)
		r := matref.CheckFull(out, ref, scale, tol)
		r.Method += ", after bias and ReLU"
		return r
	}
	samples := matref.SampleEntries(m, n, EpilogueSamples, c.seed)
	at := make([]int, len(samples))
	ref := make([]float64, len(samples))
	scale := make([]float64, len(samples))
	matref.ParallelFor(len(samples), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			i, j := samples[s][0], samples[s][1]
			at[s] = i*n + j
			ref[s], scale[s] = c.prod.Entry(i, j)
		}
	})
	BiasReLU(ref, scale, c.bias, at, n)
	r := matref.CheckAt(out, at, ref, scale, tol)
	r.Method = fmt.Sprintf("%d sampled elements against float64, after bias and ReLU; every element for NaN", len(samples))
	if nan := matref.NonFinite(out); nan > 0 {
		r.OK = false
		r.Unwritten = nan
		r.Note = fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from a NaN poison)", nan, len(out))
	}
	r.Checked = len(out)
	return r
}
