package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostOutputsArePoisonedAndFreedWithTheCase(t *testing.T) {
	env := fakeEnv(t)
	env.openCase()
	in, err := PinnedHost(env, "in", 5)
	require.NoError(t, err)
	assert.Len(t, in, 5)
	pinned, err := HostOutput(env, "pinned out", 7, true, PoisonBytes(0xA5))
	require.NoError(t, err)
	pageable, err := HostOutput(env, "pageable out", 3, false, PoisonBytes(0x5A))
	require.NoError(t, err)
	copy(pinned, "written")
	require.NoError(t, env.arena().poison())
	assert.Equal(t, []byte{0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5}, pinned)
	assert.Equal(t, []byte{0x5A, 0x5A, 0x5A}, pageable)
	outs, err := env.caseOutputs()
	require.NoError(t, err)
	assert.Len(t, outs, 2, "host outputs are outputs of the case; a pinned input is not")
	require.NoError(t, env.closeCase())

	_, err = HostOutput(env, "x", 4, false, PoisonNaN32)
	assert.ErrorContains(t, err, "byte poison")
	_, err = PinnedHost(env, "empty", 0)
	assert.ErrorContains(t, err, "at least 1")
}
