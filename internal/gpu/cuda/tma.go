//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

var _ gpu.TensorMapEncoder = (*device)(nil)

// tensorMapDataType maps element types to CUtensorMapDataType (cuda.h).
var tensorMapDataType = map[gpu.DataType]C.int{gpu.F16: 6, gpu.F32: 7, gpu.F64: 8, gpu.BF16: 9}

// EncodeTensorMap builds a CUtensorMap with cuTensorMapEncodeTiled. The map is plain bytes that
// the kernel receives by value, so it is returned as a RawArg.
func (d *device) EncodeTensorMap(t gpu.TensorMapDesc) (gpu.RawArg, error) {
	rank := len(t.Dims)
	if rank < 1 || rank > 5 {
		return nil, fmt.Errorf("tensor map: rank %d (dims %v) must be 1 to 5", rank, t.Dims)
	}
	if len(t.Strides) != rank-1 || len(t.Box) != rank {
		return nil, fmt.Errorf("tensor map: rank %d needs %d strides and %d box sizes, got %d and %d",
			rank, rank-1, rank, len(t.Strides), len(t.Box))
	}
	dtype, ok := tensorMapDataType[t.DataType]
	if !ok {
		return nil, fmt.Errorf("tensor map: element type %v is not supported", t.DataType)
	}
	swizzle := map[int]C.int{0: 0, 32: 1, 64: 2, 128: 3}
	sw, ok := swizzle[t.Swizzle]
	if !ok {
		return nil, fmt.Errorf("tensor map: swizzle %d bytes (0, 32, 64 or 128)", t.Swizzle)
	}
	l2, ok := map[int]C.int{0: 0, 64: 1, 128: 2, 256: 3}[t.L2Promotion]
	if !ok {
		return nil, fmt.Errorf("tensor map: L2 promotion %d bytes (0, 64, 128 or 256)", t.L2Promotion)
	}
	oob := C.int(0)
	if t.OOBFillNaN {
		oob = 1
	}
	elem := t.ElementStrides
	if elem == nil {
		elem = make([]uint32, rank)
		for i := range elem {
			elem[i] = 1
		}
	}
	// The arrays go through C memory: the cgo rules forbid passing Go memory that the callee
	// could keep, and the map itself must be 64-byte aligned.
	dims := cArray64(t.Dims)
	defer C.free(dims)
	strides := cArray64(append(t.Strides, 0)) // never empty
	defer C.free(strides)
	box := cArray32(t.Box)
	defer C.free(box)
	es := cArray32(elem)
	defer C.free(es)
	var raw unsafe.Pointer
	if C.posix_memalign(&raw, 64, 128) != 0 {
		return nil, fmt.Errorf("tensor map: out of host memory")
	}
	defer C.free(raw)
	r := C.kl_tensor_map_encode_tiled(d.ctx, raw, dtype, C.uint(rank), C.CUdeviceptr(t.Global),
		(*C.ulonglong)(dims), (*C.ulonglong)(strides), (*C.uint)(box), (*C.uint)(es), sw, l2, oob)
	if err := check("cuTensorMapEncodeTiled", r); err != nil {
		return nil, fmt.Errorf("tensor map dims %v strides %v box %v swizzle %d: %w", t.Dims, t.Strides, t.Box, t.Swizzle, err)
	}
	return gpu.RawArg(C.GoBytes(raw, 128)), nil
}

func cArray64(v []uint64) unsafe.Pointer {
	p := C.malloc(C.size_t(8 * max(len(v), 1)))
	copy(unsafe.Slice((*uint64)(p), len(v)), v)
	return p
}

func cArray32(v []uint32) unsafe.Pointer {
	p := C.malloc(C.size_t(4 * max(len(v), 1)))
	copy(unsafe.Slice((*uint32)(p), len(v)), v)
	return p
}
