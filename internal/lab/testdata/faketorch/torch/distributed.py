"""torch.distributed for the fake torch: a world of one that checks init_process_group's
arguments. FAKE_TORCH_OTHER_CHECK_FAILS=1 plays another rank whose check failed (it adds 1 to
every one-element MAX all-reduce, which is how klpeer agrees on the checks)."""

import datetime
import os

_group = None
calls = []


class ReduceOp:
    MAX = "max"


def is_available():
    return True


def is_nccl_available():
    return True


def is_initialized():
    return _group is not None


def init_process_group(backend=None, init_method=None, rank=None, world_size=None, timeout=None, device_id=None):
    global _group
    if backend != "nccl" or not isinstance(rank, int) or world_size != 1 or rank != 0:
        raise ValueError("fake torch: want nccl, rank 0 of 1, got %r %r %r" % (backend, rank, world_size))
    if not (init_method or "").startswith(("tcp://", "file://")):
        raise ValueError("fake torch: init_method %r" % init_method)
    if not isinstance(timeout, datetime.timedelta) or timeout.total_seconds() <= 0:
        raise ValueError("fake torch: timeout %r" % timeout)
    if device_id is None:
        raise ValueError("fake torch: no device_id")
    _group = (init_method, rank, world_size)


def all_reduce(t, op=None):
    if _group is None:
        raise RuntimeError("fake torch: all_reduce before init_process_group")
    calls.append(("all_reduce", len(t.data)))
    if len(t.data) == 1 and os.environ.get("FAKE_TORCH_OTHER_CHECK_FAILS") == "1":
        t.data[0] = max(t.data[0], 1.0)


def all_gather_into_tensor(out, mine):
    calls.append(("all_gather_into_tensor", len(mine.data)))
    out.data = list(mine.data)  # a world of one: the gathered tensor is this rank's block


def reduce_scatter_tensor(out, part):
    calls.append(("reduce_scatter_tensor", len(part.data)))
    out.data = list(part.data)  # a world of one: the sum is this rank's partial, all its rows


def destroy_process_group():
    global _group
    _group = None
