"""Dumps every stage of the chapter's Triton GEMM (triton_matmul.py) as Triton compiles it.

    python3 labs/02_gemm/peers/triton_stages.py OUTDIR [M N K]

Compiles gemm_tiled for bf16 at the triton_bf16 variant's tile (128×256×64, 8 warps, 3 stages),
launches it once on a GPU, and writes what the compiled kernel's asm dictionary holds: Triton IR
(ttir), TritonGPU IR (ttgir), LLVM IR (llir), PTX and, through cuobjdump, SASS; plus the
kernel's metadata (shared memory, warps, stages) in meta.json. The same stages are in
TRITON_CACHE_DIR (default ~/.triton/cache) after any run, and MLIR_ENABLE_DUMP=1 prints the IR
after every compiler pass.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "peers"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import triton  # noqa: E402

from triton_matmul import gemm_tiled  # noqa: E402


def main():
    out = sys.argv[1]
    m, n, k = (int(x) for x in sys.argv[2:5]) if len(sys.argv) >= 5 else (4096, 4096, 4096)
    os.makedirs(out, exist_ok=True)
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((k, n), device="cuda", dtype=torch.bfloat16)
    c = torch.randn((m, n), device="cuda", dtype=torch.bfloat16)
    d = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
    bm, bn, bk = 128, 256, 64
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    kern = gemm_tiled[grid](a, b, c, d, m, n, k, 1.25, -0.5, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                            HAS_C=True, IEEE=False, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        with open(os.path.join(out, "gemm_tiled." + stage), "w") as f:
            f.write(kern.asm[stage])
    try:
        from triton.tools.disasm import get_sass
        sass = get_sass(kern.asm["cubin"])
    except Exception as e:  # cuobjdump missing: say so in the file
        sass = "SASS not available: %s: %s\n" % (type(e).__name__, e)
    with open(os.path.join(out, "gemm_tiled.sass"), "w") as f:
        f.write(sass)
    md = kern.metadata
    meta = {k2: getattr(md, k2) for k2 in ("name", "num_warps", "num_stages", "num_ctas", "shared") if hasattr(md, k2)}
    meta.update(triton=triton.__version__, torch=torch.__version__, device=torch.cuda.get_device_name(),
                problem=[m, n, k], tile=[bm, bn, bk])
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, default=str)
    print(json.dumps(meta, default=str))


if __name__ == "__main__":
    main()
