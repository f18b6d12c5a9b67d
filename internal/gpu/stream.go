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
