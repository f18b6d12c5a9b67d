"""Lab 02's PyTorch peer: C = alpha·A·B + beta·C with torch.addmm, the call a framework makes.

fp32 suites: fp32 in and out with TF32 off (cuBLAS SGEMM, as the lab's baseline). bf16 suites:
bf16 A, B and C, as torch.matmul on bf16 tensors returns (cuBLASLt with a bf16 output); the check
allows the output's rounding to bf16 (2^-8) on top of the suite's tolerance, as the lab does for
its own bf16-out kernels. The reference is float64 on the device from the same rounded inputs.
"""

import klpeer


def run(peer):
    torch = peer.torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    p = peer.params
    m, n, k, alpha, beta = p["m"], p["n"], p["k"], p["alpha"], p["beta"]
    dt = torch.bfloat16 if p["inputs"] == "bf16" else torch.float32
    a, b, c0 = peer.uniform((m, k), dt), peer.uniform((k, n), dt), peer.uniform((m, n), dt)
    c = torch.full((m, n), float("nan"), dtype=dt, device=peer.device)
    torch.addmm(c0, a, b, beta=beta, alpha=alpha, out=c)
    ref = torch.addmm(c0.double(), a.double(), b.double(), beta=beta, alpha=alpha)
    tol = peer.tolerance + (2.0 ** -8 if dt == torch.bfloat16 else 0.0)
    what = "bf16 out" if dt == torch.bfloat16 else "fp32, TF32 off"
    if peer.check(c, ref, "torch.addmm (%s) against a float64 torch.addmm of the same inputs" % what, tol):
        peer.time(lambda: torch.addmm(c0, a, b, beta=beta, alpha=alpha, out=c))


if __name__ == "__main__":
    klpeer.main(run)
