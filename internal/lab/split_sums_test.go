package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ranges merge neighbours and keep nothing empty.
func TestRangesAdd(t *testing.T) {
	var r Ranges
	r.Add(0, 4)
	r.Add(4, 2) // follows: merged
	r.Add(8, 0) // empty: nothing
	r.Add(10, 3)
	assert.Equal(t, Ranges{{0, 6}, {10, 13}}, r)
}

// The partial sums are NaN and the counters zero before each run; Args refuses a variant that
// wants more slots than the case has, and gives nothing to one that shares no item.
func TestSplitSums(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	w := PrepSplitSums(p, 4, 6, 3)
	require.NoError(t, p.Err)
	assert.Equal(t, 24, w.Partials.Len())
	assert.Equal(t, 3, w.Counters.Len())
	assert.Equal(t, int64(4*(24+3)), SplitSumsBytes(4, 6, 3))
	args, err := w.Args("v", 4)
	require.NoError(t, err)
	assert.Equal(t, []any{w.Partials, w.Counters, int32(4)}, args)
	none, err := w.Args("v", 0)
	assert.NoError(t, err)
	assert.Nil(t, none)
	_, err = w.Args("v", 5)
	assert.ErrorContains(t, err, "variant v: 5 blocks may share an item, but the case's workspace has room for 4")
	_, err = (*SplitSums)(nil).Args("v", 2)
	assert.ErrorContains(t, err, "room for 0")
}

// MinParam is the smallest value among the variants that set the key.
func TestMinParam(t *testing.T) {
	s := &Suite{Variants: []*Variant{{Params: map[string]int64{"bm": 64}}, {Params: map[string]int64{}}, {Params: map[string]int64{"bm": 16}}}}
	assert.Equal(t, int64(16), s.MinParam("bm", 32))
	assert.Equal(t, int64(32), s.MinParam("bn", 32), "none sets it")
}
