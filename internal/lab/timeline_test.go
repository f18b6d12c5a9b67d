package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
