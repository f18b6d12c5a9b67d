// hostile.cu — what a hostile submission tries from inside a kernel and from a static
// constructor. Only an untrusted (sandboxed) load may run it: every attempt must fail there.
#include "kl.cuh"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

// Runs when the module is loaded: tries to leave a mark on the filesystem.
__attribute__((constructor)) static void at_load() {
    const char *mark = "/tmp/kl-hostile-constructor-mark";
    int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) close(fd);
}

// out[0..7]: what each attempt returned (1 = it worked, 0 = it was refused).
extern "C" __global__ void try_escape(int *out, int parent) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    int fd = open("/etc/passwd", O_RDONLY);
    out[0] = fd >= 0;
    if (fd >= 0) close(fd);
    pid_t p = fork();
    if (p == 0) _exit(0);
    out[1] = p > 0;
    out[2] = system("true") == 0;
    out[3] = socket(AF_INET, SOCK_STREAM, 0) >= 0;
    out[4] = kill(parent, 0) == 0;
    out[5] = setsid() >= 0;
    fd = open("/tmp/kl-hostile-kernel-mark", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    out[6] = fd >= 0;
    if (fd >= 0) close(fd);
    out[7] = getenv("LABRUN_SECRET_SEED") != nullptr;
}

// An honest kernel, to show the sandboxed launcher computes on shared device memory.
extern "C" __global__ void add_one(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + 1.0f;
}

// A kernel that ends its process.
extern "C" __global__ void exit_process(int *out) {
    out[0] = 1;
    exit(3);
}
