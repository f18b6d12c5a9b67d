"""Lab 05's PyTorch peer: the two layers of tensor parallelism as a PyTorch user writes them, NCCL's
collective and cuBLAS's GEMM one after the other on every rank, nothing overlapped.

ag_gemm: torch.distributed.all_gather_into_tensor of the ranks' blocks of A's rows into A_full,
then torch.matmul(A_full, B, out=C). gemm_rs: torch.matmul(A_r, B_r, out=P) of this rank's
columns of A and rows of B, then reduce_scatter_tensor(C_rows, P), the sum of the partial
products, of which this rank keeps its block of rows. fp32 with TF32 off, as the lab's kernels
and its nccl_cublas baseline (cuBLAS SGEMM). labrun starts one process per rank (klpeer joins
them in a torch.distributed group on NCCL); the driver gives this rank's blocks (row0, rows,
col0, cols), and M is a multiple of the ranks, as NCCL's collectives need equal blocks.

Inputs: A (M×K) and B (K×N) drawn in [-1, 1) from the request's seed, the same on every rank, as
the lab's driver draws them alike on every rank; each rank keeps its block. The check: this
rank's output against a float64 product on the device of the same fp32 inputs, first after one
call, then again after the timed batches (the outputs NaN-filled before every batch).
"""

import klpeer


def run(peer):
    torch, dist = peer.torch, peer.dist
    if dist is None:
        raise klpeer.Skip("lab 05's peer runs one process per rank: labrun starts it in a lab of ranks")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    p = peer.params
    m, n, k, w = p["m"], p["n"], p["k"], peer.world
    if m % w:
        raise klpeer.Skip("NCCL's collectives need equal blocks: M = %d is not a multiple of %d ranks" % (m, w))
    row0, rows, col0, cols = p["row0"], p["rows"], p["col0"], p["cols"]
    a = peer.uniform((m, k), torch.float32)
    b = peer.uniform((k, n), torch.float32)
    nan = float("nan")

    if p["layer"] == "ag_gemm":
        mine = a[row0:row0 + rows].clone()
        a_full = torch.empty_like(a)
        c = torch.empty((m, n), dtype=torch.float32, device=peer.device)

        def layer():
            dist.all_gather_into_tensor(a_full, mine)
            torch.matmul(a_full, b, out=c)

        def poison():
            a_full.fill_(nan)
            c.fill_(nan)

        ref = a.double() @ b.double()
        out = c
        what = "all_gather_into_tensor, then torch.matmul (fp32, TF32 off): rank %d's C" % peer.rank
    elif p["layer"] == "gemm_rs":
        a_r = a[:, col0:col0 + cols].contiguous()
        b_r = b[col0:col0 + cols].contiguous()
        part = torch.empty((m, n), dtype=torch.float32, device=peer.device)
        c_rows = torch.empty((rows, n), dtype=torch.float32, device=peer.device)

        def layer():
            torch.matmul(a_r, b_r, out=part)
            dist.reduce_scatter_tensor(c_rows, part)

        def poison():
            part.fill_(nan)
            c_rows.fill_(nan)

        ref = a[row0:row0 + rows].double() @ b.double()
        out = c_rows
        what = "torch.matmul, then reduce_scatter_tensor (fp32, TF32 off): rank %d's rows of C" % peer.rank
    else:
        raise ValueError("layer %r: lab 05's peer knows ag_gemm and gemm_rs" % p["layer"])

    poison()
    layer()
    method = what + " against a float64 product of the same inputs"
    if peer.check(out, ref, method):
        peer.time(layer, poison=poison)
        peer.check(out, ref, method + " (the last timed batch's output)")


if __name__ == "__main__":
    klpeer.main(run)
