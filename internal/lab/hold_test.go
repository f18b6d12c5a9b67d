package lab

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// heldStream is a stream that counts its holds and releases (or fails to hold).
type heldStream struct {
	gpu.Stream
	holds, releases atomic.Int32
	fail            error
	onRelease       func() // called when a hold is let go (nil: nothing)
}

func (s *heldStream) Hold() (func() error, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	s.holds.Add(1)
	var done atomic.Bool
	return func() error {
		if done.CompareAndSwap(false, true) {
			s.releases.Add(1)
			if s.onRelease != nil {
				s.onRelease()
			}
		}
		return nil
	}, nil
}

func TestHeldRunsAreReleasedAndTimeoutsTurnTheHoldOff(t *testing.T) {
	var logs []string
	env := fakeEnv(t)
	env.logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	suite := &Suite{Name: "s"}
	fast, slow := &Variant{Name: "fast", Suite: suite}, &Variant{Name: "slow", Suite: suite}
	s := &heldStream{Stream: env.Stream}
	var h holds

	held, err := h.queued(env, fast, s, func() error {
		assert.Equal(t, int32(1), s.holds.Load(), "the hold is queued before the run")
		assert.Zero(t, s.releases.Load(), "and let go only after it")
		return nil
	}, nil)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, int32(1), s.releases.Load())

	// A run whose host work outlasts the timeout is released by the timer, then timed unheld.
	defer func(d time.Duration) { holdTimeout = d }(holdTimeout)
	holdTimeout = 10 * time.Millisecond
	held, err = h.queued(env, slow, s, func() error {
		time.Sleep(300 * time.Millisecond) // far past the timeout, so that a loaded machine still fires it
		assert.Equal(t, int32(2), s.releases.Load(), "the timer let the hold go")
		return errors.New("the run's own error")
	}, nil)
	assert.True(t, held)
	assert.ErrorContains(t, err, "the run's own error")
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], "s/slow is timed without holding the stream")
	held, err = h.queued(env, slow, s, func() error { return nil }, nil)
	require.NoError(t, err)
	assert.False(t, held, "a variant that timed out is not held again")
	assert.Equal(t, int32(2), s.holds.Load())
	held, _ = h.queued(env, fast, s, func() error { return nil }, nil)
	assert.True(t, held, "the others still are")

	// A stream that cannot be held, and one that is no Holder at all: unheld.
	other := &Variant{Name: "other", Suite: suite}
	held, err = h.queued(env, other, &heldStream{Stream: env.Stream, fail: errors.New("no stream memory operations")}, func() error { return nil }, nil)
	require.NoError(t, err)
	assert.False(t, held)
	assert.Contains(t, logs[len(logs)-1], "no stream memory operations")
	held, err = h.queued(env, fast, env.Stream, func() error { return nil }, nil)
	require.NoError(t, err)
	assert.False(t, held)

	// A suite that times the host's launches on purpose is never held.
	launches := &Variant{Name: "empty_launch", Suite: &Suite{Name: "launch_latency", TimeHostLaunches: true}}
	held, err = h.queued(env, launches, s, func() error { return nil }, nil)
	require.NoError(t, err)
	assert.False(t, held)
	assert.Equal(t, int32(3), s.holds.Load(), "no hold was queued for it")
}

// TestPacedRunsLetTheDeviceIdleFirst: a paced run is released no sooner than the gap after the
// last run's end, the host's queuing counting towards it; unheld runs wait before they are queued;
// a suite that times the host's launches is never paced.
func TestPacedRunsLetTheDeviceIdleFirst(t *testing.T) {
	env := fakeEnv(t)
	v := &Variant{Name: "v", Suite: &Suite{Name: "s"}}
	var h holds
	p := &pacer{gap: 20 * time.Millisecond}
	var released time.Time
	s := &heldStream{Stream: env.Stream, onRelease: func() { released = time.Now() }}

	_, err := h.queued(env, v, s, func() error { return nil }, p)
	require.NoError(t, err)
	p.ended()
	end := p.last
	var queuedBy time.Time
	_, err = h.queued(env, v, s, func() error { time.Sleep(p.gap / 2); queuedBy = time.Now(); return nil }, p)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, released.Sub(end), p.gap, "released a whole gap after the last end")
	assert.Less(t, released.Sub(queuedBy), p.gap, "the queuing's time counted towards the gap: no whole gap after it")

	p.ended()
	end = p.last
	var queuedAt time.Time
	_, err = h.queued(env, v, env.Stream, func() error { queuedAt = time.Now(); return nil }, p)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, queuedAt.Sub(end), p.gap, "unheld: the gap comes before the queuing")

	p.ended()
	launches := &Variant{Name: "empty_launch", Suite: &Suite{Name: "launch_latency", TimeHostLaunches: true}}
	began := time.Now()
	_, err = h.queued(env, launches, s, func() error { return nil }, p)
	require.NoError(t, err)
	assert.Less(t, time.Since(began), p.gap, "a suite that times the host's launches is not paced")

	var none *pacer
	none.wait() // a nil pacer paces nothing
	none.ended()
}
