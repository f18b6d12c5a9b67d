package lab

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/matref"
	"github.com/stretchr/testify/assert"
)

// Uniform is FillUniform seeded by the generator's next draw.
func TestUniform(t *testing.T) {
	a, b := caseEnv(t), caseEnv(t)
	want := make([]float32, 5)
	matref.FillUniform(want, b.RNG.Uint64())
	assert.Equal(t, want, Uniform(a, 5))
}
