// Package dl probes for shared libraries with dlopen, so that `labrun doctor` can say which
// vendor libraries are present without linking against any of them.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static int kl_probe(const char* name, char* err, int errlen) {
	void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		if (e) {
			int i = 0;
			for (; e[i] && i < errlen - 1; i++) err[i] = e[i];
			err[i] = 0;
		}
		return 0;
	}
	dlclose(h);
	return 1;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Probe tries each name in turn and returns the first that loads, or an error listing why each
// failed.
func Probe(names ...string) (string, error) {
	var why []string
	buf := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(buf))
	for _, n := range names {
		cn := C.CString(n)
		ok := C.kl_probe(cn, buf, 512)
		C.free(unsafe.Pointer(cn))
		if ok == 1 {
			return n, nil
		}
		why = append(why, C.GoString(buf))
	}
	return "", fmt.Errorf("none of %s could be loaded (%s)", strings.Join(names, ", "), strings.Join(why, "; "))
}
