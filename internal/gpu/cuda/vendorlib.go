//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// vendorLibrary is one NVIDIA library the backend dlopens on first use through its shim loader
// (cuBLAS, cuBLASLt, NCCL), so that a machine without it can still run everything else.
type vendorLibrary struct {
	name    string   // in errors: "cublas"
	env     string   // the override: a path tried before anything else
	sonames []string // newest first
	roots   []string // environment variables naming install roots (their lib64 and lib are searched)
	dirs    []string // the usual directories, searched after the roots
	install string   // what to install, for the error when nothing loads
	open    func(path *C.char, err **C.char) C.int

	mu   sync.Mutex
	done bool
}

// toolkitLibrary is a library of the CUDA toolkit (cuBLAS, cuBLASLt): looked for below
// CUDA_HOME and CUDA_PATH and in the toolkit's usual directories, which are often outside the
// loader's search path.
func toolkitLibrary(name, env, install string, sonames []string, open func(path *C.char, err **C.char) C.int) *vendorLibrary {
	return &vendorLibrary{name: name, env: env, sonames: sonames, install: install, open: open,
		roots: []string{"CUDA_HOME", "CUDA_PATH"},
		dirs:  []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}}
}

// candidates lists what to dlopen: the override, the sonames (found through the loader's search
// path), then the sonames inside the roots' and the usual directories.
func (l *vendorLibrary) candidates() []string {
	var out []string
	if p := os.Getenv(l.env); p != "" {
		out = append(out, p)
	}
	out = append(out, l.sonames...)
	var dirs []string
	for _, e := range l.roots {
		if root := os.Getenv(e); root != "" {
			dirs = append(dirs, filepath.Join(root, "lib64"), filepath.Join(root, "lib"))
		}
	}
	for _, dir := range append(dirs, l.dirs...) {
		for _, n := range l.sonames {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// load loads the library once per process from its candidates.
func (l *vendorLibrary) load() error { return l.loadFrom(l.candidates()) }

// loadFrom loads the first of candidates that opens; nothing opening is an error wrapping
// gpu.ErrLibraryMissing that says what to install or set.
func (l *vendorLibrary) loadFrom(candidates []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	failures, ok := openFirst(candidates, l.open)
	if ok {
		l.done = true
		return nil
	}
	detail := "no " + orList(l.sonames) + " was found"
	if len(failures) > 0 {
		detail = strings.Join(failures, "; ")
	}
	return fmt.Errorf("%s: %w: %s; install %s or set %s to its path", l.name, gpu.ErrLibraryMissing, detail, l.install, l.env)
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// openFirst loads the first of candidates that load (a shim's loader of one vendor library)
// accepts. failures lists the candidates that exist but failed, with why; a missing file is not a
// failure worth reporting.
func openFirst(candidates []string, load func(path *C.char, err **C.char) C.int) (failures []string, ok bool) {
	for _, path := range candidates {
		cpath := C.CString(path)
		var cerr *C.char
		rc := load(cpath, &cerr)
		C.free(unsafe.Pointer(cpath))
		if rc == 0 {
			return nil, true
		}
		msg := C.GoString(cerr)
		C.kl_free_err(cerr)
		if rc == -2 || !strings.Contains(msg, "No such file") && !strings.Contains(msg, "cannot open") {
			failures = append(failures, fmt.Sprintf("%s: %s", path, msg))
		}
	}
	return failures, false
}
