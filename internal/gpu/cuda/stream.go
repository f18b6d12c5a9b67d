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
	hold holdState // timing.go
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

var _ gpu.GraphCapturer = (*stream)(nil)

// CaptureGraph records the work issue queues on s into a CUDA graph (cuStreamBeginCapture in
// relaxed mode, cuStreamEndCapture, cuGraphInstantiate); nothing runs until the graph is
// launched. Work issued during the capture must be asynchronous and on s (or on streams that
// wait on events of s): a synchronous copy (from Go memory, say) or a synchronize fails the
// capture. Captured NCCL calls are replayed too.
func (s *stream) CaptureGraph(issue func() error) (gpu.Graph, error) {
	if err := check("cuStreamBeginCapture_v2", C.kl_stream_begin_capture(s.d.ctx, s.s)); err != nil {
		return nil, fmt.Errorf("cuda: capturing a graph: %w", err)
	}
	issueErr := issue()
	// Always end the capture, so the stream leaves capture mode whatever happened.
	var g C.CUgraph
	endErr := check("cuStreamEndCapture", C.kl_stream_end_capture(s.d.ctx, s.s, &g))
	if issueErr != nil || endErr != nil {
		if g != nil {
			C.kl_graph_destroy(s.d.ctx, nil, g)
		}
		if issueErr != nil {
			return nil, fmt.Errorf("cuda: capturing a graph: %w", issueErr)
		}
		return nil, fmt.Errorf("cuda: capturing a graph (was work issued that cannot be captured: a synchronous copy, a synchronize, work on another stream that did not join this one?): %w", endErr)
	}
	var e C.CUgraphExec
	if err := check("cuGraphInstantiateWithFlags", C.kl_graph_instantiate(s.d.ctx, &e, g)); err != nil {
		C.kl_graph_destroy(s.d.ctx, nil, g)
		return nil, fmt.Errorf("cuda: instantiating the captured graph: %w", err)
	}
	return &graph{d: s.d, g: g, e: e}, nil
}

// graph is a captured CUDA graph and its executable form.
type graph struct {
	d  *device
	mu sync.Mutex
	g  C.CUgraph
	e  C.CUgraphExec
}

// Launch queues one replay of the graph on s (nil: the default stream).
func (g *graph) Launch(s gpu.Stream) error {
	cs, err := streamOf(s)
	if err != nil {
		return err
	}
	if st, ok := s.(*stream); ok && st != nil && st.d.ctx != g.d.ctx {
		return fmt.Errorf("cuda: launching a graph of device %d on a stream of device %d", g.d.info.Index, st.d.info.Index)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.e == nil {
		return fmt.Errorf("cuda: launching a destroyed graph")
	}
	return check("cuGraphLaunch", C.kl_graph_launch(g.d.ctx, g.e, cs))
}

// Destroy frees the graph (replays already queued still run); it is safe to call twice.
func (g *graph) Destroy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.e == nil {
		return nil
	}
	err := check("cuGraphExecDestroy", C.kl_graph_destroy(g.d.ctx, g.e, g.g))
	g.e, g.g = nil, nil
	return err
}
