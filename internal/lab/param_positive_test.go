package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Positive takes a set positive value, and def for a missing, zero or negative one.
func TestVariantPositive(t *testing.T) {
	v := &Variant{Params: map[string]int64{"a": 3, "z": 0, "neg": -2}}
	assert.Equal(t, 3, v.Positive("a", 7))
	assert.Equal(t, 7, v.Positive("z", 7))
	assert.Equal(t, 7, v.Positive("neg", 7))
	assert.Equal(t, 7, v.Positive("missing", 7))
}
