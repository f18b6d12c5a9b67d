package nvml

import "time"

// PowerMark is the start of a span of a PowerWatch.
type PowerMark struct {
	violationNs uint64
	at          time.Time
	ok          bool
}

// PowerSpan is what a PowerWatch read over a span.
type PowerSpan struct {
	CappedShare float64 // of the span's wall time, the share the power cap held the clocks down
	SMClockMHz  int     // the SM clock at the span's end (0: not read)
}
