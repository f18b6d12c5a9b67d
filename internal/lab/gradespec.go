package lab

// Grading modes of a job (Job.Mode).
const (
	GradeCheck = "check" // correctness: GradeSpec.Rounds checked runs, fresh inputs each
	GradeSpeed = "speed" // speed: GradeSpec.Warmup + Job.Reps checked runs, the last Reps timed
)

// GradeSpec is the settings of grading jobs, which the grader's job hook (internal/grade) runs in
// the worker. Unlike a normal run (one checked run, then timed runs whose outputs nobody reads),
// every run of a grading job is a checked run:
//
//   - the case is prepared afresh before every run, with inputs drawn from a stream of the seed
//     of its own (so an answer cached from an earlier call is wrong), and its outputs poisoned;
//   - every buffer is surrounded by NaN red zones, checked after the run (writes outside a buffer),
//     and NaN read from them shows in the outputs (reads outside a buffer);
//   - the inputs are compared with their contents before the run (a kernel must not change them);
//   - the outputs are checked against the reference, and a failure is explained: outputs left
//     unwritten, the previous run's answer returned, NaN computed from outside the inputs, or
//     plainly wrong values.
type GradeSpec struct {
	Rounds  int   `json:"rounds"`   // checked runs of a GradeCheck job (default 3)
	Warmup  int   `json:"warmup"`   // checked, untimed runs before a GradeSpeed job's timed ones (default 2)
	RedZone int64 `json:"red_zone"` // bytes of 0xFF before and after every buffer (default 64 KiB; -1: none)
	// ReadOnly says, for a graded variant (by Variant.Key), which kernel parameters point at
	// inputs (const T* in the course's own signature of the kernel, not the submission's).
	ReadOnly map[string][]bool `json:"read_only,omitempty"`
	// The emulated machine (lab.yaml's grading.emulator): SMs per device, and the schedule as the
	// emulator takes it ("adversarial:SEED", or "" for the plain order).
	EmuSMs      int    `json:"emu_sms,omitempty"`
	EmuSchedule string `json:"emu_schedule,omitempty"`
}

// DefaultRedZone is the size of the red zones around buffers in grading.
const DefaultRedZone = 64 << 10
