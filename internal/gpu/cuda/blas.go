//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// CublasEnv and CublasLtEnv name environment variables that, when set, are the cuBLAS and the
// cuBLASLt library to load before the usual names are tried.
const (
	CublasEnv   = "KERNELLABS_CUBLAS"
	CublasLtEnv = "KERNELLABS_CUBLASLT"
)

// The cuBLAS libraries, newest soname first: cuBLAS, and cuBLASLt for LtMatmul.
var (
	cublasLib = toolkitLibrary("cublas", CublasEnv, "cuBLAS (the CUDA toolkit's libcublas)",
		[]string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
		func(path *C.char, err **C.char) C.int { return C.kl_cublas_load(path, err) })
	cublasLtLib = toolkitLibrary("cublasLt", CublasLtEnv, "cuBLAS (the CUDA toolkit's libcublasLt)",
		[]string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
		func(path *C.char, err **C.char) C.int { return C.kl_cublaslt_load(path, err) })
)

// cublas is one cuBLAS handle, created in the device's primary context.
type cublas struct {
	d  *device
	mu sync.Mutex // a handle's stream is state: one call at a time
	h  C.cublasHandle_t
	lt *ltState // cuBLASLt, opened by the first LtMatmul
}

var _ gpu.BLAS = (*cublas)(nil)

// BLAS opens cuBLAS on the device: a new handle, with default math (no TF32) and host pointer
// mode. Close it before closing the device.
func (d *device) BLAS() (gpu.BLAS, error) {
	if err := cublasLib.load(); err != nil {
		return nil, err
	}
	var h C.cublasHandle_t
	var failed *C.char
	if st := C.kl_cublas_create(d.ctx, &h, &failed); st != 0 {
		return nil, blasError(failed, st)
	}
	return &cublas{d: d, h: h}, nil
}

// Close destroys the handle; it is safe to call twice.
func (b *cublas) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return nil
	}
	ltErr := b.closeLt()
	var failed *C.char
	st := C.kl_cublas_destroy(b.d.ctx, b.h, &failed)
	b.h = nil
	if st != 0 {
		return blasError(failed, st)
	}
	return ltErr
}

// Sgemm is the FP32 product (cublasSgemm_v2), in cuBLAS's column-major convention.
func (b *cublas) Sgemm(s gpu.Stream, g gpu.GemmDesc) error {
	c, err := b.startGemm("cublas sgemm", s, g, false)
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	var failed *C.char
	st := C.kl_cublas_sgemm(b.d.ctx, b.h, c.cs, op(g.TransA), op(g.TransB), c.dims[0], c.dims[1], c.dims[2],
		C.float(g.Alpha), C.CUdeviceptr(g.A), c.dims[3], C.CUdeviceptr(g.B), c.dims[4],
		C.float(g.Beta), C.CUdeviceptr(g.C), c.dims[5], &failed)
	if st != 0 {
		return fmt.Errorf("cublas sgemm %s: %w", describeGemm(g), blasError(failed, st))
	}
	return nil
}

// GemmEx is the mixed-precision product (cublasGemmEx): InType inputs, OutType output, FP32
// accumulation (CUBLAS_COMPUTE_32F), the default algorithm.
func (b *cublas) GemmEx(s gpu.Stream, g gpu.GemmDesc) error {
	c, err := b.startGemm("cublas gemmEx", s, g, true)
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	var failed *C.char
	st := C.kl_cublas_gemm_ex(b.d.ctx, b.h, c.cs, op(g.TransA), op(g.TransB), c.dims[0], c.dims[1], c.dims[2],
		C.float(g.Alpha), C.CUdeviceptr(g.A), c.in, c.dims[3], C.CUdeviceptr(g.B), c.in, c.dims[4],
		C.float(g.Beta), C.CUdeviceptr(g.C), c.out, c.dims[5], &failed)
	if st != 0 {
		return fmt.Errorf("cublas gemmEx %s, %s inputs, %s output: %w",
			describeGemm(g), g.InType, g.OutType, blasError(failed, st))
	}
	return nil
}

// cublasOperation_t (cublas_api.h).
const (
	cublasOpN = 0
	cublasOpT = 1
)

func op(trans bool) C.int {
	if trans {
		return cublasOpT
	}
	return cublasOpN
}

// cudaDataType (library_types.h) of a gpu.DataType.
func cudaDataType(t gpu.DataType) (C.int, error) {
	switch t {
	case gpu.F32:
		return 0, nil // CUDA_R_32F
	case gpu.F64:
		return 1, nil // CUDA_R_64F
	case gpu.F16:
		return 2, nil // CUDA_R_16F
	case gpu.BF16:
		return 14, nil // CUDA_R_16BF
	}
	return 0, fmt.Errorf("type %v has no cuBLAS equivalent", t)
}

// dataTypes maps a typed product's input and output element types; what names the call in errors.
func dataTypes(what string, inType, outType gpu.DataType) (in, out C.int, err error) {
	if in, err = cudaDataType(inType); err != nil {
		return 0, 0, fmt.Errorf("%s: input %w", what, err)
	}
	if out, err = cudaDataType(outType); err != nil {
		return 0, 0, fmt.Errorf("%s: output %w", what, err)
	}
	return in, out, nil
}

// lockOpen takes the handle's lock for one call, which the caller releases (b.mu.Unlock); a
// closed handle is an error, with the lock released.
func (b *cublas) lockOpen(what string) error {
	b.mu.Lock()
	if b.h == nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: the handle is closed", what)
	}
	return nil
}

// gemmCall is what one product's cuBLAS call takes besides the descriptor: the checked sizes
// (m, n, k, lda, ldb, ldc), the element types of a typed product and the stream.
type gemmCall struct {
	dims    [6]C.int
	in, out C.int
	cs      C.CUstream
}

// startGemm checks one product (its sizes, and its element types when typed) and its stream,
// then takes the handle's lock, which the caller releases (b.mu.Unlock); what names the call in
// errors.
func (b *cublas) startGemm(what string, s gpu.Stream, g gpu.GemmDesc, typed bool) (gemmCall, error) {
	var c gemmCall
	var err error
	if c.dims, err = gemmDims(g); err != nil {
		return c, fmt.Errorf("%s: %w", what, err)
	}
	if typed {
		if c.in, c.out, err = dataTypes(what, g.InType, g.OutType); err != nil {
			return c, err
		}
	}
	if c.cs, err = streamOf(s); err != nil {
		return c, err
	}
	return c, b.lockOpen(what)
}

// gemmDims checks that the sizes fit cuBLAS's 32-bit ints: m, n, k, lda, ldb, ldc.
func gemmDims(g gpu.GemmDesc) ([6]C.int, error) {
	var out [6]C.int
	for i, v := range []int{g.M, g.N, g.K, g.LDA, g.LDB, g.LDC} {
		if v < 0 || v > math.MaxInt32 {
			return out, fmt.Errorf("%s: size %d out of range (0..2^31-1)", describeGemm(g), v)
		}
		out[i] = C.int(v)
	}
	return out, nil
}

func describeGemm(g gpu.GemmDesc) string {
	t := func(b bool) string {
		if b {
			return "T"
		}
		return "N"
	}
	return fmt.Sprintf("%s%s m=%d n=%d k=%d lda=%d ldb=%d ldc=%d",
		t(g.TransA), t(g.TransB), g.M, g.N, g.K, g.LDA, g.LDB, g.LDC)
}

// cublasStatus_t (cublas_api.h), for libraries without cublasGetStatusName/String.
var cublasStatus = map[int][2]string{
	1:  {"CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"},
	3:  {"CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"},
	7:  {"CUBLAS_STATUS_INVALID_VALUE", "an invalid numeric value was used as an argument"},
	8:  {"CUBLAS_STATUS_ARCH_MISMATCH", "an absent device architectural feature is required"},
	11: {"CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
	13: {"CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
	14: {"CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
	15: {"CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
	16: {"CUBLAS_STATUS_LICENSE_ERROR", "an error was detected when checking the current licensing"},
}

// blasError describes a failed cuBLAS wrapper: failed names the call, and a failure to make the
// context current carries a driver CUresult rather than a cuBLAS status.
func blasError(failed *C.char, st C.cublasStatus_t) error {
	call := "cublas"
	if failed != nil {
		call = C.GoString(failed)
	}
	if call == "cuCtxSetCurrent" {
		return callError(call, C.CUresult(st))
	}
	code := int(st)
	if code == C.KL_MISSING_SYMBOL {
		return gpu.NewCallError("cublas", call, code, "MISSING_SYMBOL",
			"this cuBLAS does not export "+call+" (it needs cuBLAS 12.5 or newer)", false)
	}
	name, msg := cublasStatus[code][0], cublasStatus[code][1]
	if s := C.kl_cublas_status_name(st); s != nil {
		name = C.GoString(s)
	}
	if s := C.kl_cublas_status_string(st); s != nil {
		msg = C.GoString(s)
	}
	if name == "" {
		name = fmt.Sprintf("CUBLAS_STATUS_%d", code)
	}
	return gpu.NewCallError("cublas", call, code, name, msg, false)
}

var _ gpu.GroupedBLAS = (*cublas)(nil)

// GemmGroupedBatched is cublasGemmGroupedBatchedEx: every problem of every group in one call.
func (b *cublas) GemmGroupedBatched(s gpu.Stream, groups []gpu.GemmGroup, A, B, C gpu.Ptr, inType, outType gpu.DataType) error {
	if len(groups) == 0 {
		return nil
	}
	in, out, err := dataTypes("cublas grouped gemm", inType, outType)
	if err != nil {
		return err
	}
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	n := len(groups)
	// Host arrays in C memory: cgo forbids handing Go memory to C code that could keep it.
	ints := (*[1 << 28]C.int)(C.malloc(C.size_t(n * 10 * 4)))[: n*10 : n*10]
	defer C.free(unsafe.Pointer(&ints[0]))
	floats := (*[1 << 28]C.float)(C.malloc(C.size_t(n * 2 * 4)))[: n*2 : n*2]
	defer C.free(unsafe.Pointer(&floats[0]))
	ta, tb, m, nn, k := ints[0:n], ints[n:2*n], ints[2*n:3*n], ints[3*n:4*n], ints[4*n:5*n]
	lda, ldb, ldc, size := ints[5*n:6*n], ints[6*n:7*n], ints[7*n:8*n], ints[8*n:9*n]
	alpha, beta := floats[0:n], floats[n:2*n]
	for i, g := range groups {
		if g.M < 0 || g.N < 0 || g.K < 0 || g.Count < 0 {
			return fmt.Errorf("cublas grouped gemm: group %d has a negative size (m=%d n=%d k=%d count=%d)", i, g.M, g.N, g.K, g.Count)
		}
		ta[i], tb[i] = op(g.TransA), op(g.TransB)
		m[i], nn[i], k[i] = C.int(g.M), C.int(g.N), C.int(g.K)
		lda[i], ldb[i], ldc[i], size[i] = C.int(g.LDA), C.int(g.LDB), C.int(g.LDC), C.int(g.Count)
		alpha[i], beta[i] = C.float(g.Alpha), C.float(g.Beta)
	}
	if err := b.lockOpen("cublas grouped gemm"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	var failed *C.char
	st := C.kl_cublas_gemm_grouped_batched(b.d.ctx, b.h, cs, &ta[0], &tb[0], &m[0], &nn[0], &k[0], &alpha[0],
		C.CUdeviceptr(A), in, &lda[0], C.CUdeviceptr(B), in, &ldb[0], &beta[0], C.CUdeviceptr(C), out, &ldc[0],
		C.int(n), &size[0], &failed)
	if st != 0 {
		return fmt.Errorf("cublas grouped gemm, %d groups, %s inputs, %s output: %w", n, inType, outType, blasError(failed, st))
	}
	return nil
}
