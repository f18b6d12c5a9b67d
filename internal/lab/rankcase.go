package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// RankCase is the base of a case of a lab of ranks: its Env and this process's place in the job,
// with the steps such a case queues on its stream between the ranks.
type RankCase struct {
	Env     *Env
	Rank, N int // this rank, of N
}

// NewRankCase is the base of a case on env.
func NewRankCase(env *Env) RankCase {
	w := env.World()
	return RankCase{Env: env, Rank: w.Rank, N: w.Size}
}

// Barrier queues a device barrier of every rank on the case's stream (Env.DeviceBarrier).
func (r RankCase) Barrier() error { return r.Env.DeviceBarrier(r.Env.Stream) }

// GridStride is v's grid-stride launch over work elements on the case's stream (GridStride).
func (r RankCase) GridStride(v *Variant, work int) gpu.LaunchConfig {
	return GridStride(r.Env, v, work, r.Env.Stream)
}

// Step is the grid-stride launch of k over work elements with args, as a step of InOrder.
func (r RankCase) Step(k gpu.Kernel, v *Variant, work int, args ...any) func() error {
	return func() error { return gpu.Launch(k, r.GridStride(v, work), args...) }
}

// Kernel is v's kernel, or a skip where this rank cannot reach every rank's shared buffers
// (Env.AllReachable): the course's kernels reach their peers by load and store.
func (r RankCase) Kernel(v *Variant) (gpu.Kernel, error) {
	if ok, why := r.Env.AllReachable(); !ok {
		return nil, Skip("%s", why)
	}
	return r.Env.Kernel(v)
}
