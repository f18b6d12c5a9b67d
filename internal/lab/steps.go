package lab

// InOrder runs steps (launches, barriers, library calls queued on a stream) one after another, up
// to the first that fails, and returns its error.
func InOrder(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// OrOne is xs, or unit zero values where xs is empty: a buffer that would be empty still gets one
// element (or row), so that every rank has a pointer to hand out.
func OrOne[T any](xs []T, unit int) []T {
	if len(xs) == 0 {
		return make([]T, unit)
	}
	return xs
}
