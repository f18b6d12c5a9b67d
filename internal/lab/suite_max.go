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

// MinParam is the smallest value of key among the suite's variants that set it (def where none
// does): the smallest tile, say, bounds the tiles of every variant.
func (s *Suite) MinParam(key string, def int64) int64 {
	least, set := int64(0), false
	for _, v := range s.Variants {
		if x, ok := v.Params[key]; ok && (!set || x < least) {
			least, set = x, true
		}
	}
	if !set {
		return def
	}
	return least
}
