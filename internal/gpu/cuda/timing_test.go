package cuda_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// TestHoldKeepsQueuedWorkUntilReleased: an event recorded behind a hold fires only once the hold
// is let go, so the time from an event before the hold to one after it covers the host's wait;
// the kernel queued behind it then runs as usual, and a second release does nothing.
func TestHoldKeepsQueuedWorkUntilReleased(t *testing.T) {
	d := openDevice(t, 0)
	s := newStream(t, d)
	before, after := newEvent(t, d), newEvent(t, d)
	holder, ok := s.(gpu.Holder)
	require.True(t, ok, "CUDA streams can be held")
	k := loadKernel(t, d, "saxpy")

	const n = 4096
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i%17), float32(i%5)
	}
	dx, dy := upload(t, d, x), upload(t, d, y)
	for round := range 2 { // the second hold waits for the next value of the same word
		require.NoError(t, before.Record(s))
		release, err := holder.Hold()
		require.NoError(t, err)
		require.NoError(t, after.Record(s))
		require.NoError(t, gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(n / 256), Block: gpu.D1(256), Stream: s}, int32(n), float32(1), dx, dy))
		const wait = 30 * time.Millisecond
		time.Sleep(wait)
		require.NoError(t, release())
		require.NoError(t, release())
		require.NoError(t, s.Synchronize())
		ms, err := after.ElapsedMs(before)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, ms, 0.8*float64(wait.Milliseconds()), "round %d: the event behind the hold waited for the release", round)
	}
	got := make([]float32, n)
	require.NoError(t, dy.CopyToHost(got, s))
	for i := range got {
		require.Equal(t, float32(i%5)+2*float32(i%17), got[i], "element %d after two held runs", i)
	}
}

// TestFlushL2Runs: the flush by reading loads its PTX and runs on a stream, twice, without
// touching anything of the caller's.
func TestFlushL2Runs(t *testing.T) {
	d := openDevice(t, 0)
	f, ok := gpu.Unwrap(d).(gpu.L2Flusher)
	require.True(t, ok, "CUDA devices flush L2 by reading")
	s := newStream(t, d)
	y := []float32{1, 2, 3, 4}
	dy := upload(t, d, y)
	for range 2 {
		require.NoError(t, f.FlushL2(s))
	}
	require.NoError(t, s.Synchronize())
	got := make([]float32, len(y))
	require.NoError(t, dy.CopyToHost(got, s))
	assert.Equal(t, y, got)
}
