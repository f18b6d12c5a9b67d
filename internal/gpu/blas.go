package gpu

import "fmt"

// DataType names element types for library calls (cuBLAS's cudaDataType).
type DataType int

const (
	F32 DataType = iota
	F64
	F16
	BF16
)

func (t DataType) String() string {
	switch t {
	case F32:
		return "f32"
	case F64:
		return "f64"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("DataType(%d)", int(t))
}

// GemmDesc is one matrix product in cuBLAS's column-major convention:
// C = alpha·op(A)·op(B) + beta·C, with C m×n, op(A) m×k, op(B) k×n and leading dimensions.
// A row-major product C = A·B is the column-major product Cᵀ = Bᵀ·Aᵀ: swap A and B, and m and n.
type GemmDesc struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A              Ptr
	LDA            int
	B              Ptr
	LDB            int
	C              Ptr
	LDC            int
	// Input and output element types (GemmEx only; Sgemm is all F32). Accumulation is always F32.
	InType, OutType DataType
}

// RowMajorGemm describes the row-major product C = A·B (A m×k, B k×n, C m×n, all contiguous)
// in the column-major convention of GemmDesc: the call computes Cᵀ = Bᵀ·Aᵀ, so B is passed
// first, and m and n swap places.
func RowMajorGemm(m, n, k int, a, b, c Ptr, in, out DataType) GemmDesc {
	return GemmDesc{M: n, N: m, K: k, Alpha: 1, A: b, LDA: n, B: a, LDB: k, C: c, LDC: n, InType: in, OutType: out}
}

// BLAS is the vendor baseline for matrix products (cuBLAS, later hipBLAS).
type BLAS interface {
	// Sgemm is the FP32 product, with TF32 tensor-core math disabled (a true FP32 baseline).
	Sgemm(s Stream, g GemmDesc) error
	// GemmEx is the mixed-precision product: InType inputs, OutType output, FP32 accumulation.
	GemmEx(s Stream, g GemmDesc) error
	Close() error
}

// BLASProvider is implemented by devices that have a vendor BLAS.
type BLASProvider interface {
	BLAS() (BLAS, error)
}

// OpenBLAS returns the device's vendor BLAS, or an error that says why there is none.
func OpenBLAS(d Device) (BLAS, error) {
	p, ok := Unwrap(d).(BLASProvider)
	if !ok {
		return nil, fmt.Errorf("backend %s has no vendor BLAS", d.Info().Backend)
	}
	return p.BLAS()
}

// GemmGroup is one group of a grouped batched product: Count problems of the same shape, in
// cuBLAS's column-major convention (see GemmDesc).
type GemmGroup struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	LDA, LDB, LDC  int
	Count          int
}

// GroupedBLAS is implemented by vendor BLAS libraries with a grouped batched product
// (cublasGemmGroupedBatchedEx, cuBLAS 12.5+): many products of different shapes in one call.
type GroupedBLAS interface {
	// GemmGroupedBatched computes every problem of every group. A, B and C are device arrays of
	// device pointers, one per problem, the problems of group 0 first. InType inputs, OutType
	// output, FP32 accumulation. cuBLAS 13 accepts the same type in and out (F32/F32,
	// BF16/BF16); BF16 in with F32 out is CUBLAS_STATUS_NOT_SUPPORTED (measured on the H200).
	GemmGroupedBatched(s Stream, groups []GemmGroup, A, B, C Ptr, inType, outType DataType) error
}

// LtBLAS is implemented by vendor BLAS libraries with a matmul that picks its algorithm by a
// heuristic (cuBLASLt's cublasLtMatmul with cublasLtMatmulAlgoGetHeuristic and a workspace), the
// path PyTorch takes for a bf16 `a @ b`: the baseline a user of a framework actually gets.
type LtBLAS interface {
	// LtMatmul computes C = alpha·op(A)·op(B) + beta·C (GemmDesc's convention) with InType inputs,
	// an OutType C and FP32 accumulation. The algorithm is the heuristic's first choice for the
	// shape, chosen on the first call of a shape and reused after.
	LtMatmul(s Stream, g GemmDesc) error
}
