package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Prep allocates a case's buffers one after another and keeps the first error, as bufio.Writer
// does: once a call has failed, the later ones allocate nothing and return nil, so a Prepare lists
// its buffers and checks Err once, at the end or wherever a failure must stop it. The buffers
// are the engine's as with the plain calls (case.go): it frees what was allocated, on every path.
type Prep struct {
	Env *Env
	Err error
}

// NewPrep starts the allocations of a case on env.
func NewPrep(env *Env) *Prep { return &Prep{Env: env} }

func keep[T any](p *Prep, alloc func() (T, error)) T {
	if p.Err != nil {
		var zero T
		return zero
	}
	v, err := alloc()
	p.Err = err
	return v
}

// Done returns what was prepared, or its zero value (nil) and the first error.
func Done[T any](p *Prep, v T) (T, error) {
	if p.Err != nil {
		var zero T
		return zero, p.Err
	}
	return v, nil
}

// Need is NeedMemory: it refuses the problem when bytes do not fit in the free device memory.
func (p *Prep) Need(bytes int64) {
	if p.Err == nil {
		p.Err = NeedMemory(p.Env, bytes)
	}
}

// UploadAs is lab.UploadAs through p.
func (p *Prep) UploadAs(name string, prec Precision, vals []float32) gpu.Ptr {
	return keep(p, func() (gpu.Ptr, error) { return UploadAs(p.Env, name, prec, vals) })
}

// UploadPartsAs is lab.UploadPartsAs through p.
func (p *Prep) UploadPartsAs(name string, prec Precision, vals []float32, parts Ranges) gpu.Ptr {
	return keep(p, func() (gpu.Ptr, error) { return UploadPartsAs(p.Env, name, prec, vals, parts) })
}

// Signals is Env.Signals through p.
func (p *Prep) Signals() *gpu.Buffer[uint64] { return keep(p, p.Env.Signals) }

// PrepAlloc is Alloc through p.
func PrepAlloc[T gpu.Elem](p *Prep, name string, n int) *gpu.Buffer[T] {
	return keep(p, func() (*gpu.Buffer[T], error) { return Alloc[T](p.Env, name, n) })
}

// PrepUpload is Upload through p.
func PrepUpload[T gpu.Elem](p *Prep, name string, host []T) *gpu.Buffer[T] {
	return keep(p, func() (*gpu.Buffer[T], error) { return Upload(p.Env, name, host) })
}

// PrepOutput is Output through p.
func PrepOutput[T gpu.Elem](p *Prep, name string, n int, poison Poison) *gpu.Buffer[T] {
	return keep(p, func() (*gpu.Buffer[T], error) { return Output[T](p.Env, name, n, poison) })
}

// PrepScratch is Scratch through p.
func PrepScratch[T gpu.Elem](p *Prep, name string, n int, poison Poison) *gpu.Buffer[T] {
	return keep(p, func() (*gpu.Buffer[T], error) { return Scratch[T](p.Env, name, n, poison) })
}

// PrepUploadShared is UploadShared through p (every rank reaches it at the same point).
func PrepUploadShared[T gpu.Elem](p *Prep, name string, host []T) *Shared[T] {
	return keep(p, func() (*Shared[T], error) { return UploadShared(p.Env, name, host) })
}

// PrepSharedOutput is SharedOutput through p.
func PrepSharedOutput[T gpu.Elem](p *Prep, name string, n int, poison Poison) *Shared[T] {
	return keep(p, func() (*Shared[T], error) { return SharedOutput[T](p.Env, name, n, poison) })
}

// PrepSharedScratch is SharedScratch through p.
func PrepSharedScratch[T gpu.Elem](p *Prep, name string, n int, poison Poison) *Shared[T] {
	return keep(p, func() (*Shared[T], error) { return SharedScratch[T](p.Env, name, n, poison) })
}

// Widened downloads an fp32 output, or a bf16 one (T uint16) widened exactly to float32: for a
// case generic in its element type.
func Widened[T float32 | uint16](o *Outputs, b *gpu.Buffer[T]) ([]float32, error) {
	switch b := any(b).(type) {
	case *gpu.Buffer[float32]:
		return o.Float32(b)
	case *gpu.Buffer[uint16]:
		return o.BF16(b)
	}
	return nil, fmt.Errorf("an output of %T elements is neither fp32 nor bf16", *new(T))
}
