//go:build cgo && linux

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No GPU needed: the handle's encoding and the errors for bad ones.
func TestSharedHandleRoundTrip(t *testing.T) {
	id, err := bootID()
	require.NoError(t, err)
	h := sharedHandle{BootID: id, Pid: 4242, FD: 17, Size: 4 << 20, Bytes: 3<<20 + 5}
	b := h.encode()
	require.Len(t, b, sharedHandleLen)
	got, err := decodeSharedHandle(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)

	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": b[:len(b)-1],
		"emulator":  []byte(`{"path":"/dev/shm/kl-emu-1-1","base":1,"bytes":8,"pid":1}`),
	} {
		_, err := decodeSharedHandle(bad)
		assert.ErrorContains(t, err, "not the handle of a CUDA shared buffer", name)
	}
	h.Bytes = h.Size + 1
	_, err = decodeSharedHandle(h.encode())
	assert.ErrorContains(t, err, "damaged")
}

func TestTakeFDFromAnExitedProcess(t *testing.T) {
	// Pid 0x7ffffff0 is above every pid_max, so no process has it.
	_, err := takeFD(0x7ffffff0, 3)
	assert.ErrorContains(t, err, "has exited")
}

func TestRoundUp(t *testing.T) {
	const g = 2 << 20
	for _, c := range []struct{ n, want int64 }{{1, g}, {g, g}, {g + 1, 2 * g}} {
		assert.Equal(t, c.want, roundUp(c.n, g))
	}
}
