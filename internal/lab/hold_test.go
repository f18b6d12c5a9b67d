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
	})
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, int32(1), s.releases.Load())

	// A run whose host work outlasts the timeout is released by the timer, then timed unheld.
	defer func(d time.Duration) { holdTimeout = d }(holdTimeout)
	holdTimeout = 10 * time.Millisecond
	held, err = h.queued(env, slow, s, func() error {
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, int32(2), s.releases.Load(), "the timer let the hold go")
		return errors.New("the run's own error")
	})
	assert.True(t, held)
	assert.ErrorContains(t, err, "the run's own error")
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], "s/slow is timed without holding the stream")
	held, err = h.queued(env, slow, s, func() error { return nil })
	require.NoError(t, err)
	assert.False(t, held, "a variant that timed out is not held again")
	assert.Equal(t, int32(2), s.holds.Load())
	held, _ = h.queued(env, fast, s, func() error { return nil })
	assert.True(t, held, "the others still are")

	// A stream that cannot be held, and one that is no Holder at all: unheld.
	other := &Variant{Name: "other", Suite: suite}
	held, err = h.queued(env, other, &heldStream{Stream: env.Stream, fail: errors.New("no stream memory operations")}, func() error { return nil })
	require.NoError(t, err)
	assert.False(t, held)
	assert.Contains(t, logs[len(logs)-1], "no stream memory operations")
	held, err = h.queued(env, fast, env.Stream, func() error { return nil })
	require.NoError(t, err)
	assert.False(t, held)

	// A suite that times the host's launches on purpose is never held.
	launches := &Variant{Name: "empty_launch", Suite: &Suite{Name: "launch_latency", TimeHostLaunches: true}}
	held, err = h.queued(env, launches, s, func() error { return nil })
	require.NoError(t, err)
	assert.False(t, held)
	assert.Equal(t, int32(3), s.holds.Load(), "no hold was queued for it")
}
