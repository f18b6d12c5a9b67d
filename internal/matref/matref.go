// Package matref holds the CPU side of checking matrix products, shared by the GEMM labs: bf16
// rounding as the GPU does it, a float64 reference of C = alpha·A·B + beta·C0 with the error scale
// of every element, exact single entries, and the entries worth sampling when a full reference is
// too expensive.
package matref

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// BF16FromFloat32 rounds f to bfloat16 (round to nearest, ties to even) and returns its bits: the
// upper half of the float32 bit pattern after rounding. NaN stays a (quiet) NaN; values beyond the
// largest bf16 round to infinity, as on the GPU (__float2bfloat16_rn).
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

// Float32FromBF16 widens a bf16 bit pattern to float32 (exactly).
func Float32FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// ParallelFor splits [0, n) into contiguous ranges, one goroutine each; small n runs inline.
func ParallelFor(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 || n < 64 {
		fn(0, n)
		return
	}
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+per, n))
	}
	wg.Wait()
}

// Product is C = alpha·A·B + beta·C0 with row-major float32 A (M×K), B (K×N) and C0 (M×N; nil
// when beta is 0). For bf16 problems A and B hold the bf16-rounded values, so the reference
// computes exactly what the GPU was given. Alpha is not defaulted: a plain product sets Alpha 1.
type Product struct {
	M, N, K     int
	Alpha, Beta float32
	A, B, C0    []float32
}

// Reference returns alpha·A·B + beta·C0 in float64, and for each element the scale of its
// rounding error, |alpha|·Σ_k |A[i][k]·B[k][j]| + |beta·C0[i][j]|.
func (p *Product) Reference() (ref, scale []float64) {
	ref = make([]float64, p.M*p.N)
	scale = make([]float64, p.M*p.N)
	alpha, beta := float64(p.Alpha), float64(p.Beta)
	ParallelFor(p.M, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, abs := ref[i*p.N:(i+1)*p.N], scale[i*p.N:(i+1)*p.N]
			for k := 0; k < p.K; k++ {
				a := float64(p.A[i*p.K+k])
				for j, bv := range p.B[k*p.N : (k+1)*p.N] {
					t := a * float64(bv)
					row[j] += t
					abs[j] += math.Abs(t)
				}
			}
			for j := range row {
				row[j] *= alpha
				abs[j] *= math.Abs(alpha)
				if p.C0 != nil && beta != 0 {
					c := beta * float64(p.C0[i*p.N+j])
					row[j] += c
					abs[j] += math.Abs(c)
				}
			}
		}
	})
	return ref, scale
}

// Entry computes one element of the product exactly (in float64) and its error scale.
func (p *Product) Entry(i, j int) (want, scale float64) {
	for k := 0; k < p.K; k++ {
		t := float64(p.A[i*p.K+k]) * float64(p.B[k*p.N+j])
		want += t
		scale += math.Abs(t)
	}
	want *= float64(p.Alpha)
	scale *= math.Abs(float64(p.Alpha))
	if p.C0 != nil && p.Beta != 0 {
		c := float64(p.Beta) * float64(p.C0[i*p.N+j])
		want += c
		scale += math.Abs(c)
	}
	return want, scale
}

// ElementOK is the elementwise criterion: an error within tol times the element's error scale.
func ElementOK(got, want, scale, tol float64) bool {
	return math.Abs(got-want) <= tol*scale+1e-30
}

// SampleEntries picks up to count elements of an M×N output to check exactly: the four corners,
// the last row and column (where edge tiles go wrong), the middle, and random ones.
func SampleEntries(m, n, count int, seed uint64) [][2]int {
	if m <= 0 || n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x53616d70)) // "Samp"
	seen := map[[2]int]bool{}
	var out [][2]int
	add := func(i, j int) {
		e := [2]int{i, j}
		if i >= 0 && i < m && j >= 0 && j < n && !seen[e] && len(out) < count {
			seen[e] = true
			out = append(out, e)
		}
	}
	add(0, 0)
	add(0, n-1)
	add(m-1, 0)
	add(m-1, n-1)
	add(m/2, n/2)
	for t := 0; t < 4; t++ {
		add(m-1, rng.IntN(n))
		add(rng.IntN(m), n-1)
	}
	for tries := 0; len(out) < count && tries < 4*count; tries++ {
		add(rng.IntN(m), rng.IntN(n))
	}
	return out
}
