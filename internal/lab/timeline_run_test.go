package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
