package lab

import (
	"cmp"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// SMs is the device's SM count for sizing grids: at least 1, even on a backend that does not say.
func (e *Env) SMs() int { return max(e.Device.Info().SMs, 1) }

// Config1D is a 1-D launch of grid blocks of block threads on e's stream.
func (e *Env) Config1D(grid, block int) gpu.LaunchConfig {
	return gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(block), Stream: e.Stream}
}

// Block reads a variant's block size (launch parameter key, def when unset) and checks it against
// the device's limit of threads per block (1024 when the device does not say).
func (e *Env) Block(v *Variant, key string, def int64) (int, error) {
	b, limit := v.Int(key, def), cmp.Or(int64(max(e.Device.Info().MaxThreadsPerBlock, 0)), 1024)
	if b < 1 || b > limit {
		return 0, fmt.Errorf("variant %s: %s %d is outside 1..%d (params.%s in lab.yaml)", v.Name, key, b, limit, key)
	}
	return int(b), nil
}
