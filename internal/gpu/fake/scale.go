//go:build unix

package fake

import (
	"encoding/binary"
	"os"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// RegisterScaleKernels defines the kernels of the engine's and the grader's test lab, all on
// y = 2x with the signature (const float* x, float* y, int n): scale_good, scale_wrong (one wrong
// element), scale_crash (kills its process), scale_hang (never returns) and scale_sticky (an
// error that spoils the context).
func RegisterScaleKernels() {
	sig := []string{"const float*", "float*", "int"}
	RegisterKernel("scale_good", sig, ScaleKernel(nil))
	RegisterKernel("scale_wrong", sig, ScaleKernel(func(ys []float32) { ys[len(ys)/2] += 1 }))
	RegisterKernel("scale_crash", sig, func(gpu.LaunchConfig, [][]byte) error {
		syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		time.Sleep(time.Second)
		return nil
	})
	RegisterKernel("scale_hang", sig, func(gpu.LaunchConfig, [][]byte) error {
		time.Sleep(time.Hour)
		return nil
	})
	RegisterKernel("scale_sticky", sig, func(gpu.LaunchConfig, [][]byte) error {
		return gpu.NewCallError("fake", "cuLaunchKernel", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", true)
	})
}

// ScaleKernel is y = 2x over (x, y, n), then mutate(y) when it is not nil.
func ScaleKernel(mutate func(ys []float32)) KernelFunc {
	return func(cfg gpu.LaunchConfig, args [][]byte) error {
		n := int(binary.LittleEndian.Uint32(args[2]))
		xs, ys := Float32s(PtrArg(args[0]), n), Float32s(PtrArg(args[1]), n)
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		if mutate != nil {
			mutate(ys)
		}
		return nil
	}
}

// PtrArg reads a packed pointer argument.
func PtrArg(b []byte) gpu.Ptr { return gpu.Ptr(binary.LittleEndian.Uint64(b)) }
