// 02 — fused AG+GEMM without a staging copy: one persistent kernel whose tiles read the rows of A
// straight from the rank that holds them, through peer pointers.
//
// There is no all-gather any more: the communication happens inside the GEMM's loads, and the
// warps of the other tiles hide its latency as they hide that of HBM. The tiles are visited block
// by block of A, starting with this rank's own block (local memory, no wait at all) and then going
// round the ring (rank+1, rank+2, …), so that the ranks do not all read rank 0 first. The price:
// every tile of a row block reads its A rows again, ceil(N/64) times over the peer link, where the
// staged variants move each row once. When the link is slow compared with the GEMM, that is a
// bad trade; when the tile loop reuses A through L2 it may not be.
//
// Launch: block 256, a persistent grid (at most one wave of resident blocks); the blocks take
// tiles t = blockIdx.x, blockIdx.x + gridDim.x, … in the order above.
#include "kl.cuh"
#include "overlap_gemm.cuh"

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ag_gemm_fused_pull(const float* const* ins, const float* __restrict__ B, float* C, int rank, int nranks,
                   int M, int N, int K) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    const int colTiles = (N + OV_BN - 1) / OV_BN;
    int total = 0;
    for (int s = 0; s < nranks; ++s) total += ov_tiles_of(ov_rows_of(s, M, nranks), N);

    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        // Find the source block of tile t in the visiting order rank, rank+1, …
        int rest = t, s = rank;
        for (int j = 0; j < nranks; ++j) {
            s = rank + j;
            if (s >= nranks) s -= nranks;
            const int tiles = ov_tiles_of(ov_rows_of(s, M, nranks), N);
            if (rest < tiles) break;
            rest -= tiles;
        }
        const int rows = ov_rows_of(s, M, nranks);
        float* Cs = C + (long long)ov_row0_of(s, M, nranks) * N;
        ov_gemm_tile(ins[s], B, Cs, rows, N, K, rest / colTiles, rest % colTiles, As, Bs);
    }
}
