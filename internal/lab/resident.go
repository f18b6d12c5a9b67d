package lab

import "github.com/kernel-labs/kernellabs/internal/gpu"

// ResidentBlocks is how many blocks of kernel k (threads each, no dynamic shared memory) surely
// run at once on env's device, as a persistent grid that spins on flags needs: SMs × perSM,
// lowered to what the occupancy calculator says fits, on a GPU; SMs on the emulator (a block per
// worker).
func ResidentBlocks(env *Env, k gpu.Kernel, threads, perSM int) (int, error) {
	info := env.Device.Info()
	n := max(info.SMs, 1)
	if info.Emulated {
		return n, nil
	}
	fits, err := BlocksPerSM(k, threads, 0)
	if err != nil {
		return 0, err
	}
	return n * min(perSM, fits), nil
}
