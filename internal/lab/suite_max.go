package lab

// MaxParam is the largest value of launch parameter key over the suite's variants, 0 when none
// sets it: a case, prepared before it knows its variant, provides for the one that needs most.
func (s *Suite) MaxParam(key string) int64 {
	most := int64(0)
	for _, v := range s.Variants {
		most = max(most, v.Int(key, 0))
	}
	return most
}
