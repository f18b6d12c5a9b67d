package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// Events is NewEvent n times through p: the events of a case's schedules, closed with the case.
func (p *Prep) Events(n int) []gpu.Event {
	evs := make([]gpu.Event, 0, n)
	for range n {
		ev := keep(p, func() (gpu.Event, error) { return NewEvent(p.Env) })
		if p.Err != nil {
			return nil
		}
		evs = append(evs, ev)
	}
	return evs
}

// Order makes the work queued on to from now on wait for the work queued on from so far, through
// ev (no host in between).
func Order(ev gpu.Event, from, to gpu.Stream) error {
	if err := ev.Record(from); err != nil {
		return err
	}
	return to.WaitEvent(ev)
}
