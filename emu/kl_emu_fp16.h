// kl_emu_fp16.h — __half and __nv_bfloat16 for the CPU emulator (included by kl_emu.h).
//
// The storage is the IEEE binary16 / bfloat16 bit pattern, as on a GPU, so buffers of them are
// exchanged with Go as uint16. Conversions round to nearest even unless the name says otherwise;
// arithmetic is done in float and rounded once, which is exact for + - * / (float has more than
// twice the bits). A NaN converts to the canonical 0x7fff, as CUDA does.
#pragma once

namespace kl_emu {

// float -> binary16 with rounding mode: 0 nearest even, 1 toward zero, 2 down, 3 up.
inline unsigned short f2h(float f, int mode = 0) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t a = x & 0x7fffffffu;
    const bool neg = sign != 0;
    if (a > 0x7f800000u) return 0x7fffu; // NaN
    // Whether a positive magnitude that is not exact rounds away from zero.
    auto away = [&](uint32_t rem, uint32_t half, uint32_t lsb) -> bool {
        if (rem == 0) return false;
        switch (mode) {
        case 0: return rem > half || (rem == half && (lsb & 1u));
        case 1: return false;
        case 2: return neg;
        default: return !neg;
        }
    };
    const unsigned short maxfin = 0x7bffu, inf = 0x7c00u;
    if (a == 0x7f800000u) return (unsigned short)(sign | inf);
    int e = (int)(a >> 23);
    if (e >= 143) { // |f| >= 65536: overflow
        bool toinf = mode == 0 || (mode == 3 && !neg) || (mode == 2 && neg);
        return (unsigned short)(sign | (toinf ? inf : maxfin));
    }
    if (e >= 113) { // normal half
        uint32_t h = ((uint32_t)(e - 112) << 10) | ((a >> 13) & 0x3ffu);
        uint32_t rem = a & 0x1fffu;
        if (away(rem, 0x1000u, h)) h++;
        if (h >= inf) {
            bool toinf = mode == 0 || (mode == 3 && !neg) || (mode == 2 && neg);
            h = toinf ? inf : maxfin;
        }
        return (unsigned short)(sign | h);
    }
    // subnormal half (or zero)
    if (e < 102) { // below 2^-25: rounds to zero or to the smallest subnormal
        uint32_t h = (a != 0 && away(1, 2, 0) && mode != 0) ? 1u : 0u;
        return (unsigned short)(sign | h);
    }
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - e; // 14..24
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    if (away(rem, 1u << (shift - 1), h)) h++;
    return (unsigned short)(sign | h);
}

inline float h2f(unsigned short h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; // m * 2^-24, exact
        return sign ? -v : v;
    } else {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// float -> bfloat16: 0 nearest even, 1 toward zero, 2 down, 3 up.
inline unsigned short f2bf(float f, int mode = 0) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu; // NaN
    const bool neg = (x >> 31) != 0;
    uint32_t hi = x >> 16, rem = x & 0xffffu;
    if ((x & 0x7fffffffu) == 0x7f800000u) return (unsigned short)hi;
    bool up = false;
    if (rem != 0) {
        switch (mode) {
        case 0: up = rem > 0x8000u || (rem == 0x8000u && (hi & 1u)); break;
        case 1: up = false; break;
        case 2: up = neg; break;
        default: up = !neg; break;
        }
    }
    return (unsigned short)(hi + (up ? 1u : 0u));
}

inline float bf2f(unsigned short b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

} // namespace kl_emu

// ---------------------------------------------------------------------------------------------
// __half
struct __half_raw {
    unsigned short x;
};

struct __align__(2) __half {
    unsigned short __x;
    __half() = default;
    __half(const __half_raw &r) : __x(r.x) {}
    __half(float f) : __x(kl_emu::f2h(f)) {}
    __half(double d) : __x(kl_emu::f2h((float)d)) {}
    __half(int v) : __x(kl_emu::f2h((float)v)) {}
    __half(unsigned int v) : __x(kl_emu::f2h((float)v)) {}
    __half(long long v) : __x(kl_emu::f2h((float)v)) {}
    __half(unsigned long long v) : __x(kl_emu::f2h((float)v)) {}
    __half(short v) : __x(kl_emu::f2h((float)v)) {}
    __half(unsigned short v) : __x(kl_emu::f2h((float)v)) {}
    operator float() const { return kl_emu::h2f(__x); }
    operator __half_raw() const { return __half_raw{__x}; }
    __half &operator=(float f) { __x = kl_emu::f2h(f); return *this; }
    __half &operator=(const __half_raw &r) { __x = r.x; return *this; }
};
typedef __half half;

struct __align__(4) __half2 {
    __half x, y;
    __half2() = default;
    __half2(const __half &a, const __half &b) : x(a), y(b) {}
};
typedef __half2 half2;

static inline __half kl_emu_mkh(unsigned short b) { __half h; h.__x = b; return h; }

static inline __half __float2half(float f) { return kl_emu_mkh(kl_emu::f2h(f, 0)); }
static inline __half __float2half_rn(float f) { return kl_emu_mkh(kl_emu::f2h(f, 0)); }
static inline __half __float2half_rz(float f) { return kl_emu_mkh(kl_emu::f2h(f, 1)); }
static inline __half __float2half_rd(float f) { return kl_emu_mkh(kl_emu::f2h(f, 2)); }
static inline __half __float2half_ru(float f) { return kl_emu_mkh(kl_emu::f2h(f, 3)); }
static inline float __half2float(__half h) { return kl_emu::h2f(h.__x); }
static inline __half __double2half(double d) { return __float2half((float)d); }
static inline __half __int2half_rn(int i) { return __float2half((float)i); }
static inline __half __uint2half_rn(unsigned int i) { return __float2half((float)i); }
static inline __half __short2half_rn(short i) { return __float2half((float)i); }
static inline int __half2int_rn(__half h) { return (int)nearbyintf(__half2float(h)); }
static inline int __half2int_rz(__half h) { return (int)truncf(__half2float(h)); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short b) { return kl_emu_mkh(b); }
static inline __half __short_as_half(short b) { return kl_emu_mkh((unsigned short)b); }
static inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
static inline __half2 __float22half2_rn(float2 v) { return __floats2half2_rn(v.x, v.y); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
static inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }

#define KL_EMU_H1(name, expr) static inline __half name(__half a, __half b) { float x = __half2float(a), y = __half2float(b); return __float2half(expr); }
KL_EMU_H1(__hadd, x + y)
KL_EMU_H1(__hsub, x - y)
KL_EMU_H1(__hmul, x * y)
KL_EMU_H1(__hdiv, x / y)
KL_EMU_H1(__hmax, fmaxf(x, y))
KL_EMU_H1(__hmin, fminf(x, y))
#undef KL_EMU_H1
static inline __half __hfma(__half a, __half b, __half c) {
    return __float2half((float)((double)__half2float(a) * __half2float(b) + __half2float(c)));
}
static inline __half __hneg(__half a) { return kl_emu_mkh((unsigned short)(a.__x ^ 0x8000u)); }
static inline __half __habs(__half a) { return kl_emu_mkh((unsigned short)(a.__x & 0x7fffu)); }
static inline bool __heq(__half a, __half b) { return __half2float(a) == __half2float(b); }
static inline bool __hne(__half a, __half b) { return __half2float(a) != __half2float(b); }
static inline bool __hlt(__half a, __half b) { return __half2float(a) < __half2float(b); }
static inline bool __hle(__half a, __half b) { return __half2float(a) <= __half2float(b); }
static inline bool __hgt(__half a, __half b) { return __half2float(a) > __half2float(b); }
static inline bool __hge(__half a, __half b) { return __half2float(a) >= __half2float(b); }
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline int __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u ? ((a.__x & 0x8000u) ? -1 : 1) : 0; }
static inline __half hsqrt(__half a) { return __float2half(sqrtf(__half2float(a))); }
static inline __half hrsqrt(__half a) { return __float2half(1.0f / sqrtf(__half2float(a))); }
static inline __half hexp(__half a) { return __float2half(expf(__half2float(a))); }
static inline __half hlog(__half a) { return __float2half(logf(__half2float(a))); }
static inline __half hrcp(__half a) { return __float2half(1.0f / __half2float(a)); }
static inline __half __habs2_lo(__half a) { return __habs(a); }

static inline __half operator+(const __half &a, const __half &b) { return __hadd(a, b); }
static inline __half operator-(const __half &a, const __half &b) { return __hsub(a, b); }
static inline __half operator*(const __half &a, const __half &b) { return __hmul(a, b); }
static inline __half operator/(const __half &a, const __half &b) { return __hdiv(a, b); }
static inline __half operator-(const __half &a) { return __hneg(a); }
static inline __half operator+(const __half &a) { return a; }
static inline __half &operator+=(__half &a, const __half &b) { a = __hadd(a, b); return a; }
static inline __half &operator-=(__half &a, const __half &b) { a = __hsub(a, b); return a; }
static inline __half &operator*=(__half &a, const __half &b) { a = __hmul(a, b); return a; }
static inline __half &operator/=(__half &a, const __half &b) { a = __hdiv(a, b); return a; }
static inline bool operator==(const __half &a, const __half &b) { return __heq(a, b); }
static inline bool operator!=(const __half &a, const __half &b) { return __hne(a, b); }
static inline bool operator<(const __half &a, const __half &b) { return __hlt(a, b); }
static inline bool operator<=(const __half &a, const __half &b) { return __hle(a, b); }
static inline bool operator>(const __half &a, const __half &b) { return __hgt(a, b); }
static inline bool operator>=(const __half &a, const __half &b) { return __hge(a, b); }

static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
static inline __half2 __hsub2(__half2 a, __half2 b) { return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
static inline __half2 __h2div(__half2 a, __half2 b) { return __half2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }
static inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
static inline __half2 __hneg2(__half2 a) { return __half2(__hneg(a.x), __hneg(a.y)); }
static inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
static inline __half2 __hmax2(__half2 a, __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
static inline __half2 __hmin2(__half2 a, __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
static inline bool __hbeq2(__half2 a, __half2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); }
static inline __half2 operator+(const __half2 &a, const __half2 &b) { return __hadd2(a, b); }
static inline __half2 operator-(const __half2 &a, const __half2 &b) { return __hsub2(a, b); }
static inline __half2 operator*(const __half2 &a, const __half2 &b) { return __hmul2(a, b); }
static inline __half2 operator/(const __half2 &a, const __half2 &b) { return __h2div(a, b); }
static inline __half2 &operator+=(__half2 &a, const __half2 &b) { a = __hadd2(a, b); return a; }
static inline __half2 &operator*=(__half2 &a, const __half2 &b) { a = __hmul2(a, b); return a; }
static inline bool operator==(const __half2 &a, const __half2 &b) { return __hbeq2(a, b); }

// ---------------------------------------------------------------------------------------------
// __nv_bfloat16
struct __nv_bfloat16_raw {
    unsigned short x;
};

struct __align__(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(kl_emu::f2bf(f)) {}
    __nv_bfloat16(double d) : __x(kl_emu::f2bf((float)d)) {}
    __nv_bfloat16(int v) : __x(kl_emu::f2bf((float)v)) {}
    __nv_bfloat16(unsigned int v) : __x(kl_emu::f2bf((float)v)) {}
    __nv_bfloat16(long long v) : __x(kl_emu::f2bf((float)v)) {}
    __nv_bfloat16(unsigned long long v) : __x(kl_emu::f2bf((float)v)) {}
    __nv_bfloat16(short v) : __x(kl_emu::f2bf((float)v)) {}
    __nv_bfloat16(unsigned short v) : __x(kl_emu::f2bf((float)v)) {}
    operator float() const { return kl_emu::bf2f(__x); }
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    __nv_bfloat16 &operator=(float f) { __x = kl_emu::f2bf(f); return *this; }
    __nv_bfloat16 &operator=(const __nv_bfloat16_raw &r) { __x = r.x; return *this; }
};
typedef __nv_bfloat16 nv_bfloat16;

struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
};
typedef __nv_bfloat162 nv_bfloat162;

static inline __nv_bfloat16 kl_emu_mkbf(unsigned short b) { __nv_bfloat16 h; h.__x = b; return h; }

static inline __nv_bfloat16 __float2bfloat16(float f) { return kl_emu_mkbf(kl_emu::f2bf(f, 0)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return kl_emu_mkbf(kl_emu::f2bf(f, 0)); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f) { return kl_emu_mkbf(kl_emu::f2bf(f, 1)); }
static inline __nv_bfloat16 __float2bfloat16_rd(float f) { return kl_emu_mkbf(kl_emu::f2bf(f, 2)); }
static inline __nv_bfloat16 __float2bfloat16_ru(float f) { return kl_emu_mkbf(kl_emu::f2bf(f, 3)); }
static inline float __bfloat162float(__nv_bfloat16 h) { return kl_emu::bf2f(h.__x); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __float2bfloat16((float)d); }
static inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __float2bfloat16((float)i); }
static inline int __bfloat162int_rn(__nv_bfloat16 h) { return (int)nearbyintf(__bfloat162float(h)); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)truncf(__bfloat162float(h)); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return kl_emu_mkbf(b); }
static inline __nv_bfloat16 __short_as_bfloat16(short b) { return kl_emu_mkbf((unsigned short)b); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162(__float2bfloat16(f), __float2bfloat16(f)); }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b)); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __floats2bfloat162_rn(v.x, v.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2(__bfloat162float(h.x), __bfloat162float(h.y)); }
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __half __bfloat162half(__nv_bfloat16 b) { return __float2half(__bfloat162float(b)); }

#define KL_EMU_B1(name, expr) static inline __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) { float x = __bfloat162float(a), y = __bfloat162float(b); return __float2bfloat16(expr); }
KL_EMU_B1(__hadd, x + y)
KL_EMU_B1(__hsub, x - y)
KL_EMU_B1(__hmul, x * y)
KL_EMU_B1(__hdiv, x / y)
KL_EMU_B1(__hmax, fmaxf(x, y))
KL_EMU_B1(__hmin, fminf(x, y))
#undef KL_EMU_B1
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __float2bfloat16((float)((double)__bfloat162float(a) * __bfloat162float(b) + __bfloat162float(c)));
}
static inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return kl_emu_mkbf((unsigned short)(a.__x ^ 0x8000u)); }
static inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return kl_emu_mkbf((unsigned short)(a.__x & 0x7fffu)); }
static inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) == __bfloat162float(b); }
static inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) != __bfloat162float(b); }
static inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) < __bfloat162float(b); }
static inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) <= __bfloat162float(b); }
static inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) > __bfloat162float(b); }
static inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) >= __bfloat162float(b); }
static inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
static inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __float2bfloat16(sqrtf(__bfloat162float(a))); }
static inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __float2bfloat16(expf(__bfloat162float(a))); }

static inline __nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hadd(a, b); }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hsub(a, b); }
static inline __nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hmul(a, b); }
static inline __nv_bfloat16 operator/(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hdiv(a, b); }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a) { return __hneg(a); }
static inline __nv_bfloat16 &operator+=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { a = __hadd(a, b); return a; }
static inline __nv_bfloat16 &operator-=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { a = __hsub(a, b); return a; }
static inline __nv_bfloat16 &operator*=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { a = __hmul(a, b); return a; }
static inline __nv_bfloat16 &operator/=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { a = __hdiv(a, b); return a; }
static inline bool operator==(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __heq(a, b); }
static inline bool operator!=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hne(a, b); }
static inline bool operator<(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hlt(a, b); }
static inline bool operator<=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hle(a, b); }
static inline bool operator>(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hgt(a, b); }
static inline bool operator>=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hge(a, b); }

static inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
static inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
static inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
static inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
static inline __nv_bfloat162 operator+(const __nv_bfloat162 &a, const __nv_bfloat162 &b) { return __hadd2(a, b); }
static inline __nv_bfloat162 operator*(const __nv_bfloat162 &a, const __nv_bfloat162 &b) { return __hmul2(a, b); }

// ---------------------------------------------------------------------------------------------
// 16-bit atomics (compare-and-swap on the 16-bit word).
namespace kl_emu {
template <typename H, float (*ToF)(H), H (*FromF)(float)>
inline H atomic_add16(H *p, H v) {
    tick();
    unsigned short *q = reinterpret_cast<unsigned short *>(p);
    unsigned short old = __atomic_load_n(q, __ATOMIC_SEQ_CST);
    for (;;) {
        H o;
        std::memcpy(&o, &old, 2);
        H n = FromF(ToF(o) + ToF(v));
        unsigned short nb;
        std::memcpy(&nb, &n, 2);
        if (__atomic_compare_exchange_n(q, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return o;
    }
}
} // namespace kl_emu
static inline __half atomicAdd(__half *p, __half v) { return kl_emu::atomic_add16<__half, __half2float, __float2half>(p, v); }
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
    return kl_emu::atomic_add16<__nv_bfloat16, __bfloat162float, __float2bfloat16>(p, v);
}
static inline __half2 atomicAdd(__half2 *p, __half2 v) {
    __half2 r;
    r.x = atomicAdd(&p->x, v.x);
    r.y = atomicAdd(&p->y, v.y);
    return r;
}
static inline __nv_bfloat162 atomicAdd(__nv_bfloat162 *p, __nv_bfloat162 v) {
    __nv_bfloat162 r;
    r.x = atomicAdd(&p->x, v.x);
    r.y = atomicAdd(&p->y, v.y);
    return r;
}
