package lab

// How a lab's Case uses the engine's lifecycle (read this before writing a driver).
//
// The engine owns every buffer of a case. A driver's Prepare allocates through the engine,
// never through gpu.Alloc / gpu.Upload:
//
//	a, err := lab.Upload(env, "A", hostA)                       // an input, filled from the host
//	p, err := lab.UploadAs(env, "B", lab.PrecisionOf(s), hostB) // fp32 or bf16 by the suite
//	c, err := lab.Output[float32](env, "C", n, lab.PoisonNaN32) // an output (see Poison)
//	w, err := lab.Scratch[int32](env, "counters", 2, lab.PoisonBytes(0)) // reset, not checked
//	t, err := lab.Alloc[uint64](env, "timeline", n)             // anything else (undefined)
//
// The name is for error messages ("uploading A: ..."), so return such errors as they are.
// (A lab of ranks adds the buffers its peers map: lab.AllocShared, SharedOutput, SharedScratch in
// ranks_env.go.) The engine records every buffer of the case, also those allocated while it
// runs, and frees them all when the job ends, on every path: an error in Prepare, a skip, a
// failed check, a panic. A Case has no Release and no Poison: before every checked run the
// engine refills each output and scratch buffer with its Poison, then calls Run, waits, and calls
// Check with the outputs; Check downloads what it compares through *Outputs (only declared
// outputs can be read there) and compares with the lab's reference under the suite's tolerance:
//
//	func (c *myCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
//		return out.Check(c.dC, c.ref) // check.Against, suite tolerance
//	}
//
// or, for a check of its own (Freivalds, a per-group report, a multi-rank check), reads
// out.Float32(buf) / out.BF16(buf) and uses out.Tolerance(). So a lab supplies only what
// differs — problems, inputs, the reference or check, each variant's launch (Run), the work
// counts (Work) and the tolerance (lab.yaml) — as a collective in nccl-tests supplies four hooks.
// The shared helpers of helpers.go (precision, shapes, shared-memory opt-in, tensor maps,
// occupancy, the memory-fit precondition) and matref's input fillers cover
// what labs used to copy from each other.
//
// A driver's own tests prepare a case as the engine does with lab.NewTrial(env, drv, s, v, p) and
// call its Poison, Run, Check and Release. In grading (internal/grade) the same calls run on a
// guarded device: every allocation gets red zones, and the buffers that are not outputs or
// scratch are inputs that must not change.

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// Poison is what an output (or scratch buffer) holds before every checked run: a value no correct
// kernel leaves there, so that an element the kernel did not write shows.
type Poison struct {
	word   uint32 // the 32-bit pattern, when fill32
	fill32 bool
	b      uint8 // the byte, otherwise
	src    any   // RestoreFrom: a *gpu.Buffer of the output's type
}

// Poisons of outputs.
var (
	// PoisonNaN32 is the canonical quiet NaN 0x7FC00000 in every 32-bit word (fp32 outputs). It
	// differs from the 0xFF bytes of the grader's red zones, so NaN computed from a red zone shows
	// as such.
	PoisonNaN32 = Poison{word: NaNBits32, fill32: true}
	// PoisonNaN is 0xFF in every byte: a NaN in fp32, bf16, fp16 and fp64 alike.
	PoisonNaN = PoisonBytes(0xFF)
)

// NaNBits32 is the float32 NaN of PoisonNaN32.
const NaNBits32 = 0x7FC00000

// PoisonBytes fills every byte with b (PoisonBytes(0) clears a counter).
func PoisonBytes(b uint8) Poison { return Poison{b: b} }

// RestoreFrom copies src into the output before every checked run: for an output that is also an
// input (C with beta ≠ 0), src holds its pristine initial value.
func RestoreFrom[T gpu.Elem](src *gpu.Buffer[T]) Poison { return Poison{src: src} }

// caseBuf is one buffer of a case.
type caseBuf struct {
	name   string
	ptr    gpu.Ptr
	free   func() error
	poison func() error // outputs and scratch: refill before a checked run
	output bool
	read   func() ([]byte, error) // outputs: the raw contents
}

// arena holds the buffers of the case being prepared or run, in allocation order.
type arena struct {
	bufs []*caseBuf
	maps map[string]gpu.RawArg // tensor maps by description, valid while the buffers live
}

// release frees every buffer, the last allocated first, and returns the first error.
func (a *arena) release() error {
	var first error
	for i := len(a.bufs) - 1; i >= 0; i-- {
		if err := a.bufs[i].free(); err != nil && first == nil {
			first = fmt.Errorf("freeing %s: %w", a.bufs[i].name, err)
		}
	}
	a.bufs, a.maps = nil, nil
	return first
}

// poison refills the outputs and scratch buffers.
func (a *arena) poison() error {
	for _, b := range a.bufs {
		if b.poison != nil {
			if err := b.poison(); err != nil {
				return fmt.Errorf("poisoning %s: %w", b.name, err)
			}
		}
	}
	return nil
}

func (a *arena) find(p gpu.Ptr) *caseBuf {
	for _, b := range a.bufs {
		if b.ptr == p {
			return b
		}
	}
	return nil
}

// Outputs returns the raw contents of the case's outputs in allocation order (the grader compares
// them between runs).
func (e *Env) caseOutputs() ([][]byte, error) {
	var outs [][]byte
	for _, b := range e.arena().bufs {
		if b.output {
			raw, err := b.read()
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", b.name, err)
			}
			outs = append(outs, raw)
		}
	}
	return outs, nil
}

// arena is the case's arena, or the worker's when no case is open (buffers a DeviceRecorder allocates).
func (e *Env) arena() *arena {
	if e.current != nil {
		return e.current
	}
	if e.lasting == nil {
		e.lasting = &arena{}
	}
	return e.lasting
}

// openCase starts a case's arena; closeCase frees it.
func (e *Env) openCase() { e.current = &arena{} }

func (e *Env) closeCase() error {
	if e.current == nil {
		return nil
	}
	err := e.current.release()
	e.current = nil
	return err
}

func track[T gpu.Elem](e *Env, name string, b *gpu.Buffer[T]) *caseBuf {
	cb := &caseBuf{name: name, ptr: b.DevicePtr(), free: b.Free}
	cb.read = func() ([]byte, error) {
		h, err := b.Download()
		if err != nil || len(h) == 0 {
			return nil, err
		}
		var zero T
		return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), len(h)*int(unsafe.Sizeof(zero))), nil
	}
	a := e.arena()
	a.bufs = append(a.bufs, cb)
	return cb
}

// Alloc allocates n elements of T on env's device for the current case (contents undefined).
func Alloc[T gpu.Elem](env *Env, name string, n int) (*gpu.Buffer[T], error) {
	b, err := gpu.Alloc[T](env.Device, n)
	if err != nil {
		return nil, fmt.Errorf("allocating %s: %w", name, err)
	}
	track(env, name, b)
	return b, nil
}

// Upload allocates a copy of host on env's device for the current case: an input.
func Upload[T gpu.Elem](env *Env, name string, host []T) (*gpu.Buffer[T], error) {
	b, err := Alloc[T](env, name, len(host))
	if err != nil {
		return nil, err
	}
	if err := b.CopyFromHost(host, nil); err != nil {
		return nil, fmt.Errorf("uploading %s: %w", name, err)
	}
	return b, nil
}

// Output allocates an output of n elements of T: the engine fills it with p before every checked
// run, and Check reads it through Outputs.
func Output[T gpu.Elem](env *Env, name string, n int, p Poison) (*gpu.Buffer[T], error) {
	return poisoned[T](env, name, n, p, true)
}

// Scratch allocates a buffer the engine refills with p before every checked run but does not
// check: a scheduler's counters, a flag array. In grading it is not an input either.
func Scratch[T gpu.Elem](env *Env, name string, n int, p Poison) (*gpu.Buffer[T], error) {
	return poisoned[T](env, name, n, p, false)
}

func poisoned[T gpu.Elem](env *Env, name string, n int, p Poison, output bool) (*gpu.Buffer[T], error) {
	var src *gpu.Buffer[T]
	if p.src != nil {
		var ok bool
		if src, ok = p.src.(*gpu.Buffer[T]); !ok {
			return nil, fmt.Errorf("%s: RestoreFrom a %T, but the buffer holds %T elements", name, p.src, *new(T))
		}
		if src.Len() != n {
			return nil, fmt.Errorf("%s: RestoreFrom a buffer of %d elements, the output has %d", name, src.Len(), n)
		}
	}
	var zero T
	if p.fill32 && unsafe.Sizeof(zero) != 4 {
		return nil, fmt.Errorf("%s: a 32-bit poison on %T elements (use PoisonNaN)", name, zero)
	}
	b, err := Alloc[T](env, name, n)
	if err != nil {
		return nil, err
	}
	cb := env.arena().find(b.DevicePtr())
	cb.output = output
	s := env.Stream
	switch {
	case src != nil:
		cb.poison = func() error { return b.CopyFrom(src, s) }
	case p.fill32:
		cb.poison = func() error { return b.Fill32(p.word, s) }
	default:
		cb.poison = func() error { return b.FillBytes(p.b, s) }
	}
	return b, nil
}

// Outputs is how Check reads the outputs of the checked run: downloaded by the engine once each,
// with the suite's tolerance at hand.
type Outputs struct {
	env   *Env
	tol   float64
	cache map[gpu.Ptr]any
}

func newOutputs(env *Env, tol float64) *Outputs {
	return &Outputs{env: env, tol: tol, cache: map[gpu.Ptr]any{}}
}

// Tolerance is the suite's tolerance (lab.yaml).
func (o *Outputs) Tolerance() float64 { return o.tol }

func download[T gpu.Elem](o *Outputs, b *gpu.Buffer[T]) ([]T, error) {
	if b == nil {
		return nil, errors.New("reading a nil output (was it allocated for this variant?)")
	}
	cb := o.env.arena().find(b.DevicePtr())
	if cb == nil || !cb.output {
		return nil, fmt.Errorf("the buffer at %#x is not an output of the case (allocate it with lab.Output)", b.DevicePtr())
	}
	if h, ok := o.cache[b.DevicePtr()].([]T); ok {
		return h, nil
	}
	h, err := b.Download()
	if err != nil {
		return nil, fmt.Errorf("reading %s back: %w", cb.name, err)
	}
	o.cache[b.DevicePtr()] = h
	return h, nil
}

// Float32 downloads an fp32 output.
func (o *Outputs) Float32(b *gpu.Buffer[float32]) ([]float32, error) { return download(o, b) }

// BF16 downloads a bf16 output, widened exactly to float32.
func (o *Outputs) BF16(b *gpu.Buffer[uint16]) ([]float32, error) {
	bits, err := download(o, b)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(bits))
	matref.ParallelFor(len(bits), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = matref.Float32FromBF16(bits[i])
		}
	})
	return out, nil
}

// Raw downloads any output as its elements (the 16-bit patterns of a bf16 output, say).
func Raw[T gpu.Elem](o *Outputs, b *gpu.Buffer[T]) ([]T, error) { return download(o, b) }

// Check checks an fp32 output against want under the suite's tolerance (check.Against).
func (o *Outputs) Check(b *gpu.Buffer[float32], want []float64) (check.Report, error) {
	got, err := o.Float32(b)
	if err != nil {
		return check.Report{}, err
	}
	return check.Against(got, want, o.tol), nil
}

// Ranges are [lo, hi) element ranges in order, neighbours merged: the parts of an input that
// UploadPartsAs copies.
type Ranges [][2]int64

// Add appends the n elements from lo (nothing for n ≤ 0), merged with the last range when they
// follow it.
func (r *Ranges) Add(lo, n int64) {
	switch last := len(*r) - 1; {
	case n <= 0:
	case last >= 0 && (*r)[last][1] == lo:
		(*r)[last][1] += n
	default:
		*r = append(*r, [2]int64{lo, lo + n})
	}
}

// UploadPartsAs uploads the parts of vals that a case reads, in precision p as UploadAs does (for
// BF16 each part rounded in place); the rest of the buffer holds NaN (0xFF bytes in fp32 and bf16)
// and is never copied. A problem whose inputs are mostly unread (the weights of a MoE layer's
// experts without tokens) then costs no time on the host for them, and a kernel that reads them
// anyway makes NaN.
func UploadPartsAs(env *Env, name string, p Precision, vals []float32, parts Ranges) (gpu.Ptr, error) {
	for _, pt := range parts {
		if pt[0] < 0 || pt[0] > pt[1] || pt[1] > int64(len(vals)) {
			return 0, fmt.Errorf("%s: part [%d, %d) is outside its %d elements", name, pt[0], pt[1], len(vals))
		}
	}
	if p == BF16 {
		return uploadParts(env, name, len(vals), parts, func(lo, hi int64) []uint16 { return matref.RoundBF16(vals[lo:hi]) })
	}
	return uploadParts(env, name, len(vals), parts, func(lo, hi int64) []float32 { return vals[lo:hi] })
}

// uploadParts allocates n elements of T, poisons them with 0xFF bytes and copies host(lo, hi) to
// each part.
func uploadParts[T gpu.Elem](env *Env, name string, n int, parts Ranges, host func(lo, hi int64) []T) (gpu.Ptr, error) {
	b, err := Alloc[T](env, name, n)
	if err != nil {
		return 0, err
	}
	if err := b.FillBytes(0xFF, nil); err != nil {
		return 0, fmt.Errorf("poisoning %s: %w", name, err)
	}
	for _, pt := range parts {
		if err := b.CopyFromHostAt(int(pt[0]), host(pt[0], pt[1]), nil); err != nil {
			return 0, fmt.Errorf("uploading %s: %w", name, err)
		}
	}
	return b.DevicePtr(), nil
}

// UploadAs uploads vals in precision p: as they are for FP32; for BF16 rounded to bf16 in place
// (vals then hold exactly what the device has, for the reference) and uploaded as bit patterns.
func UploadAs(env *Env, name string, p Precision, vals []float32) (gpu.Ptr, error) {
	if p == BF16 {
		b, err := Upload(env, name, matref.RoundBF16(vals))
		if err != nil {
			return 0, err
		}
		return b.DevicePtr(), nil
	}
	b, err := Upload(env, name, vals)
	if err != nil {
		return 0, err
	}
	return b.DevicePtr(), nil
}
