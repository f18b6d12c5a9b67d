"""Lab 03's Triton peer: a persistent grouped GEMM with a static schedule, written in Triton.

As in the chapter's persistent kernels and Triton's grouped GEMM tutorial, the grid is one
program per SM and the tiles of all groups form one list: program p takes tiles p, p + P,
p + 2P, … (P programs), finding each tile's group by walking the groups' tile counts. Each tile
is the tiled GEMM of lab 02 (BM×BN, stepping K by BK, num_stages deep), bf16 on the tensor cores
with fp32 accumulation, or fp32 with input_precision="ieee". Every group's matrices are row-major
in three flat arenas (groups.py), reached through per-group element offsets.
"""

import klpeer

import triton
import triton.language as tl

from groups import Groups


@triton.jit
def grouped_static(a_ptr, b_ptr, c_ptr, a_off, b_off, c_off, ms, ns, ks, G,
                   PROGRAMS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   IEEE: tl.constexpr):
    tile = tl.program_id(0)
    first = 0  # the first tile of group g in the list of all tiles
    for g in range(0, G):
        m = tl.load(ms + g)
        n = tl.load(ns + g)
        k = tl.load(ks + g)
        tiles_n = tl.cdiv(n, BN)
        count = tl.cdiv(m, BM) * tiles_n
        while tile >= first and tile < first + count:
            local = tile - first
            rm = (local // tiles_n) * BM + tl.arange(0, BM)
            rn = (local % tiles_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a_ptrs = a_ptr + tl.load(a_off + g) + rm[:, None].to(tl.int64) * k + rk[None, :]
            b_ptrs = b_ptr + tl.load(b_off + g) + rk[:, None].to(tl.int64) * n + rn[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k0 in range(0, k, BK):
                a = tl.load(a_ptrs, mask=(rm[:, None] < m) & (rk[None, :] + k0 < k), other=0.0)
                b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < k) & (rn[None, :] < n), other=0.0)
                if IEEE:
                    acc = tl.dot(a, b, acc, input_precision="ieee")
                else:
                    acc = tl.dot(a, b, acc)
                a_ptrs += BK
                b_ptrs += BK * n
            c_ptrs = c_ptr + tl.load(c_off + g) + rm[:, None].to(tl.int64) * n + rn[None, :]
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))
            tile += PROGRAMS
        first += count


def run(peer):
    torch = peer.torch
    vp = peer.req.get("variant_params") or {}
    gs = Groups(peer)
    dev = peer.device
    bf16 = gs.dtype == torch.bfloat16
    # Element offsets in int64 (an arena passes 2^31 elements); sizes in int32, so that the tile
    # counts carried from group to group keep one type (Triton refuses a loop-carried variable
    # whose type changes: the recorded H200 run failed on int64 sizes).
    a_off, b_off, c_off = (torch.tensor(x, dtype=torch.int64, device=dev) for x in (gs.a_off, gs.b_off, gs.c_off))
    ms, ns, ks = (torch.tensor([s[i] for s in gs.shapes], dtype=torch.int32, device=dev) for i in range(3))
    bm, bn, bk = vp.get("bm", 128), vp.get("bn", 128), vp.get("bk", 64 if bf16 else 32)
    programs = torch.cuda.get_device_properties(dev).multi_processor_count * vp.get("per_sm", 1)

    def launch():
        grouped_static[(programs,)](gs.a, gs.b, gs.c, a_off, b_off, c_off, ms, ns, ks, len(gs.shapes),
                                    PROGRAMS=programs, BM=bm, BN=bn, BK=bk, IEEE=not bf16,
                                    num_warps=vp.get("warps", 8), num_stages=vp.get("stages", 3))

    launch()
    what = "bf16, fp32 accumulation" if bf16 else "fp32, input_precision=ieee"
    if peer.check(gs.c[:gs.c_size], gs.reference(),
                  "Triton static persistent grouped GEMM %d×%d×%d (%s) against a float64 product per group" % (bm, bn, bk, what)):
        peer.time(launch)


if __name__ == "__main__":
    klpeer.main(run, needs=("torch", "triton"))
