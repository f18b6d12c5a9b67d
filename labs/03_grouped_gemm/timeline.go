package grouped

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The SM timeline. Variants with timeline: 1 are built with -DKL_TIMELINE: each tile leaves four
// numbers in a device buffer (timeline.cuh): the SM that ran it, its group, and the global
// timer in nanoseconds when its block started and finished it. After the timed runs the engine
// calls Record (lab.Recorder), which returns the records of the last Run as a results.Timeline:
// its launches are one per non-empty group for the loop, one otherwise, and a tile that left no
// record is missing (a kernel that skipped work: never, if correct). internal/site draws it as a
// Gantt chart per SM (kl-plot kind: timeline).

// timelineBuffer returns the records' buffer for the variant's tile size, allocating and clearing
// it on first use.
func (c *groupedCase) timelineBuffer(ls launchShape) (gpu.Ptr, error) {
	n := TotalTiles(c.shapes, ls.BM, ls.BN)
	if c.tl != nil && c.tlN == n {
		return c.tl.DevicePtr(), nil
	}
	var err error // a timeline of another size: a new buffer (the engine frees both with the case)
	if c.tl, err = lab.Alloc[uint64](c.env, fmt.Sprintf("the timeline (%d tiles)", n), 4*n); err != nil {
		return 0, err
	}
	c.tlN = n
	return c.tl.DevicePtr(), c.tl.FillBytes(0, c.env.Stream)
}

// Record returns the timeline of the last Run for a timeline variant, nothing for the others.
func (c *groupedCase) Record(v *lab.Variant) (map[string]any, error) {
	if v.Int(ParamTimeline, 0) == 0 || c.tl == nil {
		return nil, nil
	}
	recs, err := c.tl.Download()
	if err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	tl := results.TimelineOfRecords(recs, c.env.Device.Info().SMs, c.tlL)
	if len(tl.Tiles) == 0 && tl.Missing > 0 {
		// The output was right (the check passed), so the kernel ran without recording: it was not
		// built with -DKL_TIMELINE (the image of the timed build was loaded in its place?).
		return nil, fmt.Errorf("none of the %d tiles left a timeline record: variant %s runs a kernel built without -DKL_TIMELINE", tl.Missing, v.Name)
	}
	return map[string]any{results.TimelineKey: tl}, nil
}
