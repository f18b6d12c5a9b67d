// kl_device_check.h — CUDA's device API in declarations, for the emulator's device-code check.
//
// On the emulator a kernel file is compiled as host C++, which accepts what nvcc rejects in a
// kernel (std::vector, a call to a host function, exceptions). So `labrun grade` on the emulator
// also compiles a submission as CUDA device code: clang++ in CUDA mode, device side, syntax only
// (toolchain.DeviceCheck). Clang needs no CUDA install for that, but without one it has no
// cuda_runtime.h, cuda_fp16.h or mma.h: this header, force-included (-include), declares what the
// course's kernels may use instead — the same surface the emulator implements (emu/kl_emu.h) —
// and kl.cuh skips CUDA's headers when KL_DEVICE_CHECK is set. Declarations only: nothing here is
// compiled into a kernel, so a declaration needs no body, and a kernel that calls something this
// header does not declare fails the check as it would fail nvcc.
//
// Keep it to declarations of CUDA's documented API. The threadIdx/blockIdx/blockDim/gridDim
// variables and __syncthreads are clang's own (its builtin-variables header and NVPTX builtins).
#pragma once
#if !defined(__clang__) || !defined(__CUDA__)
#error "kl_device_check.h is for clang++ -x cuda (the emulator's device-code check)"
#endif

#define KL_DEVICE_CHECK 1
#define __CUDACC__ 1
#define CUDART_VERSION 12000

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define __maxnreg__(n)

#include <__clang_cuda_builtin_vars.h>
#include <stddef.h>
#include <stdint.h>
// The C library's host declarations first, as clang's own CUDA wrapper does: the device versions
// declared at the end of this header overload them.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Everything declared from here on is __host__ __device__, as CUDA's own headers declare it.
#pragma clang force_cuda_host_device begin

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};

#define KL_DC_VEC(T, N, A2, A4)                                                                    \
    struct N##1 { T x; };                                                                          \
    struct __attribute__((aligned(A2))) N##2 { T x, y; };                                          \
    struct N##3 { T x, y, z; };                                                                    \
    struct __attribute__((aligned(A4))) N##4 { T x, y, z, w; };                                    \
    N##1 make_##N##1(T x);                                                                         \
    N##2 make_##N##2(T x, T y);                                                                    \
    N##3 make_##N##3(T x, T y, T z);                                                               \
    N##4 make_##N##4(T x, T y, T z, T w);
KL_DC_VEC(signed char, char, 2, 4)
KL_DC_VEC(unsigned char, uchar, 2, 4)
KL_DC_VEC(short, short, 4, 8)
KL_DC_VEC(unsigned short, ushort, 4, 8)
KL_DC_VEC(int, int, 8, 16)
KL_DC_VEC(unsigned int, uint, 8, 16)
KL_DC_VEC(long, long, 16, 16)
KL_DC_VEC(unsigned long, ulong, 16, 16)
KL_DC_VEC(long long, longlong, 16, 16)
KL_DC_VEC(unsigned long long, ulonglong, 16, 16)
KL_DC_VEC(float, float, 8, 16)
KL_DC_VEC(double, double, 16, 16)
#undef KL_DC_VEC

// Barriers, fences, votes, shuffles, timers.
int __syncthreads_count(int);
int __syncthreads_and(int);
int __syncthreads_or(int);
void __syncwarp(unsigned mask = 0xffffffffu);
unsigned __activemask();
void __threadfence_block();
void __threadfence();
void __threadfence_system();
void __nanosleep(unsigned);
long long clock64();
long long clock();
[[noreturn]] void __trap();
void __brkpt();
unsigned __ballot_sync(unsigned mask, int pred);
int __any_sync(unsigned mask, int pred);
int __all_sync(unsigned mask, int pred);
int __uni_sync(unsigned mask, int pred);
template <typename T> T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32);
template <typename T> T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = 32);
template <typename T> T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = 32);
template <typename T> T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32);
template <typename T> unsigned __match_any_sync(unsigned mask, T value);
template <typename T> unsigned __match_all_sync(unsigned mask, T value, int* pred);
unsigned __reduce_add_sync(unsigned mask, unsigned v);
int __reduce_add_sync(unsigned mask, int v);
unsigned __reduce_min_sync(unsigned mask, unsigned v);
int __reduce_min_sync(unsigned mask, int v);
unsigned __reduce_max_sync(unsigned mask, unsigned v);
int __reduce_max_sync(unsigned mask, int v);
unsigned __reduce_and_sync(unsigned mask, unsigned v);
unsigned __reduce_or_sync(unsigned mask, unsigned v);
unsigned __reduce_xor_sync(unsigned mask, unsigned v);

// Atomics (with their _block and _system scopes).
#define KL_DC_ATOMIC(name, T) T name(T* p, T v); T name##_block(T* p, T v); T name##_system(T* p, T v);
#define KL_DC_ATOMIC_INT(name) KL_DC_ATOMIC(name, int) KL_DC_ATOMIC(name, unsigned int) \
    KL_DC_ATOMIC(name, unsigned long long)
KL_DC_ATOMIC_INT(atomicAdd)
KL_DC_ATOMIC(atomicAdd, float)
KL_DC_ATOMIC(atomicAdd, double)
KL_DC_ATOMIC(atomicSub, int)
KL_DC_ATOMIC(atomicSub, unsigned int)
KL_DC_ATOMIC_INT(atomicExch)
KL_DC_ATOMIC(atomicExch, float)
KL_DC_ATOMIC_INT(atomicMin)
KL_DC_ATOMIC(atomicMin, long long)
KL_DC_ATOMIC_INT(atomicMax)
KL_DC_ATOMIC(atomicMax, long long)
KL_DC_ATOMIC_INT(atomicAnd)
KL_DC_ATOMIC_INT(atomicOr)
KL_DC_ATOMIC_INT(atomicXor)
KL_DC_ATOMIC(atomicInc, unsigned int)
KL_DC_ATOMIC(atomicDec, unsigned int)
#undef KL_DC_ATOMIC_INT
#undef KL_DC_ATOMIC
#define KL_DC_CAS(T) T atomicCAS(T* p, T cmp, T v); T atomicCAS_block(T* p, T cmp, T v); \
    T atomicCAS_system(T* p, T cmp, T v);
KL_DC_CAS(int)
KL_DC_CAS(unsigned int)
KL_DC_CAS(unsigned long long)
KL_DC_CAS(unsigned short)
#undef KL_DC_CAS

// Cache-hinted loads and stores.
template <typename T> T __ldg(const T* p);
template <typename T> T __ldca(const T* p);
template <typename T> T __ldcg(const T* p);
template <typename T> T __ldcs(const T* p);
template <typename T> T __ldlu(const T* p);
template <typename T> T __ldcv(const T* p);
template <typename T> void __stwb(T* p, T v);
template <typename T> void __stcg(T* p, T v);
template <typename T> void __stcs(T* p, T v);
template <typename T> void __stwt(T* p, T v);

// Half and bfloat16 (cuda_fp16.h, cuda_bf16.h).
struct __align__(2) __half {
    unsigned short __x;
    __half() = default;
    __half(float f);
    __half(double d);
    __half(int i);
    operator float() const;
};
struct __align__(4) __half2 {
    __half x, y;
    __half2() = default;
    __half2(__half a, __half b) : x(a), y(b) {}
};
struct __align__(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f);
    __nv_bfloat16(double d);
    __nv_bfloat16(int i);
    operator float() const;
};
struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
};
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
__half __float2half(float);
__half __float2half_rn(float);
__half __float2half_rz(float);
__half __float2half_rd(float);
__half __float2half_ru(float);
float __half2float(__half);
__half __double2half(double);
__half __int2half_rn(int);
__half __uint2half_rn(unsigned int);
__half __short2half_rn(short);
int __half2int_rn(__half);
int __half2int_rz(__half);
unsigned short __half_as_ushort(__half);
short __half_as_short(__half);
__half __ushort_as_half(unsigned short);
__half __short_as_half(short);
__half2 __float2half2_rn(float);
__half2 __floats2half2_rn(float, float);
__half2 __float22half2_rn(float2);
float2 __half22float2(__half2);
float __low2float(__half2);
float __high2float(__half2);
__half __low2half(__half2);
__half __high2half(__half2);
__half2 __halves2half2(__half, __half);
__half2 __half2half2(__half);
__nv_bfloat16 __float2bfloat16(float);
__nv_bfloat16 __float2bfloat16_rn(float);
__nv_bfloat16 __float2bfloat16_rz(float);
__nv_bfloat16 __float2bfloat16_rd(float);
__nv_bfloat16 __float2bfloat16_ru(float);
float __bfloat162float(__nv_bfloat16);
__nv_bfloat16 __double2bfloat16(double);
__nv_bfloat16 __int2bfloat16_rn(int);
unsigned short __bfloat16_as_ushort(__nv_bfloat16);
short __bfloat16_as_short(__nv_bfloat16);
__nv_bfloat16 __ushort_as_bfloat16(unsigned short);
__nv_bfloat16 __short_as_bfloat16(short);
__nv_bfloat162 __float2bfloat162_rn(float);
__nv_bfloat162 __floats2bfloat162_rn(float, float);
__nv_bfloat162 __float22bfloat162_rn(float2);
float2 __bfloat1622float2(__nv_bfloat162);
float __low2float(__nv_bfloat162);
float __high2float(__nv_bfloat162);
__nv_bfloat162 __halves2bfloat162(__nv_bfloat16, __nv_bfloat16);
#define KL_DC_H(T)                                                                                 \
    T __hadd(T, T); T __hsub(T, T); T __hmul(T, T); T __hdiv(T, T); T __hmin(T, T); T __hmax(T, T); \
    T __hfma(T, T, T); T __hneg(T); T __habs(T); bool __heq(T, T); bool __hne(T, T);                \
    bool __hlt(T, T); bool __hle(T, T); bool __hgt(T, T); bool __hge(T, T); bool __hisnan(T);       \
    int __hisinf(T); T hsqrt(T); T hrsqrt(T); T hexp(T); T hlog(T); T hrcp(T);                     \
    T operator+(const T&, const T&); T operator-(const T&, const T&); T operator*(const T&, const T&); \
    T operator/(const T&, const T&); T operator-(const T&); T operator+(const T&);                 \
    T& operator+=(T&, const T&); T& operator-=(T&, const T&); T& operator*=(T&, const T&);         \
    T& operator/=(T&, const T&); bool operator==(const T&, const T&); bool operator!=(const T&, const T&); \
    bool operator<(const T&, const T&); bool operator<=(const T&, const T&);                       \
    bool operator>(const T&, const T&); bool operator>=(const T&, const T&);
KL_DC_H(__half)
KL_DC_H(__nv_bfloat16)
#undef KL_DC_H
#define KL_DC_H2(T)                                                                                \
    T __hadd2(T, T); T __hsub2(T, T); T __hmul2(T, T); T __h2div(T, T); T __hfma2(T, T, T);        \
    T __hneg2(T); T __habs2(T); T __hmin2(T, T); T __hmax2(T, T);                                  \
    T operator+(const T&, const T&); T operator-(const T&, const T&); T operator*(const T&, const T&); \
    T operator/(const T&, const T&); T& operator+=(T&, const T&); T& operator*=(T&, const T&);
KL_DC_H2(__half2)
KL_DC_H2(__nv_bfloat162)
#undef KL_DC_H2
__half atomicAdd(__half*, __half);
__half2 atomicAdd(__half2*, __half2);
__nv_bfloat16 atomicAdd(__nv_bfloat16*, __nv_bfloat16);
__nv_bfloat162 atomicAdd(__nv_bfloat162*, __nv_bfloat162);

// WMMA (mma.h): fragments and their operations, m16n16k16 and friends.
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}
// The element type a fragment stores: a tf32 fragment holds floats.
template <typename T> struct storage_of { typedef T type; };
template <> struct storage_of<precision::tf32> { typedef float type; };
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    enum { num_elements = (M * N + 31) / 32 };
    typedef typename storage_of<T>::type element_type;
    element_type x[(M * N + 31) / 32 > 0 ? (M * N + 31) / 32 : 1];
};
template <typename Use, int M, int N, int K, typename T, typename Layout, typename U>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const U& v);
template <typename Use, int M, int N, int K, typename T, typename Layout, typename U>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const U* p, unsigned ldm);
template <int M, int N, int K, typename T, typename U>
void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const U* p, unsigned ldm, layout_t layout);
template <int M, int N, int K, typename T, typename U>
void store_matrix_sync(U* p, const fragment<accumulator, M, N, K, T, void>& f, unsigned ldm, layout_t layout);
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC, typename TD>
void mma_sync(fragment<accumulator, M, N, K, TD, void>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC, void>& c);
float __float_to_tf32(float);
}  // namespace wmma
}  // namespace nvcuda

#pragma clang force_cuda_host_device end

// The C library's functions (math, memory, printf) exist on the host too: their device versions
// are declared __device__ only, overloads of the host ones that the system's headers declare.
// Math: the C functions in float and double, CUDA's extras and intrinsics.
#define KL_DC_M1(n) __device__ float n##f(float); __device__ double n(double);
#define KL_DC_M2(n) __device__ float n##f(float, float); __device__ double n(double, double);
KL_DC_M1(sqrt) KL_DC_M1(rsqrt) KL_DC_M1(cbrt) KL_DC_M1(rcbrt) KL_DC_M1(exp) KL_DC_M1(exp2)
KL_DC_M1(exp10) KL_DC_M1(expm1) KL_DC_M1(log) KL_DC_M1(log2) KL_DC_M1(log10) KL_DC_M1(log1p)
KL_DC_M1(sin) KL_DC_M1(cos) KL_DC_M1(tan) KL_DC_M1(asin) KL_DC_M1(acos) KL_DC_M1(atan)
KL_DC_M1(sinh) KL_DC_M1(cosh) KL_DC_M1(tanh) KL_DC_M1(asinh) KL_DC_M1(acosh) KL_DC_M1(atanh)
KL_DC_M1(sinpi) KL_DC_M1(cospi) KL_DC_M1(erf) KL_DC_M1(erfc) KL_DC_M1(erfinv) KL_DC_M1(normcdf)
KL_DC_M1(lgamma) KL_DC_M1(tgamma) KL_DC_M1(fabs) KL_DC_M1(floor) KL_DC_M1(ceil) KL_DC_M1(round)
KL_DC_M1(trunc) KL_DC_M1(rint) KL_DC_M1(nearbyint) KL_DC_M1(logb)
KL_DC_M2(pow) KL_DC_M2(atan2) KL_DC_M2(fmin) KL_DC_M2(fmax) KL_DC_M2(fmod) KL_DC_M2(remainder)
KL_DC_M2(hypot) KL_DC_M2(copysign) KL_DC_M2(fdim) KL_DC_M2(nextafter)
#undef KL_DC_M1
#undef KL_DC_M2
__device__ float fmaf(float, float, float);
__device__ double fma(double, double, double);
__device__ float ldexpf(float, int);
__device__ double ldexp(double, int);
__device__ float frexpf(float, int*);
__device__ double frexp(double, int*);
__device__ float modff(float, float*);
__device__ double modf(double, double*);
__device__ long lroundf(float);
__device__ long lround(double);
__device__ long long llroundf(float);
__device__ long long llround(double);
__device__ int ilogbf(float);
__device__ int ilogb(double);
__device__ void sincosf(float, float*, float*);
__device__ void sincos(double, double*, double*);
__device__ void sincospif(float, float*, float*);
__device__ float fdividef(float, float);
__device__ float saturate(float);
__device__ int isnan(float);
__device__ int isnan(double);
__device__ int isinf(float);
__device__ int isinf(double);
__device__ int isfinite(float);
__device__ int isfinite(double);
__device__ int signbit(float);
__device__ int signbit(double);
__device__ int abs(int);
__device__ long labs(long);
__device__ long long llabs(long long);
__device__ int min(int, int);
__device__ int max(int, int);
__device__ unsigned int min(unsigned int, unsigned int);
__device__ unsigned int max(unsigned int, unsigned int);
__device__ long long min(long long, long long);
__device__ long long max(long long, long long);
__device__ unsigned long long min(unsigned long long, unsigned long long);
__device__ unsigned long long max(unsigned long long, unsigned long long);
__device__ float min(float, float);
__device__ float max(float, float);
__device__ double min(double, double);
__device__ double max(double, double);
__device__ unsigned int umin(unsigned int, unsigned int);
__device__ unsigned int umax(unsigned int, unsigned int);
__device__ long long llmin(long long, long long);
__device__ long long llmax(long long, long long);
__device__ unsigned long long ullmin(unsigned long long, unsigned long long);
__device__ unsigned long long ullmax(unsigned long long, unsigned long long);
__device__ float __expf(float);
__device__ float __exp10f(float);
__device__ float __logf(float);
__device__ float __log2f(float);
__device__ float __log10f(float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float __tanf(float);
__device__ void __sincosf(float, float*, float*);
__device__ float __powf(float, float);
__device__ float __fdividef(float, float);
__device__ float __fdiv_rn(float, float);
__device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float);
__device__ float __frsqrt_rn(float);
__device__ float __fmaf_rn(float, float, float);
__device__ float __fmaf_rz(float, float, float);
__device__ float __fadd_rn(float, float);
__device__ float __fsub_rn(float, float);
__device__ float __fmul_rn(float, float);
__device__ double __fma_rn(double, double, double);
__device__ double __dadd_rn(double, double);
__device__ double __dsub_rn(double, double);
__device__ double __dmul_rn(double, double);
__device__ double __ddiv_rn(double, double);
__device__ double __drcp_rn(double);
__device__ double __dsqrt_rn(double);
__device__ float __saturatef(float);
__device__ int __float_as_int(float);
__device__ unsigned int __float_as_uint(float);
__device__ float __int_as_float(int);
__device__ float __uint_as_float(unsigned int);
__device__ long long __double_as_longlong(double);
__device__ double __longlong_as_double(long long);
__device__ int __double2hiint(double);
__device__ int __double2loint(double);
__device__ double __hiloint2double(int, int);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ int __float2int_ru(float);
__device__ int __float2int_rd(float);
__device__ unsigned int __float2uint_rn(float);
__device__ unsigned int __float2uint_rz(float);
__device__ unsigned int __float2uint_ru(float);
__device__ unsigned int __float2uint_rd(float);
__device__ long long __float2ll_rn(float);
__device__ long long __float2ll_rz(float);
__device__ int __double2int_rn(double);
__device__ int __double2int_rz(double);
__device__ long long __double2ll_rn(double);
__device__ float __double2float_rn(double);
__device__ float __int2float_rn(int);
__device__ float __uint2float_rn(unsigned int);
__device__ float __ll2float_rn(long long);
__device__ double __int2double_rn(int);
__device__ int __popc(unsigned int);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __clzll(long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned int __brev(unsigned int);
__device__ unsigned long long __brevll(unsigned long long);
__device__ unsigned int __byte_perm(unsigned int, unsigned int, unsigned int);
__device__ int __mul24(int, int);
__device__ unsigned int __umul24(unsigned int, unsigned int);
__device__ int __mulhi(int, int);
__device__ unsigned int __umulhi(unsigned int, unsigned int);
__device__ long long __mul64hi(long long, long long);
__device__ unsigned long long __umul64hi(unsigned long long, unsigned long long);
__device__ int __hadd(int, int);
__device__ int __rhadd(int, int);
__device__ unsigned int __uhadd(unsigned int, unsigned int);
__device__ unsigned int __urhadd(unsigned int, unsigned int);
__device__ unsigned int __sad(int, int, unsigned int);
__device__ unsigned int __usad(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_l(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_lc(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_r(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_rc(unsigned int, unsigned int, unsigned int);

// Device-side memory functions and address conversions.
extern "C" __device__ void* malloc(size_t);
extern "C" __device__ void free(void*);
extern "C" __device__ void* memcpy(void*, const void*, size_t);
extern "C" __device__ void* memset(void*, int, size_t);
__device__ size_t __cvta_generic_to_shared(const void*);
__device__ size_t __cvta_generic_to_global(const void*);
__device__ unsigned int __isShared(const void*);
__device__ unsigned int __isGlobal(const void*);

// printf and assert in device code.
extern "C" __device__ int printf(const char* fmt, ...);
extern "C" __device__ void __assertfail(const char* msg, const char* file, unsigned line, const char* fn, size_t size);
#undef assert
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))
