package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// LtMatmul is cuBLASLt's matmul of g on s through blas, or an error naming variant v where the
// device's BLAS has none.
func LtMatmul(blas gpu.BLAS, v *Variant, s gpu.Stream, g gpu.GemmDesc) error {
	lt, ok := blas.(gpu.LtBLAS)
	if !ok {
		return fmt.Errorf("variant %s: this device's BLAS has no cuBLASLt matmul", v.Name)
	}
	return lt.LtMatmul(s, g)
}

// Gemm is the cuBLAS product a lab's library variants call for precision prec: true FP32
// (Sgemm, no TF32) for fp32 data, GemmEx with fp32 accumulation otherwise.
func Gemm(blas gpu.BLAS, s gpu.Stream, prec Precision, g gpu.GemmDesc) error {
	if prec == FP32 {
		return blas.Sgemm(s, g)
	}
	return blas.GemmEx(s, g)
}
