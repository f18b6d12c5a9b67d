package matref

import "github.com/kernel-labs/kernellabs/internal/check"

// The check of one whole product that labs 02 (C) and 05 (each rank's rows of C) share.

// FullCheckLimit is the largest M·N·K whose every element CheckProduct compares with a complete
// float64 product on the CPU; larger products get Freivalds' check plus sampled elements.
const FullCheckLimit = 1 << 30

// Freivalds' check in CheckProduct: random ±1 vectors and exactly computed elements.
const (
	FreivaldsVectors = 2
	SampledElements  = 64
)

// CheckProduct compares out with the product p under tol: every element while M·N·K ≤
// FullCheckLimit, else Freivalds' check with FreivaldsVectors vectors and SampledElements sampled
// elements, both drawn from seed.
func CheckProduct(p *Product, out []float32, seed uint64, tol float64) check.Report {
	if float64(p.M)*float64(p.N)*float64(p.K) <= FullCheckLimit {
		ref, scale := p.Reference()
		return CheckFull(out, ref, scale, p.Terms(), tol)
	}
	return Freivalds(p, out, FreivaldsVectors, SampleEntries(p.M, p.N, SampledElements, seed), seed, tol)
}

// Terms is how many terms each element of the product sums: K products, and β·C when it is there.
func (p *Product) Terms() int {
	if p.C0 != nil && p.Beta != 0 {
		return p.K + 1
	}
	return p.K
}
