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
max_reps), with L2 flushed before each when the suite asks (a buffer of 4×L2 read, which leaves
no dirty lines behind), each repetition queued whole behind a hold of the stream before it
starts (_Hold) and let go only once the device has idled _REP_GAP_S since the last one ended
(_Pacer), as internal/lab/worker.go, hold.go and pace.go do for the lab's variants.

labrun keeps a peer of a lab of one process running across problems (internal/lab/peer_serve.go):
with KLPEER_SERVE=1 in its environment, main reads one request a line and writes one reply a line
until stdin closes, what the script prints going to stderr; torch, Triton's compiled kernels, the
stream hold and the flush buffer are made once a process, and the caching allocator's memory is
given back after every problem, so the lab's own kernels find the device as they would without it.

In a lab of ranks (lab.yaml ranks:) every rank's worker starts the script, with its place in the
request ("ranks": rank, size, local_rank, init_method, timeout_s, batch_target_ms, max_batch) and
in torchrun's variables; main joins the ranks' torch.distributed group (NCCL) before run(peer),
peer.rank, peer.world and peer.dist say where it is, and peer.time times as the engine times a
collective (internal/lab/ranks_time.go): after a barrier, batches of K back-to-back calls between
two CUDA events, K chosen from a first call so that a batch lasts about batch_target_ms, and every
batch's time the slowest rank's, rank 0 deciding for every rank when to stop.
"""

import datetime
import gc
import io
import json
import math
import os
import sys
import threading
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


_HOLD_TIMEOUT_S = 2.0  # internal/lab/hold.go's holdTimeout
_MAX_HELD_BATCH = 128  # and its maxHeldBatch
_REP_GAP_S = 100e-6  # internal/lab/pace.go's repGap


class _Hold:
    """The engine's hold of a stream (internal/lab/hold.go) through the driver API: the current
    stream waits for the next value of a device word (cuStreamWaitValue32, ≥) while the host
    queues a repetition, and a side stream writes that value once it is queued
    (cuStreamWriteValue32), or after _HOLD_TIMEOUT_S when the host part does not come back (a
    call that waits for the device): that peer is then timed without the hold, and stderr says
    so. Where the driver lacks the calls, nothing is held."""

    _made = {}  # one hold a device a process: its word and side stream outlive a problem

    @classmethod
    def of(cls, torch, device):
        h = cls._made.get(device)
        if h is None:
            h = cls._made[device] = cls(torch, device)
        return h

    def __init__(self, torch, device):
        self.available, self.n = False, 0
        try:
            import ctypes
            cu = ctypes.CDLL("libcuda.so.1")
            self.wait = getattr(cu, "cuStreamWaitValue32_v2", None) or cu.cuStreamWaitValue32
            self.write = getattr(cu, "cuStreamWriteValue32_v2", None) or cu.cuStreamWriteValue32
        except OSError:  # no NVIDIA driver here (the tests' fake torch): nothing to hold
            return
        except AttributeError as e:
            sys.stderr.write("klpeer: timing without holding the stream: %s\n" % e)
            return
        for f in (self.wait, self.write):
            f.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32]
            f.restype = ctypes.c_int
        self.set_ctx, self.ctx = cu.cuCtxSetCurrent, ctypes.c_void_p()
        cu.cuCtxGetCurrent(ctypes.byref(self.ctx))
        self.torch = torch
        self.word = torch.zeros(1, dtype=torch.int32, device=device)
        self.side = torch.cuda.Stream(device=device)  # PyTorch's streams do not wait for the legacy stream
        torch.cuda.synchronize(device)
        self.available = True

    def queued(self, enqueue, pace=None):
        """Runs enqueue behind the hold; pace (a _Pacer, or None) is waited for just before the
        hold is let go, or before enqueue when nothing is held (internal/lab/hold.go's queued)."""
        if not self.available:
            if pace is not None:
                pace.wait()
            enqueue()
            return
        self.n += 1
        n, word = self.n, self.word.data_ptr()
        if self.wait(self.torch.cuda.current_stream().cuda_stream, word, n, 0) != 0:
            self.available = False
            sys.stderr.write("klpeer: timing without holding the stream: cuStreamWaitValue32 failed\n")
            if pace is not None:
                pace.wait()
            enqueue()
            return
        self._watchdog().arm(n, time.monotonic() + _HOLD_TIMEOUT_S)
        try:
            enqueue()
            if pace is not None:
                pace.wait()
        finally:
            timed_out = not self._watchdog().disarm(n)
            if not timed_out:
                self._release(n)
        if timed_out:
            self.available = False
            sys.stderr.write("klpeer: the call did not return within %.0f s of holding the stream (it waits "
                             "for the device); timed without the hold from now on\n" % _HOLD_TIMEOUT_S)

    def _release(self, n):
        self.set_ctx(self.ctx)
        self.write(self.side.cuda_stream, self.word.data_ptr(), n, 0)

    def _watchdog(self):
        if getattr(self, "_dog", None) is None:
            self._dog = _Watchdog(self._release)
        return self._dog


class _Watchdog:
    """One thread that lets a hold go when its host part does not come back in time; a thread
    for the process rather than a timer for each repetition, whose start would add host time
    (and so idle device time) to every run."""

    def __init__(self, release):
        self.release, self.cv, self.armed = release, threading.Condition(), None
        threading.Thread(target=self._loop, daemon=True).start()

    def arm(self, n, deadline):
        with self.cv:
            self.armed = (n, deadline)
            self.cv.notify()

    def disarm(self, n):
        """True when hold n was still armed (the caller lets it go); False when it timed out."""
        with self.cv:
            if self.armed is not None and self.armed[0] == n:
                self.armed = None
                return True
            return False

    def _loop(self):
        with self.cv:
            while True:
                if self.armed is None:
                    self.cv.wait()
                    continue
                n, deadline = self.armed
                left = deadline - time.monotonic()
                if left > 0:
                    self.cv.wait(left)
                    continue
                self.armed = None
                self.release(n)


class _Pacer:
    """internal/lab/pace.go's pacer: the device idles at least _REP_GAP_S between the end of one
    timed repetition, as the host saw it, and the release of the next, in the peers as in the
    engine, so that a Python loop's longer host work does not give its runs more idle time, and so
    higher clocks under the power cap, than the lab's own variants get."""

    def __init__(self):
        self.last = None

    def wait(self):
        if self.last is None:
            return
        while time.perf_counter() - self.last < _REP_GAP_S:
            pass  # a spin: time.sleep overshoots 100 µs by tens of microseconds

    def ended(self):
        self.last = time.perf_counter()


_FLUSH_BUFFERS = {}  # the 4×L2 buffer a device, made once a process


class Peer:
    """One problem for one peer: the request, the device, a seeded generator, the check's result."""

    def __init__(self, req, torch, dist=None):
        self.req = req
        self.torch = torch
        self.dist = dist  # torch.distributed, joined, in a lab of ranks; else None
        ranks = req.get("ranks") or {}
        self.rank = int(ranks.get("rank", 0))
        self.world = int(ranks.get("size", 1))
        self.batch = None  # runs per timed batch (a lab of ranks)
        self.others_wrong = False  # a lab of ranks: this rank's check passed, another's did not
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
        if self.dist is not None:
            # Every rank goes on to time() only if every rank's check passed: a rank that alone
            # went on would wait in a collective the others never join.
            t = torch.tensor([0.0 if ok else 1.0], dtype=torch.float64, device=self.device)
            self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
            self.others_wrong = ok and t.item() > 0
            return ok and not self.others_wrong
        return ok

    def _flush(self):
        """What empties L2 before a repetition: a read of a 4×L2 buffer (a read leaves clean
        lines only, so the timed call writes back nothing of the flush's), or a no-op when the
        suite does not flush."""
        torch = self.torch
        if not self.req.get("flush_l2"):
            return lambda: None
        buf = _FLUSH_BUFFERS.get(self.device)
        if buf is None:
            l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or (50 << 20)
            buf = torch.ones(max(4 * l2, 1 << 20) // 4, dtype=torch.int32, device=self.device)
            _FLUSH_BUFFERS[self.device] = buf
        return lambda: buf.sum()

    def time(self, fn, poison=None):
        """Times fn() with CUDA events as the engine does; needs a passing check first. In a lab
        of ranks, poison() (when given) refills the outputs before every batch, outside the
        events, so that a check after time() sees the last batch's work and nothing older."""
        if self.report is None or not self.report["ok"]:
            raise RuntimeError("time() before a passing check(): correct first")
        if self.dist is not None:
            return self._time_ranks(fn, poison)
        torch = self.torch
        b = self.req["bench"]
        flush, hold = self._flush(), _Hold.of(torch, self.device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)

        def run():
            start.record()
            fn()
            end.record()

        pace = _Pacer()

        def rep():
            flush()
            hold.queued(run, pace)
            end.synchronize()
            pace.ended()
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

    def _time_ranks(self, fn, poison):
        """The engine's timing of a collective (internal/lab/ranks_time.go), in torch: every step
        between batches is an all-reduce (max) of this rank's last batch time and rank 0's
        decision whether another batch follows, read back on the host, so it is also the host
        barrier before the next batch."""
        torch, dist = self.torch, self.dist
        b, rk = self.req["bench"], self.req["ranks"]
        flush, hold = self._flush(), _Hold.of(torch, self.device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)

        def step(ms, more):
            t = torch.tensor([ms, 1.0 if (self.rank == 0 and more) else 0.0], dtype=torch.float64, device=self.device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            slowest, nxt = t.tolist()
            return slowest, nxt > 0

        def batch(k):
            if poison is not None:
                poison()
            flush()

            def run():
                start.record()
                for _ in range(k):
                    fn()
                end.record()

            hold.queued(run)
            end.synchronize()
            ms = start.elapsed_time(end)
            if not (ms > 0) or math.isinf(ms):
                raise RuntimeError("the CUDA event timer gave %r ms" % ms)
            return ms / k

        step(0.0, True)  # a barrier, then a first batch of one call, whose slowest time sets K
        t1, _ = step(batch(1), True)
        k = int(math.ceil(float(rk["batch_target_ms"]) / t1)) if t1 > 0 else 1
        k = min(max(k, 1), max(int(rk["max_batch"]), 1))
        if hold.available:
            k = min(k, _MAX_HELD_BATCH)
        began, i = time.monotonic(), 0
        while True:  # warm-up batches
            more = (i < b["warmup"] or (time.monotonic() - began) * 1e3 < b["warmup_min_ms"]) and i < 1000
            _, nxt = step(0.0, more)
            if not nxt:
                break
            batch(k)
            i += 1
        samples, ms = [], 0.0
        began, i = time.monotonic(), 0
        while True:  # timed batches until rank 0's budget is spent
            more = i < max(b["max_reps"], 1) and (i < max(b["min_reps"], 1) or (time.monotonic() - began) * 1e3 < b["budget_ms"])
            slowest, nxt = step(ms, more)
            if i > 0:
                samples.append(slowest)
            if not nxt:
                break
            ms = batch(k)
            i += 1
        self.samples, self.batch = samples, k


def join_ranks(req, torch):
    """Joins this rank's torch.distributed group (NCCL) in a lab of ranks; None in a lab of one
    process. The device is bound first, as NCCL needs."""
    rk = req.get("ranks")
    if not rk:
        return None
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        raise Skip("this torch has no torch.distributed with NCCL: a peer of ranks needs it")
    device = torch.device("cuda", int(req["device"]))
    torch.cuda.set_device(device)
    kw = dict(backend="nccl", init_method=rk["init_method"], rank=int(rk["rank"]), world_size=int(rk["size"]),
              timeout=datetime.timedelta(seconds=float(rk["timeout_s"])))
    try:
        dist.init_process_group(device_id=device, **kw)
    except TypeError:  # torch before 2.3 takes no device_id
        dist.init_process_group(**kw)
    return dist


def versions(torch):
    v = {"torch": torch.__version__, "cuda": torch.version.cuda}
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_initialized() and hasattr(torch.cuda, "nccl"):
        try:
            nv = torch.cuda.nccl.version()  # a tuple (2, 21, 5); an int (2708) in old torch
            v["nccl"] = ".".join(str(x) for x in nv) if isinstance(nv, tuple) else str(nv)
        except Exception:
            pass
    tr = sys.modules.get("triton")
    if tr is not None:
        v["triton"] = tr.__version__
    return v


def main(run, needs=("torch",), stdin=None, out=None):
    """Reads the request, runs run(peer) and prints the reply; returns the reply (for tests).
    Under KLPEER_SERVE=1 (and no stdin given) it serves requests until stdin closes."""
    if stdin is None and os.environ.get("KLPEER_SERVE") == "1":
        return serve(run, needs)
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
    dist = None
    try:
        dist = join_ranks(req, torch)
        peer = Peer(req, torch, dist)
        run(peer)
    except Skip as e:
        return _end(dist, {"status": "skipped", "error": str(e)}, out, clean=False)
    except Exception as e:
        return _end(dist, {"status": "failed", "error": "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()[-1500:])}, out, clean=False)
    reply = {"versions": versions(torch)}
    if peer.report is None:
        reply.update(status="failed", error="the peer never checked its output (peer.check)")
    elif not peer.report["ok"]:
        reply.update(status="wrong", check=peer.report)
    elif peer.others_wrong:
        reply.update(status="failed", error="another rank's check failed (its entry says which): not timed", check=peer.report)
    elif not peer.samples:
        reply.update(status="failed", error="the peer never timed itself (peer.time)", check=peer.report)
    else:
        reply.update(status="ok", check=peer.report, samples_ms=peer.samples)
        if peer.batch:
            reply["batch"] = peer.batch
    return _end(dist, reply, out, clean=True)


def serve(run, needs=("torch",), stdin=None, out=None):
    """Answers one request a line of stdin with one reply a line of the real stdout, until stdin
    closes. Anything the script or its libraries print goes to stderr, so that stdout carries
    replies alone; between problems the peer's device memory goes back to the driver."""
    if out is None:
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    stdin = stdin or sys.stdin
    while True:
        line = stdin.readline()
        if not line:
            return _REPLY
        if line.strip():
            main(run, needs, stdin=io.StringIO(line), out=out)
            _between_problems()


def _between_problems():
    """Frees what the last problem left: its tensors, then the caching allocator's blocks."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
        except Exception as e:  # a spoiled context: the reply said failed, and labrun restarts us
            sys.stderr.write("klpeer: freeing the problem's memory: %s\n" % e)


def _end(dist, reply, out, clean):
    """Prints the reply. A peer of ranks leaves its group: cleanly when every rank got through
    run() alike (clean); after an error it exits at once instead, since the other ranks may wait in
    a collective that this one will never join (their group's timeout ends them)."""
    if dist is not None and clean:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    emit(reply, out)
    if dist is not None and not clean:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return _REPLY
