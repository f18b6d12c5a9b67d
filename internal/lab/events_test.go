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

// Order records the event on one stream and makes the other wait for it.
func TestOrder(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	evs := p.Events(1)
	require.NoError(t, p.Err)
	side, err := env.SideStream()
	require.NoError(t, err)
	assert.NoError(t, Order(evs[0], env.Stream, side))
}
