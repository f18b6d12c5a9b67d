// 18 — MoE combine, the weighted sum on the token's home rank (after kernel 17 and a barrier).
//
// out[t] = Σ_j weights[t·k + j] · stage[t·k + j], the k expert outputs of token t widened to fp32,
// multiplied by their routing weights and summed there in slot order, then rounded to bf16 once.
// All local: the data crossed the link in kernel 17.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void moe_combine_reduce(const kl_bf16* stage, const float* weights, kl_bf16* out, int tokens, int k,
                                              int hidden) {
    const int w = hidden % KL_BF16X8 == 0 ? KL_BF16X8 : 1;
    const long long per = hidden / w, total = (long long)tokens * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int token = (int)(t / per);
        const long long c = (t - token * per) * w;
        const kl_bf16* rows = stage + (long long)token * k * hidden;
        if (w == KL_BF16X8) {
            float acc[KL_BF16X8] = {};
            for (int j = 0; j < k; j++) {
                const uint4 v = kl_bf16x8_load(rows + (long long)j * hidden, c);
                const unsigned u[4] = {v.x, v.y, v.z, v.w};
                const float g = weights[token * k + j];
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    acc[2 * q] += g * __uint_as_float(u[q] << 16);
                    acc[2 * q + 1] += g * __uint_as_float(u[q] & 0xFFFF0000u);
                }
            }
            kl_bf16x8_store(out + (long long)token * hidden, c, kl_bf16x8_round(acc));
        } else {
            float acc = 0.0f;
            for (int j = 0; j < k; j++) acc += weights[token * k + j] * kl_bf162float(rows[(long long)j * hidden + c]);
            out[(long long)token * hidden + c] = kl_float2bf16(acc);
        }
    }
}
