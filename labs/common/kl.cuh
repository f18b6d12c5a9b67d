// kl.cuh — the portability header. Every kernel file of the course includes it first:
//
//     #include "kl.cuh"
//
// With nvcc it brings in CUDA's device headers; with hipcc (later) HIP's; with a host C++
// compiler it brings in the CPU emulator, so the same file runs on every backend. Kernel files
// hold device code only: extern "C" __global__ entries, device functions, no host main.
#pragma once

#if defined(__CUDACC__)
#define KL_BACKEND_CUDA 1
#if !defined(KL_DEVICE_CHECK)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#endif
// (The emulator's device-code check, clang++ in CUDA mode without a CUDA install, declares
// CUDA's device API in emu/kl_device_check.h, which it force-includes, and sets KL_DEVICE_CHECK.)
#include <stdint.h>
#elif defined(__HIPCC__)
#define KL_BACKEND_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
#else
#define KL_BACKEND_EMU 1
// The CPU emulator's CUDA surface: threadIdx & co., __shared__, barriers, warp collectives,
// atomics, __half/__nv_bfloat16, printf and nvcuda::wmma (emu/kl_emu.h; the toolchain's c++
// builder puts emu/ on the include path). Inline PTX does not compile here.
#include "kl_emu.h"
#endif

// KL_WARP_SIZE is the number of lanes a warp-wide operation spans: 32 on NVIDIA and on the
// emulator, 64 on most AMD GPUs. Use it instead of a literal 32 where it matters.
#if defined(KL_BACKEND_HIP)
#define KL_WARP_SIZE warpSize
#else
#define KL_WARP_SIZE 32
#endif

// KL_FULL_MASK is the participation mask of a whole warp for __shfl_*_sync and friends.
#define KL_FULL_MASK 0xffffffffu

// kl_smid and kl_globaltimer_ns say where and when a block runs, for timelines of the SMs (lab
// 03 records, per tile, the SM that ran it and when it started and ended):
//   kl_smid()            the multiprocessor this thread runs on: %smid on NVIDIA GPUs, the
//                        worker ("SM") index of the launch on the emulator, __smid() on AMD
//   kl_globaltimer_ns()  a clock shared by all SMs, in nanoseconds: %globaltimer on NVIDIA GPUs
//                        (it ticks in steps of 32 ns to 1 µs depending on the GPU), the host's
//                        steady clock on the emulator; on AMD, wall_clock64() ticks (not ns)
#if defined(KL_BACKEND_CUDA)
__device__ __forceinline__ unsigned int kl_smid() {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}
__device__ __forceinline__ unsigned long long kl_globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#elif defined(KL_BACKEND_HIP)
__device__ __forceinline__ unsigned int kl_smid() { return __smid(); }
__device__ __forceinline__ unsigned long long kl_globaltimer_ns() { return wall_clock64(); }
#else
static inline unsigned int kl_smid() { return kl_emu_smid(); }
static inline unsigned long long kl_globaltimer_ns() { return kl_emu_globaltimer_ns(); }
#endif
