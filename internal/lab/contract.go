package lab

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Driver is the Go side of a lab: everything that differs between labs, and nothing else.
// Like a collective in nccl-tests, it supplies the problem on the device, the reference, one call
// per variant, and the work counts; the engine allocates, poisons, checks, times, records and
// frees (case.go says how a case uses it).
type Driver interface {
	// Prepare allocates the problem p of suite s through the engine (lab.Upload, lab.Output, ...:
	// case.go), fills the inputs with fresh random data from env.RNG (never zeros), and prepares
	// what Check compares against. The engine calls it once for every variant × problem (every
	// checked run, in grading), so every check sees new inputs, and frees the case's buffers when
	// the job ends, whatever happened.
	Prepare(env *Env, s *Suite, p Problem) (Case, error)
}

// Case is one prepared problem. The engine owns its buffers (allocated through Env, case.go):
// it poisons the outputs before each checked run, hands them to Check and frees them all.
type Case interface {
	// Run launches variant v once on env.Stream. It should not synchronize: the engine times it
	// with events around the call.
	Run(v *Variant) error
	// Check compares the outputs of the last Run (already complete, every output poisoned before
	// it) with the reference; out downloads them.
	Check(v *Variant, out *Outputs) (check.Report, error)
	// Work is what one Run does, for the derived rates.
	Work() Work
}

// VariantWorker is implemented by cases whose variants do different work on the same problem (a
// variant that writes a bf16 C moves half the bytes of one that writes fp32): the engine derives
// each variant's rates from WorkFor instead of Work.
type VariantWorker interface {
	WorkFor(v *Variant) Work
}

// SkipError is returned by Prepare for a problem the variant should not run here, with the
// reason: too large for this device's memory, too slow to be worth timing at this size. The engine
// records it as skipped, not failed.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Skip builds a SkipError.
func Skip(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

// Work counts what one Run does.
type Work struct {
	FLOPs float64 // floating-point operations (an FMA is 2)
	Bytes float64 // the fewest bytes that must cross the memory interface (read + written)
	// Ops is how many operations one Run times (lab 01 times 1000 empty launches in one Run
	// and reports the time of one). Zero means 1.
	Ops int
}

// Recorder is implemented by cases that keep data beyond the timings for the chapter (lab 03's
// per-SM timeline of tiles). The engine calls Record once, after the check and the timing, and
// stores the map in the entry's data. Keep it small: it goes into the results file.
type Recorder interface {
	Record(v *Variant) (map[string]any, error)
}

// DeviceRecorder is implemented by drivers that record information about the device beyond the
// timed variants (lab 01's property tables). It runs once per run, in the worker.
type DeviceRecorder interface {
	RecordDevice(env *Env) (map[string]any, error)
}

// Deriver is implemented by drivers that derive figures from the finished entries (lab 01
// derives the device's measured ceilings). It runs in the parent after all jobs.
type Deriver interface {
	Derive(info gpu.DeviceInfo, entries []EntryView) (map[string]any, error)
}

// EntryView is the part of a result that a Deriver reads.
type EntryView struct {
	Suite, Variant, Problem string
	Params                  map[string]int64
	OK                      bool
	MedianMs                float64
	TFLOPs, GBps            float64 // derived rates of the median time (0 when not applicable)
	PerOpUs                 float64 // median time of one op in microseconds
}

// Env is what a driver gets from the engine: the device, a stream, the loaded kernels, a seeded
// random source, and the vendor libraries on demand.
type Env struct {
	Device  gpu.Device
	Stream  gpu.Stream
	RNG     *rand.Rand
	Seed    uint64
	Quick   bool
	Backend string

	kernels map[string]gpu.Kernel // by Variant.Key (suite/name), helpers by "helper:entry"
	logf    func(format string, args ...any)

	// The vendor BLAS, opened on first use and kept for the worker's life.
	libMu sync.Mutex
	blas  gpu.BLAS

	// The buffers of the case being prepared or run (case.go), and those allocated outside a case.
	current, lasting *arena

	// A lab of ranks (ranks_env.go): the worker's rank state, and the signals of the case
	// signalsOf (the device barrier's, allocated once per case).
	rk        *rankState
	w         *worker
	signals   *Shared[uint32]
	signalsOf *arena
	side      gpu.Stream // SideStream
}

// NewEnv is used by the engine (and by tests of drivers) to build an Env.
func NewEnv(dev gpu.Device, stream gpu.Stream, seed uint64, kernels map[string]gpu.Kernel, logf func(string, ...any)) *Env {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Env{
		Device:  dev,
		Stream:  stream,
		RNG:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		Seed:    seed,
		Backend: dev.Info().Backend,
		kernels: kernels,
		logf:    logf,
	}
}

// reseed gives each job its own random stream derived from the run's seed and the job's name,
// so that a job's inputs are the same whichever worker runs it and in whatever order.
func (e *Env) reseed(seed uint64, j Job) { e.seedFrom(seed, j.Suite+"/"+j.Variant+"/"+j.Problem) }

// seedFrom points RNG at the stream of seed and key, and returns that stream's seed.
func (e *Env) seedFrom(seed uint64, key string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, key)
	s := h.Sum64()
	e.RNG = rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	return s
}

// Kernel returns the compiled kernel of variant v.
func (e *Env) Kernel(v *Variant) (gpu.Kernel, error) {
	k, ok := lookupKernel(e.kernels, v)
	if !ok {
		return nil, fmt.Errorf("variant %s has no loaded kernel (is file/entry set in lab.yaml?)", v.Name)
	}
	return k, nil
}

// lookupKernel finds v's kernel by its key (suite/name), or by its bare name as drivers' own
// tests build their maps.
func lookupKernel(ks map[string]gpu.Kernel, v *Variant) (gpu.Kernel, bool) {
	if k, ok := ks[v.Key()]; ok {
		return k, true
	}
	k, ok := ks[v.Name]
	return k, ok
}

// KernelByEntry returns any loaded kernel by its entry name (helper kernels such as a fill).
func (e *Env) KernelByEntry(entry string) (gpu.Kernel, error) {
	for _, k := range e.kernels {
		if k.Name() == entry {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no loaded kernel has entry %q", entry)
}

// BLAS is the vendor BLAS of Device, opened once per worker.
func (e *Env) BLAS() (gpu.BLAS, error) {
	e.libMu.Lock()
	defer e.libMu.Unlock()
	if e.blas != nil {
		return e.blas, nil
	}
	b, err := gpu.OpenBLAS(e.Device)
	if err != nil {
		return nil, err
	}
	e.blas = b
	return b, nil
}

// Logf prints a progress line through the engine.
func (e *Env) Logf(format string, args ...any) { e.logf(format, args...) }

// Close releases what the Env opened.
func (e *Env) Close() error {
	e.libMu.Lock()
	defer e.libMu.Unlock()
	var errs []error
	errs = append(errs, e.closeCase())
	if e.lasting != nil {
		errs = append(errs, e.lasting.release())
	}
	if e.side != nil {
		errs = append(errs, e.side.Close())
		e.side = nil
	}
	if e.blas != nil {
		errs = append(errs, e.blas.Close())
	}
	e.blas = nil
	return errors.Join(errs...)
}

var (
	driversMu sync.Mutex
	drivers   = map[string]Driver{}
)

// RegisterDriver makes a lab's driver known by the lab's directory name ("01_device_props").
// Each lab package calls it from init; cmd/labrun imports every lab.
func RegisterDriver(labDir string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[labDir] = d
}

// DriverFor returns the registered driver of a lab directory.
func DriverFor(labDir string) (Driver, bool) {
	driversMu.Lock()
	defer driversMu.Unlock()
	d, ok := drivers[labDir]
	return d, ok
}
