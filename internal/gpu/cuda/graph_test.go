package cuda_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// TestGraphCaptureReplaysTwoKernels captures two saxpy launches on a stream and replays them:
// nothing runs during the capture, and each replay runs both. Small integers keep every fp32
// step exact, so the result is compared exactly.
func TestGraphCaptureReplaysTwoKernels(t *testing.T) {
	d := openDevice(t, 0)
	k := loadKernel(t, d, "saxpy")
	s := newStream(t, d)
	capt, ok := s.(gpu.GraphCapturer)
	require.True(t, ok, "CUDA streams capture graphs")

	r := newRand(t)
	const n = 1<<18 + 9
	x, y0 := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y0[i] = float32(r.IntN(201)-100), float32(r.IntN(2001)-1000)
	}
	dx, dy := upload(t, d, x), upload(t, d, y0)

	cfg := gpu.LaunchConfig{Grid: gpu.D1((n + 255) / 256), Block: gpu.D1(256), Stream: s}
	g, err := capt.CaptureGraph(func() error {
		if err := gpu.Launch(k, cfg, int32(n), float32(2), dx, dy); err != nil {
			return err
		}
		return gpu.Launch(k, cfg, int32(n), float32(3), dx, dy)
	})
	require.NoError(t, err)
	defer func() { assert.NoError(t, g.Destroy()) }()

	got := make([]float32, n)
	require.NoError(t, dy.CopyToHost(got, s))
	assert.Equal(t, y0, got, "capturing runs nothing")

	const replays = 3
	for range replays {
		require.NoError(t, g.Launch(s))
	}
	require.NoError(t, dy.CopyToHost(got, s))
	want := make([]float32, n)
	for i := range want {
		want[i] = y0[i] + replays*5*x[i]
	}
	assert.Zero(t, countDiffs(t, "y", got, want))
	require.NoError(t, g.Destroy())
	assert.ErrorContains(t, g.Launch(s), "destroyed graph")
}

func TestGraphCaptureFailures(t *testing.T) {
	d := openDevice(t, 0)
	k := loadKernel(t, d, "saxpy")
	s := newStream(t, d)
	capt := s.(gpu.GraphCapturer)
	buf := allocBuf[float32](t, d, 256)

	_, err := capt.CaptureGraph(func() error { return fmt.Errorf("the driver's own failure") })
	assert.ErrorContains(t, err, "the driver's own failure")

	// A synchronous copy from Go memory cannot be captured.
	host := make([]float32, 256)
	_, err = capt.CaptureGraph(func() error { return buf.CopyFromHost(host, s) })
	assert.Error(t, err)
	t.Logf("synchronous copy during capture: %v", err)

	// The stream works normally afterwards.
	require.NoError(t, buf.CopyFromHost(host, s))
	require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(256), Stream: s}, int32(256), float32(1), buf, buf))
	require.NoError(t, s.Synchronize())
}
