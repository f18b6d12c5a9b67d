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
