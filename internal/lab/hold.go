package lab

import (
	"sync/atomic"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// A timed run is queued whole before the device starts it. The stream is held (gpu.Holder) while
// the host records the start event, launches the run and records the end event, and let go after:
// without the hold the start event fires on an idle device while the host is still in its cgo,
// library and driver calls, and an operation of 20 µs is timed as that plus the host's launch
// latency, which also varies from one process to the next.
//
// holdTimeout lets a hold go that the host did not release: a run that waits on the host for the
// device (a synchronous copy, a stream synchronisation), or a launch queue that filled up. That
// variant is then timed without the hold (its warm-up runs meet the timeout first), and the log
// says so. maxHeldBatch bounds the runs a rank queues behind one hold, well inside the driver's
// launch queue.
const maxHeldBatch = 128

var holdTimeout = 2 * time.Second // a variable for the tests

// holds is a worker's record of the variants timed without a hold, by Variant.Key.
type holds struct {
	off map[string]bool
}

// queued runs enqueue, which queues device work on s, behind a hold of s when the backend has one,
// the variant's suite does not time the host's launches, and the variant has not timed out
// before; held reports whether it was. pace (nil: none) keeps the device idle for the pacer's gap
// first: it is waited for just before the hold is let go, so that the host's own work of queuing
// the run counts towards the gap, or before enqueue when nothing is held. A suite that times the
// host's launches is not paced.
func (h *holds) queued(env *Env, v *Variant, s gpu.Stream, enqueue func() error, pace *pacer) (held bool, err error) {
	holder, ok := s.(gpu.Holder)
	if v.Suite != nil && v.Suite.TimeHostLaunches {
		return false, enqueue()
	}
	if !ok || h.off[v.Key()] {
		pace.wait()
		return false, enqueue()
	}
	release, err := holder.Hold()
	if err != nil {
		h.disable(env, v, "the stream cannot be held ("+err.Error()+")")
		pace.wait()
		return false, enqueue()
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(holdTimeout, func() {
		timedOut.Store(true)
		release()
	})
	err = enqueue()
	pace.wait()
	timer.Stop()
	if rerr := release(); err == nil {
		err = rerr
	}
	if timedOut.Load() {
		h.disable(env, v, "its host work did not return within "+holdTimeout.String()+" of holding the stream (it waits for the device, or filled the launch queue)")
	}
	return true, err
}

func (h *holds) disable(env *Env, v *Variant, why string) {
	if h.off == nil {
		h.off = map[string]bool{}
	}
	h.off[v.Key()] = true
	env.Logf("%s is timed without holding the stream, so its times include the host's launches: %s", v.Key(), why)
}
