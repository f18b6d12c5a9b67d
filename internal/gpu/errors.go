package gpu

import (
	"errors"
	"fmt"
)

// ErrNoDevice means the backend loaded but found no device.
var ErrNoDevice = errors.New("no device found")

// ErrLibraryMissing wraps a failure to load a backend's shared library (libcuda.so.1, libcublas.so...).
var ErrLibraryMissing = errors.New("library not found")

// CallError is a failed backend call: which call, and the backend's own error name and text.
type CallError struct {
	Backend string // "cuda", "cublas", "emu"
	Call    string // e.g. "cuMemAlloc_v2"
	Code    int
	Name    string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Message string // e.g. "out of memory"
	sticky  bool
}

func (e *CallError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s failed: %s (%d)", e.Backend, e.Call, e.Name, e.Code)
	}
	return fmt.Sprintf("%s: %s failed: %s (%s)", e.Backend, e.Call, e.Name, e.Message)
}

// Sticky reports whether the error leaves the context unusable, so that the process must be
// replaced before more work runs (CUDA's illegal-address class of errors). The engine uses it to
// restart its worker.
func (e *CallError) Sticky() bool { return e.sticky }

// NewCallError builds a CallError; sticky marks errors that corrupt the context.
func NewCallError(backend, call string, code int, name, msg string, sticky bool) *CallError {
	return &CallError{Backend: backend, Call: call, Code: code, Name: name, Message: msg, sticky: sticky}
}

// IsSticky reports whether err (or an error it wraps) corrupts the device context.
func IsSticky(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.sticky
}
