package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// RunTimeline is an AppendTimeline across a case's runs: whether the run now going records (On),
// the kernel launches it made (Launch counts them, for results.TimelineOfRecords), and its records
// as a Recorder returns them (Record).
type RunTimeline struct {
	AppendTimeline
	On       bool
	Launches int
}

// Begin starts a run: on says whether it records, and if so the buffer is readied for need
// records on s.
func (t *RunTimeline) Begin(env *Env, on bool, need int, s gpu.Stream) error {
	t.Launches, t.On = 0, on
	if !on {
		return nil
	}
	return t.Start(env, need, s)
}

// Ptr is the records' buffer for the kernels, null unless the run records.
func (t *RunTimeline) Ptr() gpu.Ptr {
	if !t.On {
		return 0
	}
	return t.AppendTimeline.Ptr()
}

// Launch is gpu.Launch, counted as one of the run's launches.
func (t *RunTimeline) Launch(k gpu.Kernel, cfg gpu.LaunchConfig, args ...any) error {
	t.Launches++
	return gpu.Launch(k, cfg, args...)
}

// Record returns the last run's records, their kinds named, under results.TimelineKey when on
// (the variant records), nothing otherwise. A run that left none is an error: its output passed
// the check, so v's kernels ran, built without -DKL_TIMELINE.
func (t *RunTimeline) Record(env *Env, v *Variant, on bool, kinds []string) (map[string]any, error) {
	if !on {
		return nil, nil
	}
	tl, ok, err := t.Read(env.Device.Info().SMs, t.Launches)
	if !ok || err != nil {
		return nil, err
	}
	if len(tl.Tiles) == 0 {
		return nil, fmt.Errorf("the run left no timeline record: variant %s runs kernels built without -DKL_TIMELINE", v.Name)
	}
	tl.Kinds = kinds
	return map[string]any{results.TimelineKey: tl}, nil
}
