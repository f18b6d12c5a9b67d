package lab

// Int returns a launch parameter of the variant (params: in lab.yaml), or def when it does not
// set it; Problem.Int is the same for a problem's parameters.
func (v *Variant) Int(key string, def int64) int64 {
	if x, ok := v.Params[key]; ok {
		return x
	}
	return def
}
