// halfbf16.cu — __half and __nv_bfloat16 conversions and arithmetic.
#include "kl.cuh"

extern "C" __global__ void convert(const float* in, unsigned short* hbits, float* hback,
                                   unsigned short* bbits, float* bback, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half h = __float2half(in[i]);
    hbits[i] = __half_as_ushort(h);
    hback[i] = __half2float(h);
    __nv_bfloat16 b = __float2bfloat16(in[i]);
    bbits[i] = __bfloat16_as_ushort(b);
    bback[i] = __bfloat162float(b);
}

// c = a*b + a (in half and in bf16, through the operators and intrinsics), and half2 math.
extern "C" __global__ void arith(const __half* a, const __half* b, __half* c,
                                 const __nv_bfloat16* x, const __nv_bfloat16* y, __nv_bfloat16* z,
                                 __half2* h2, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    c[i] = __hfma(a[i], b[i], a[i]);
    z[i] = x[i] * y[i] + x[i];
    __half2 p = __halves2half2(a[i], b[i]);
    h2[i] = __hmul2(p, __float2half2_rn(2.0f));
}
