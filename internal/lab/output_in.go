package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// OutputIn is an output in a suite's precision, for a case that is not generic in its element
// type: fp32 elements, or bf16 bit patterns, read back widened to float32 either way.
type OutputIn struct {
	f32  *gpu.Buffer[float32]
	bf16 *gpu.Buffer[uint16]
}

// PrepOutputIn is Output through p, of n elements of precision prec.
func PrepOutputIn(p *Prep, name string, prec Precision, n int, poison Poison) *OutputIn {
	if prec == BF16 {
		return &OutputIn{bf16: PrepOutput[uint16](p, name, n, poison)}
	}
	return &OutputIn{f32: PrepOutput[float32](p, name, n, poison)}
}

// Ptr is the buffer's device address, 0 when it was not allocated.
func (b *OutputIn) Ptr() gpu.Ptr {
	switch {
	case b.bf16 != nil:
		return b.bf16.DevicePtr()
	case b.f32 != nil:
		return b.f32.DevicePtr()
	}
	return 0
}

// Read downloads the output widened to float32 (Widened).
func (b *OutputIn) Read(o *Outputs) ([]float32, error) {
	if b.bf16 != nil {
		return Widened(o, b.bf16)
	}
	return Widened(o, b.f32)
}
