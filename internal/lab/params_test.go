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
