package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrecisionEntryAndNaN(t *testing.T) {
	assert.Equal(t, "gemm", FP32.Entry("gemm"))
	assert.Equal(t, "gemm_bf16", BF16.Entry("gemm"))
	assert.Equal(t, Poison32(0x7FC0A11F), FP32.NaN(0x7FC0A11F))
	assert.Equal(t, PoisonNaN, BF16.NaN(0x7FC0A11F))
}

// DeviceElems hands fp32 values back as they are, and rounds bf16 ones in place.
func TestDeviceElems(t *testing.T) {
	vals := []float32{1, 1.0 + 1.0/512}
	assert.Equal(t, vals, DeviceElems[float32](vals))
	assert.Equal(t, []uint16{0x3F80, 0x3F80}, DeviceElems[uint16](vals))
	assert.Equal(t, []float32{1, 1}, vals, "rounded in place")
}
