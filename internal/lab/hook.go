package lab

import (
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// A JobHook runs the jobs that carry a mode (Job.Mode) its own way, through the same worker,
// driver and case lifecycle as every other job. The grader (internal/grade) is one: every run on
// fresh inputs, buffers guarded by red zones, inputs verified unchanged, failures explained. The
// engine holds only the seat: the policy lives with the hook.
type JobHook interface {
	// Setup runs once in a worker whose spec has Grade set, after the kernels are loaded and before
	// the driver sees anything: it returns the device the driver gets (a wrapper of dev, say) and
	// may replace kernels' entries (by Variant.Key) with wrappers.
	Setup(spec *WorkerSpec, dev gpu.Device, kernels map[string]gpu.Kernel) (gpu.Device, error)
	// RunJob runs one job with a mode; the error only says whether the context is spoiled
	// (gpu.IsSticky), the entry carries the outcome.
	RunJob(w *HookWorker, job Job) (results.Entry, error)
	// Genuine says, in the parent, why a result the worker sent for a job with a mode cannot be
	// what the hook's RunJob produced ("" when it can): the grader's passed results carry their
	// passed check and the number of runs made.
	Genuine(job Job, e *results.Entry) string
}

var (
	hookMu sync.Mutex
	hook   JobHook
)

// RegisterJobHook installs the hook of jobs with a mode (internal/grade does, from init).
func RegisterJobHook(h JobHook) {
	hookMu.Lock()
	defer hookMu.Unlock()
	hook = h
}

func jobHook() JobHook {
	hookMu.Lock()
	defer hookMu.Unlock()
	return hook
}

// HookWorker is what a JobHook sees of the worker running its job.
type HookWorker struct {
	w *worker
}

// Spec is the worker's spec.
func (h *HookWorker) Spec() *WorkerSpec { return &h.w.spec }

// Env is the driver's environment.
func (h *HookWorker) Env() *Env { return h.w.env }

// Start finds a job's suite, variant and problem and starts its entry (failed until the job says
// otherwise), as for every job.
func (h *HookWorker) Start(job Job) (*Suite, *Variant, Problem, results.Entry) {
	return h.w.startEntry(job)
}

// Prepare has the driver prepare a case, its buffers owned by the engine.
func (h *HookWorker) Prepare(s *Suite, v *Variant, p Problem) (*Trial, error) {
	return h.w.prepare(s, v, p)
}

// Reseed gives the driver's random source (and Env.Seed) a stream of its own for key.
func (h *HookWorker) Reseed(seed uint64, key string) { h.w.env.Seed = h.w.env.seedFrom(seed, key) }

// SkipReason recognises a refusal (lab.Skip, or an error with a SkipReason method) and its reason.
func SkipReason(err error) (string, bool) { return skipReason(err) }
