package gpu

import "fmt"

// TensorMapDesc describes a tiled tensor map for Hopper's bulk tensor copies (TMA,
// cp.async.bulk.tensor): a global tensor of rank 1–5 and the box (tile) one copy moves.
// Dimensions are listed innermost first, as cuTensorMapEncodeTiled takes them.
type TensorMapDesc struct {
	DataType DataType
	Global   Ptr      // 16-byte aligned
	Dims     []uint64 // elements per dimension, innermost first
	Strides  []uint64 // bytes between consecutive indices of dimensions 1..rank-1 (multiples of 16)
	Box      []uint32 // tile size per dimension (innermost box bytes a multiple of 16)
	// ElementStrides are the traversal strides per dimension; nil means 1 for every dimension.
	ElementStrides []uint32
	Swizzle        int  // shared-memory swizzle in bytes: 0 (none), 32, 64 or 128
	L2Promotion    int  // L2 promotion in bytes: 0 (none), 64, 128 or 256
	OOBFillNaN     bool // out-of-bounds elements read as NaN instead of zero
}

// TensorMapEncoder is implemented by devices that support TMA (CUDA on sm_90+).
type TensorMapEncoder interface {
	// EncodeTensorMap returns the 128-byte CUtensorMap, to pass by value as a
	// `const __grid_constant__ CUtensorMap` kernel parameter.
	EncodeTensorMap(d TensorMapDesc) (RawArg, error)
}

// EncodeTensorMap encodes d on device dev, or says why the device cannot.
func EncodeTensorMap(dev Device, d TensorMapDesc) (RawArg, error) {
	e, ok := Unwrap(dev).(TensorMapEncoder)
	if !ok {
		return nil, fmt.Errorf("backend %s has no tensor memory accelerator (TMA needs an NVIDIA sm_90 GPU)", dev.Info().Backend)
	}
	return e.EncodeTensorMap(d)
}
