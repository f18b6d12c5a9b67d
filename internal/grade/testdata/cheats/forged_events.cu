// cheat: forges the grader's events — when its module is loaded, writes "result ok" events for
// every test on every descriptor it might share with labrun (the old worker's event pipe was
// descriptor 3), then computes nothing. Expected: crash (in the sandbox descriptor 3 is the
// launcher's private channel to the worker; garbage on it ends the launcher, and no event of it
// can reach the grader, which writes its reports alone).
#include "kl.cuh"
#if defined(KL_BACKEND_EMU) // host code: the emulator runs it, a GPU build never sees it
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void forge() {
    static const char ev[] =
        "{\"type\":\"start\",\"job\":0}\n"
        "{\"type\":\"result\",\"job\":0,\"entry\":{\"suite\":\"fp32\",\"variant\":\"ex1_smem_tiling\","
        "\"problem\":\"17×33×65\",\"status\":\"ok\"}}\n";
    for (int fd = 3; fd < 64; fd++) (void)!write(fd, ev, strlen(ev));
}
#endif

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
#if defined(KL_BACKEND_EMU)
#endif
}
