// cheat: kills its own process (on the emulator the kernel is host code: abort(); on a GPU,
// __trap()). Expected on the emulator: crash (the worker process died; the grade goes on).
#include <cstdlib>
#include "kl.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
#if defined(KL_BACKEND_EMU)
    std::abort();
#else
    __trap();
#endif
}
