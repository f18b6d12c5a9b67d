"""Lab 03's PyTorch peer: torch._grouped_mm, the grouped GEMM PyTorch's MoE layers call.

It takes a MoE layer as the lab's bf16_moe problems are: one token matrix X (T×K), the experts'
weights stacked (E×K×N, passed as the transpose of an E×N×K tensor: nn.Linear's layout, which
the kernel reads) and offs, the end row of each expert in X (int32 prefix sums; an empty expert
repeats its predecessor's end). Groups of different N or K are not one _grouped_mm call: skipped.
"""

import klpeer

from groups import Groups


def run(peer):
    torch = peer.torch
    gs = Groups(peer)
    if not gs.shared_nk():
        raise klpeer.Skip("torch._grouped_mm multiplies groups of one N and K (a MoE layer); these groups differ")
    if gs.dtype != torch.bfloat16:
        raise klpeer.Skip("torch._grouped_mm takes bf16 operands; this suite is fp32")
    if not hasattr(torch, "_grouped_mm"):
        raise klpeer.Skip("this torch (%s) has no torch._grouped_mm (PyTorch 2.8 or newer)" % torch.__version__)
    e = len(gs.shapes)
    _, n, k = gs.shapes[0]
    t = sum(s[0] for s in gs.shapes)
    x = gs.a[:t * k].view(t, k)
    # The same weights as the reference's B_g (K×N row-major), stored as W_g^T (N×K) for the call.
    w = torch.stack([gs.b_of(g).t().contiguous() for g in range(e)])  # E×N×K
    w_t = w.transpose(-2, -1)  # E×K×N, column-major per expert
    ends = torch.tensor([sum(s[0] for s in gs.shapes[:g + 1]) for g in range(e)], dtype=torch.int32, device=peer.device)
    y = gs.c[:t * n].view(t, n)

    def call():
        return torch._grouped_mm(x, w_t, offs=ends, out_dtype=torch.bfloat16)

    y.copy_(call())
    if peer.check(gs.c[:gs.c_size], gs.reference(), "torch._grouped_mm against a float64 product per group"):
        peer.time(call)


if __name__ == "__main__":
    klpeer.main(run)
