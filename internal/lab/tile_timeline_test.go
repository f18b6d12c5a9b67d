package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/results"
)

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
