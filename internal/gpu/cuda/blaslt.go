//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// LtWorkspaceBytes is the workspace offered to cuBLASLt's heuristic: 32 MiB, what NVIDIA
// recommends for Hopper (cublasSetWorkspace) and what PyTorch gives cuBLASLt there.
const LtWorkspaceBytes = 32 << 20

// ltKey is what a plan depends on: a cuBLASLt plan is made once per shape, layout and types.
type ltKey struct {
	transA, transB  bool
	m, n, k         int
	lda, ldb, ldc   int
	inType, outType gpu.DataType
}

// ltState is the cuBLASLt side of a cublas handle, opened on the first LtMatmul.
type ltState struct {
	h         C.cublasLtHandle_t
	workspace gpu.Ptr
	plans     map[ltKey]*C.kl_lt_plan
}

var _ gpu.LtBLAS = (*cublas)(nil)

// LtMatmul is cublasLtMatmul with the algorithm cublasLtMatmulAlgoGetHeuristic ranks first for
// the shape (asked once per shape: the heuristic costs host time that a timed loop should not
// pay, and PyTorch caches the same choice) and a workspace of LtWorkspaceBytes.
func (b *cublas) LtMatmul(s gpu.Stream, g gpu.GemmDesc) error {
	c, err := b.startGemm("cublasLt matmul", s, g, true)
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if err := b.openLt(); err != nil {
		return err
	}
	key := ltKey{g.TransA, g.TransB, g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.InType, g.OutType}
	plan, ok := b.lt.plans[key]
	var failed *C.char
	if !ok {
		st := C.kl_cublaslt_plan(b.d.ctx, b.lt.h, op(g.TransA), op(g.TransB), C.uint64_t(g.M), C.uint64_t(g.N),
			C.uint64_t(g.K), C.int64_t(g.LDA), C.int64_t(g.LDB), C.int64_t(g.LDC), c.in, c.out,
			C.size_t(LtWorkspaceBytes), &plan, &failed)
		if st != 0 {
			return fmt.Errorf("cublasLt matmul %s, %s inputs, %s output: %w", describeGemm(g), g.InType, g.OutType,
				blasError(failed, st))
		}
		b.lt.plans[key] = plan
	}
	st := C.kl_cublaslt_matmul(b.d.ctx, b.lt.h, plan, c.cs, C.float(g.Alpha), C.CUdeviceptr(g.A), C.CUdeviceptr(g.B),
		C.float(g.Beta), C.CUdeviceptr(g.C), C.CUdeviceptr(b.lt.workspace), &failed)
	if st != 0 {
		return fmt.Errorf("cublasLt matmul %s, %s inputs, %s output: %w", describeGemm(g), g.InType, g.OutType,
			blasError(failed, st))
	}
	return nil
}

// openLt loads cuBLASLt and creates its handle and workspace on the handle's device (b.mu held).
func (b *cublas) openLt() error {
	if b.lt != nil {
		return nil
	}
	if err := cublasLtLib.load(); err != nil {
		return err
	}
	var h C.cublasLtHandle_t
	var failed *C.char
	if st := C.kl_cublaslt_create(b.d.ctx, &h, &failed); st != 0 {
		return blasError(failed, st)
	}
	ws, err := b.d.Malloc(LtWorkspaceBytes)
	if err != nil {
		C.kl_cublaslt_destroy(b.d.ctx, h, &failed)
		return fmt.Errorf("cublasLt: allocating its %s workspace: %w", gpu.HumanBytes(LtWorkspaceBytes), err)
	}
	b.lt = &ltState{h: h, workspace: ws, plans: map[ltKey]*C.kl_lt_plan{}}
	return nil
}

// closeLt releases the plans, the workspace and the cuBLASLt handle (b.mu held).
func (b *cublas) closeLt() error {
	if b.lt == nil {
		return nil
	}
	for _, p := range b.lt.plans {
		C.kl_cublaslt_plan_free(p)
	}
	var first error
	var failed *C.char
	if st := C.kl_cublaslt_destroy(b.d.ctx, b.lt.h, &failed); st != 0 {
		first = blasError(failed, st)
	}
	if err := b.d.Free(b.lt.workspace); err != nil && first == nil {
		first = err
	}
	b.lt = nil
	return first
}
