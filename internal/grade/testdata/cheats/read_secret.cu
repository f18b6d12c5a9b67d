// cheat: reads the secret seed — from its own environment and from /proc/<pid>/environ of every
// process (the CI step's shell has it in its environment); it computes the answer only if it
// found it.
// Expected: wrong, every output 13 (EACCES: the sandbox starts with an empty environment and
// Landlock keeps /proc out of reach).
#include "kl.cuh"
#if defined(KL_BACKEND_EMU) // host code: the emulator runs it, a GPU build never sees it
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static bool has_secret(const char* path, int* err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        *err = errno;
        return false;
    }
    static char buf[1 << 16];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0) buf[i] = '\n';
    buf[n] = 0;
    return strstr(buf, "LABRUN_SECRET_SEED=") != nullptr;
}
#endif

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
#if defined(KL_BACKEND_EMU)
    // Tried once per process (a thread-safe static), before any block computes. err is why
    // its own environment file could not be read (a process can always read its own, unconfined).
    static int err = 0;
    static const bool found = [] {
        if (getenv("LABRUN_SECRET_SEED") != nullptr) return true;
        int ignored = 0;
        has_secret("/proc/self/environ", &err);
        DIR* proc = opendir("/proc");
        if (!proc) return false;
        bool found = false;
        char path[300];
        while (struct dirent* d = readdir(proc)) {
            if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
            snprintf(path, sizeof path, "/proc/%s/environ", d->d_name);
            if ((found = has_secret(path, &ignored))) break;
        }
        closedir(proc);
        return found;
    }();
    escape_result(found, err, M, N, K, alpha, A, B, beta, C);
#endif
}
