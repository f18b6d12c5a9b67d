"""A fake torch for testing klpeer.py's lab-of-ranks path where torch is not installed: just
the calls klpeer makes, on flat lists of floats, a clock that the test's work advances (the
CUDA events read it), and torch.distributed as a world of one (distributed.py)."""

import math
import sys

__version__ = "0.0-fake"
float32, float64, uint8, bool_ = "float32", "float64", "uint8", "bool"


class _Version:
    cuda = "0.0-fake"


version = _Version()


class device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class Generator:
    def __init__(self, device=None):
        self.seed = None

    def manual_seed(self, s):
        self.seed = s
        return self


class Tensor:
    def __init__(self, data, dtype=float32):
        self.data, self.dtype = [float(x) for x in data], dtype

    def detach(self):
        return self

    def to(self, dtype):
        return Tensor(self.data, dtype)

    def reshape(self, *shape):
        return self

    def numel(self):
        return len(self.data)

    def __sub__(self, other):
        return Tensor([a - b for a, b in zip(self.data, other.data)], self.dtype)

    def __invert__(self):
        return Tensor([0.0 if x else 1.0 for x in self.data], bool_)

    def sum(self):
        return Tensor([sum(self.data)], self.dtype)

    def abs(self):
        return Tensor([abs(x) for x in self.data], self.dtype)

    def max(self):
        return Tensor([max(self.data)], self.dtype)

    def item(self):
        return self.data[0]

    def tolist(self):
        return list(self.data)


def tensor(data, dtype=float32, device=None):
    return Tensor(data, dtype)


def isfinite(t):
    return Tensor([1.0 if math.isfinite(x) else 0.0 for x in t.data], bool_)


def zeros_like(t):
    return Tensor([0.0] * len(t.data), t.dtype)


def where(cond, a, b):
    return Tensor([x if c else y for c, x, y in zip(cond.data, a.data, b.data)], a.dtype)


class linalg:
    @staticmethod
    def vector_norm(t):
        return Tensor([math.sqrt(sum(x * x for x in t.data))], t.dtype)


class cuda:
    clock_ms = 0.0  # advanced by work(): what the events read

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def set_device(d):
        pass

    @staticmethod
    def work(ms):
        cuda.clock_ms += ms

    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = cuda.clock_ms

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.at - self.at

    class nccl:
        @staticmethod
        def version():
            return (0, 0, 0)


from . import distributed  # noqa: E402  (torch.distributed, as `import torch.distributed` finds it)
