package devprops

// The host side of this lab's checks: the fill hash and the FMA chains recomputed exactly, and
// Freivalds' test per row with exactly recomputed entries for the bf16 product. (Bf16 rounding,
// the hash generator and the parallel loops are matref's, shared with the GEMM labs.)

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// ---- counter-based hash (the host twin of kernels/hash.cuh) ----

// UnitFloat maps the top 24 bits of h to an odd multiple of 2⁻²⁴ in (−1, 1): exact in float32,
// never zero. It is kl_unit_float in kernels/hash.cuh.
func UnitFloat(h uint64) float32 {
	u := int32(h >> 40)
	return float32(2*u+1-(1<<24)) * (1.0 / 16777216.0)
}

// HashFloat is element i of the float stream for seed (kl_hash_float on the device), from
// matref.SplitMix64 (kl_splitmix64 in kernels/hash.cuh).
func HashFloat(seed, i uint64) float32 { return UnitFloat(matref.SplitMix64(seed, i)) }

// ---- exact float32 fused multiply-add ----

// FMA32 returns x·y + z rounded once to float32 (round to nearest, ties to even), which is what
// the GPU's FFMA and C's fmaf compute.
//
// float32(math.FMA(x, y, z)) is not quite that: it rounds to float64 first and then to float32,
// and the two roundings disagree when the float64 result lands exactly halfway between two
// float32 values while the exact result does not. FMA32 computes the float64 rounding error
// exactly (TwoSum; the product of two float32 values is exact in float64) and breaks such ties
// in the direction of the error.
func FMA32(x, y, z float32) float32 {
	p := float64(x) * float64(y) // exact: 24-bit × 24-bit mantissas fit in 53 bits
	c := float64(z)
	s := p + c
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bv := s - p
	e := (p - (s - bv)) + (c - bv) // s + e == p + c exactly
	r := float32(s)
	if e == 0 || float64(r) == s || math.IsInf(float64(r), 0) {
		return r // s is exact, or representable (then e is far below half a float32 ulp)
	}
	var other float32 // the float32 neighbour of r on the other side of s
	if float64(r) < s {
		other = math.Nextafter32(r, float32(math.Inf(1)))
	} else {
		other = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if s != (float64(r)+float64(other))/2 {
		return r // not a tie: rounding s gives the correctly rounded result
	}
	if (e > 0) == (other > r) {
		return other
	}
	return r
}

// ---- the FMA-chain reference (kernels/02_fma.cu) ----

// fmaKeysPerThread is the stride of hash indices between threads in 02_fma.cu.
const fmaKeysPerThread = 16

// maxFMAChains is the largest CHAINS the kernel's hash layout allows (indices 2..9 of 16).
const maxFMAChains = 8

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
			x[j] = FMA32(x[j], a, b)
		}
	}
	s := x[0]
	for j := 1; j < chains; j++ {
		s += x[j]
	}
	return s
}

// ---- Freivalds' test ----

// FreivaldsVector returns a random vector for Freivalds' test: random signs, magnitudes in
// [1, 2), so that an error in any column of C moves C·r by at least its own size.
func FreivaldsVector(rng *rand.Rand, n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		v := 1 + rng.Float64()
		if rng.IntN(2) == 0 {
			v = -v
		}
		r[i] = v
	}
	return r
}

// Freivalds holds what the test needs from A and B: u = A·(B·r) for a random r, and the scale of
// each row for the tolerance. Computing it costs two matrix-vector products (O(mk + kn)) instead
// of the O(mnk) product itself, so it scales to any size a GPU can multiply.
type Freivalds struct {
	M, N int
	R    []float64 // the random vector (length N)
	U    []float64 // A·(B·r) in float64 (length M)
}

// NewFreivalds prepares the test for C = A·B with row-major A (m×k) and B (k×n) that hold bf16
// values: their products are exact in float64, so U is accurate to float64 rounding.
func NewFreivalds(a, b []float32, m, n, k int, r []float64) (*Freivalds, error) {
	if len(a) != m*k || len(b) != k*n || len(r) != n {
		return nil, fmt.Errorf("freivalds: A has %d elements (want %d×%d), B %d (want %d×%d), r %d (want %d)",
			len(a), m, k, len(b), k, n, len(r), n)
	}
	return &Freivalds{M: m, N: n, R: r, U: matVec(a, m, k, matVec(b, k, n, r))}, nil // A·(B·r)
}

// matVec is M·x in float64 for a row-major matrix M of rows×cols.
func matVec(mat []float32, rows, cols int, x []float64) []float64 {
	y := make([]float64, rows)
	matref.ParallelFor(rows, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var s float64
			for j, v := range mat[i*cols : (i+1)*cols] {
				s += float64(v) * x[j]
			}
			y[i] = s
		}
	})
	return y
}

// Check compares C·r (C row-major m×n, computed in float64) with A·(B·r), row by row. Row i fails
// when |(C·r)ᵢ − uᵢ| > tol · Σⱼ|Cᵢⱼ·rⱼ|: the scale is the size of the terms that make up (C·r)ᵢ,
// so rounding noise in C (which grows like √n) stays far below it, while a single entry wrong by
// δ moves (C·r)ᵢ by at least |δ| (|rⱼ| ≥ 1). A NaN or Inf anywhere in C fails the test.
// The report's RelErr is the largest of these row ratios.
func (f *Freivalds) Check(c []float32, tol float64) check.Report {
	rep := check.Report{Method: "Freivalds: C·r against A·(B·r) in float64, per row", Tolerance: tol, MaxErrAt: -1}
	if len(c) != f.M*f.N {
		rep.Note = fmt.Sprintf("output has %d elements, want %d×%d", len(c), f.M, f.N)
		return rep
	}
	type rowRes struct {
		ratio, diff, got float64
		nan              int
	}
	res := make([]rowRes, f.M)
	matref.ParallelFor(f.M, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := c[i*f.N : (i+1)*f.N]
			var v, scale float64
			nan := 0
			for j, x := range row {
				xv := float64(x)
				if math.IsNaN(xv) || math.IsInf(xv, 0) {
					nan++
					continue
				}
				term := xv * f.R[j]
				v += term
				scale += math.Abs(term)
			}
			d := math.Abs(v - f.U[i])
			ratio := d / (scale + 1e-300)
			if scale == 0 && d == 0 {
				ratio = 0
			}
			res[i] = rowRes{ratio: ratio, diff: d, got: v, nan: nan}
		}
	})
	rep.Checked = f.M
	for i, r := range res {
		rep.Unwritten += r.nan
		if r.ratio > rep.RelErr || rep.MaxErrAt < 0 {
			rep.RelErr, rep.MaxErrAt = r.ratio, i
		}
		rep.MaxAbsErr = math.Max(rep.MaxAbsErr, r.diff)
		if (r.ratio > tol || r.nan > 0) && len(rep.Mismatches) < check.MaxMismatches {
			rep.Mismatches = append(rep.Mismatches, check.Mismatch{Index: i, Got: r.got, Want: f.U[i]})
		}
	}
	rep.OK = rep.Unwritten == 0 && rep.RelErr <= tol
	switch {
	case rep.Unwritten > 0:
		rep.Note = fmt.Sprintf("%d outputs are NaN or Inf (never written, or computed from bad data)", rep.Unwritten)
	case !rep.OK:
		rep.Note = fmt.Sprintf("row %d: (C·r) differs from A·(B·r) by %.3g of the row's scale", rep.MaxErrAt, rep.RelErr)
	}
	return rep
}

// Sample is one output entry recomputed exactly: C[i][j] = Σₖ A[i][k]·B[k][j].
type Sample struct {
	I, J  int
	Want  float64 // the exact dot product (to float64 rounding)
	Scale float64 // Σₖ |A[i][k]·B[k][j]|, the scale of the rounding error
}

// SampleEntries recomputes the entries (i, j) listed in at.
func SampleEntries(p *matref.Product, at [][2]int) []Sample {
	out := make([]Sample, len(at))
	for s, ij := range at {
		out[s].I, out[s].J = ij[0], ij[1]
		out[s].Want, out[s].Scale = p.Entry(ij[0], ij[1])
	}
	return out
}

// CheckSamples compares the sampled entries with C (row-major, n columns): each must be within
// tol · Scale of the exact value.
func CheckSamples(samples []Sample, c []float32, n int, tol float64) check.Report {
	rep := check.Report{Method: "sampled entries recomputed exactly in float64", Tolerance: tol, MaxErrAt: -1}
	rep.Checked = len(samples)
	wrong := 0
	for _, sm := range samples {
		idx := sm.I*n + sm.J
		if idx < 0 || idx >= len(c) {
			rep.Note = fmt.Sprintf("sample (%d, %d) is outside the output", sm.I, sm.J)
			return rep
		}
		got := float64(c[idx])
		d := math.Abs(got - sm.Want)
		if math.IsNaN(got) || math.IsInf(got, 0) {
			rep.Unwritten++
			d = math.Inf(1)
		}
		rel := d / (sm.Scale + 1e-300)
		if rel > rep.RelErr || rep.MaxErrAt < 0 {
			rep.RelErr, rep.MaxErrAt = rel, idx
		}
		if !math.IsInf(d, 0) {
			rep.MaxAbsErr = math.Max(rep.MaxAbsErr, d)
		}
		if rel > tol {
			wrong++
			if len(rep.Mismatches) < check.MaxMismatches {
				rep.Mismatches = append(rep.Mismatches, check.Mismatch{Index: idx, Got: got, Want: sm.Want})
			}
		}
	}
	rep.OK = wrong == 0
	if wrong > 0 {
		rep.Note = fmt.Sprintf("%d of %d sampled entries are off by more than %.0e of their scale", wrong, len(samples), tol)
	}
	return rep
}
