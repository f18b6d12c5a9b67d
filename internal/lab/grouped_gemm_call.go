package lab

import (
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// GroupedGemm is a list of products as one grouped batched call takes them (gpu.GroupedBLAS,
// cublasGemmGroupedBatchedEx): bucketed by shape, in the order of each shape's first product, one
// group per shape with its count, and in device memory the products' A, B and C pointers in
// bucket order.
type GroupedGemm struct {
	Groups  []gpu.GemmGroup
	Ptrs    *gpu.Buffer[uint64] // all the A pointers, then all the B, then all the C
	in, out gpu.DataType
}

// PrepGroupedGemm buckets the products ds and uploads their pointers through p, for a call with
// in inputs and an out output (the products' own InType and OutType are not read).
func PrepGroupedGemm(p *Prep, ds []gpu.GemmDesc, in, out gpu.DataType) *GroupedGemm {
	g := &GroupedGemm{in: in, out: out}
	var order []gpu.GemmGroup
	members := map[gpu.GemmGroup][]gpu.GemmDesc{}
	for _, d := range ds {
		key := gpu.GemmGroup{TransA: d.TransA, TransB: d.TransB, M: d.M, N: d.N, K: d.K, Alpha: d.Alpha, Beta: d.Beta,
			LDA: d.LDA, LDB: d.LDB, LDC: d.LDC}
		if _, ok := members[key]; !ok {
			order = append(order, key)
		}
		members[key] = append(members[key], d)
	}
	var ptrs [3][]uint64
	for _, key := range order {
		ms := members[key]
		key.Count = len(ms)
		g.Groups = append(g.Groups, key)
		for _, d := range ms {
			ptrs[0], ptrs[1], ptrs[2] = append(ptrs[0], uint64(d.A)), append(ptrs[1], uint64(d.B)), append(ptrs[2], uint64(d.C))
		}
	}
	g.Ptrs = PrepUpload(p, "cuBLAS's A, B and C pointers", slices.Concat(ptrs[0], ptrs[1], ptrs[2]))
	return g
}

// Run makes the call on stream s.
func (g *GroupedGemm) Run(blas gpu.GroupedBLAS, s gpu.Stream) error {
	p, n := g.Ptrs.DevicePtr(), gpu.Ptr(8*g.Ptrs.Len()/3)
	return blas.GemmGroupedBatched(s, g.Groups, p, p+n, p+2*n, g.in, g.out)
}
