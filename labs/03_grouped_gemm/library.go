package grouped

import (
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// cuBLAS is column-major: the row-major C_g = A_g·B_g is the column-major C_gᵀ = B_gᵀ·A_gᵀ, so
// every call swaps the operands and the sizes (gpu.RowMajorGemm): cuBLAS (m, n, k) = (N, M, K),
// its A = our B (lda N), its B = our A (ldb K), C with ldc N.

// prepareBLAS builds what cublasGemmGroupedBatchedEx takes: the groups bucketed by shape (one
// cuBLAS "group" per distinct shape, with a count of problems) and, in device memory, the arrays
// of A, B and C pointers in bucket order, one after the other (uploaded through a, the case's
// allocations). Empty groups are left out: there is nothing to compute.
func (c *groupedCase) prepareBLAS(a *lab.Prep) {
	var order []Shape
	members := map[Shape][][3]gpu.Ptr{} // cuBLAS's A, B, C: our B, A, C
	_ = c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error {
		if _, ok := members[s]; !ok {
			order = append(order, s)
		}
		members[s] = append(members[s], [3]gpu.Ptr{b, a, cc})
		return nil
	})
	var ptrs [3][]uint64
	for _, s := range order {
		c.blasGroups = append(c.blasGroups, gpu.GemmGroup{M: s.N, N: s.M, K: s.K, Alpha: 1, LDA: s.N, LDB: s.K, LDC: s.N,
			Count: len(members[s])})
		for _, m := range members[s] {
			for i, p := range m {
				ptrs[i] = append(ptrs[i], uint64(p))
			}
		}
	}
	c.dPtrs = lab.PrepUpload(a, "cuBLAS's A, B and C pointers", slices.Concat(ptrs[0], ptrs[1], ptrs[2]))
}

// gemm is one cuBLAS product C (M×N) = A (M×K) · B (K×N), row-major, on the lab's stream.
func (c *groupedCase) gemm(blas gpu.BLAS, s Shape, a, b, cc gpu.Ptr) error {
	t := c.prec.DataType()
	d := gpu.RowMajorGemm(s.M, s.N, s.K, a, b, cc, t, t)
	if c.prec == lab.FP32 {
		return blas.Sgemm(c.env.Stream, d) // true FP32, no TF32
	}
	return blas.GemmEx(c.env.Stream, d) // bf16 in and out, fp32 accumulation
}

// runLibrary makes the cuBLAS calls of a library variant.
func (c *groupedCase) runLibrary(v *lab.Variant) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	switch v.Library {
	case LibLoop:
		return c.eachGroup(func(g int, s Shape, a, b, cc gpu.Ptr) error { return c.gemm(blas, s, a, b, cc) })
	case LibGrouped:
		gb, ok := blas.(gpu.GroupedBLAS)
		if !ok {
			return fmt.Errorf("variant %s: this BLAS has no grouped batched GEMM (cuBLAS 12.5 or newer has cublasGemmGroupedBatchedEx)", v.Name)
		}
		t, p, n := c.prec.DataType(), c.dPtrs.DevicePtr(), gpu.Ptr(8*c.dPtrs.Len()/3)
		return gb.GemmGroupedBatched(c.env.Stream, c.blasGroups, p, p+n, p+2*n, t, t)
	case LibDense:
		if !c.lay.MoE {
			return lab.Skip("%s is one GEMM of the token matrix X (T×K) by one K×N matrix: the groups must share N and K", v.Name)
		}
		return c.gemm(blas, c.lay.Dense(), c.a, c.b, c.c)
	}
	return fmt.Errorf("variant %s: unknown library %q (lab 03 knows %s, %s and %s)", v.Name, v.Library, LibLoop, LibGrouped, LibDense)
}
