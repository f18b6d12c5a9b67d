package lab

// Columns is the columns [c0, c0+n) of a, a row-major matrix of rows × cols, as a row-major
// rows × n matrix of its own: a rank's block of the columns of an input, say.
func Columns[T any](a []T, rows, cols, c0, n int) []T {
	out := make([]T, rows*n)
	for i := range rows {
		copy(out[i*n:(i+1)*n], a[i*cols+c0:i*cols+c0+n])
	}
	return out
}
