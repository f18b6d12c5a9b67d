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
