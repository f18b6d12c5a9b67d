package lab

import "github.com/kernel-labs/kernellabs/internal/matref"

// The course's conventions for data of either precision, for a case generic in its element type
// (T float32 for FP32, uint16, bf16 bit patterns, for BF16).

// Entry is the kernel entry for data of p: name (fp32), or name_bf16.
func (p Precision) Entry(name string) string {
	if p == BF16 {
		return name + "_bf16"
	}
	return name
}

// NaN is the poison of a data buffer of p: 32-bit words of the NaN bits (fp32), so that a kernel's
// NaN can tell itself from it by payload, or 0xFF bytes, a bf16 NaN.
func (p Precision) NaN(bits uint32) Poison {
	if p == BF16 {
		return PoisonNaN
	}
	return Poison32(bits)
}

// DeviceElems is vals as the device holds them: the fp32 values themselves (T float32), or
// (T uint16) their bf16 bit patterns, vals rounded in place so that a reference computed from
// vals sees what the device has.
func DeviceElems[T float32 | uint16](vals []float32) []T {
	if same, ok := any(vals).([]T); ok {
		return same
	}
	return any(matref.RoundBF16(vals)).([]T)
}
