// kl_emu_ptx.h — the emulator's forms of the few PTX instructions the course's mma.sync kernels
// wrap in inline asm (included by kl_emu.h). Inline PTX cannot compile for a CPU, so a kernel's
// wrapper calls these under KL_BACKEND_EMU and its asm elsewhere (labs/02_gemm/kernels/11_mma_sync.cu,
// labs/common/grouped_mma.cuh):
//
//   __cvta_generic_to_shared     a 32-bit shared-memory address, as the instructions below take
//   cp_async(dst, src, n)        cp.async.cg/.ca: 16 bytes, of which n come from src, zeros after.
//                                The copy lands at the issuing thread's cp_async_wait that covers
//                                its group (commit_group closes one), not before: a kernel that
//                                reads a stage before waiting for it reads what was there
//   ldmatrix(addr, r, n, trans)  ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16
//   mma_m16n8k16_bf16(d, a, b)   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, d += a·b
//
// The register layouts are PTX's (the PTX ISA's figures for ldmatrix and for mma.m16n8k16), so a
// kernel proven on a GPU gets the same numbers here, and one that mixes up a fragment gets wrong
// ones, as it would on a GPU. The MMA multiplies exactly in float and adds in float, k in order.
#pragma once

namespace kl_emu_ptx {

// Shared memory is thread_local in the kernel's module (one contiguous TLS block per worker
// thread), so a 32-bit offset from any thread_local of the module addresses all of it.
static thread_local unsigned char shared_anchor;

inline unsigned shared_addr(const void *p) {
    return (unsigned)(uint32_t)(intptr_t)((const unsigned char *)p - &shared_anchor);
}
inline unsigned char *shared_ptr(unsigned a) { return &shared_anchor + (intptr_t)(int32_t)a; }

// ---- cp.async: each thread's copies wait in groups until its cp_async_wait covers them.
struct PendingCopy {
    unsigned dst;
    const void *src;
    int src_bytes;
    int group; // the group number commit_group gave it (-1: not committed yet)
};
// The most copies one thread may have in flight: the course's pipelines keep at most 20 (kernel
// 08 of lab 03: 4 stages of 5 chunks). A fixed array: kernel code here allocates nothing.
#define KL_EMU_CP_ASYNC_MAX 64
struct CopyQueue {
    uint64_t run; // the block run it belongs to: a queue left by an earlier block is dropped
    int committed, n;
    PendingCopy copies[KL_EMU_CP_ASYNC_MAX];
};
static thread_local CopyQueue copy_queues[KL_EMU_MAX_THREADS_PER_BLOCK];

inline CopyQueue &my_queue() {
    CopyQueue &q = copy_queues[kl_emu_cur->linear];
    const uint64_t run = kl_emu_block_run();
    if (q.run != run) { // a block that ended with copies in flight: they land nowhere
        q.run = run;
        q.committed = 0;
        q.n = 0;
    }
    return q;
}

inline void land(const PendingCopy &c) {
    unsigned char tmp[16] = {};
    if (c.src_bytes > 0) std::memcpy(tmp, c.src, (size_t)c.src_bytes);
    std::memcpy(shared_ptr(c.dst), tmp, sizeof tmp);
}

inline bool aligned16(unsigned a) { return (uintptr_t)shared_ptr(a) % 16 == 0; }

inline void cp_async(unsigned dst, const void *src, int src_bytes) {
    if (src_bytes < 0 || src_bytes > 16) kl_emu_fail(KL_EMU_ERR_MISUSE, "cp.async: the source size must be 0 to 16 bytes");
    if (!aligned16(dst)) kl_emu_fail(KL_EMU_ERR_MISUSE, "cp.async of 16 bytes: the shared address must be 16-byte aligned");
    if (src_bytes > 0 && (uintptr_t)src % 16 != 0)
        kl_emu_fail(KL_EMU_ERR_MISUSE, "cp.async of 16 bytes: the global address must be 16-byte aligned");
    CopyQueue &q = my_queue();
    if (q.n == KL_EMU_CP_ASYNC_MAX)
        kl_emu_fail(KL_EMU_ERR_MISUSE, "cp.async: more than 64 copies of one thread in flight (the emulator's limit): wait for some");
    q.copies[q.n++] = PendingCopy{dst, src, src_bytes, -1};
}

inline void cp_async_commit() {
    CopyQueue &q = my_queue();
    for (int i = 0; i < q.n; i++)
        if (q.copies[i].group < 0) q.copies[i].group = q.committed;
    q.committed++;
}

// cp_async_wait(n): every committed group but the n newest has landed.
inline void cp_async_wait(int n) {
    CopyQueue &q = my_queue();
    const int upto = q.committed - n; // groups [0, upto) land
    int kept = 0;
    for (int i = 0; i < q.n; i++) {
        const PendingCopy c = q.copies[i];
        if (c.group >= 0 && c.group < upto) {
            land(c);
        } else {
            q.copies[kept++] = c;
        }
    }
    q.n = kept;
}

// ---- ldmatrix: lanes 8i..8i+7 give the row addresses of 8×8 matrix i (16 bytes a row); register
// i of lane l holds, of matrix i, row l/4 at columns 2(l%4), 2(l%4)+1 (low half first), or with
// .trans the transposed matrix: rows 2(l%4), 2(l%4)+1 at column l/4.
struct LdmatrixLane {
    unsigned addr;
    unsigned *r;
    int num;
    bool trans;
};

// all32 checks that every lane of the warp takes part in a warp-wide instruction.
inline void all32(void *const *lanes, const char *what) {
    for (int l = 0; l < 32; l++)
        if (lanes[l] == nullptr) kl_emu_fail(KL_EMU_ERR_MISUSE, what);
}

inline void ldmatrix_exec(void *const *lanes, uint64_t) {
    all32(lanes, "ldmatrix is .sync.aligned: all 32 lanes of the warp must execute it together");
    const LdmatrixLane *first = static_cast<const LdmatrixLane *>(lanes[0]);
    for (int l = 0; l < 8 * first->num; l++)
        if (!aligned16(static_cast<const LdmatrixLane *>(lanes[l])->addr))
            kl_emu_fail(KL_EMU_ERR_MISUSE, "ldmatrix: a row address must be 16-byte aligned");
    for (int l = 0; l < 32; l++) {
        const LdmatrixLane *me = static_cast<const LdmatrixLane *>(lanes[l]);
        if (me->num != first->num || me->trans != first->trans)
            kl_emu_fail(KL_EMU_ERR_MISUSE, "ldmatrix: the lanes of a warp disagree on .x1/.x2/.x4 or .trans");
        for (int i = 0; i < me->num; i++) {
            uint16_t h[2];
            for (int j = 0; j < 2; j++) {
                const int row = me->trans ? 2 * (l % 4) + j : l / 4, col = me->trans ? l / 4 : 2 * (l % 4) + j;
                const LdmatrixLane *src = static_cast<const LdmatrixLane *>(lanes[8 * i + row]);
                std::memcpy(&h[j], shared_ptr(src->addr + 2u * (unsigned)col), 2);
            }
            me->r[i] = (unsigned)h[0] | ((unsigned)h[1] << 16);
        }
    }
}

inline void ldmatrix(unsigned addr, unsigned *r, int num, bool trans) {
    if (KL_EMU_WARP_SIZE != 32) kl_emu_fail(KL_EMU_ERR_MISUSE, "ldmatrix is an NVIDIA instruction of 32-lane warps");
    LdmatrixLane mine{addr, r, num, trans};
    kl_emu_warp_exec(0xffffffffu, &mine, &ldmatrix_exec, "ldmatrix");
}

// ---- mma.sync m16n8k16, bf16 inputs, f32 accumulators. With g = lane/4 and t = lane%4: A's
// registers hold (row g, k 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..); B's (k 2t..2t+1,
// column g), (k 2t+8.., g); C's (row g, columns 2t, 2t+1) and (g+8, 2t, 2t+1).
struct MmaLane {
    float *d;
    const unsigned *a, *b;
};

// The two bf16 halves of a register, low first.
inline float bf16_lo(unsigned v) { return kl_emu::bf2f((unsigned short)(v & 0xffffu)); }
inline float bf16_hi(unsigned v) { return kl_emu::bf2f((unsigned short)(v >> 16)); }

inline void mma_exec(void *const *lanes, uint64_t) {
    all32(lanes, "mma.sync is .sync.aligned: all 32 lanes of the warp must execute it together");
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        const MmaLane *me = static_cast<const MmaLane *>(lanes[l]);
        const int g = l / 4, t = l % 4;
        for (int q = 0; q < 4; q++) {
            const int row = g + 8 * (q & 1), k = 2 * t + 8 * (q >> 1);
            A[row][k] = bf16_lo(me->a[q]);
            A[row][k + 1] = bf16_hi(me->a[q]);
        }
        for (int q = 0; q < 2; q++) {
            const int k = 2 * t + 8 * q;
            B[k][g] = bf16_lo(me->b[q]);
            B[k + 1][g] = bf16_hi(me->b[q]);
        }
    }
    for (int l = 0; l < 32; l++) {
        const MmaLane *me = static_cast<const MmaLane *>(lanes[l]);
        const int g = l / 4, t = l % 4;
        for (int q = 0; q < 4; q++) {
            const int row = g + 8 * (q >> 1), col = 2 * t + (q & 1);
            float s = me->d[q];
            for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
            me->d[q] = s;
        }
    }
}

inline void mma_m16n8k16_bf16(float *d, const unsigned *a, const unsigned *b) {
    if (KL_EMU_WARP_SIZE != 32) kl_emu_fail(KL_EMU_ERR_MISUSE, "mma.sync is an NVIDIA instruction of 32-lane warps");
    MmaLane mine{d, a, b};
    kl_emu_warp_exec(0xffffffffu, &mine, &mma_exec, "mma.sync");
}

} // namespace kl_emu_ptx

static inline size_t __cvta_generic_to_shared(const void *p) { return kl_emu_ptx::shared_addr(p); }
