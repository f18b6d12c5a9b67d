package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// BF16Tiles is the TMA description of a row-major bf16 matrix of rows × cols at p, loaded (or
// stored) in boxes of boxRows × boxCols with the 128-byte swizzle that the course's wgmma kernels
// expect (a box row of 64 bf16 is the swizzle span) and 256-byte L2 promotion.
func BF16Tiles(p gpu.Ptr, rows, cols, boxRows, boxCols int) gpu.TensorMapDesc {
	return gpu.TensorMapDesc{DataType: gpu.BF16, Global: p, Dims: []uint64{uint64(cols), uint64(rows)},
		Strides: []uint64{uint64(cols) * 2}, Box: []uint32{uint32(boxCols), uint32(boxRows)}, Swizzle: 128, L2Promotion: 256}
}
