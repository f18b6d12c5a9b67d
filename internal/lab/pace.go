package lab

import "time"

// repGap is the least time the device idles before each timed run, in the engine and in the
// peers alike (labs/common/peers/klpeer.py's _REP_GAP_S). Under its power cap an H200's clocks
// fall within a few hundred milliseconds of back-to-back tensor-core work, and by how much
// depends on the share of time the device is busy: a Python loop, whose host work between runs
// took longer than the engine's, left the device idle longer, ran at higher clocks and was timed
// up to 1.1× faster with the very same cuBLASLt kernel. With every run preceded by the same idle
// gap, longer than any loop's own host work, the variants of a suite see the same duty cycle.
const repGap = 100 * time.Microsecond

// pacer keeps repGap between the end of one timed run, as the host saw it, and the release of
// the next.
type pacer struct {
	gap  time.Duration
	last time.Time // when the last run was seen to end; zero before the first
}

func newPacer() *pacer { return &pacer{gap: repGap} }

// wait returns once the gap since the last run's end has passed. It spins: a sleep of 100 µs
// overshoots by tens of microseconds, which would be idle time of its own.
func (p *pacer) wait() {
	if p == nil || p.last.IsZero() {
		return
	}
	for time.Since(p.last) < p.gap {
	}
}

// ended marks the end of a run.
func (p *pacer) ended() {
	if p != nil {
		p.last = time.Now()
	}
}
