//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// stream is a CUDA stream created with default flags: a blocking stream, ordered with the
// legacy default (NULL) stream.
type stream struct {
	d    *device
	s    C.CUstream
	once sync.Once
}

func (d *device) NewStream() (gpu.Stream, error) {
	var s C.CUstream
	if err := check("cuStreamCreate", C.kl_stream_create(d.ctx, &s)); err != nil {
		return nil, err
	}
	return &stream{d: d, s: s}, nil
}

func (s *stream) Synchronize() error {
	return check("cuStreamSynchronize", C.kl_stream_synchronize(s.d.ctx, s.s))
}

// WaitEvent is cuStreamWaitEvent: later work on s waits for e, which may belong to another
// device (CUDA orders streams across devices this way without involving the host).
func (s *stream) WaitEvent(ev gpu.Event) error {
	e, ok := ev.(*event)
	if !ok || e == nil {
		return fmt.Errorf("cuda: WaitEvent needs a CUDA event, got %T", ev)
	}
	return check("cuStreamWaitEvent", C.kl_stream_wait_event(s.d.ctx, s.s, e.e))
}

// Close destroys the stream (work already queued still runs); it is safe to call twice.
func (s *stream) Close() error {
	var err error
	s.once.Do(func() { err = check("cuStreamDestroy_v2", C.kl_stream_destroy(s.d.ctx, s.s)) })
	return err
}

// event is a CUDA event with default flags (timing enabled).
type event struct {
	d    *device
	e    C.CUevent
	once sync.Once
}

func (d *device) NewEvent() (gpu.Event, error) {
	var e C.CUevent
	if err := check("cuEventCreate", C.kl_event_create(d.ctx, &e)); err != nil {
		return nil, err
	}
	return &event{d: d, e: e}, nil
}

// Record captures the work queued on s so far (nil: the default stream).
func (e *event) Record(s gpu.Stream) error {
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	return check("cuEventRecord", C.kl_event_record(e.d.ctx, e.e, cs))
}

func (e *event) Synchronize() error {
	return check("cuEventSynchronize", C.kl_event_synchronize(e.d.ctx, e.e))
}

// ElapsedMs is the device time from start to e, in milliseconds (resolution about 0.5 µs).
// Both events must be recorded and complete.
func (e *event) ElapsedMs(start gpu.Event) (float64, error) {
	st, ok := start.(*event)
	if !ok || st == nil {
		return 0, fmt.Errorf("cuda: the start event is a %T, not a CUDA event", start)
	}
	var ms C.float
	if err := check("cuEventElapsedTime", C.kl_event_elapsed(e.d.ctx, &ms, st.e, e.e)); err != nil {
		return 0, err
	}
	return float64(ms), nil
}

// Close destroys the event; it is safe to call twice.
func (e *event) Close() error {
	var err error
	e.once.Do(func() { err = check("cuEventDestroy_v2", C.kl_event_destroy(e.d.ctx, e.e)) })
	return err
}
