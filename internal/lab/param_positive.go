package lab

// Positive returns a launch parameter of the variant, or def when it does not set it or sets it to
// 0 or less.
func (v *Variant) Positive(key string, def int) int {
	if x := v.Int(key, 0); x > 0 {
		return int(x)
	}
	return def
}
