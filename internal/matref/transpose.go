package matref

// Transpose returns the rows×cols row-major matrix x stored column-major (that is, its transpose,
// cols×rows row-major), in parallel over the columns.
func Transpose(x []float32, rows, cols int) []float32 {
	t := make([]float32, len(x))
	ParallelFor(cols, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < rows; i++ {
				t[j*rows+i] = x[i*cols+j]
			}
		}
	})
	return t
}
