// gemm_sm90.cuh — Hopper (sm_90a) building blocks for the wgmma GEMM kernels of lab 02:
// mbarriers, TMA tile loads (cp.async.bulk.tensor), wgmma shared-memory descriptors and the
// wgmma.mma_async instructions the kernels use. GPU only (inline PTX); include after "kl.cuh".
//
// Shared-memory layouts (all 128-byte swizzled, the mode TMA writes with CU_TENSOR_MAP_SWIZZLE_128B
// and wgmma reads with swizzle mode 1; every tile starts on a 1024-byte boundary so that the
// descriptors' base offset is 0):
//   * A tile, BM×64 bf16, K-major: row m is 128 bytes (64 values of k); 8 rows form a 1024-byte
//     swizzle atom. wgmma descriptor: LBO unused (1), SBO = 1024 (the next 8 rows). The k16 slice kk
//     of the tile starts 32·kk bytes into the row: the hardware applies the swizzle to the final
//     address, so the start address may move inside the 128-byte row.
//   * B tile, 64×BN bf16 from the row-major K×N matrix, N-major ("transposed" for wgmma,
//     imm-trans-b = 1): BN/64 panels of 64 columns, each panel 64 rows of k × 128 bytes
//     (= one TMA box of 64×64), 8192 bytes. wgmma descriptor: LBO = 8192 (the next 64 columns of
//     N), SBO = 1024 (the next 8 rows of K). The k16 slice kk starts 16 rows = 2048·kk bytes in.
#pragma once

#include <cuda.h> // CUtensorMap

__device__ __forceinline__ uint32_t kl_smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// kl_align1024 rounds a pointer into dynamic shared memory up to the next 1024-byte boundary of the
// shared window (the 128-byte swizzle repeats every 1024 bytes; request 1024 bytes of slack).
__device__ __forceinline__ unsigned char* kl_align1024(unsigned char* p) {
    const uint32_t a = kl_smem_u32(p);
    return p + ((1024u - (a & 1023u)) & 1023u);
}

// ---- mbarrier: a shared-memory barrier that counts arrivals and transaction bytes ----

__device__ __forceinline__ void kl_mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(kl_smem_u32(bar)), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the other threads and to the TMA unit (async proxy).
__device__ __forceinline__ void kl_mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// One arrival that also announces `bytes` of transactions (the TMA copies) to wait for.
__device__ __forceinline__ void kl_mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile(
        "{\n"
        ".reg .b64 state;\n"
        "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n"
        "}\n" ::"r"(kl_smem_u32(bar)),
        "r"(bytes)
        : "memory");
}

__device__ __forceinline__ void kl_mbar_arrive(uint64_t* bar) {
    asm volatile(
        "{\n"
        ".reg .b64 state;\n"
        "mbarrier.arrive.shared::cta.b64 state, [%0];\n"
        "}\n" ::"r"(kl_smem_u32(bar))
        : "memory");
}

// Waits until the barrier's phase with the given parity (0 or 1) has completed.
__device__ __forceinline__ void kl_mbar_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t a = kl_smem_u32(bar);
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(a), "r"(parity)
            : "memory");
    } while (!done);
}

// ---- TMA ----

__device__ __forceinline__ void kl_tma_prefetch(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Copies the box at element coordinates (c0 innermost, c1) of the tensor `map` describes into
// shared memory at dst; the bytes are counted on bar. Parts of the box outside the tensor are
// filled with zeros (and still counted).
__device__ __forceinline__ void kl_tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            kl_smem_u32(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(kl_smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

// ---- TMA stores: shared memory to global through a tensor map (bulk groups, no mbarrier) ----
// Writes the box at element coordinates (c0 innermost, c1) from shared memory at src; the parts of
// the box outside the tensor are not written. Joins the thread's current bulk group.
__device__ __forceinline__ void kl_tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<uint64_t>(map)),
                 "r"(kl_smem_u32(src)), "r"(c0), "r"(c1)
                 : "memory");
}
// Closes the thread's current bulk group of TMA stores.
__device__ __forceinline__ void kl_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N of the thread's bulk groups still READ their shared memory (the source
// may then be overwritten; the global writes may still be under way).
template <int N>
__device__ __forceinline__ void kl_bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until every bulk group of the thread has completed, global writes included.
__device__ __forceinline__ void kl_bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Makes this thread's ordinary shared-memory stores visible to the async proxy (TMA, wgmma).
__device__ __forceinline__ void kl_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// A barrier among `threads` threads (a multiple of 32) on hardware barrier id (1..15; 0 is
// __syncthreads'): lets one warpgroup synchronize without stopping the others.
__device__ __forceinline__ void kl_named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Two floats to a bf16 pair (round to nearest even): lo in the low half (the lower address).
__device__ __forceinline__ uint32_t kl_pack_bf16x2(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// ---- wgmma ----

__device__ __forceinline__ uint64_t kl_desc_encode(uint64_t x) { return (x & 0x3FFFFull) >> 4; }

// Descriptor of a K-major, 128-byte-swizzled operand starting at shared address saddr.
__device__ __forceinline__ uint64_t kl_desc_k_sw128(uint32_t saddr) {
    return kl_desc_encode(saddr) | (kl_desc_encode(16) << 16) | (kl_desc_encode(1024) << 32) | (1ull << 62);
}

// Descriptor of an MN-major, 128-byte-swizzled operand made of 64-column panels panel_bytes apart.
__device__ __forceinline__ uint64_t kl_desc_mn_sw128(uint32_t saddr, uint32_t panel_bytes) {
    return kl_desc_encode(saddr) | (kl_desc_encode(panel_bytes) << 16) | (kl_desc_encode(1024) << 32) | (1ull << 62);
}

// The byte offset of element (r, c) of a 64×64 bf16 chunk in the 128-byte swizzled layout that
// CU_TENSOR_MAP_SWIZZLE_128B reads: 16-byte group c/8 of row r moves to group (c/8) ^ (r % 8). The
// bf16 epilogues stage their tiles this way before a TMA store.
__device__ __forceinline__ uint32_t kl_sw128_offset(int r, int c) {
    return r * 128 + ((((c >> 3) ^ r) & 7) << 4) + (c & 7) * 2;
}

__device__ __forceinline__ void kl_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kl_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kl_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// setmaxnreg: hand registers from the producer warpgroup to the consumer warpgroups.
template <int R>
__device__ __forceinline__ void kl_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void kl_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

// kl_wgmma_fence_acc tells the compiler that the accumulators may change behind its back (the
// wgmma writes them asynchronously): it keeps reads and writes of d on the right side of the wait.
template <int NREG>
__device__ __forceinline__ void kl_wgmma_fence_acc(float (&d)[NREG]) {
#pragma unroll
    for (int i = 0; i < NREG; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void kl_wgmma_fence_acc64(float (&d)[64]) { kl_wgmma_fence_acc(d); }
__device__ __forceinline__ void kl_wgmma_fence_acc128(float (&d)[128]) { kl_wgmma_fence_acc(d); }

// d (+)= A·B for one m64n64k16 tile: A (64×16, K-major) and B (16×64, one N-major panel) in shared
// memory, described by da and db; d is this thread's 32 fp32 accumulators. scale_d = 0 ignores the old d.
__device__ __forceinline__ void kl_wgmma_m64n64k16_bf16(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
}

// d (+)= A·B for one m64n128k16 tile: A (64×16, K-major) and B (16×128, N-major) in shared memory,
// described by da and db; d is this thread's 64 fp32 accumulators. scale_d = 0 ignores the old d.
__device__ __forceinline__ void kl_wgmma_m64n128k16_bf16(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

// d (+)= A·B for one m64n256k16 tile: A (64×16, K-major) and B (16×256, N-major) in shared memory,
// described by da and db; d is this thread's 128 fp32 accumulators. scale_d = 0 ignores the old d.
__device__ __forceinline__ void kl_wgmma_m64n256k16_bf16(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

// The same three by the accumulators' size, for kernels templated on their tile width: a
// warpgroup's m64n64k16 (32 accumulators a thread), m64n128k16 (64) or m64n256k16 (128).
__device__ __forceinline__ void kl_wgmma_bf16(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    kl_wgmma_m64n64k16_bf16(d, da, db, scale_d);
}
__device__ __forceinline__ void kl_wgmma_bf16(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    kl_wgmma_m64n128k16_bf16(d, da, db, scale_d);
}
__device__ __forceinline__ void kl_wgmma_bf16(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    kl_wgmma_m64n256k16_bf16(d, da, db, scale_d);
}


// kl_c_rows_cols gives thread t's position in a warpgroup's m64nN accumulator tile: for column
// block j and half h, row 16w + l/4 + 8h and columns 8j + 2(l%4), +1 (d[4j + 2h], d[4j + 2h + 1]).
__device__ __forceinline__ int kl_acc_row(int row0, int h) {
    const int t = threadIdx.x % 128;
    return row0 + 16 * (t / 32) + (t % 32) / 4 + 8 * h;
}
__device__ __forceinline__ int kl_acc_col(int col0, int j) { return col0 + 8 * j + 2 * (threadIdx.x % 4); }

// kl_load_c_m64 reads the old C values of column blocks [j0, j0 + P) of a warpgroup's m64 tile
// (zeros outside the matrix): the epilogue's beta·C term, fetched ahead of time.
template <int P>
__device__ __forceinline__ void kl_load_c_m64(float2 (&old)[P][2], const float* __restrict__ C, int M, int N, int row0,
                                              int col0, int j0) {
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = kl_acc_row(row0, h), col = kl_acc_col(col0, j0 + j);
            old[j][h] = make_float2(0.0f, 0.0f);
            if (row < M && col < N) old[j][h] = *reinterpret_cast<const float2*>(C + (long long)row * N + col);
        }
}

// kl_store_acc_m64 writes a warpgroup's m64nN accumulator tile to C (row-major, N columns, ld = N)
// as alpha·d + beta·C: thread (warp w, lane l) holds, for each 8-column block j, rows
// 16w + l/4 and 16w + l/4 + 8, columns 8j + 2(l%4) and +1 — d[4j], d[4j+1], d[4j+2], d[4j+3].
// Needs N % 2 == 0 (float2 stores); rows ≥ M and columns ≥ N are skipped.
//
// With beta ≠ 0 the old values are read in batches of JB column blocks (2·JB loads in flight)
// before any of the batch is written: one load, wait, store at a time would pay the latency of
// L2 (hundreds of cycles) 64 times per tile while the tensor cores wait for the epilogue. The
// first P column blocks may come already loaded (pre, from kl_load_c_m64 during the main loop).
template <int NREG, int P = 0>
__device__ __forceinline__ void kl_store_acc_m64(const float (&d)[NREG], float* __restrict__ C, int M, int N,
                                                 int row0, int col0, float alpha, float beta,
                                                 const float2 (*pre)[2] = nullptr) {
    constexpr int JB = 8;
    static_assert(P % JB == 0 && ((NREG / 4) % JB == 0 || NREG / 4 < JB), "whole batches of column blocks");
    constexpr int BATCH = NREG / 4 < JB ? NREG / 4 : JB;
#pragma unroll
    for (int j0 = 0; j0 < NREG / 4; j0 += BATCH) {
        float2 old[BATCH][2];
        if (j0 < P) {
#pragma unroll
            for (int j = 0; j < BATCH; ++j) old[j][0] = pre[j0 + j][0], old[j][1] = pre[j0 + j][1];
        } else if (beta != 0.0f) {
            kl_load_c_m64<BATCH>(old, C, M, N, row0, col0, j0);
        } else {
#pragma unroll
            for (int j = 0; j < BATCH; ++j) old[j][0] = old[j][1] = make_float2(0.0f, 0.0f);
        }
#pragma unroll
        for (int j = 0; j < BATCH; ++j) {
            const int col = kl_acc_col(col0, j0 + j);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = kl_acc_row(row0, h);
                if (row < M && col < N) {
                    const int i = 4 * (j0 + j) + 2 * h;
                    *reinterpret_cast<float2*>(C + (long long)row * N + col) =
                        make_float2(alpha * d[i] + beta * old[j][h].x, alpha * d[i + 1] + beta * old[j][h].y);
                }
            }
        }
    }
}

// kl_prefetch_l2 asks for `bytes` of global memory at p (16-byte aligned, a multiple of 16) to be
// brought into L2, without waiting for it (cp.async.bulk.prefetch.L2).
__device__ __forceinline__ void kl_prefetch_l2(const void* p, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}

// ---- thread-block clusters (sm_90): ranks, barriers, distributed shared memory ----
// A cluster is a group of blocks (declared with __cluster_dims__) that the hardware runs at the
// same time on one GPC: they can read each other's shared memory, arrive on each other's
// mbarriers, and receive one TMA load multicast into all of them.

// This block's rank in its cluster (0 .. cluster size - 1), the cluster's index in the grid, and
// the number of clusters in the grid (x dimension).
__device__ __forceinline__ uint32_t kl_cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t kl_cluster_id_x() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t kl_cluster_count_x() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
    return r;
}

// Every thread of the cluster's blocks: a barrier across the cluster, with release/acquire order
// on shared memory (so mbarriers initialised before it may be used by the other blocks after it,
// and a block's shared memory stays alive until the others are done with it).
__device__ __forceinline__ void kl_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;\n" ::: "memory");
}

// The shared::cluster address of the same shared-memory location in the block of rank `rank`.
__device__ __forceinline__ uint32_t kl_mapa(uint32_t saddr, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(saddr), "r"(rank));
    return r;
}

// One arrival on the mbarrier at the same place in the shared memory of block `rank` (this block
// included), with the default semantics (release at CTA scope, the form CUTLASS's cluster barrier
// uses): what the arrival announces is that wgmma, whose wait the thread has passed, is done
// reading a stage. (Kernel 17 with .release.cluster here ran far slower in a trial run.)
__device__ __forceinline__ void kl_mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(kl_mapa(kl_smem_u32(bar), rank)) : "memory");
}

// A TMA load of the box at (c0, c1) into shared memory at dst of every block of the cluster in
// ctaMask (bit r = rank r), each at the same offset, each signalling its own mbarrier at bar's
// offset with the box's bytes. One block issues it; every receiving block must expect the bytes.
__device__ __forceinline__ void kl_tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                                         uint16_t ctaMask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(kl_smem_u32(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(kl_smem_u32(bar)), "r"(c0), "r"(c1), "h"(ctaMask)
        : "memory");
}

// Four floats from distributed shared memory (a shared::cluster address from kl_mapa, 16-byte
// aligned).
__device__ __forceinline__ float4 kl_ld_dsmem_f4(uint32_t caddr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(caddr)
                 : "memory");
    return v;
}
