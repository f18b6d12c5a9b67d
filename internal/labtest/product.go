package labtest

import "github.com/kernel-labs/kernellabs/internal/matref"

// NaiveProduct computes alpha·A·B + beta·C0 in float32 the plainest way, summing over k in
// order: what a correct fp32 kernel returns, up to rounding. The GEMM labs' tests feed it to
// their checks as the output of a kernel that is right.
func NaiveProduct(p *matref.Product) []float32 {
	out := make([]float32, p.M*p.N)
	for i := 0; i < p.M; i++ {
		for j := 0; j < p.N; j++ {
			var s float32
			for k := 0; k < p.K; k++ {
				s += p.A[i*p.K+k] * p.B[k*p.N+j]
			}
			s *= p.Alpha
			if p.C0 != nil {
				s += p.Beta * p.C0[i*p.N+j]
			}
			out[i*p.N+j] = s
		}
	}
	return out
}
