package gpu

import "fmt"

// SynchronizeAll waits on the host for every stream of every list and returns the first error,
// naming the stream's index in its list (the rank, for one stream per device).
func SynchronizeAll(lists ...[]Stream) error {
	var first error
	for _, l := range lists {
		for i, s := range l {
			if err := s.Synchronize(); err != nil && first == nil {
				first = fmt.Errorf("rank %d: %w", i, err)
			}
		}
	}
	return first
}

// GraphCapturer is implemented by streams that can record the work issued on them into a graph
// and replay it with one launch (CUDA graphs), which removes the launch cost of each kernel from
// a timed loop (labrun's --graph).
type GraphCapturer interface {
	// CaptureGraph records what issue launches on this stream (nothing runs) and returns the graph.
	CaptureGraph(issue func() error) (Graph, error)
}

// Graph is recorded work that can be launched again and again.
type Graph interface {
	Launch(s Stream) error
	Destroy() error
}

// Holder is implemented by streams whose later work can be held back on the device until the
// host lets it go. Timing queues a whole run behind a hold, so that the start event does not
// fire on an idle device while the host is still launching: without it, a 20 µs operation's time
// includes the host's launch latency (cgo, library and driver calls).
type Holder interface {
	// Hold queues a wait on this stream; what is queued after it runs once release is called.
	// release may be called from any goroutine; calls after the first do nothing.
	Hold() (release func() error, err error)
}

// L2Flusher is implemented by devices that can replace what their L2 cache holds with clean
// lines of a buffer of their own, by reading it. A flush that writes a buffer instead (a memset)
// leaves L2 full of dirty lines, and the timed run that follows pays for writing them back (on
// the H200 that is a sizeable part of a read of B at decode, which takes tens of µs).
type L2Flusher interface {
	FlushL2(s Stream) error
}
