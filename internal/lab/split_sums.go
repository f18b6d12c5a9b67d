package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// SplitSums is the workspace of a kernel whose blocks share items of its output and add their
// partial sums in order (split-K and stream-K decode kernels): Slots fp32 partials of every output
// element, poisoned with NaN before each run so that a slot no block wrote shows in the output,
// and one counter per item, zero before each run (the kernels put them back to zero).
type SplitSums struct {
	Partials *gpu.Buffer[float32]
	Counters *gpu.Buffer[int32]
	Slots    int
}

// SplitSumsBytes is what PrepSplitSums allocates, for the case's memory check.
func SplitSumsBytes(slots, elems, items int) int64 {
	return 4 * int64(max(slots*elems, 1)+max(items, 1))
}

// PrepSplitSums allocates slots partials of elems output elements and items counters through p.
func PrepSplitSums(p *Prep, slots, elems, items int) *SplitSums {
	ws := PrepScratch[float32](p, "the partial sums", max(slots*elems, 1), PoisonNaN)
	counters := PrepScratch[int32](p, "the item counters", max(items, 1), PoisonBytes(0))
	return &SplitSums{Partials: ws, Counters: counters, Slots: slots}
}

// Args are the kernel arguments for a variant that lets up to slots blocks share an item: the
// partials, the counters and slots (none for 0); an error when the workspace has fewer.
func (w *SplitSums) Args(variant string, slots int) ([]any, error) {
	if slots == 0 {
		return nil, nil // a variant whose blocks share nothing
	}
	if w == nil || slots > w.Slots {
		have := 0
		if w != nil {
			have = w.Slots
		}
		return nil, fmt.Errorf("variant %s: %d blocks may share an item, but the case's workspace has room for %d", variant, slots, have)
	}
	return []any{w.Partials, w.Counters, int32(slots)}, nil
}
