package lab

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prep.Events makes n events that the case closes, and none after an error.
func TestPrepEvents(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	bufs := len(env.arena().bufs)
	evs := p.Events(3)
	require.NoError(t, p.Err)
	assert.Len(t, evs, 3)
	assert.Len(t, env.arena().bufs, bufs+3, "the case owns its events")

	p.Err = errors.New("earlier")
	assert.Nil(t, p.Events(2))
	assert.Len(t, env.arena().bufs, bufs+3, "nothing is made after an error")
}
