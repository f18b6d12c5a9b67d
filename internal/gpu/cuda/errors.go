//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// CUresult values this package tests for (enum cudaError_enum in cuda.h).
const (
	cudaSuccess                       = 0
	cudaErrorInvalidValue             = 1
	cudaErrorStubLibrary              = 34
	cudaErrorNoDevice                 = 100
	cudaErrorPeerAccessAlreadyEnabled = 704
	cudaErrorNotSupported             = 801
)

// stickyCodes are the CUresults after which the context is unusable: every later call fails
// with the same error and the process must be replaced (cuda.h says so of each of them).
var stickyCodes = map[int]string{
	226: "CUDA_ERROR_CONTAINED", // CUDA 12.8+
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	710: "CUDA_ERROR_ASSERT",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
}

// check turns a CUresult into nil or a *gpu.CallError.
func check(call string, r C.CUresult) error {
	if r == cudaSuccess {
		return nil
	}
	return callError(call, r)
}

// callError describes a failed driver call with CUDA's own name and text for the code.
func callError(call string, r C.CUresult) *gpu.CallError {
	code := int(r)
	if code == C.KL_MISSING_SYMBOL {
		return gpu.NewCallError("cuda", call, code, "MISSING_SYMBOL",
			"this NVIDIA driver does not export "+call+"; update the driver", false)
	}
	name, msg := "", ""
	if s := C.kl_error_name(r); s != nil {
		name = C.GoString(s)
	}
	if s := C.kl_error_string(r); s != nil {
		msg = C.GoString(s)
	}
	if name == "" {
		name = stickyCodes[code]
	}
	if name == "" {
		name = fmt.Sprintf("CUDA_ERROR_%d", code)
	}
	_, sticky := stickyCodes[code]
	return gpu.NewCallError("cuda", call, code, name, msg, sticky)
}
