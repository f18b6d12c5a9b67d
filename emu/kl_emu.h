// kl_emu.h — the CUDA surface of the Kernel Labs CPU emulator.
//
// A kernel file includes "kl.cuh", which includes this header when the compiler is a host C++
// compiler (not nvcc, not hipcc). It makes a plain CUDA kernel file compile as C++17 and run on
// the emulator's runtime (kl_emu_rt.cc): the threads of a block are fibers on one worker thread,
// the blocks of a grid run on several worker threads ("SMs") at once.
//
// How the CUDA names map:
//   threadIdx, blockIdx, blockDim, gridDim  the running fiber's and block's coordinates
//   __shared__                              thread_local: one copy per worker thread, and a worker
//                                           runs one block at a time, so one copy per resident block
//   extern __shared__ T name[]              defined by the generated registry with room for
//                                           KL_EMU_MAX_DYN_SHARED bytes, again per worker
//   __syncthreads, __syncwarp, __shfl*_sync,
//   __ballot_sync, __any/__all_sync          runtime calls that switch fibers until the block (or the
//                                           warp's lanes named by the mask) have all arrived
//   atomics                                 host atomics on the same addresses (seq_cst)
//   __threadfence, __nanosleep, atomics     also scheduling points: a thread that spin-waits for
//                                           another thread of its own block must call one of these
//                                           in its loop (a spin on another block needs nothing)
//   printf                                  collected per launch, printed by the Go side after it
//   nvcuda::wmma                            m16n16k16 (and m32n8k16, m8n32k16) fragments computed
//                                           in FP32 by the warp's last arriving lane
//   cp.async, ldmatrix, mma.sync m16n8k16   kl_emu_ptx.h: what a kernel's asm wrappers call under
//                                           KL_BACKEND_EMU (inline PTX itself cannot compile for a CPU)
// Other inline PTX (asm volatile("wgmma ...")) cannot run here: such kernels are GPU-only.
#pragma once
#ifndef KL_EMU_H
#define KL_EMU_H

#ifndef __cplusplus
#error "kl_emu.h is C++ (the emulator compiles kernel files as C++17)"
#endif

#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <new>
#include <type_traits>
#include <utility>

#include "kl_emu_abi.h"

// KL_EMU_WARP_SIZE is the number of lanes of a warp: 32 as on NVIDIA GPUs, or 64 as on AMD's CDNA
// GPUs (wave64) when the toolchain builds with -DKL_EMU_WARP_SIZE=64 (labrun --emu-warp 64). A
// lane mask has that many bits: kl_emu_lanemask_t is CUDA's unsigned int, or HIP's unsigned long
// long, so a kernel that hard-codes 32 lanes (0xffffffff, 1u << lane) fails under wave64.
#ifndef KL_EMU_WARP_SIZE
#define KL_EMU_WARP_SIZE 32
#endif
#if KL_EMU_WARP_SIZE == 32
typedef unsigned int kl_emu_lanemask_t;
#elif KL_EMU_WARP_SIZE == 64
typedef unsigned long long kl_emu_lanemask_t;
#else
#error "KL_EMU_WARP_SIZE must be 32 or 64"
#endif

#define KL_EMU_EXPORT __attribute__((visibility("default")))

// ---------------------------------------------------------------------------------------------
// Vector types (CUDA's vector_types.h): the alignments match CUDA's, so a float4 load in a kernel
// has the same layout rules here as on a GPU.
#define KL_EMU_VEC(T, N, A2, A4)                                                                   \
    struct N##1 { T x; };                                                                          \
    struct __attribute__((aligned(A2))) N##2 { T x, y; };                                          \
    struct N##3 { T x, y, z; };                                                                    \
    struct __attribute__((aligned(A4))) N##4 { T x, y, z, w; };                                    \
    static inline N##1 make_##N##1(T x) { N##1 v; v.x = x; return v; }                            \
    static inline N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }               \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 v; v.x = x; v.y = y; v.z = z; return v; } \
    static inline N##4 make_##N##4(T x, T y, T z, T w) {                                           \
        N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v;                                      \
    }

KL_EMU_VEC(signed char, char, 2, 4)
KL_EMU_VEC(unsigned char, uchar, 2, 4)
KL_EMU_VEC(short, short, 4, 8)
KL_EMU_VEC(unsigned short, ushort, 4, 8)
KL_EMU_VEC(int, int, 8, 16)
KL_EMU_VEC(unsigned int, uint, 8, 16)
KL_EMU_VEC(long, long, 16, 16)
KL_EMU_VEC(unsigned long, ulong, 16, 16)
KL_EMU_VEC(long long, longlong, 16, 16)
KL_EMU_VEC(unsigned long long, ulonglong, 16, 16)
KL_EMU_VEC(float, float, 8, 16)
KL_EMU_VEC(double, double, 16, 16)
#undef KL_EMU_VEC

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------------------------------------
// What the runtime tells a running fiber about itself.
struct kl_emu_block {
    uint3 idx;
    dim3 dim;
    dim3 grid;
};

struct kl_emu_thread {
    uint3 tid;
    const kl_emu_block *blk;
    unsigned int lane;   // linear thread index % KL_EMU_WARP_SIZE
    unsigned int warp;   // linear thread index / KL_EMU_WARP_SIZE
    unsigned int linear; // x + y*bx + z*bx*by
    unsigned int ticks;  // counts atomics, to make spin loops on atomics yield now and then
};

// Warp-collective operations understood by kl_emu_warp.
enum {
    KL_EMU_W_SHFL_IDX = 0,
    KL_EMU_W_SHFL_UP,
    KL_EMU_W_SHFL_DOWN,
    KL_EMU_W_SHFL_XOR,
    KL_EMU_W_BALLOT,
    KL_EMU_W_ANY,
    KL_EMU_W_ALL,
    KL_EMU_W_UNI,
    KL_EMU_W_SYNC,
    KL_EMU_W_RED_ADD,
    KL_EMU_W_RED_MIN_U,
    KL_EMU_W_RED_MAX_U,
    KL_EMU_W_RED_MIN_S,
    KL_EMU_W_RED_MAX_S,
    KL_EMU_W_RED_AND,
    KL_EMU_W_RED_OR,
    KL_EMU_W_RED_XOR,
    KL_EMU_W_MATCH_ANY,
    KL_EMU_W_MATCH_ALL,
    KL_EMU_W_EXEC,
    KL_EMU_W_ACTIVE,
    KL_EMU_W_COUNT
};

// Block-barrier flavours understood by kl_emu_syncthreads_op.
enum { KL_EMU_B_PLAIN = 0, KL_EMU_B_COUNT, KL_EMU_B_AND, KL_EMU_B_OR };

#pragma GCC visibility push(default)
extern __thread kl_emu_thread *kl_emu_cur;
extern "C" {
void kl_emu_syncthreads(void);
int kl_emu_syncthreads_op(int op, int pred);
uint64_t kl_emu_warp(int op, uint64_t mask, uint64_t val, int arg, int width);
typedef void (*kl_emu_warp_fn)(void *const *lanes, uint64_t mask);
void kl_emu_warp_exec(uint64_t mask, void *mine, kl_emu_warp_fn fn, const char *what);
uint64_t kl_emu_activemask(void);
void kl_emu_poll(void);
int kl_emu_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void kl_emu_fail(int code, const char *msg);
[[noreturn]] void kl_emu_assert_fail(const char *expr, const char *file, int line, const char *func);
long long kl_emu_clock64(void);
unsigned int kl_emu_smid(void);
unsigned long long kl_emu_globaltimer_ns(void);
uint64_t kl_emu_block_run(void); // a number of the running block, new each time a worker starts one
}
#pragma GCC visibility pop

#ifndef KL_EMU_RUNTIME // everything below is what kernel code sees

// ---------------------------------------------------------------------------------------------
// Qualifiers. (KL_EMU_SCAN is the toolchain's preprocessing pass that finds the kernel entries:
// there the qualifiers it looks for survive as markers.)
#ifdef KL_EMU_SCAN
#define __global__ __kl_global__
#define __shared__ __kl_shared__
#define __launch_bounds__(...) __kl_launch_bounds__(__VA_ARGS__)
#else
#define __global__
#define __shared__ thread_local
#define __launch_bounds__(...)
#endif
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __maxnreg__(n)

// The built-in coordinates.
#define threadIdx (kl_emu_cur->tid)
#define blockIdx (kl_emu_cur->blk->idx)
#define blockDim (kl_emu_cur->blk->dim)
#define gridDim (kl_emu_cur->blk->grid)
static constexpr int warpSize = KL_EMU_WARP_SIZE;

// ---------------------------------------------------------------------------------------------
// Synchronization.
static inline void __syncthreads() { kl_emu_syncthreads(); }
static inline int __syncthreads_count(int p) { return kl_emu_syncthreads_op(KL_EMU_B_COUNT, p); }
static inline int __syncthreads_and(int p) { return kl_emu_syncthreads_op(KL_EMU_B_AND, p); }
static inline int __syncthreads_or(int p) { return kl_emu_syncthreads_op(KL_EMU_B_OR, p); }
static inline void __syncwarp(kl_emu_lanemask_t mask = ~(kl_emu_lanemask_t)0) {
    kl_emu_warp(KL_EMU_W_SYNC, mask, 0, 0, KL_EMU_WARP_SIZE);
}
static inline kl_emu_lanemask_t __activemask() { return (kl_emu_lanemask_t)kl_emu_activemask(); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); kl_emu_poll(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); kl_emu_poll(); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); kl_emu_poll(); }
static inline void __nanosleep(unsigned) { kl_emu_poll(); }
static inline long long clock64() { return kl_emu_clock64(); }
[[noreturn]] static inline void __trap() { kl_emu_fail(KL_EMU_ERR_TRAP, "__trap() was called"); }
[[noreturn]] static inline void __brkpt() { kl_emu_fail(KL_EMU_ERR_TRAP, "__brkpt() was called"); }

// assert() in a kernel fails the launch with the expression and its place, as on a GPU.
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : kl_emu_assert_fail(#e, __FILE__, __LINE__, __func__))
#endif

// printf from a kernel: collected during the launch, printed when it ends.
#define printf kl_emu_printf

// ---------------------------------------------------------------------------------------------
// Warp collectives.
namespace kl_emu {
template <typename T>
inline uint64_t to_bits(const T &v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes per lane");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
    typename std::remove_cv<T>::type v;
    std::memcpy(static_cast<void *>(&v), &b, sizeof(T));
    return v;
}
inline void tick() {
    kl_emu_thread *t = kl_emu_cur;
    if (((++t->ticks) & 31u) == 0) kl_emu_poll();
}
} // namespace kl_emu

// Masks are kl_emu_lanemask_t (32 or 64 bits, as the warp); the width defaults to the warp.
#define KL_EMU_W KL_EMU_WARP_SIZE
typedef kl_emu_lanemask_t kl_emu_mask;
template <typename T>
static inline T __shfl_sync(kl_emu_mask mask, T var, int srcLane, int width = KL_EMU_W) {
    return kl_emu::from_bits<T>(kl_emu_warp(KL_EMU_W_SHFL_IDX, mask, kl_emu::to_bits(var), srcLane, width));
}
template <typename T>
static inline T __shfl_up_sync(kl_emu_mask mask, T var, unsigned int delta, int width = KL_EMU_W) {
    return kl_emu::from_bits<T>(kl_emu_warp(KL_EMU_W_SHFL_UP, mask, kl_emu::to_bits(var), (int)delta, width));
}
template <typename T>
static inline T __shfl_down_sync(kl_emu_mask mask, T var, unsigned int delta, int width = KL_EMU_W) {
    return kl_emu::from_bits<T>(kl_emu_warp(KL_EMU_W_SHFL_DOWN, mask, kl_emu::to_bits(var), (int)delta, width));
}
template <typename T>
static inline T __shfl_xor_sync(kl_emu_mask mask, T var, int laneMask, int width = KL_EMU_W) {
    return kl_emu::from_bits<T>(kl_emu_warp(KL_EMU_W_SHFL_XOR, mask, kl_emu::to_bits(var), laneMask, width));
}
static inline kl_emu_mask __ballot_sync(kl_emu_mask mask, int pred) {
    return (kl_emu_mask)kl_emu_warp(KL_EMU_W_BALLOT, mask, pred != 0, 0, KL_EMU_W);
}
static inline int __any_sync(kl_emu_mask mask, int pred) { return (int)kl_emu_warp(KL_EMU_W_ANY, mask, pred != 0, 0, KL_EMU_W); }
static inline int __all_sync(kl_emu_mask mask, int pred) { return (int)kl_emu_warp(KL_EMU_W_ALL, mask, pred != 0, 0, KL_EMU_W); }
static inline int __uni_sync(kl_emu_mask mask, int pred) { return (int)kl_emu_warp(KL_EMU_W_UNI, mask, pred != 0, 0, KL_EMU_W); }
template <typename T>
static inline kl_emu_mask __match_any_sync(kl_emu_mask mask, T value) {
    return (kl_emu_mask)kl_emu_warp(KL_EMU_W_MATCH_ANY, mask, kl_emu::to_bits(value), 0, KL_EMU_W);
}
template <typename T>
static inline kl_emu_mask __match_all_sync(kl_emu_mask mask, T value, int *pred) {
    kl_emu_mask r = (kl_emu_mask)kl_emu_warp(KL_EMU_W_MATCH_ALL, mask, kl_emu::to_bits(value), 0, KL_EMU_W);
    *pred = r != 0;
    return r;
}
static inline unsigned __reduce_add_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_ADD, mask, v, 0, KL_EMU_W); }
static inline int __reduce_add_sync(kl_emu_mask mask, int v) { return (int)kl_emu_warp(KL_EMU_W_RED_ADD, mask, (unsigned)v, 0, KL_EMU_W); }
static inline unsigned __reduce_min_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_MIN_U, mask, v, 0, KL_EMU_W); }
static inline int __reduce_min_sync(kl_emu_mask mask, int v) { return (int)kl_emu_warp(KL_EMU_W_RED_MIN_S, mask, (unsigned)v, 0, KL_EMU_W); }
static inline unsigned __reduce_max_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_MAX_U, mask, v, 0, KL_EMU_W); }
static inline int __reduce_max_sync(kl_emu_mask mask, int v) { return (int)kl_emu_warp(KL_EMU_W_RED_MAX_S, mask, (unsigned)v, 0, KL_EMU_W); }
static inline unsigned __reduce_and_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_AND, mask, v, 0, KL_EMU_W); }
static inline unsigned __reduce_or_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_OR, mask, v, 0, KL_EMU_W); }
static inline unsigned __reduce_xor_sync(kl_emu_mask mask, unsigned v) { return (unsigned)kl_emu_warp(KL_EMU_W_RED_XOR, mask, v, 0, KL_EMU_W); }
#undef KL_EMU_W

// ---------------------------------------------------------------------------------------------
// Atomics: device-wide (and system-wide: every emulated device shares the host's memory).
namespace kl_emu {
template <typename T>
inline T atomic_add(T *p, T v) { tick(); return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <typename F, typename U>
inline F atomic_float_op(F *p, F v, F (*op)(F, F)) {
    static_assert(sizeof(F) == sizeof(U), "float atomics work on same-sized integers");
    tick();
    U *q = reinterpret_cast<U *>(p);
    U old = __atomic_load_n(q, __ATOMIC_SEQ_CST), assumed;
    do {
        assumed = old;
        F f;
        std::memcpy(&f, &assumed, sizeof f);
        F r = op(f, v);
        U nv;
        std::memcpy(&nv, &r, sizeof nv);
        if (__atomic_compare_exchange_n(q, &old, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
    } while (true);
    F out;
    std::memcpy(&out, &assumed, sizeof out);
    return out;
}
template <typename F> inline F add_op(F a, F b) { return a + b; }
} // namespace kl_emu

static inline int atomicAdd(int *p, int v) { return kl_emu::atomic_add(p, v); }
static inline unsigned int atomicAdd(unsigned int *p, unsigned int v) { return kl_emu::atomic_add(p, v); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { return kl_emu::atomic_add(p, v); }
static inline float atomicAdd(float *p, float v) { return kl_emu::atomic_float_op<float, uint32_t>(p, v, kl_emu::add_op<float>); }
static inline double atomicAdd(double *p, double v) { return kl_emu::atomic_float_op<double, uint64_t>(p, v, kl_emu::add_op<double>); }
static inline int atomicSub(int *p, int v) { kl_emu::tick(); return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned int atomicSub(unsigned int *p, unsigned int v) { kl_emu::tick(); return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }

#define KL_EMU_ATOMIC_EXCH(T)                                                                        \
    static inline T atomicExch(T *p, T v) { kl_emu::tick(); return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
KL_EMU_ATOMIC_EXCH(int)
KL_EMU_ATOMIC_EXCH(unsigned int)
KL_EMU_ATOMIC_EXCH(unsigned long long)
#undef KL_EMU_ATOMIC_EXCH
static inline float atomicExch(float *p, float v) {
    kl_emu::tick();
    uint32_t b;
    std::memcpy(&b, &v, 4);
    uint32_t o = __atomic_exchange_n(reinterpret_cast<uint32_t *>(p), b, __ATOMIC_SEQ_CST);
    float r;
    std::memcpy(&r, &o, 4);
    return r;
}

#define KL_EMU_ATOMIC_CAS(T)                                                                          \
    static inline T atomicCAS(T *p, T compare, T val) {                                                \
        kl_emu::tick();                                                                                \
        __atomic_compare_exchange_n(p, &compare, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);      \
        return compare;                                                                                \
    }
KL_EMU_ATOMIC_CAS(int)
KL_EMU_ATOMIC_CAS(unsigned int)
KL_EMU_ATOMIC_CAS(unsigned long long)
KL_EMU_ATOMIC_CAS(unsigned short)
#undef KL_EMU_ATOMIC_CAS

#define KL_EMU_ATOMIC_MINMAX(T)                                                                        \
    static inline T atomicMin(T *p, T v) {                                                              \
        kl_emu::tick();                                                                                 \
        T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                   \
        while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} \
        return old;                                                                                     \
    }                                                                                                   \
    static inline T atomicMax(T *p, T v) {                                                              \
        kl_emu::tick();                                                                                 \
        T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                   \
        while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} \
        return old;                                                                                     \
    }
KL_EMU_ATOMIC_MINMAX(int)
KL_EMU_ATOMIC_MINMAX(unsigned int)
KL_EMU_ATOMIC_MINMAX(long long)
KL_EMU_ATOMIC_MINMAX(unsigned long long)
#undef KL_EMU_ATOMIC_MINMAX

#define KL_EMU_ATOMIC_BITS(T)                                                                                        \
    static inline T atomicAnd(T *p, T v) { kl_emu::tick(); return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }      \
    static inline T atomicOr(T *p, T v) { kl_emu::tick(); return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }        \
    static inline T atomicXor(T *p, T v) { kl_emu::tick(); return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
KL_EMU_ATOMIC_BITS(int)
KL_EMU_ATOMIC_BITS(unsigned int)
KL_EMU_ATOMIC_BITS(unsigned long long)
#undef KL_EMU_ATOMIC_BITS

static inline unsigned int atomicInc(unsigned int *p, unsigned int limit) {
    kl_emu::tick();
    unsigned int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1u, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline unsigned int atomicDec(unsigned int *p, unsigned int limit) {
    kl_emu::tick();
    unsigned int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(p, &old, (old == 0u || old > limit) ? limit : old - 1u, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}

// Scoped variants: every emulated scope is the whole process.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicSub_system atomicSub
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicMin_block atomicMin
#define atomicMin_system atomicMin
#define atomicMax_block atomicMax
#define atomicMax_system atomicMax
#define atomicAnd_block atomicAnd
#define atomicAnd_system atomicAnd
#define atomicOr_block atomicOr
#define atomicOr_system atomicOr
#define atomicXor_block atomicXor
#define atomicXor_system atomicXor
#define atomicInc_block atomicInc
#define atomicInc_system atomicInc
#define atomicDec_block atomicDec
#define atomicDec_system atomicDec

// ---------------------------------------------------------------------------------------------
// Loads and stores with cache hints: plain accesses here.
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldca(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }
template <typename T> static inline T __ldlu(const T *p) { return *p; }
template <typename T> static inline T __ldcv(const T *p) { return *(const volatile T *)p; }
template <typename T> static inline void __stwb(T *p, T v) { *p = v; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
template <typename T> static inline void __stwt(T *p, T v) { *p = v; }

// ---------------------------------------------------------------------------------------------
// Math: the C library's float functions already exist (sqrtf, expf, fmaf...); these are CUDA's
// additions and intrinsics. Fast-math intrinsics (__expf...) are computed exactly here.
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }
static inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
static inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
static inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
static inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
static inline void sincospif(float x, float *s, float *c) { *s = sinpif(x); *c = cospif(x); }
static inline float fdividef(float a, float b) { return a / b; }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
// The C library declares these names (without exporting them): define them to match.
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return powf(10.0f, x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) noexcept { *s = sinf(x); *c = cosf(x); }
inline float __powf(float a, float b) noexcept { return powf(a, b); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fmaf_rz(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double x) { return 1.0 / x; }
static inline double __dsqrt_rn(double x) { return sqrt(x); }
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float saturate(float x) { return __saturatef(x); }

// Bit casts and conversions.
static inline int __float_as_int(float x) { int r; std::memcpy(&r, &x, 4); return r; }
static inline unsigned int __float_as_uint(float x) { unsigned int r; std::memcpy(&r, &x, 4); return r; }
static inline float __int_as_float(int x) { float r; std::memcpy(&r, &x, 4); return r; }
static inline float __uint_as_float(unsigned int x) { float r; std::memcpy(&r, &x, 4); return r; }
static inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
static inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)(unsigned int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo));
}
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)truncf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
static inline unsigned int __float2uint_rz(float x) { return (unsigned int)truncf(x); }
static inline unsigned int __float2uint_ru(float x) { return (unsigned int)ceilf(x); }
static inline unsigned int __float2uint_rd(float x) { return (unsigned int)floorf(x); }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline long long __float2ll_rz(float x) { return (long long)truncf(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __double2int_rz(double x) { return (int)trunc(x); }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline float __double2float_rn(double x) { return (float)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned int x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }

// Integer intrinsics.
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned int)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
static inline int __mul24(int a, int b) { return (int)(((long long)(a << 8) >> 8) * ((long long)(b << 8) >> 8)); }
static inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
static inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
static inline unsigned int __uhadd(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a + b) >> 1); }
static inline unsigned int __urhadd(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a + b + 1) >> 1); }
static inline unsigned int __sad(int a, int b, unsigned int c) { return c + (unsigned int)(a > b ? a - b : b - a); }
static inline unsigned int __usad(unsigned int a, unsigned int b, unsigned int c) { return c + (a > b ? a - b : b - a); }
static inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (s & 31)) >> 32);
}
static inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (s < 32 ? s : 32)) >> 32);
}
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (s & 31));
}
static inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (s < 32 ? s : 32));
}

// CUDA's global min and max overloads.
#define KL_EMU_MINMAX(T)                                          \
    static inline T min(T a, T b) { return a < b ? a : b; }      \
    static inline T max(T a, T b) { return a > b ? a : b; }
KL_EMU_MINMAX(int)
KL_EMU_MINMAX(unsigned int)
KL_EMU_MINMAX(long)
KL_EMU_MINMAX(unsigned long)
KL_EMU_MINMAX(long long)
KL_EMU_MINMAX(unsigned long long)
#undef KL_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin((double)a, b); }
static inline double max(float a, double b) { return fmax((double)a, b); }
static inline double min(double a, float b) { return fmin(a, (double)b); }
static inline double max(double a, float b) { return fmax(a, (double)b); }
static inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline long long llmin(long long a, long long b) { return a < b ? a : b; }
static inline long long llmax(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

#include "kl_emu_fp16.h"
#include "kl_emu_wmma.h"
#include "kl_emu_ptx.h"

#endif // KL_EMU_RUNTIME

// ---------------------------------------------------------------------------------------------
// The registry's helpers (used by the generated file that the toolchain compiles with a kernel).
namespace kl_emu {
template <typename F, F f>
struct entry_of;
template <typename... P, void (*f)(P...)>
struct entry_of<void (*)(P...), f> {
    template <size_t... I>
    static void call_impl(void **a, std::index_sequence<I...>) {
        f(*static_cast<typename std::remove_cv<P>::type *>(a[I])...);
    }
    static void call(void **a) {
        (void)a;
        call_impl(a, std::index_sequence_for<P...>{});
    }
    static constexpr int nparams = (int)sizeof...(P);
    static constexpr size_t sizes[sizeof...(P) + 1] = {sizeof(P)..., 0};
};
} // namespace kl_emu

// KL_EMU_ENTRY(name, types, ntypes, max_threads) is one row of the registry.
#define KL_EMU_ENTRY(name, types, ntypes, max_threads)                                             \
    {#name, &kl_emu::entry_of<decltype(&name), &name>::call,                                       \
     kl_emu::entry_of<decltype(&name), &name>::nparams, kl_emu::entry_of<decltype(&name), &name>::sizes, \
     types, ntypes, max_threads, KL_EMU_WARP_SIZE}

#endif // KL_EMU_H
