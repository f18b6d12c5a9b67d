package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// AppendTimeline is the host side of labs/common/timeline.cuh's appended records (kl_tl_add): a
// device buffer whose tl[0] counts the records a run took and tl[1] holds how many it has room
// for, the records from tl[4] on, four words each.
type AppendTimeline struct {
	buf *gpu.Buffer[uint64]
	cap int
}

// Start readies the buffer for a run that may leave need records: allocated for the case on
// first use, or anew when need exceeds its room (the engine frees the smaller one with the
// case), with its count cleared on s.
func (t *AppendTimeline) Start(env *Env, need int, s gpu.Stream) error {
	if need > t.cap {
		host := make([]uint64, 4+4*need)
		host[1] = uint64(need)
		var err error
		if t.buf, err = Upload(env, fmt.Sprintf("the timeline (%d records)", need), host); err != nil {
			return err
		}
		t.cap = need
	}
	return env.Device.MemsetD32(t.buf.DevicePtr(), 0, 2, s)
}

// Ptr is the buffer for the kernels, null before the first Start.
func (t *AppendTimeline) Ptr() gpu.Ptr {
	if t.buf == nil {
		return 0
	}
	return t.buf.DevicePtr()
}

// Read returns the last run's records as results.TimelineOfRecords does (sms, launches), the
// records that found no room counted as missing; false when the buffer was never started.
func (t *AppendTimeline) Read(sms, launches int) (results.Timeline, bool, error) {
	if t.buf == nil {
		return results.Timeline{}, false, nil
	}
	recs, err := t.buf.Download()
	if err != nil {
		return results.Timeline{}, true, fmt.Errorf("reading the timeline: %w", err)
	}
	kept := min(recs[0], recs[1])
	tl := results.TimelineOfRecords(recs[4:4+4*kept], sms, launches)
	tl.Missing += int(recs[0] - kept)
	return tl, true, nil
}
