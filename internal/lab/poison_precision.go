package lab

// NaNPoison is the NaN poison of an output of precision p: PoisonNaN32 for fp32, PoisonNaN
// (0xFFFF in every 16-bit word, a bf16 NaN) for bf16.
func (p Precision) NaNPoison() Poison {
	if p == BF16 {
		return PoisonNaN
	}
	return PoisonNaN32
}
