package overlap

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The timeline of a schedule (suite timeline): its -DKL_TIMELINE builds' kernels append a record
// for every GEMM tile, every block's copy of a source block and every wait of a fused GEMM block
// for a ready flag to one buffer (labs/common/timeline.cuh): SM, kind, start and end on the
// global timer, one clock for both streams. Record (lab.Recorder) returns the last run's records
// as a results.Timeline (rank 0's become the entry's); internal/site draws it per SM.

// TimelineKinds names the records' kinds, in the order of KL_TL_COMPUTE, KL_TL_COPY, KL_TL_WAIT.
var TimelineKinds = []string{"compute", "copy", "wait"}

// timeline is a case's record buffer (tl[0]: records taken in the run, tl[1]: records it holds,
// the records from tl[4] on, four words each) and the kernel launches of its last run.
type timeline struct {
	tlOn     bool // the variant now running records
	tl       *gpu.Buffer[uint64]
	tlCap    int
	launches int
}

// tlPtr is the records' buffer for the kernels, null unless the variant records.
func (t *timeline) tlPtr() gpu.Ptr {
	if !t.tlOn {
		return 0
	}
	return t.tl.DevicePtr()
}

func (t *timeline) launch(k gpu.Kernel, cfg gpu.LaunchConfig, args ...any) error {
	t.launches++
	return gpu.Launch(k, cfg, args...)
}

// TimelineRecords bounds the records of one run: one per GEMM tile (the sequential GEMM over
// A_full has no more tiles than the blocks' GEMMs), at most one wait per tile, and one copy per
// block of a copy and source block (a copy's grid and the fused producers hold at most
// SMs × blocks per SM blocks).
func TimelineRecords(sh Shape, n, sms, blocksPerSM int) int {
	return 2*Tiles(sh, n) + n*sms*blocksPerSM
}

// startTimeline, before a run on stream s: whether v records and, if it does, its buffer
// (allocated with its capacity written on first use, or when v may leave more records) with the
// count cleared.
func (c *core[T]) startTimeline(v *lab.Variant, s gpu.Stream) error {
	c.launches = 0
	if c.tlOn = v.Int(ParamTimeline, 0) != 0; !c.tlOn {
		return nil
	}
	if need := TimelineRecords(c.sh, c.n, c.env.Device.Info().SMs, param(v, ParamBlocksPerSM, 2)); need > c.tlCap {
		host := make([]uint64, 4+4*need)
		host[1] = uint64(need)
		var err error // the engine frees the smaller buffer with the case
		if c.tl, err = lab.Upload(c.env, fmt.Sprintf("the timeline (%d records)", need), host); err != nil {
			return err
		}
		c.tlCap = need
	}
	return c.env.Device.MemsetD32(c.tl.DevicePtr(), 0, 2, s)
}

// Record returns the timeline of the last run for a timeline variant, nothing for the others.
// Records past the buffer's end (never, while TimelineRecords bounds them) count as missing.
func (c *core[T]) Record(v *lab.Variant) (map[string]any, error) {
	if v.Int(ParamTimeline, 0) == 0 || c.tl == nil {
		return nil, nil
	}
	recs, err := c.tl.Download()
	if err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	kept := min(recs[0], recs[1])
	tl := results.TimelineOfRecords(recs[4:4+4*kept], c.env.Device.Info().SMs, c.launches)
	if len(tl.Tiles) == 0 {
		// The output was right (the check passed), so the kernels ran without recording.
		return nil, fmt.Errorf("the run left no timeline record: variant %s runs kernels built without -DKL_TIMELINE", v.Name)
	}
	tl.Missing += int(recs[0] - kept)
	tl.Kinds = TimelineKinds
	return map[string]any{results.TimelineKey: tl}, nil
}
