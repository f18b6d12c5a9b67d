package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVariantInt(t *testing.T) {
	v := &Variant{Params: map[string]int64{"block": 128, "sync": 0}}
	assert.Equal(t, int64(128), v.Int("block", 256))
	assert.Equal(t, int64(0), v.Int("sync", 1), "a parameter set to 0 is not the default")
	assert.Equal(t, int64(8), v.Int("blocks_per_sm", 8))
	assert.Equal(t, int64(8), (&Variant{}).Int("blocks_per_sm", 8), "no params at all")
}

// Positive takes a set positive value, and def for a missing, zero or negative one.
func TestVariantPositive(t *testing.T) {
	v := &Variant{Params: map[string]int64{"a": 3, "z": 0, "neg": -2}}
	assert.Equal(t, 3, v.Positive("a", 7))
	assert.Equal(t, 7, v.Positive("z", 7))
	assert.Equal(t, 7, v.Positive("neg", 7))
	assert.Equal(t, 7, v.Positive("missing", 7))
}

func TestSuiteMaxParam(t *testing.T) {
	s := &Suite{Variants: []*Variant{{Params: map[string]int64{"split": 4}}, {}, {Params: map[string]int64{"split": 16, "x": -3}}}}
	assert.Equal(t, int64(16), s.MaxParam("split"))
	assert.Zero(t, s.MaxParam("x"), "no variant above 0")
	assert.Zero(t, s.MaxParam("absent"))
}
