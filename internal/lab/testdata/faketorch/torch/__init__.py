"""A fake torch for testing klpeer.py's lab-of-ranks path where torch is not installed: just
the calls klpeer and lab 05's peer make, on small row-major tensors of floats, a clock that the test's work advances (the
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
        import random
        self._random = random.Random(0)

    def manual_seed(self, s):
        self._random.seed(s)
        return self


class Tensor:
    """A row-major tensor of one or two dimensions, as a flat list of floats."""

    def __init__(self, data, dtype=float32, shape=None):
        self.data, self.dtype = [float(x) for x in data], dtype
        self.shape = tuple(shape) if shape is not None else (len(self.data),)

    def _like(self, data, dtype=None):
        return Tensor(data, dtype or self.dtype, self.shape)

    def detach(self):
        return self

    def to(self, dtype):
        return self._like(self.data, dtype)

    def double(self):
        return self.to(float64)

    def clone(self):
        return self._like(self.data)

    def contiguous(self):
        return self

    def reshape(self, *shape):
        return Tensor(self.data, self.dtype)

    def numel(self):
        return len(self.data)

    def fill_(self, x):
        self.data = [float(x)] * len(self.data)
        return self

    def __getitem__(self, key):
        rows, cols = (key if isinstance(key, tuple) else (key, slice(None)))
        m, n = self.shape
        ri, ci = range(m)[rows], range(n)[cols]
        return Tensor([self.data[i * n + j] for i in ri for j in ci], self.dtype, (len(ri), len(ci)))

    def __matmul__(self, other):
        (m, k), (k2, n) = self.shape, other.shape
        if k != k2:
            raise ValueError("fake torch: %r @ %r" % (self.shape, other.shape))
        a, b = self.data, other.data
        return Tensor([sum(a[i * k + p] * b[p * n + j] for p in range(k)) for i in range(m) for j in range(n)],
                      self.dtype, (m, n))

    def _zip(self, other, f):
        if isinstance(other, Tensor):
            return self._like([f(a, b) for a, b in zip(self.data, other.data)])
        return self._like([f(a, other) for a in self.data])

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._zip(other, lambda a, b: a * b)

    def __invert__(self):
        return self._like([0.0 if x else 1.0 for x in self.data], bool_)

    def sum(self):
        return Tensor([sum(self.data)], self.dtype)

    def abs(self):
        return self._like([abs(x) for x in self.data])

    def max(self):
        return Tensor([max(self.data)], self.dtype)

    def item(self):
        return self.data[0]

    def tolist(self):
        return list(self.data)


def tensor(data, dtype=float32, device=None):
    return Tensor(data, dtype)


def rand(shape, generator=None, device=None, dtype=float32):
    g = generator._random
    return Tensor([g.random() for _ in range(math.prod(shape))], dtype, shape)


def empty(shape, dtype=float32, device=None):
    return Tensor([float("nan")] * math.prod(shape), dtype, shape)


def empty_like(t):
    return empty(t.shape, t.dtype)


def matmul(a, b, out=None):
    """a @ b, which advances the events' clock by 0.25 ms."""
    cuda.work(0.25)
    c = a @ b
    if out is not None:
        if out.shape != c.shape:
            raise ValueError("fake torch: matmul out %r for %r" % (out.shape, c.shape))
        out.data = c.data
        return out
    return c


def set_float32_matmul_precision(p):
    pass


class backends:
    class cuda:
        class matmul:
            allow_tf32 = True


def isfinite(t):
    return t._like([1.0 if math.isfinite(x) else 0.0 for x in t.data], bool_)


def zeros_like(t):
    return t._like([0.0] * len(t.data))


def where(cond, a, b):
    return a._like([x if c else y for c, x, y in zip(cond.data, a.data, b.data)])


class linalg:
    @staticmethod
    def vector_norm(t):
        return Tensor([math.sqrt(sum(x * x for x in t.data))], t.dtype)


class cuda:
    clock_ms = 0.0  # advanced by work() (and matmul): what the events read

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def set_device(d):
        pass

    @staticmethod
    def work(ms):
        cuda.clock_ms += ms

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def empty_cache():
        pass

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
