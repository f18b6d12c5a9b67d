package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSuiteMaxParam(t *testing.T) {
	s := &Suite{Variants: []*Variant{{Params: map[string]int64{"split": 4}}, {}, {Params: map[string]int64{"split": 16, "x": -3}}}}
	assert.Equal(t, int64(16), s.MaxParam("split"))
	assert.Zero(t, s.MaxParam("x"), "no variant above 0")
	assert.Zero(t, s.MaxParam("absent"))
}
