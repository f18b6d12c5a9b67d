"""klpeer: what every peer script of the course shares (labrun's peer protocol, internal/lab/peer.go).

A peer is an implementation a reader would otherwise use (torch.matmul, torch._grouped_mm, a
Triton kernel), run in the same labrun run as the lab's own kernels. labrun starts the script
with one JSON request on stdin; the script calls main(run), and run(peer) builds its inputs on
the device, checks its output with peer.check against a float64 (or float32) PyTorch reference,
and times one call with peer.time. main prints the one JSON line labrun records, and turns a
missing module into "skipped" and any exception into "failed", so a peer never hangs the run on
an error it can report (labrun's time limit covers the rest).

Timing follows the engine (internal/bench): CUDA events around each repetition, warm-up runs
first (at least warmup_min_ms), then repetitions until min_reps and the time budget (or
max_reps), with L2 flushed before each when the suite asks (a 2×L2 buffer rewritten), as
internal/lab/worker.go does for the lab's variants.
"""

import json
import math
import sys
import time
import traceback

_REPLY = None  # the reply dict once emitted


class Skip(Exception):
    """Raised by a peer for a problem it does not run here (a shape the kernel refuses)."""


def emit(reply, out=None):
    """Prints the reply as the last line of stdout (labrun reads only that line)."""
    global _REPLY
    _REPLY = reply
    out = out or sys.stdout
    out.write("\n" + json.dumps(reply, allow_nan=False) + "\n")
    out.flush()


def read_request(stream=None):
    req = json.load(stream or sys.stdin)
    for key in ("params", "seed", "device", "tolerance", "bench"):
        if key not in req:
            raise ValueError("the request has no %r: labrun sends it (internal/lab/peer.go PeerRequest)" % key)
    return req


class Peer:
    """One problem for one peer: the request, the device, a seeded generator, the check's result."""

    def __init__(self, req, torch):
        self.req = req
        self.torch = torch
        self.params = req["params"]
        self.tolerance = float(req["tolerance"])
        self.device = torch.device("cuda", int(req["device"]))
        torch.cuda.set_device(self.device)
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(int(req["seed"]) & ((1 << 63) - 1))
        self.report = None
        self.samples = None

    def uniform(self, shape, dtype):
        """Fresh inputs in [-1, 1) drawn on the device (never zeros), rounded to dtype."""
        t = self.torch.rand(shape, generator=self.gen, device=self.device, dtype=self.torch.float32)
        return (t * 2 - 1).to(dtype)

    def check(self, out, ref, method, tolerance=None):
        """Compares out with ref in float64: ‖out − ref‖₂/‖ref‖₂ ≤ tolerance, every element finite."""
        torch = self.torch
        tol = self.tolerance if tolerance is None else tolerance
        o = out.detach().to(torch.float64).reshape(-1)
        r = ref.detach().to(torch.float64).reshape(-1)
        n = o.numel()
        unwritten = int((~torch.isfinite(o)).sum().item()) if n else 0
        diff = o - r
        if unwritten:
            diff = torch.where(torch.isfinite(o), diff, torch.zeros_like(diff))
        refn = float(torch.linalg.vector_norm(r).item()) if n else 0.0
        errn = float(torch.linalg.vector_norm(diff).item()) if n else 0.0
        rel = errn / refn if refn > 0 else errn
        maxabs = float(diff.abs().max().item()) if n else 0.0
        ok = unwritten == 0 and rel <= tol and math.isfinite(rel)
        if unwritten:
            method += "; %d elements not finite" % unwritten
        self.report = {"ok": bool(ok), "method": method, "checked": int(n), "rel_err": rel,
                       "max_abs_err": maxabs, "tolerance": tol}
        return ok

    def time(self, fn):
        """Times fn() with CUDA events as the engine does; needs a passing check first."""
        if self.report is None or not self.report["ok"]:
            raise RuntimeError("time() before a passing check(): correct first")
        torch = self.torch
        b = self.req["bench"]
        flush = None
        if self.req.get("flush_l2"):
            l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or (50 << 20)
            flush = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device=self.device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flips = [0]

        def rep():
            if flush is not None:
                flips[0] = (flips[0] + 1) % 256
                flush.fill_(flips[0])
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        t0 = time.monotonic()
        i = 0
        while i < b["warmup"] or (time.monotonic() - t0) * 1e3 < b["warmup_min_ms"]:
            rep()
            i += 1
            if i > 1000:
                break
        samples = []
        t0 = time.monotonic()
        min_reps, max_reps = max(1, b["min_reps"]), max(b["max_reps"], b["min_reps"], 1)
        while len(samples) < max_reps and (len(samples) < min_reps or (time.monotonic() - t0) * 1e3 < b["budget_ms"]):
            ms = rep()
            if not (ms > 0) or math.isinf(ms):
                raise RuntimeError("the CUDA event timer gave %r ms" % ms)
            samples.append(ms)
        self.samples = samples


def versions(torch):
    v = {"torch": torch.__version__, "cuda": torch.version.cuda}
    tr = sys.modules.get("triton")
    if tr is not None:
        v["triton"] = tr.__version__
    return v


def main(run, needs=("torch",), stdin=None, out=None):
    """Reads the request, runs run(peer) and prints the reply; returns the reply (for tests)."""
    try:
        req = read_request(stdin)
    except Exception as e:  # a protocol error is labrun's bug: say so plainly
        emit({"status": "failed", "error": "reading labrun's request: %s" % e}, out)
        return _REPLY
    mods = {}
    for name in needs:
        try:
            mods[name] = __import__(name)
        except Exception as e:
            emit({"status": "skipped", "error": "python cannot import %s (%s: %s): pip install %s"
                  % (name, type(e).__name__, e, name)}, out)
            return _REPLY
    torch = mods.get("torch")
    if torch is None or not torch.cuda.is_available():
        emit({"status": "skipped", "error": "torch sees no CUDA device"}, out)
        return _REPLY
    try:
        peer = Peer(req, torch)
        run(peer)
    except Skip as e:
        emit({"status": "skipped", "error": str(e)}, out)
        return _REPLY
    except Exception as e:
        emit({"status": "failed", "error": "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()[-1500:])}, out)
        return _REPLY
    reply = {"versions": versions(torch)}
    if peer.report is None:
        reply.update(status="failed", error="the peer never checked its output (peer.check)")
    elif not peer.report["ok"]:
        reply.update(status="wrong", check=peer.report)
    elif not peer.samples:
        reply.update(status="failed", error="the peer never timed itself (peer.time)", check=peer.report)
    else:
        reply.update(status="ok", check=peer.report, samples_ms=peer.samples)
    emit(reply, out)
    return _REPLY
