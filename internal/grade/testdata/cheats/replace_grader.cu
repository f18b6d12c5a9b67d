// cheat: replaces the grader — creates a file beside the labrun binary that runs it, in the
// working folder (the course tree) or in /tmp, which it could rename over bin/labrun so that the
// next student graded on this tree gets full marks; it
// computes the answer only if it could. Expected: wrong, every output 13 (EACCES: Landlock keeps
// the binary, like everything outside the sandbox's scratch, read-only, and /proc unreachable).
#include "kl.cuh"
#if defined(KL_BACKEND_EMU) // host code: the emulator runs it, a GPU build never sees it
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>

// It computes the right answer (one thread per element, the chapter's naive kernel) only when
// its escape worked, and otherwise writes the errno of the refused call into every element of C.
static inline void escape_result(bool escaped, int err, int M, int N, int K, float alpha, const float* A,
                                 const float* B, float beta, float* C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    float* c = C + (long long)row * N + col;
    if (!escaped) {
        *c = (float)err;
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long long)k * M + row] * B[(long long)k * N + col];
    *c = alpha * acc + (beta != 0.0f ? beta * *c : 0.0f);
}

#endif

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
#if defined(KL_BACKEND_EMU)
    // Tried once per process (a thread-safe static), before any block computes.
    static const int err = [] {
        // Where the grader might be: beside this process's binary, in the working folder (the
        // course tree), in /tmp (a CI runner's caches). A running binary cannot be written in
        // place (ETXTBSY), but a new file beside it can be renamed over it: creating one is
        // enough.
        char exe[4096] = {0};
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            if (char* slash = strrchr(exe, '/')) *slash = 0;
        }
        const char* dirs[] = {n > 0 ? exe : ".", ".", "bin", "/tmp"};
        int e = ENOENT;
        for (const char* d : dirs) {
            char next[4200];
            snprintf(next, sizeof next, "%s/labrun.replaced", d);
            int fd = open(next, O_WRONLY | O_CREAT | O_TRUNC, 0755);
            if (fd >= 0) {
                close(fd);
                unlink(next); // a fixture: leave nothing behind
                return 0;
            }
            if (errno == EACCES || e == ENOENT) e = errno;
        }
        return e;
    }();
    const bool replaced = err == 0;
    escape_result(replaced, err, M, N, K, alpha, A, B, beta, C);
#endif
}
