// kl.cuh — the portability header. Every kernel file of the course includes it first:
//
//     #include "kl.cuh"
//
// With nvcc it brings in CUDA's device headers; with hipcc (or clang -x hip) HIP's; with a host
// C++ compiler it brings in the CPU emulator, so the same file runs on every backend. Kernel files
// hold device code only: extern "C" __global__ entries, device functions, no host main.
//
// What differs between the vendors, and what a portable kernel uses instead:
//
//   warp width        KL_WARP_SIZE: 32 on NVIDIA, 64 on AMD's CDNA GPUs (gfx90a, gfx942), and
//                     on the emulator whatever it was built for (--emu-warp 32 or 64). Use it
//                     wherever lanes are counted: a reduction over a warp, a lane index, the
//                     number of warps of a block. tid / 32 as a plain grouping of threads (a warp
//                     tile of a GEMM) is not a warp and needs nothing.
//   lane masks        kl_lanemask_t: 32 bits on NVIDIA, 64 on AMD (HIP's masks are 64-bit and
//                     its *_sync functions reject 32-bit ones). KL_FULL_MASK is every lane,
//                     kl_lane_bit(l) is lane l's bit (1 << lane overflows at lane 32),
//                     kl_lanes_below(n) is lanes 0..n-1.
//   warp collectives  kl_shfl_sync, kl_shfl_up_sync, kl_shfl_down_sync, kl_shfl_xor_sync,
//                     kl_ballot_sync, kl_any_sync, kl_all_sync, kl_syncwarp, kl_activemask:
//                     CUDA's __*_sync functions on NVIDIA and on the emulator; on AMD the plain
//                     __shfl/__ballot/__any/__all of every ROCm release (5.2 has no *_sync; a
//                     wavefront runs its active lanes in lockstep, so the mask only documents
//                     who takes part). The width defaults to KL_WARP_SIZE.
//   atomics           atomicAdd, atomicCAS, atomicExch, atomicMin/Max/And/Or/Xor and their
//                     _system forms have the same names on both vendors. The _block forms are
//                     CUDA-only: use kl_atomic_add_block.
//   fences            __threadfence, __threadfence_block, __threadfence_system exist on both.
//                     kl_load_acquire / kl_store_release (device scope) and kl_load_acquire_sys /
//                     kl_store_release_sys (system scope: peers, the host), with
//                     kl_atomic_add_release(_sys) for counters, are the flag protocol
//                     of labs 04 and 05 in one call: ld.acquire/st.release on NVIDIA,
//                     __hip_atomic_load/store on AMD, host atomics (and a scheduling point) on
//                     the emulator.
//   16-bit floats     kl_half (__half) and kl_bf16 (__nv_bfloat16; hip_bfloat16 or __hip_bfloat16
//                     on AMD) with kl_float2bf16, kl_bf162float and kl_bf16_bits (its 16 bits).
//   launch bounds     KL_LAUNCH_BOUNDS(threads, min_blocks): CUDA's second argument is blocks per
//                     SM, HIP's is waves per execution unit; the macro converts (4 SIMDs per CU).
//                     __launch_bounds__(threads) alone means the same on both.
//
// NVIDIA-only (no HIP equivalent under the same name): inline PTX (asm), cp.async, ldmatrix,
// mma.sync, wgmma, TMA, mbarrier, thread-block clusters, setmaxnreg, nvcuda::wmma. A variant that
// uses them says `needs: [nvidia]` in its lab.yaml; the chapter names the AMD counterpart (MFMA
// instructions, LDS, buffer loads, rocWMMA).
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
#elif defined(__HIPCC__) || defined(__HIP__)
#define KL_BACKEND_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>
#if __has_include(<hip/hip_bf16.h>) // ROCm 5.7 and later
#include <hip/hip_bf16.h>
#define KL_HIP_BF16_NATIVE 1
#else // ROCm 5.2 (Debian 12): the older struct
#include <hip/hip_bfloat16.h>
#endif
#else
#define KL_BACKEND_EMU 1
// The CPU emulator's CUDA surface: threadIdx & co., __shared__, barriers, warp collectives,
// atomics, __half/__nv_bfloat16, printf and nvcuda::wmma (emu/kl_emu.h; the toolchain's c++
// builder puts emu/ on the include path). Inline PTX does not compile here: the wrappers of
// cp.async, ldmatrix and mma.sync call the emulator's forms of them under KL_BACKEND_EMU.
#include "kl_emu.h"
#endif

// ---------------------------------------------------------------------------------------------
// Warp width and lane masks.
#if defined(KL_BACKEND_HIP)
// A compile-time constant in device code (clang defines it per target: 64 on gfx9, 32 or 64 on
// gfx10+); the host pass of a HIP compile parses device code too and sees the CDNA width.
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define KL_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define KL_WARP_SIZE 64
#endif
typedef unsigned long long kl_lanemask_t;
#elif defined(KL_BACKEND_EMU)
#define KL_WARP_SIZE KL_EMU_WARP_SIZE
typedef kl_emu_lanemask_t kl_lanemask_t;
#else
#define KL_WARP_SIZE 32
typedef unsigned int kl_lanemask_t;
#endif

// KL_FULL_MASK is the participation mask of a whole warp.
#define KL_FULL_MASK (~(kl_lanemask_t)0)

__device__ __forceinline__ kl_lanemask_t kl_lane_bit(int lane) { return (kl_lanemask_t)1 << lane; }
__device__ __forceinline__ kl_lanemask_t kl_lanes_below(int n) {
    return n >= (int)(8 * sizeof(kl_lanemask_t)) ? KL_FULL_MASK : kl_lane_bit(n) - 1;
}
// kl_lane and kl_warp: this thread's lane and warp in its block (threads numbered x-fastest).
__device__ __forceinline__ int kl_thread_linear() {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}
__device__ __forceinline__ int kl_lane() { return kl_thread_linear() % KL_WARP_SIZE; }
__device__ __forceinline__ int kl_warp() { return kl_thread_linear() / KL_WARP_SIZE; }

// ---------------------------------------------------------------------------------------------
// Warp collectives.
#if defined(KL_BACKEND_HIP)
template <typename T>
__device__ __forceinline__ T kl_shfl_sync(kl_lanemask_t, T v, int src, int width = KL_WARP_SIZE) {
    return __shfl(v, src, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_up_sync(kl_lanemask_t, T v, unsigned int d, int width = KL_WARP_SIZE) {
    return __shfl_up(v, d, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_down_sync(kl_lanemask_t, T v, unsigned int d, int width = KL_WARP_SIZE) {
    return __shfl_down(v, d, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_xor_sync(kl_lanemask_t, T v, int m, int width = KL_WARP_SIZE) {
    return __shfl_xor(v, m, width);
}
__device__ __forceinline__ kl_lanemask_t kl_ballot_sync(kl_lanemask_t, int pred) { return __ballot(pred); }
__device__ __forceinline__ int kl_any_sync(kl_lanemask_t, int pred) { return __any(pred); }
__device__ __forceinline__ int kl_all_sync(kl_lanemask_t, int pred) { return __all(pred); }
__device__ __forceinline__ kl_lanemask_t kl_activemask() { return __ballot(1); }
// The lanes' earlier shared-memory accesses are visible to each other after it, as __syncwarp.
__device__ __forceinline__ void kl_syncwarp(kl_lanemask_t = KL_FULL_MASK) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
template <typename T>
__device__ __forceinline__ T kl_shfl_sync(kl_lanemask_t mask, T v, int src, int width = KL_WARP_SIZE) {
    return __shfl_sync(mask, v, src, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_up_sync(kl_lanemask_t mask, T v, unsigned int d, int width = KL_WARP_SIZE) {
    return __shfl_up_sync(mask, v, d, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_down_sync(kl_lanemask_t mask, T v, unsigned int d, int width = KL_WARP_SIZE) {
    return __shfl_down_sync(mask, v, d, width);
}
template <typename T>
__device__ __forceinline__ T kl_shfl_xor_sync(kl_lanemask_t mask, T v, int m, int width = KL_WARP_SIZE) {
    return __shfl_xor_sync(mask, v, m, width);
}
__device__ __forceinline__ kl_lanemask_t kl_ballot_sync(kl_lanemask_t mask, int pred) { return __ballot_sync(mask, pred); }
__device__ __forceinline__ int kl_any_sync(kl_lanemask_t mask, int pred) { return __any_sync(mask, pred); }
__device__ __forceinline__ int kl_all_sync(kl_lanemask_t mask, int pred) { return __all_sync(mask, pred); }
__device__ __forceinline__ kl_lanemask_t kl_activemask() { return __activemask(); }
__device__ __forceinline__ void kl_syncwarp(kl_lanemask_t mask = KL_FULL_MASK) { __syncwarp(mask); }
#endif

// ---------------------------------------------------------------------------------------------
// Atomics and the acquire/release flag protocol.
#if defined(KL_BACKEND_HIP)
__device__ __forceinline__ unsigned int kl_atomic_add_block(unsigned int* p, unsigned int v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
}
__device__ __forceinline__ int kl_atomic_add_block(int* p, int v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
}
__device__ __forceinline__ unsigned int kl_load_acquire(const unsigned int* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ void kl_store_release(unsigned int* p, unsigned int v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ unsigned int kl_load_acquire_sys(const unsigned int* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ __forceinline__ void kl_store_release_sys(unsigned int* p, unsigned int v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ __forceinline__ unsigned int kl_atomic_add_release(unsigned int* p, unsigned int v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ unsigned int kl_atomic_add_release_sys(unsigned int* p, unsigned int v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
#elif defined(KL_BACKEND_CUDA)
__device__ __forceinline__ unsigned int kl_atomic_add_block(unsigned int* p, unsigned int v) { return atomicAdd_block(p, v); }
__device__ __forceinline__ int kl_atomic_add_block(int* p, int v) { return atomicAdd_block(p, v); }
__device__ __forceinline__ unsigned int kl_load_acquire(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void kl_store_release(unsigned int* p, unsigned int v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned int kl_load_acquire_sys(const unsigned int* p) {
    unsigned int v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void kl_store_release_sys(unsigned int* p, unsigned int v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// A counter that several producers raise: the add is the release (PTX atom.release).
__device__ __forceinline__ unsigned int kl_atomic_add_release(unsigned int* p, unsigned int v) {
    unsigned int old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ __forceinline__ unsigned int kl_atomic_add_release_sys(unsigned int* p, unsigned int v) {
    unsigned int old;
    asm volatile("atom.release.sys.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
#else
static inline unsigned int kl_atomic_add_block(unsigned int* p, unsigned int v) { return atomicAdd(p, v); }
static inline int kl_atomic_add_block(int* p, int v) { return atomicAdd(p, v); }
// Every emulated scope is the process. Each call is a scheduling point, so a spin on a flag that
// another thread of the same block sets goes on.
static inline unsigned int kl_load_acquire(const unsigned int* p) {
    kl_emu_poll();
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void kl_store_release(unsigned int* p, unsigned int v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
    kl_emu_poll();
}
static inline unsigned int kl_load_acquire_sys(const unsigned int* p) { return kl_load_acquire(p); }
static inline void kl_store_release_sys(unsigned int* p, unsigned int v) { kl_store_release(p, v); }
static inline unsigned int kl_atomic_add_release(unsigned int* p, unsigned int v) {
    unsigned int old = __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
    kl_emu_poll();
    return old;
}
static inline unsigned int kl_atomic_add_release_sys(unsigned int* p, unsigned int v) { return kl_atomic_add_release(p, v); }
#endif

// ---------------------------------------------------------------------------------------------
// The device barrier between ranks (one process per GPU, labs 04 and 05). Every rank has a few
// words of signals in memory that every rank maps (the engine's lab.Env.Signals; kernels take
// the table of the n ranks' words as `unsigned* const* sig`):
//   word 0            how many barriers this rank has passed (its epoch)
//   word 1            blocks of this rank's grid that have reached kl_rank_barrier_end
//   words 2 … 2+n−1   start flags: word 2+p is the epoch rank p reached in a barrier's start
//   words 2+n … 2+2n−1 end flags, the same for kl_rank_barrier_end
// A rank arrives by storing its epoch into every peer's flag for it (st.release.sys: everything it
// wrote before is visible to whoever reads the flag) and waits until every peer's flag in its own
// words holds the epoch (ld.acquire.sys). The epoch lives on the device, so a loop of launches
// captured in a CUDA graph synchronises as well as one launched from the host.
#define KL_SIGNAL_WORDS(n) (2 + 2 * (n))

// kl_rank_arrive_and_wait: one thread per peer (threads 0 … n−1 of the calling block) arrive at
// flag set `set` (0: start, 1: end) with epoch e and wait for every peer.
__device__ __forceinline__ void kl_rank_arrive_and_wait(unsigned* const* sig, int rank, int nranks, int set, unsigned e) {
    for (int p = threadIdx.x; p < nranks; p += blockDim.x) {
        kl_store_release_sys(&sig[p][2 + set * nranks + rank], e);
    }
    for (int p = threadIdx.x; p < nranks; p += blockDim.x) {
        const unsigned* flag = &sig[rank][2 + set * nranks + p];
        while ((int)(kl_load_acquire_sys(flag) - e) < 0) {
        }
    }
}

// kl_rank_barrier_start: every block of a collective kernel calls it first (all its threads):
// no block goes on before every rank's kernel has started, so every peer has finished what came
// before on its stream (the inputs are written, the outputs poisoned, the previous launch done).
// Blocks need not be resident together: each waits only for the peers.
__device__ __forceinline__ void kl_rank_barrier_start(unsigned* const* sig, int rank, int nranks) {
    const unsigned e = kl_load_acquire_sys(&sig[rank][0]) + 1;
    __threadfence_system();
    kl_rank_arrive_and_wait(sig, rank, nranks, 0, e);
    __syncthreads();
}

// kl_rank_barrier_end: every block calls it last (all its threads). The last block of the grid
// to arrive signals the peers and waits for theirs, then counts the barrier (the epoch); so the
// kernel ends only when every rank's kernel is done with every buffer, and no block spins on
// another block of its own grid.
__device__ __forceinline__ void kl_rank_barrier_end(unsigned* const* sig, int rank, int nranks) {
    __shared__ unsigned kl_last;
    __syncthreads();
    const unsigned e = kl_load_acquire_sys(&sig[rank][0]) + 1;
    if (threadIdx.x == 0) {
        __threadfence_system(); // this block's writes before its arrival
        const unsigned arrived = atomicAdd(&sig[rank][1], 1u);
        kl_last = arrived == gridDim.x - 1;
        if (kl_last) {
            sig[rank][1] = 0;
            __threadfence_system(); // every block's writes (seen through the counter) before the flags
        }
    }
    __syncthreads();
    if (kl_last) {
        kl_rank_arrive_and_wait(sig, rank, nranks, 1, e);
        __syncthreads();
        if (threadIdx.x == 0) kl_store_release_sys(&sig[rank][0], e);
    }
}

// kl_rank_barrier_block: a whole barrier in one block (the engine's barrier kernel, kl_rank_barrier,
// launched before and after a collective that does not synchronise itself): arrive, wait, count.
__device__ __forceinline__ void kl_rank_barrier_block(unsigned* const* sig, int rank, int nranks) {
    const unsigned e = kl_load_acquire_sys(&sig[rank][0]) + 1;
    __threadfence_system();
    kl_rank_arrive_and_wait(sig, rank, nranks, 0, e);
    __syncthreads();
    if (threadIdx.x == 0) kl_store_release_sys(&sig[rank][0], e);
}

// ---------------------------------------------------------------------------------------------
// 16-bit floats.
typedef __half kl_half;
#if defined(KL_BACKEND_HIP) && defined(KL_HIP_BF16_NATIVE)
typedef __hip_bfloat16 kl_bf16;
__device__ __forceinline__ kl_bf16 kl_float2bf16(float f) { return __float2bfloat16(f); }
__device__ __forceinline__ float kl_bf162float(kl_bf16 b) { return __bfloat162float(b); }
__device__ __forceinline__ uint16_t kl_bf16_bits(kl_bf16 b) { return __bfloat16_as_ushort(b); }
#elif defined(KL_BACKEND_HIP)
typedef hip_bfloat16 kl_bf16;
__device__ __forceinline__ kl_bf16 kl_float2bf16(float f) { return hip_bfloat16(f); } // rounds to nearest even
__device__ __forceinline__ float kl_bf162float(kl_bf16 b) { return (float)b; }
__device__ __forceinline__ uint16_t kl_bf16_bits(kl_bf16 b) { return b.data; }
#else
typedef __nv_bfloat16 kl_bf16;
__device__ __forceinline__ kl_bf16 kl_float2bf16(float f) { return __float2bfloat16_rn(f); }
__device__ __forceinline__ float kl_bf162float(kl_bf16 b) { return __bfloat162float(b); }
__device__ __forceinline__ uint16_t kl_bf16_bits(kl_bf16 b) { return __bfloat16_as_ushort(b); }
#endif

// ---------------------------------------------------------------------------------------------
// kl_load_cg(p): a load cached in L2 only, never in the SM's L1 (CUDA's __ldcg, ld.global.cg),
// for kernels that measure L2 or stream data once. HIP has no such intrinsic: there it is a plain
// load (AMD's vector L1 is small and write-through; a kernel that must bypass it would use
// buffer loads with the glc bit).
template <typename T>
__device__ __forceinline__ T kl_load_cg(const T* p) {
#if defined(KL_BACKEND_HIP)
    return *p;
#else
    return __ldcg(p);
#endif
}

// ---------------------------------------------------------------------------------------------
// KL_LAUNCH_BOUNDS(threads, min_blocks): at most `threads` threads a block, registers allotted so
// that `min_blocks` blocks fit on one SM (CUDA) or CU (AMD: waves per SIMD, 4 SIMDs a CU).
#if defined(KL_BACKEND_HIP)
#define KL_LAUNCH_BOUNDS(threads, min_blocks)                                                       \
    __launch_bounds__(threads)                                                                      \
        __attribute__((amdgpu_waves_per_eu(((min_blocks) * (((threads) + KL_WARP_SIZE - 1) / KL_WARP_SIZE) + 3) / 4)))
#else
#define KL_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#endif

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
