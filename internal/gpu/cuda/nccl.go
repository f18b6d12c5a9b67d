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

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// NCCLEnv names an environment variable that, when set, is the NCCL library to load before the
// usual names are tried.
const NCCLEnv = "KERNELLABS_NCCL"

// ncclNames are the sonames tried.
var ncclNames = []string{"libnccl.so.2", "libnccl.so"}

// ncclCandidates lists what to dlopen: the override, the sonames through the loader's search
// path, then the usual toolkit and distribution directories.
func ncclCandidates() []string {
	var out []string
	if p := os.Getenv(NCCLEnv); p != "" {
		out = append(out, p)
	}
	out = append(out, ncclNames...)
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH", "NCCL_HOME"} {
		if root := os.Getenv(env); root != "" {
			dirs = append(dirs, filepath.Join(root, "lib64"), filepath.Join(root, "lib"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/local/nccl/lib")
	for _, dir := range dirs {
		for _, n := range ncclNames {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

var ncclLoad struct {
	sync.Mutex
	done bool
	err  error
}

// loadNCCL loads NCCL once per process; a missing library is an error wrapping
// gpu.ErrLibraryMissing.
func loadNCCL(candidates []string) error {
	ncclLoad.Lock()
	defer ncclLoad.Unlock()
	if ncclLoad.done {
		return nil
	}
	failures, ok := openFirst(candidates, func(path *C.char, err **C.char) C.int { return C.kl_nccl_load(path, err) })
	if ok {
		ncclLoad.done = true
		return nil
	}
	detail := "no libnccl.so.2 was found"
	if len(failures) > 0 {
		detail = strings.Join(failures, "; ")
	}
	return fmt.Errorf("nccl: %w: %s; install NCCL (e.g. the libnccl2 package, or pip's nvidia-nccl-cu12) or set %s to its path",
		gpu.ErrLibraryMissing, detail, NCCLEnv)
}

// ncclResultNames are the names of ncclResult_t (nccl.h).
var ncclResultNames = map[int]string{
	0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
	4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
}

func ncclError(call string, r C.ncclResult_t) error {
	code := int(r)
	name, ok := ncclResultNames[code]
	if !ok {
		name = fmt.Sprintf("ncclResult(%d)", code)
	}
	msg := ""
	if s := C.kl_nccl_error_string(r); s != nil {
		msg = C.GoString(s)
	}
	// An unhandled CUDA error inside NCCL usually means a sticky device fault.
	return gpu.NewCallError("nccl", call, code, name, msg, code == 1)
}

// ncclDataType maps gpu.DataType to ncclDataType_t (nccl.h: ncclFloat16 = 6, ncclFloat32 = 7,
// ncclFloat64 = 8, ncclBfloat16 = 9).
func ncclDataType(t gpu.DataType) (C.int, error) {
	switch t {
	case gpu.F16:
		return 6, nil
	case gpu.F32:
		return 7, nil
	case gpu.F64:
		return 8, nil
	case gpu.BF16:
		return 9, nil
	}
	return 0, fmt.Errorf("nccl: no NCCL type for %v", t)
}
