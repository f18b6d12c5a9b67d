package lab

// Work is the work of C = A·B (+ C) at these sizes: 2·M·N·K flops and the least traffic possible,
// A and B read once with elements of abBytes, C written once with elements of cBytes, and read
// once too when readC (an accumulating product, beta ≠ 0).
func (s MNK) Work(abBytes, cBytes int, readC bool) Work {
	m, n, k := float64(s.M), float64(s.N), float64(s.K)
	cb := float64(cBytes) * m * n
	if readC {
		cb *= 2
	}
	return Work{FLOPs: 2 * m * n * k, Bytes: float64(abBytes)*(m*k+k*n) + cb}
}
