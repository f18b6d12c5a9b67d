//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// NCCLEnv names an environment variable that, when set, is the NCCL library to load before the
// usual names are tried.
const NCCLEnv = "KERNELLABS_NCCL"

// ncclLib is NCCL: besides the toolkit, NCCL_HOME and the distribution's and NVIDIA's own
// install directories.
var ncclLib = &vendorLibrary{
	name: "nccl", env: NCCLEnv, install: "NCCL (e.g. the libnccl2 package, or pip's nvidia-nccl-cu12)",
	sonames: NCCLNames,
	roots:   []string{"CUDA_HOME", "CUDA_PATH", "NCCL_HOME"},
	dirs:    []string{"/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/local/nccl/lib"},
	open:    func(path *C.char, err **C.char) C.int { return C.kl_nccl_load(path, err) },
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

// ncclTypes are the element types NCCL takes: their ncclDataType_t (nccl.h: ncclFloat16 = 6,
// ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9) and the size of one element.
var ncclTypes = map[gpu.DataType]struct {
	code  C.int
	bytes int
}{gpu.F16: {6, 2}, gpu.F32: {7, 4}, gpu.F64: {8, 8}, gpu.BF16: {9, 2}}

// ncclDataType maps gpu.DataType to ncclDataType_t.
func ncclDataType(t gpu.DataType) (C.int, error) {
	nt, ok := ncclTypes[t]
	if !ok {
		return 0, fmt.Errorf("nccl: no NCCL type for %v", t)
	}
	return nt.code, nil
}
