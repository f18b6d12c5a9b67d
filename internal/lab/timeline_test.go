package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// AppendTimeline: nothing before Start; an empty run after it; a new buffer only for more records.
func TestAppendTimeline(t *testing.T) {
	env := caseEnv(t)
	var tl AppendTimeline
	assert.Zero(t, tl.Ptr())
	_, ok, err := tl.Read(4, 1)
	require.NoError(t, err)
	assert.False(t, ok)

	require.NoError(t, tl.Start(env, 3, env.Stream))
	first := tl.Ptr()
	assert.NotZero(t, first)
	got, ok, err := tl.Read(4, 2)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, got.Tiles)
	assert.Zero(t, got.Missing)
	assert.Equal(t, 2, got.Launches)

	require.NoError(t, tl.Start(env, 2, env.Stream))
	assert.Equal(t, first, tl.Ptr(), "room enough: the same buffer")
	require.NoError(t, tl.Start(env, 8, env.Stream))
	assert.NotEqual(t, first, tl.Ptr(), "more records: a larger buffer")
}

// RunTimeline: a run that does not record hands the kernels no buffer and records nothing; one
// that records gets the buffer, and a run that left no record is an error naming the variant.
func TestRunTimeline(t *testing.T) {
	env := caseEnv(t)
	v := &Variant{Name: "tl"}
	var tl RunTimeline
	tl.Launches = 3
	require.NoError(t, tl.Begin(env, false, 4, env.Stream))
	assert.Zero(t, tl.Launches, "Begin starts the count")
	assert.Zero(t, tl.Ptr())
	rec, err := tl.Record(env, v, false, nil)
	require.NoError(t, err)
	assert.Nil(t, rec)

	require.NoError(t, tl.Begin(env, true, 4, env.Stream))
	assert.NotZero(t, tl.Ptr())
	_, err = tl.Record(env, v, true, []string{"compute"})
	require.ErrorContains(t, err, "variant tl")

	require.NoError(t, tl.Begin(env, false, 4, env.Stream))
	assert.Zero(t, tl.Ptr(), "a started buffer is still null for a run that does not record")
}

// The buffer is cleared when it is made, kept for the same tile count, made anew for another;
// a run that recorded nothing is refused by name.
func TestTileTimeline(t *testing.T) {
	env := caseEnv(t)
	v := &Variant{Name: "tl_kernel"}
	var tl TileTimeline
	data, err := tl.Record(env, v)
	require.NoError(t, err)
	assert.Nil(t, data, "nothing before the first Start")

	p, err := tl.Start(env, 2)
	require.NoError(t, err)
	require.NoError(t, env.Stream.Synchronize())
	_, err = tl.Record(env, v)
	assert.ErrorContains(t, err, "none of the 2 tiles left a timeline record: variant tl_kernel")

	require.NoError(t, tl.buf.CopyFromHost([]uint64{3, 0, 100, 150, 1, 1, 120, 200}, nil))
	again, err := tl.Start(env, 2)
	require.NoError(t, err)
	assert.Equal(t, p, again, "the same buffer for the same count, not cleared")
	tl.Launches = 2
	data, err = tl.Record(env, v)
	require.NoError(t, err)
	got := data[results.TimelineKey].(results.Timeline)
	assert.Equal(t, 2, got.Launches)
	assert.Equal(t, [][4]int64{{3, 0, 50, 0}, {1, 20, 100, 1}}, got.Tiles)

	_, err = tl.Start(env, 3)
	require.NoError(t, err)
	assert.Equal(t, 12, tl.buf.Len(), "another count: a new buffer")
}
