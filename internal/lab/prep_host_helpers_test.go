package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Host memory through a Prep is allocated as by the plain calls until an error, then not at all.
func TestPrepHostBuffersKeepTheFirstError(t *testing.T) {
	be, _ := fakeBackend(t)
	dev, err := be.Open(0)
	require.NoError(t, err)
	stream, err := dev.NewStream()
	require.NoError(t, err)
	env := NewEnv(dev, stream, 1, nil, nil)
	env.openCase()
	defer func() { require.NoError(t, env.closeCase()) }()

	p := NewPrep(env)
	assert.Len(t, p.PinnedHost("in", 5), 5)
	out := p.HostOutput("out", 3, false, PoisonBytes(0x5A))
	require.NoError(t, p.Err)
	require.NoError(t, env.arena().poison())
	assert.Equal(t, []byte{0x5A, 0x5A, 0x5A}, out)

	assert.Nil(t, p.HostOutput("bad", 4, true, PoisonNaN32))
	require.ErrorContains(t, p.Err, "byte poison")
	first := p.Err
	assert.Nil(t, p.PinnedHost("after", 8))
	assert.Same(t, first, p.Err, "the first error stays")
}
