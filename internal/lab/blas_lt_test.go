package lab

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type plainBLAS struct{ gpu.BLAS }

type ltBLAS struct {
	gpu.BLAS
	got *gpu.GemmDesc
}

func (b ltBLAS) LtMatmul(_ gpu.Stream, g gpu.GemmDesc) error { *b.got = g; return nil }

// LtMatmul hands g to cuBLASLt, and names the variant where the BLAS has no cuBLASLt.
func TestLtMatmul(t *testing.T) {
	v, g := &Variant{Name: "lib"}, gpu.GemmDesc{M: 3}
	require.ErrorContains(t, LtMatmul(plainBLAS{}, v, nil, g), "variant lib: this device's BLAS has no cuBLASLt matmul")
	var got gpu.GemmDesc
	require.NoError(t, LtMatmul(ltBLAS{got: &got}, v, nil, g))
	assert.Equal(t, g, got)
}
