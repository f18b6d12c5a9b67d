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
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// CublasEnv names an environment variable that, when set, is the cuBLAS library to load before
// the usual names are tried.
const CublasEnv = "KERNELLABS_CUBLAS"

// cublasNames are the sonames tried, newest first.
var cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"}

// cublasCandidates lists what to dlopen: the override, the sonames (found through the loader's
// search path), then the sonames inside the usual toolkit directories, which are often not on
// that path.
func cublasCandidates() []string { return libraryCandidates(CublasEnv, cublasNames) }

var cublasLoad struct {
	sync.Mutex
	done bool
}

// loadCublas loads cuBLAS once per process.
func loadCublas() error {
	cublasLoad.Lock()
	defer cublasLoad.Unlock()
	if cublasLoad.done {
		return nil
	}
	failures, ok := openFirst(cublasCandidates(), func(path *C.char, err **C.char) C.int { return C.kl_cublas_load(path, err) })
	if ok {
		cublasLoad.done = true
		return nil
	}
	detail := "no libcublas.so.13, libcublas.so.12 or libcublas.so was found"
	if len(failures) > 0 {
		detail = strings.Join(failures, "; ")
	}
	return fmt.Errorf("cublas: %w: %s; install cuBLAS (the CUDA toolkit's libcublas) or set %s to its path",
		gpu.ErrLibraryMissing, detail, CublasEnv)
}

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
	if err := loadCublas(); err != nil {
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
	dims, err := gemmDims(g)
	if err != nil {
		return fmt.Errorf("cublas sgemm: %w", err)
	}
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	if err := b.lockOpen("cublas sgemm"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	var failed *C.char
	st := C.kl_cublas_sgemm(b.d.ctx, b.h, cs, op(g.TransA), op(g.TransB), dims[0], dims[1], dims[2],
		C.float(g.Alpha), C.CUdeviceptr(g.A), dims[3], C.CUdeviceptr(g.B), dims[4],
		C.float(g.Beta), C.CUdeviceptr(g.C), dims[5], &failed)
	if st != 0 {
		return fmt.Errorf("cublas sgemm %s: %w", describeGemm(g), blasError(failed, st))
	}
	return nil
}

// GemmEx is the mixed-precision product (cublasGemmEx): InType inputs, OutType output, FP32
// accumulation (CUBLAS_COMPUTE_32F), the default algorithm.
func (b *cublas) GemmEx(s gpu.Stream, g gpu.GemmDesc) error {
	dims, err := gemmDims(g)
	if err != nil {
		return fmt.Errorf("cublas gemmEx: %w", err)
	}
	in, out, err := dataTypes("cublas gemmEx", g.InType, g.OutType)
	if err != nil {
		return err
	}
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	if err := b.lockOpen("cublas gemmEx"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	var failed *C.char
	st := C.kl_cublas_gemm_ex(b.d.ctx, b.h, cs, op(g.TransA), op(g.TransB), dims[0], dims[1], dims[2],
		C.float(g.Alpha), C.CUdeviceptr(g.A), in, dims[3], C.CUdeviceptr(g.B), in, dims[4],
		C.float(g.Beta), C.CUdeviceptr(g.C), out, dims[5], &failed)
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

// gemmDims checks that the sizes fit cuBLAS's 32-bit ints: m, n, k, lda, ldb, ldc.
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

// openFirst loads the first of candidates that load (a shim's loader of one vendor library)
// accepts. failures lists the candidates that exist but failed, with why; a missing file is not a
// failure worth reporting.
func openFirst(candidates []string, load func(path *C.char, err **C.char) C.int) (failures []string, ok bool) {
	for _, path := range candidates {
		cpath := C.CString(path)
		var cerr *C.char
		rc := load(cpath, &cerr)
		C.free(unsafe.Pointer(cpath))
		if rc == 0 {
			return nil, true
		}
		msg := C.GoString(cerr)
		C.kl_free_err(cerr)
		if rc == -2 || !strings.Contains(msg, "No such file") && !strings.Contains(msg, "cannot open") {
			failures = append(failures, fmt.Sprintf("%s: %s", path, msg))
		}
	}
	return failures, false
}
