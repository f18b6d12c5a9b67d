"""Lab 02's Triton peer: the block-tiled GEMM of the chapter, written in Triton.

One program computes a BM×BN tile of C, stepping through K by BK: the shared-memory tiling of
kernels 03–09 and of the tensor-core kernels, with the register blocking, shared-memory layouts,
swizzles and the cp.async/TMA pipeline (num_stages deep) left to Triton's compiler. Programs are
ordered in bands of GROUP_M tile rows so that neighbours in time share B tiles in L2 (the
chapter's tile swizzle). fp32 suites use tl.dot with input_precision="ieee" (no TF32: FMAs on
the CUDA cores); bf16 suites use the tensor cores with fp32 accumulation and write a bf16 C,
as the lab's cbf16 kernels and cuBLASLt do. Tile sizes come from the variant's params.
"""

import klpeer

import triton
import triton.language as tl


@triton.jit
def gemm_tiled(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K, alpha, beta,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
               HAS_C: tl.constexpr, IEEE: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    # Bands of GROUP_M tile rows: consecutive programs walk down a band's columns.
    band = GROUP_M * tiles_n
    first_m = (pid // band) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % band) % rows
    pid_n = (pid % band) // rows

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None].to(tl.int64) * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    acc = acc * alpha
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None].to(tl.int64) * N + rn[None, :]
    if HAS_C:
        acc += beta * tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(d_ptr + offs, acc.to(d_ptr.dtype.element_ty), mask=mask)


def run(peer):
    torch = peer.torch
    p, vp = peer.params, peer.req.get("variant_params") or {}
    m, n, k, alpha, beta = p["m"], p["n"], p["k"], p["alpha"], p["beta"]
    bf16 = p["inputs"] == "bf16"
    dt = torch.bfloat16 if bf16 else torch.float32
    a, b, c0 = peer.uniform((m, k), dt), peer.uniform((k, n), dt), peer.uniform((m, n), dt)
    d = torch.full((m, n), float("nan"), dtype=dt, device=peer.device)
    bm, bn, bk = vp.get("bm", 128), vp.get("bn", 128), vp.get("bk", 64 if bf16 else 32)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

    def launch():
        gemm_tiled[grid](a, b, c0, d, m, n, k, alpha, beta, BM=bm, BN=bn, BK=bk,
                         GROUP_M=vp.get("group_m", 8), HAS_C=beta != 0, IEEE=not bf16,
                         num_warps=vp.get("warps", 8), num_stages=vp.get("stages", 3))

    launch()
    ref = torch.addmm(c0.double(), a.double(), b.double(), beta=beta, alpha=alpha)
    tol = peer.tolerance + (2.0 ** -8 if bf16 else 0.0)
    what = "bf16 in and out, fp32 accumulation" if bf16 else "fp32, input_precision=ieee"
    if peer.check(d, ref, "Triton tiled GEMM %d×%d×%d (%s) against a float64 torch.addmm" % (bm, bn, bk, what), tol):
        peer.time(launch)


if __name__ == "__main__":
    klpeer.main(run, needs=("torch", "triton"))
