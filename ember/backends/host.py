"""Host-array helpers: NumPy work on host data that is no tensor's computation.

A user's nested list or DLPack capsule turned into an array, constants built on the host and then
copied to the tensor's device (arange, eye, a causal mask), values already copied out for printing,
checkpoint buffers, host-side samplers. Keeping them here holds the rule that NumPy array calls appear
only under ember/backends/ (tests/test_lint.py); a tensor's own math goes through primitives and `xp`.
"""
from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["array", "asarray", "from_dlpack", "full", "zeros", "ones", "empty", "eye", "arange", "linspace",
           "logspace", "tril_indices", "triu_indices", "triu_mask", "orthogonal", "erfinv", "clip",
           "contiguous", "format_array", "window", "uint64_words", "all_finite"]


# --- converting user data ---------------------------------------------------------------------
def array(data, dtype=None, copy=True):
    return np.array(data, dtype=dtype, copy=copy)


asarray = np.asarray   # no wrapper: Primitive.apply calls it on every NumPy scalar result


def from_dlpack(ext):
    return np.from_dlpack(ext)


def contiguous(a):
    """A C-contiguous host array of `a`'s values and shape (np.ascontiguousarray makes a 0-d array 1-d)."""
    out = np.ascontiguousarray(a)
    return out.reshape(()) if out.shape != np.shape(a) else out


# --- constants built on the host ---------------------------------------------------------------
def full(shape, value, dtype):
    return np.full(shape, value, dtype=dtype) if value != 0 else np.zeros(shape, dtype=dtype)


def zeros(shape, dtype):
    return np.zeros(shape, dtype=dtype)


def ones(shape, dtype):
    return np.ones(shape, dtype=dtype)


def empty(shape, dtype):
    return np.empty(shape, dtype)


def eye(n, m=None, dtype=None):
    return np.eye(n, m, dtype=dtype)


def arange(start, end, step, dtype, floating: bool):
    """torch.arange's values: counted in float64 for a float dtype (as torch), then cast."""
    return np.arange(start, end, step, dtype=np.float64 if floating else None).astype(dtype)


def linspace(start, end, steps, dtype):
    return np.linspace(start, end, steps).astype(dtype)


def logspace(start, end, steps, base, dtype):
    return np.logspace(start, end, steps, base=base).astype(dtype)


def tril_indices(row, col, offset=0):
    return np.stack(np.tril_indices(row, offset, col)).astype(np.int64)


def triu_indices(row, col, offset=0):
    return np.stack(np.triu_indices(row, offset, col)).astype(np.int64)


def triu_mask(size):
    """(size, size) float64: -inf above the diagonal, 0 elsewhere (a causal attention mask)."""
    return np.triu(np.full((size, size), -np.inf), 1)


def uint64_words(*values):
    """Python ints as little-endian uint64 words."""
    return np.array(values, dtype=np.uint64).astype("<u8")


# --- host-side numerics (initialisers that run on the host, then copy in) ----------------------
def orthogonal(flat):
    """The Q of flat's QR with R's diagonal made positive (a uniformly distributed orthogonal matrix)."""
    q, r = np.linalg.qr(flat)
    return q * np.sign(np.diag(r))


def erfinv(y):
    """Inverse error function on an array: a rational first guess refined by Newton steps on erf."""
    y = np.asarray(y, dtype=np.float64)
    a = 0.147
    ln = np.log1p(-y * y)
    t = 2 / (math.pi * a) + ln / 2
    x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    erf = np.vectorize(math.erf)
    for _ in range(3):
        x = x - (erf(x) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    return x


def clip(a, lo, hi):
    return np.clip(a, lo, hi)


def all_finite(a) -> bool:
    return bool(np.isfinite(a).all())


# --- window functions (ember/ops/windows.py): symmetric windows of `points` > 1 points, in float64 ----------
def window(kind: str, points: int, alpha: float = 0.54, beta: float = 0.46):
    """hamming (alpha - beta cos), blackman, bartlett or kaiser (beta) at n = 0 .. points - 1."""
    n = np.arange(points, dtype=np.float64)
    x = 2 * np.pi * n / (points - 1)
    if kind == "hamming":
        return alpha - beta * np.cos(x)
    if kind == "blackman":
        return 0.42 - 0.5 * np.cos(x) + 0.08 * np.cos(2 * x)
    if kind == "bartlett":
        return 1 - np.abs(2 * n / (points - 1) - 1)
    a = (points - 1) / 2   # kaiser
    return np.i0(beta * np.sqrt(np.clip(1 - ((n - a) / a) ** 2, 0, None))) / np.i0(beta)


# --- printing values already copied to the host ------------------------------------------------
def _padded(fmt, a):
    # torch right-aligns every element to the widest one: tensor([ 0.1235, 10.5000]); for floats `a` holds
    # the nonzero finite values only, so nan, inf and -0. are never wider than those (tensor([1., nan]))
    width = max((len(fmt(v)) for v in a.flat), default=1)
    return lambda v: fmt(v).rjust(width)


def _formatter(a: np.ndarray, precision: int, sci_mode):
    """torch's _Formatter: integers with a dot when every value is whole, e-notation when the nonzero
    finite values span more than 1000x or leave [1e-4, 1e8] (or as `sci_mode` forces), else fixed."""
    if a.dtype.kind == "b":
        return {"bool": _padded(lambda v: "True" if v else "False", a)}
    if a.dtype.kind in "iu":
        return None
    nonzero = a[np.isfinite(a) & (a != 0)].astype(np.float64) if a.size else a
    if nonzero.size == 0:
        int_mode, sci = True, False
    else:
        lo, hi = np.abs(nonzero).min(), np.abs(nonzero).max()
        int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        sci = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if sci_mode is None else bool(sci_mode)
    if sci:
        fmt = lambda v: f"{v:.{precision}e}"  # noqa: E731
    elif int_mode:
        fmt = lambda v: f"{v:.0f}." if np.isfinite(v) else f"{v:.0f}"  # noqa: E731
    else:
        fmt = lambda v: f"{v:.{precision}f}"  # noqa: E731
    return {"float_kind": _padded(fmt, nonzero)}


def format_array(a, prefix: str, precision: int = 4, threshold: float = 1000, edgeitems: int = 3,
                 linewidth: int = 80, sci_mode=None) -> str:
    """torch's layout of a host array's values (the options of `ember.set_printoptions`)."""
    threshold = sys.maxsize if threshold == math.inf else int(threshold)
    text = np.array2string(a, separator=", ", prefix=prefix, formatter=_formatter(a, precision, sci_mode),
                           threshold=threshold, edgeitems=edgeitems, max_line_width=linewidth)
    return text.replace(", ...,", ",  ...,")   # torch's summary item is " ..." after the separator
