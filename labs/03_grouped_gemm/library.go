package grouped

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// cuBLAS is column-major. The row-major C_g = A_g·B_g is the column-major C_gᵀ = B_gᵀ·A_gᵀ, and a
// row-major K×N matrix read column-major with leading dimension N is exactly its transpose. So
// every call swaps the operands and the sizes (m ↔ n) and keeps "no transpose":
// cuBLAS (m, n, k) = (N, M, K), its A = our B (lda N), its B = our A (ldb K), C with ldc N.

// prepareBLAS builds what cublasGemmGroupedBatchedEx takes: the groups bucketed by shape (one
// cuBLAS "group" per distinct shape, with a count of problems) and, in device memory, the arrays
// of A, B and C pointers in bucket order. Empty groups are left out: there is nothing to compute.
func (c *groupedCase) prepareBLAS() error {
	type key struct{ m, n, k int }
	var order []key
	members := map[key][]int{}
	for g, s := range c.shapes {
		if s.Empty() {
			continue
		}
		k := key{s.M, s.N, s.K}
		if _, ok := members[k]; !ok {
			order = append(order, k)
		}
		members[k] = append(members[k], g)
	}
	var pa, pb, pc []uint64
	for _, k := range order {
		gs := members[k]
		c.blasGroups = append(c.blasGroups, gpu.GemmGroup{M: k.n, N: k.m, K: k.k, Alpha: 1, Beta: 0,
			LDA: k.n, LDB: k.k, LDC: k.n, Count: len(gs)})
		for _, g := range gs {
			a, b, cc := c.ptrs(g)
			pa = append(pa, uint64(b)) // cuBLAS's A is our B
			pb = append(pb, uint64(a))
			pc = append(pc, uint64(cc))
		}
	}
	var err error
	if c.dPtrA, err = lab.Upload(c.env, "cuBLAS's A pointers", pa); err != nil {
		return err
	}
	if c.dPtrB, err = lab.Upload(c.env, "cuBLAS's B pointers", pb); err != nil {
		return err
	}
	c.dPtrC, err = lab.Upload(c.env, "cuBLAS's C pointers", pc)
	return err
}

// gemm is one cuBLAS product C (M×N) = A (M×K) · B (K×N), row-major, on the lab's stream.
func (c *groupedCase) gemm(blas gpu.BLAS, a, b, cc gpu.Ptr, s Shape) error {
	t := c.prec.DataType()
	d := gpu.GemmDesc{M: s.N, N: s.M, K: s.K, Alpha: 1, Beta: 0, A: b, LDA: s.N, B: a, LDB: s.K, C: cc, LDC: s.N,
		InType: t, OutType: t}
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
		for g, s := range c.shapes {
			if s.Empty() {
				continue
			}
			a, b, cc := c.ptrs(g)
			if err := c.gemm(blas, a, b, cc, s); err != nil {
				return fmt.Errorf("group %d (%s): %w", g, s, err)
			}
		}
		return nil
	case LibGrouped:
		gb, ok := blas.(gpu.GroupedBLAS)
		if !ok {
			return fmt.Errorf("variant %s: this BLAS has no grouped batched GEMM (cuBLAS 12.5 or newer has cublasGemmGroupedBatchedEx)", v.Name)
		}
		t := c.prec.DataType()
		return gb.GemmGroupedBatched(c.env.Stream, c.blasGroups, c.dPtrA.DevicePtr(), c.dPtrB.DevicePtr(), c.dPtrC.DevicePtr(), t, t)
	case LibDense:
		if !c.lay.MoE {
			return lab.Skip("%s is one GEMM of the token matrix X (T×K) by one K×N matrix: the groups must share N and K", v.Name)
		}
		s := c.shapes[0]
		return c.gemm(blas, c.a, c.b, c.cBase(), Shape{M: c.lay.Rows(), N: s.N, K: s.K})
	}
	return fmt.Errorf("variant %s: unknown library %q (lab 03 knows %s, %s and %s)", v.Name, v.Library, LibLoop, LibGrouped, LibDense)
}
