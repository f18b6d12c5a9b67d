package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// TileTimeline is the host side of labs/common/timeline.cuh's per-tile records (kl_tl_end), as
// AppendTimeline is of its appended ones: a device buffer of four words per tile, at tl[4·tile]
// the SM that ran it, its group, and when its block started and finished it.
type TileTimeline struct {
	buf      *gpu.Buffer[uint64]
	tiles    int
	Launches int // the kernel launches of the last run, which the caller counts
}

// Start returns the buffer for a run of tiles tiles: allocated and cleared on env's stream on
// first use, or anew for another count (the engine frees both with the case). A correct run
// overwrites every record, so a later run of the same count needs no clearing.
func (t *TileTimeline) Start(env *Env, tiles int) (gpu.Ptr, error) {
	if t.buf == nil || t.tiles != tiles {
		var err error
		if t.buf, err = Alloc[uint64](env, fmt.Sprintf("the timeline (%d tiles)", tiles), 4*tiles); err != nil {
			return 0, err
		}
		t.tiles = tiles
		if err := t.buf.FillBytes(0, env.Stream); err != nil {
			return 0, err
		}
	}
	return t.buf.DevicePtr(), nil
}

// Record returns the records of the last run under results.TimelineKey, nothing before the first
// Start. A run that left none is an error: its output passed the check, so v's kernel ran built
// without -DKL_TIMELINE (the image of the timed build loaded in its place?).
func (t *TileTimeline) Record(env *Env, v *Variant) (map[string]any, error) {
	if t.buf == nil {
		return nil, nil
	}
	recs, err := t.buf.Download()
	if err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	tl := results.TimelineOfRecords(recs, env.Device.Info().SMs, t.Launches)
	if len(tl.Tiles) == 0 && tl.Missing > 0 {
		return nil, fmt.Errorf("none of the %d tiles left a timeline record: variant %s runs a kernel built without -DKL_TIMELINE", tl.Missing, v.Name)
	}
	return map[string]any{results.TimelineKey: tl}, nil
}
