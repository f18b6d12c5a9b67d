//go:build cgo

package emu

import (
	"fmt"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// A stream is a goroutine that runs its operations in order. Launches block that goroutine (in
// the runtime) while the grid runs, so different streams, and different devices, run at once.
type stream struct {
	dev *device

	qmu    sync.Mutex // guards closed and sends on ch
	closed bool
	ch     chan op
	done   chan struct{}

	emu sync.Mutex
	err error // the first asynchronous error since the last Synchronize
}

type op struct {
	f      func() error
	always bool // runs even when the device has a sticky error (markers, events)
}

func newStream(d *device) *stream {
	s := &stream{dev: d, ch: make(chan op, 1024), done: make(chan struct{})}
	go s.loop()
	d.mu.Lock()
	if d.def != nil {
		d.streams[s] = true
	}
	d.mu.Unlock()
	return s
}

func (s *stream) loop() {
	defer close(s.done)
	for o := range s.ch {
		if !o.always {
			if err := s.dev.stickyErr(); err != nil {
				s.setErr(err)
				continue
			}
		}
		if err := o.f(); err != nil {
			if gpu.IsSticky(err) {
				s.dev.setSticky(err)
			}
			s.setErr(err)
		}
	}
}

func (s *stream) setErr(err error) {
	s.emu.Lock()
	defer s.emu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *stream) enqueue(f func() error, always bool) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return callErr("stream", "EMU_INVALID_HANDLE", "the stream is closed")
	}
	s.ch <- op{f: f, always: always}
	return nil
}

// run runs f in stream order and waits for it, returning its error (or the device's sticky one).
func (s *stream) run(f func() error) error {
	res := make(chan error, 1)
	err := s.enqueue(func() error {
		if e := s.dev.stickyErr(); e != nil {
			res <- e
			return nil
		}
		res <- f()
		return nil
	}, true)
	if err != nil {
		return err
	}
	return <-res
}

// wait returns when everything enqueued so far has run.
func (s *stream) wait() {
	done := make(chan struct{})
	if s.enqueue(func() error { close(done); return nil }, true) != nil {
		return
	}
	<-done
}

func (s *stream) Synchronize() error {
	s.wait()
	s.emu.Lock()
	err := s.err
	s.err = nil
	s.emu.Unlock()
	if err == nil {
		err = s.dev.stickyErr()
	}
	return err
}

// WaitEvent queues a wait for e as last recorded (on any stream of any emulated device): the
// stream's later work starts once e's stream has reached it. An event never recorded is complete.
func (s *stream) WaitEvent(ev gpu.Event) error {
	e, ok := ev.(*event)
	if !ok || e == nil {
		return callErr("WaitEvent", "EMU_INVALID_HANDLE", "the event is not an emulator event")
	}
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done == nil {
		return nil
	}
	return s.enqueue(func() error { <-done; return nil }, true)
}

// shutdown stops the goroutine after the queued work.
func (s *stream) shutdown() {
	s.qmu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.qmu.Unlock()
	<-s.done
}

func (s *stream) Close() error {
	if s == s.dev.def {
		return nil
	}
	err := s.Synchronize()
	s.shutdown()
	s.dev.mu.Lock()
	delete(s.dev.streams, s)
	s.dev.mu.Unlock()
	if gpu.IsSticky(err) {
		return nil // reported on the device
	}
	return err
}

// An event records the host time at which its stream reached it.
type event struct {
	dev *device

	mu   sync.Mutex
	t    time.Time
	done chan struct{}
}

func (e *event) Record(s gpu.Stream) error {
	st, err := e.dev.stream(s)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	e.mu.Lock()
	e.done = done
	e.mu.Unlock()
	return st.enqueue(func() error {
		e.mu.Lock()
		if e.done == done {
			e.t = time.Now()
		}
		e.mu.Unlock()
		close(done)
		return nil
	}, true)
}

func (e *event) Synchronize() error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done != nil {
		<-done
	}
	return nil
}

func (e *event) complete() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done == nil {
		return time.Time{}, false
	}
	select {
	case <-e.done:
		return e.t, true
	default:
		return time.Time{}, false
	}
}

func (e *event) ElapsedMs(start gpu.Event) (float64, error) {
	se, ok := start.(*event)
	if !ok {
		return 0, callErr("ElapsedMs", "EMU_INVALID_HANDLE", "the start event is not an emulator event")
	}
	t0, ok0 := se.complete()
	t1, ok1 := e.complete()
	if !ok0 || !ok1 {
		return 0, gpu.NewCallError("emu", "ElapsedMs", stInvalid, "EMU_NOT_READY",
			fmt.Sprintf("an event was not recorded or has not completed (start %v, end %v)", ok0, ok1), false)
	}
	return float64(t1.Sub(t0).Nanoseconds()) / 1e6, nil
}

func (e *event) Close() error { return nil }
