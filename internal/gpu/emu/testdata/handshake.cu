// handshake.cu — blocks that wait for each other through flags in global memory.
#include "kl.cuh"

// Blocks 0 and 1 take turns: block b may act on turn 2r+b and then hands the turn over.
// Thread 0 spins on the flag; the block's other threads wait at the barrier.
extern "C" __global__ void pingpong(volatile int* flag, int* order, int rounds) {
    const int me = blockIdx.x;
    for (int r = 0; r < rounds; r++) {
        const int turn = 2 * r + me;
        if (threadIdx.x == 0) {
            while (*flag != turn) {
            }
            order[turn] = me;
            __threadfence();
            *flag = turn + 1;
        }
        __syncthreads();
    }
}

// Every block waits for the last block of the grid: fine when all blocks are resident, a
// deadlock (as on a GPU) when the waiting blocks fill every SM and the last one cannot start.
extern "C" __global__ void wait_for_last(volatile int* flag) {
    if (threadIdx.x != 0) return;
    if (blockIdx.x == gridDim.x - 1) {
        __threadfence();
        *flag = 1;
    } else {
        while (*flag == 0) {
        }
    }
}
