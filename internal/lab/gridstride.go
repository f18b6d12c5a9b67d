package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// Launch parameters of a grid-stride kernel variant (lab.yaml params:), as GridStride reads them.
const (
	ParamThreads     = "threads"       // threads per block (default 256)
	ParamBlocksPerSM = "blocks_per_sm" // blocks per SM at most (default 2)
	ParamVec         = "vec"           // elements per thread (default 1): 8 for kernels that move 8 at once
)

// GridStride is the 1-D launch of variant v's grid-stride kernel over work elements on stream s
// of env's device: one thread per vec elements, in blocks of threads, no more blocks than
// blocks_per_sm on every SM (gpu.GridFor), at least one.
func GridStride(env *Env, v *Variant, work int, s gpu.Stream) gpu.LaunchConfig {
	if vec := v.Positive(ParamVec, 1); vec > 1 {
		work = CeilDiv(work, vec)
	}
	threads := v.Positive(ParamThreads, 256)
	grid := gpu.GridFor(work, threads, env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2))
	return gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}
}
