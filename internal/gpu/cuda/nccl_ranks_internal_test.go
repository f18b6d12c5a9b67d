//go:build cgo && linux

package cuda

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// No GPU needed: the claim that two ranks of one communicator are on the same GPU.
func TestGPUClaimCatchesASecondRank(t *testing.T) {
	id := make([]byte, 128)
	rand.Read(id)
	d := &device{info: gpu.DeviceInfo{Index: 0, UUID: "GPU-00000000-test-" + t.Name()}}
	first, err := claimGPU(id, 2, d)
	require.NoError(t, err)
	assert.Equal(t, -1, first.intruder())

	_, err = claimGPU(id, 5, d)
	require.ErrorIs(t, err, gpu.ErrRanksShareGPU)
	assert.Contains(t, err.Error(), "ranks 2 and 5 of the communicator are both on device 0")
	assert.Eventually(t, func() bool { return first.intruder() == 5 }, 5*time.Second, 10*time.Millisecond,
		"the first rank learns who came")

	// Another GPU, or another communicator, is no conflict.
	other := &device{info: gpu.DeviceInfo{Index: 1, UUID: "GPU-11111111-test-" + t.Name()}}
	c, err := claimGPU(id, 5, other)
	require.NoError(t, err)
	c.release()
	id2 := append([]byte{}, id...)
	id2[0] ^= 1
	c, err = claimGPU(id2, 5, d)
	require.NoError(t, err)
	c.release()

	first.release()
	again, err := claimGPU(id, 5, d)
	require.NoError(t, err, "a released claim can be taken again")
	again.release()
}

func TestNCCLTimeoutFromTheEnvironment(t *testing.T) {
	t.Setenv(NCCLTimeoutEnv, "")
	d, err := ncclTimeout()
	require.NoError(t, err)
	assert.Equal(t, DefaultNCCLTimeout, d)
	t.Setenv(NCCLTimeoutEnv, "90s")
	d, err = ncclTimeout()
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, d)
	for _, bad := range []string{"soon", "-1s", "0"} {
		t.Setenv(NCCLTimeoutEnv, bad)
		_, err = ncclTimeout()
		assert.ErrorContains(t, err, NCCLTimeoutEnv, bad)
	}
}

func TestDeviceAPILayoutByNCCLVersion(t *testing.T) {
	for _, c := range []struct {
		code   int
		layout int
		err    string
	}{
		{22703, 0, "has no device API"},
		{22803, 1, ""},
		{22806, 1, ""},
		{22807, 2, ""},
		{22809, 2, ""},
		{22902, 0, "NCCL 2.28 only"},
	} {
		text := fmt.Sprintf("%d.%d.%d", c.code/10000, c.code/100%100, c.code%100)
		got, err := deviceAPILayout(c.code, text)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, text)
			assert.ErrorContains(t, err, text)
			continue
		}
		require.NoError(t, err, text)
		assert.Equal(t, c.layout, got, text)
	}
}
