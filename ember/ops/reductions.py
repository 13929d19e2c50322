"""Reductions as torch's: those that skip NaN, aminmax, diff; order statistics (median, quantile, mode);
running scans (cummax, cummin, logcumsumexp); counting (bincount, histc, histogram, histogramdd); renorm and
Tensor.sum_to_size; the trapezoidal rule (trapezoid, cumulative_trapezoid) and finite differences (gradient).
Composites of ember.ops.math, shape and creation (no backward of their own). Re-exported by `ember` and
bound as Tensor methods."""
from __future__ import annotations

import collections
import math

import numpy as np

from .. import _dtype
from .._errors import check_same_device, describe, op_error
from .._dims import numpy_names, wrap_dim
from .._tensor import Tensor
from . import creation as C
from . import math as M
from . import shape as S
from ..amp import autocast_op

__all__ = ["nansum", "nanmean", "aminmax", "diff", "median", "nanmedian", "quantile", "nanquantile", "mode",
           "cummax", "cummin", "logcumsumexp", "bincount", "histc", "renorm", "cov", "corrcoef", "trapezoid",
           "cumulative_trapezoid", "gradient", "histogram", "histogramdd"]
# torch.* functions that torch.Tensor has no method for
FUNCTIONS_ONLY = ("trapezoid", "cumulative_trapezoid", "gradient", "histogramdd")

_MinMax = collections.namedtuple("aminmax", ["min", "max"])  # type: ignore[name-match]  # torch's type name, shown in repr


@numpy_names
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum treating NaN as zero."""
    if input.dtype.is_floating_point:
        input = M.where(M.isnan(input), 0.0, input)
    return M.sum(input, dim, keepdim, dtype=dtype)


@numpy_names
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """mean of the non-NaN elements (NaN where there are none)."""
    if not input.dtype.is_floating_point:   # checked before `dtype` casts, as torch
        raise op_error("nanmean", f"expected input to have floating point dtype but got {describe(input)}")
    if dtype is not None:
        input = input.to(dtype)
    count = M.sum((~M.isnan(input)).to(input.dtype), dim, keepdim)
    return nansum(input, dim, keepdim) / count


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over `dim` (all elements by default) in one call."""
    d = () if dim is None else dim
    return _MinMax(M.amin(input, d, keepdim), M.amax(input, d, keepdim))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim` (with `prepend` / `append` joined first)."""
    if input.ndim == 0:
        raise op_error("diff", "expects input to be at least one-dimensional")
    if n < 0:
        raise op_error("diff", f"order must be non-negative but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = S.cat(parts, dim) if len(parts) > 1 else input
    if n == 0 and x is input:
        return S.clone(input)   # a new tensor, as torch's, never the input itself
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        a, b = S.narrow(x, dim, 1, length - 1), S.narrow(x, dim, 0, length - 1)
        x = M.logical_xor(a, b) if x.dtype.name == "bool" else a - b
    return x


# ------------------------------------------------------------------ order statistics: median, quantile, mode
# All are composites of a stable sort (NaN last, ties in index order) and gathers, so the gradient flows to
# the selected elements as torch's does, with no backward of their own.

_Median = collections.namedtuple("median", ["values", "indices"])  # type: ignore[name-match]  # torch's type name, shown in repr
_NanMedian = collections.namedtuple("nanmedian", ["values", "indices"])  # type: ignore[name-match]  # torch's type name, shown in repr
_Mode = collections.namedtuple("mode", ["values", "indices"])  # type: ignore[name-match]  # torch's type name, shown in repr
_CumMax = collections.namedtuple("cummax", ["values", "indices"])  # type: ignore[name-match]  # torch's type name, shown in repr
_CumMin = collections.namedtuple("cummin", ["values", "indices"])  # type: ignore[name-match]  # torch's type name, shown in repr

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _no_bool(op, input):
    if input.dtype.name == "bool":
        raise op_error(op, f"is not implemented for bool input {describe(input)} (as torch); convert it "
                           f"with .int() first", NotImplementedError)


def _check_nonempty_dim(op, input, d):
    if input.ndim and input.shape[d] == 0:
        raise op_error(op, f"Expected reduction dim {d} to have non-zero size (input shape "
                           f"{tuple(input.shape)})", IndexError)


def _median_position(sorted_x, ignore_nan):
    """The position, along the last dim of `sorted_x` (ascending, NaN last), of torch's median: the lower
    middle of the values; median: the first NaN if there is one; nanmedian: the lower middle of the non-NaN
    values (the first NaN when all are NaN). int64, keeps the last dim as 1."""
    n = sorted_x.shape[-1]
    if not sorted_x.dtype.is_floating_point:
        return C.full(sorted_x.shape[:-1] + (1,), (n - 1) // 2, dtype=_dtype.int64, device=sorted_x.device)
    nans = M.sum(M.isnan(sorted_x), -1, keepdim=True)                      # (..., 1)
    if ignore_nan:
        m = n - nans
        return M.where(m > 0, M.floor_divide(m - 1, 2), 0)
    return M.where(nans > 0, n - nans, (n - 1) // 2)


def _evenly_shared(input, value):
    """`value` (the median of all of `input`, exact) whose gradient is shared evenly among the elements equal
    to it (the NaNs when it is NaN), as torch's median() and nanmedian() without a dim."""
    x = input.reshape(-1)
    mask = M.where(M.isnan(value), M.isnan(x), x == value)
    share = M.sum(M.where(mask, x, 0.0) / M.sum(mask))   # == value up to rounding, with the gradient wanted
    # the exact value plus share's gradient; where value is inf or NaN, share is exact itself
    finite = M.isfinite(value)
    tied = M.where(finite, share, 0.0)                  # no inf - inf below
    return M.where(finite, value + (tied - tied.detach()), share)


def _median(op, input, dim, keepdim, ignore_nan):
    _no_bool(op, input)
    if dim is None:
        if input.numel() == 0:   # torch: NaN (an integer input gets NaN's cast, the type's minimum)
            fill = float("nan") if input.dtype.is_floating_point else int(np.iinfo(input.dtype.np).min)
            return C.full((), fill, dtype=input.dtype, device=input.device)
        flat = input.detach().reshape(-1)
        s = S.sort(flat).values
        value = S.gather(s, 0, _median_position(s, ignore_nan)).reshape(())
        if not (input.requires_grad and input.dtype.is_floating_point):
            return value
        return _evenly_shared(input, value)
    d = wrap_dim(dim, input.ndim, op)
    result = _NanMedian if ignore_nan else _Median
    if input.ndim == 0:
        return result(S.clone(input), C.zeros((), dtype=_dtype.int64, device=input.device))
    _check_nonempty_dim(op, input, d)
    s = S.sort(S.movedim(input.detach(), d, -1))
    index = S.gather(s.indices, -1, _median_position(s.values, ignore_nan))   # (..., 1)
    return _select(result, input, d, S.movedim(index, -1, d), keepdim)


def _select(result, input, d, index, keepdim):
    """(values, indices) of the elements of `input` at `index` (size 1 along d): the values by a gather, so
    the gradient reaches exactly those elements (torch's rule for median, mode, kthvalue with a dim)."""
    values = S.gather(input, d, index)
    if not keepdim:
        values, index = S.squeeze(values, d), S.squeeze(index, d)
    return result(values, index)


@numpy_names
def median(input, dim=None, keepdim=False):
    """The lower median: of all values (a 0-d tensor; NaN if there is a NaN), or along `dim` as a named
    (values, indices) pair, the index being that of the median in a stable sort (the first NaN, if any).

    >>> ember.median(ember.tensor([3.0, 1.0, 2.0, 4.0])).item()
    2.0
    >>> ember.median(ember.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]]), dim=1).indices.tolist()
    [2, 1]
    """
    return _median("median", input, dim, keepdim, ignore_nan=False)


@numpy_names
def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN: the lower median of the non-NaN values (NaN where all are NaN).

    >>> ember.nanmedian(ember.tensor([float("nan"), 3.0, 1.0])).item()
    1.0
    """
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


def _quantile_checks(op, input, q, interpolation):
    """torch's checks, in torch's order; returns q as a 1-D tensor of input's dtype and whether it was a scalar."""
    scalar = not isinstance(q, Tensor)
    if scalar and not 0 <= q <= 1:   # NaN fails too
        raise op_error(op, f"q must be in the range [0, 1] but got {q:g}")
    if interpolation not in _INTERPOLATIONS:
        raise op_error(op, f"interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                           f"{interpolation!r}")
    if input.numel() == 0:
        raise op_error(op, f"input tensor must be non-empty, got {describe(input)}")
    if not scalar and q.ndim > 1:
        raise op_error(op, f"q must be a scalar or 1D tensor, got shape {tuple(q.shape)}")
    if input.dtype.name not in ("float32", "float64"):
        raise op_error(op, f"input tensor must be either float or double dtype, got {describe(input)}")
    if scalar:
        return C.tensor([float(q)], dtype=input.dtype, device=input.device), True
    if q.dtype is not input.dtype:
        raise op_error(op, f"q tensor must be same dtype as the input tensor: q {q.dtype.name}, input "
                           f"{input.dtype.name}")
    check_same_device(op, input, q, "q")
    return q.reshape(-1), q.ndim == 0


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    qs, scalar = _quantile_checks(op, input, q, interpolation)
    if dim is None:
        x = input.reshape(-1)
    else:
        d = wrap_dim(dim, input.ndim, op)
        x = S.movedim(input, d, -1) if input.ndim else input.reshape(1)
    if qs.numel() and not bool(M.all((qs >= 0) & (qs <= 1)).item()):
        raise op_error(op, f"q values must be in the range [0, 1], got {qs.tolist()}")
    s = S.sort(x).values                                     # (..., n), NaN last
    n = s.shape[-1]
    if ignore_nan:   # ranks among the non-NaN values; all NaN: rank 0, a NaN
        ranks = qs * (M.sum(~M.isnan(s.detach()), -1, keepdim=True) - 1)   # (..., m)
        ranks = M.where(ranks < 0, 0.0, ranks)
    else:            # a NaN in the row: the last rank, a NaN
        ranks = M.where(M.any(M.isnan(s.detach()), -1, keepdim=True), float(n - 1), qs * (n - 1))
    if interpolation in ("lower", "higher", "nearest"):
        rounded = {"lower": M.floor, "higher": M.ceil, "nearest": M.round}[interpolation](ranks.detach())
        out = S.gather(s, -1, rounded.long())
    else:
        below = ranks.detach().long()
        if interpolation == "linear":
            weights = ranks - below                      # q's gradient flows here, as torch's
        else:
            weights = (ranks.detach() > below).to(s.dtype) * 0.5
        lo, hi = S.gather(s, -1, below), S.gather(s, -1, M.ceil(ranks.detach()).long())
        # torch's lerp, from the nearer end (values equal to its to the last bit)
        out = M.where(weights < 0.5, lo + weights * (hi - lo), hi - (hi - lo) * (1 - weights))
    out = S.movedim(out, -1, 0)                              # (m, ...)
    if keepdim:
        if dim is None:
            out = out.reshape(out.shape[:1] + (1,) * input.ndim)
        elif input.ndim:
            out = S.unsqueeze(out, d + 1)
    return out.reshape(out.shape[1:]) if scalar else out


@numpy_names
@autocast_op("fp32")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of `input` (flattened, or along `dim`): a float q gives the reduced shape, a 1-D
    tensor q a leading dim of len(q). Between two values, `interpolation` picks 'linear', 'lower',
    'higher', 'midpoint' or 'nearest' (ties to even). A NaN in a row makes its quantiles NaN.

    >>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), 0.5).item()
    2.5
    >>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), ember.tensor([0.0, 1.0])).tolist()
    [1.0, 4.0]
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@numpy_names
@autocast_op("fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile of the non-NaN values (NaN where a row is all NaN).

    >>> ember.nanquantile(ember.tensor([1.0, float("nan"), 3.0]), 0.5).item()
    2.0
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


@numpy_names
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along `dim` and its index, as a named (values, indices) pair. Of values
    equally frequent, the smallest; its index is that of its last occurrence (torch's CPU kernel gives
    that for rows of up to 16 elements, and any occurrence for longer ones). Each NaN counts once.

    >>> ember.mode(ember.tensor([2.0, 1.0, 2.0, 1.0, 3.0])).values.item()
    1.0
    """
    d = wrap_dim(dim, input.ndim, "mode")
    if input.ndim == 0:
        return _Mode(S.clone(input), C.zeros((), dtype=_dtype.int64, device=input.device))
    _check_nonempty_dim("mode", input, d)
    s = S.sort(S.movedim(input.detach(), d, -1))             # (..., n), equal values side by side
    v, n = s.values, s.values.shape[-1]
    edge = C.ones(v.shape[:-1] + (1,), dtype=_dtype.bool, device=v.device)
    changes = S.narrow(v, -1, 1, n - 1) != S.narrow(v, -1, 0, n - 1)        # NaN != NaN: each its own run
    starts, ends = S.cat([edge, changes], -1), S.cat([changes, edge], -1)
    pos = C.arange(n, device=v.device).expand(v.shape)
    first = cummax(M.where(starts, pos, 0), -1).values      # where each position's run starts
    counts = M.where(ends, pos - first + 1, 0)              # a run's length, at its last element
    best = M.argmax(counts, -1, keepdim=True)                # the first longest run: the smallest value
    return _select(_Mode, input, d, S.movedim(S.gather(s.indices, -1, best), -1, d), keepdim)


# ------------------------------------------------------------------ scans: cummax, cummin, logcumsumexp
# Hillis-Steele scans along the last dim: log2(n) steps, each combining every element with the one k
# places before it (k = 1, 2, 4, ...), written with whole-tensor ops.

def _running_extreme_index(x, is_max):
    """int64 indices (along the last dim of x, no gradient) of torch's cummax (cummin) element: the
    largest (smallest) so far, the later one among equals; a NaN wins and stays, the later among NaNs."""
    n = x.shape[-1]
    v, index = x, C.arange(n, device=x.device).expand(x.shape)
    k = 1
    while k < n:
        a, b = S.narrow(v, -1, 0, n - k), S.narrow(v, -1, k, n - k)        # a: k places earlier
        keep_a = a > b if is_max else a < b                                  # False with a NaN on either side
        if x.dtype.is_floating_point:
            keep_a = keep_a | (M.isnan(a) & ~M.isnan(b))
        v = S.cat([S.narrow(v, -1, 0, k), M.where(keep_a, a, b)], -1)
        index = S.cat([S.narrow(index, -1, 0, k),
                       M.where(keep_a, S.narrow(index, -1, 0, n - k), S.narrow(index, -1, k, n - k))], -1)
        k *= 2
    return index


def _cum_extreme(op, result, input, dim, is_max):
    d = wrap_dim(dim, input.ndim, op)
    if input.ndim == 0:
        return result(S.clone(input), C.zeros((), dtype=_dtype.int64, device=input.device))
    index = _running_extreme_index(S.movedim(input.detach(), d, -1), is_max)
    index = S.movedim(index, -1, d)
    return result(S.gather(input, d, index), index)   # the gradient adds up at each selected element


@numpy_names
def cummax(input, dim):
    """The running maximum along `dim` and where it was found, as a named (values, indices) pair (the
    later index among equal values; a NaN propagates, with the index of the latest NaN).

    >>> ember.cummax(ember.tensor([1.0, 3.0, 2.0, 3.0]), 0).indices.tolist()
    [0, 1, 1, 3]
    """
    return _cum_extreme("cummax", _CumMax, input, dim, is_max=True)


@numpy_names
def cummin(input, dim):
    """The running minimum along `dim` and where it was found (as cummax).

    >>> ember.cummin(ember.tensor([2.0, 3.0, 1.0, 1.0]), 0).values.tolist()
    [2.0, 2.0, 1.0, 1.0]
    """
    return _cum_extreme("cummin", _CumMin, input, dim, is_max=False)


def _log_add_exp(a, b):
    """log(exp(a) + exp(b)) as torch's scan computes it: equal infinities give themselves, NaN propagates."""
    a_big = a >= b                                   # False with a NaN: then hi or lo is the NaN
    hi, lo = M.where(a_big, a, b), M.where(a_big, b, a)
    same_inf = (hi == lo) & M.isinf(hi)
    # gap 0 there, not inf - inf: log(2) + inf is the infinity itself, and no NaN enters the gradient
    gap = M.where(same_inf, 0.0, lo) - M.where(same_inf, 0.0, hi)
    return M.log1p(M.exp(gap)) + hi


@numpy_names
def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along `dim`, without overflow or underflow.

    >>> [round(v, 4) for v in ember.logcumsumexp(ember.tensor([0.0, 0.0, 0.0]), 0).tolist()]
    [0.0, 0.6931, 1.0986]
    """
    d = wrap_dim(dim, input.ndim, "logcumsumexp")
    if not input.dtype.is_floating_point:
        raise op_error("logcumsumexp", f"is not implemented for {describe(input)} (as torch); convert it "
                                       f"with .float() first", NotImplementedError)
    if input.ndim == 0:
        return S.clone(input)
    y = S.movedim(input, d, -1)
    n = y.shape[-1]
    k = 1
    while k < n:
        y = S.cat([S.narrow(y, -1, 0, k), _log_add_exp(S.narrow(y, -1, 0, n - k), S.narrow(y, -1, k, n - k))], -1)
        k *= 2
    return S.movedim(y, -1, d)


# ------------------------------------------------------------------ counting, sum_to_size, renorm
def bincount(input, weights=None, minlength=0):
    """How many times each value 0, 1, ..., max(input) occurs in the 1-D non-negative integer `input`
    (at least `minlength` bins); with `weights`, their sum per value instead (float32 weights give
    float32, any other dtype float64, as torch).

    >>> ember.bincount(ember.tensor([0, 1, 1, 3])).tolist()
    [1, 2, 0, 1]
    """
    if input.dtype.category != 1:   # integer dtypes only: not bool, not float
        raise op_error("bincount", f"is not implemented for {describe(input)}; it counts integers",
                       NotImplementedError)
    if isinstance(minlength, bool) or not isinstance(minlength, int):
        raise TypeError(f"bincount: minlength must be an int, got {type(minlength).__name__} {minlength!r}")
    if minlength < 0:
        raise op_error("bincount", f"minlength should be >= 0, got {minlength}")
    if input.ndim != 1 or (input.numel() and int(M.amin(input).item()) < 0):
        raise op_error("bincount", f"only supports 1-d non-negative integral inputs, got {describe(input)}")
    if weights is not None:
        check_same_device("bincount", input, weights, "weights")
        if weights.ndim != 1 or weights.shape[0] != input.shape[0]:
            raise op_error("bincount", f"weights should be 1-d and have the same length as input: weights "
                                       f"{tuple(weights.shape)}, input {tuple(input.shape)}")
    if input.numel() == 0:   # torch: int64 zeros, with weights too
        return C.zeros(minlength, dtype=_dtype.int64, device=input.device)
    size = max(int(M.amax(input).item()) + 1, minlength)
    if weights is None:
        src = C.ones(input.shape, dtype=_dtype.int64, device=input.device)
    else:
        src = weights.to(_dtype.float32 if weights.dtype.name == "float32" else _dtype.float64)
    return S.scatter_add(C.zeros(size, dtype=src.dtype, device=input.device), 0, input.long(), src)


def histc(input, bins=100, min=0, max=0):
    """A histogram of `bins` equal bins over [min, max] (the data's range when min == max, widened by 1
    each side if that is a point); values outside it, and NaN, are left out. Not differentiable.

    >>> ember.histc(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3, min=1, max=4).tolist()
    [2.0, 1.0, 1.0]
    """
    if not input.dtype.is_floating_point:
        raise op_error("histc", f"is not implemented for {describe(input)}; convert it with .float() first",
                       NotImplementedError)
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise TypeError(f"histc: bins must be an int, got {type(bins).__name__} {bins!r}")
    if bins <= 0:
        raise op_error("histc", f"bins must be > 0, but got {bins}")
    x = input.detach().reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(M.amin(x).item()), float(M.amax(x).item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise op_error("histc", f"range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise op_error("histc", f"max must be larger than min, got min={lo:g}, max={hi:g}")
    left, right = C.tensor(lo, dtype=x.dtype, device=x.device), C.tensor(hi, dtype=x.dtype, device=x.device)
    x = S.masked_select(x, (x >= left) & (x <= right))     # NaN fails both
    pos = ((x - left) * bins / (right - left)).long()        # in the input's dtype, as torch's kernel
    pos = M.where(pos >= bins, bins - 1, pos)               # max itself falls in the last bin
    return bincount(pos, minlength=bins).to(input.dtype)


def sum_to_size(input, *size):
    """This tensor summed down to `size` (which must broadcast to its shape): the reverse of expand, as
    torch's Tensor.sum_to_size. Returns the tensor itself when the shape is already `size`.

    >>> ember.ones(2, 3).sum_to_size(1, 3).tolist()
    [[2.0, 2.0, 2.0]]
    """
    if not size:
        raise TypeError("sum_to_size() missing 1 required positional argument: 'size'")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    size, shape = tuple(int(s) for s in size), tuple(input.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise op_error("sum_to_size", f"size {list(size)} is not expandable to size {list(shape)}")
    if size == shape:
        return input
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    return M.sum(input, dims, keepdim=True).reshape(size)


def renorm(input, p, dim, maxnorm):
    """Each slice of `input` along `dim` rescaled so its p-norm is at most `maxnorm` (slices with a larger
    norm are multiplied by maxnorm / (norm + 1e-7), the others left as they are).

    >>> ember.renorm(ember.tensor([[6.0, 8.0], [0.5, 0.0]]), 2, 0, 5.0).tolist()
    [[3.0, 4.0], [0.5, 0.0]]
    """
    if input.ndim < 2:
        raise op_error("renorm", f"input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = wrap_dim(dim, input.ndim, "renorm")
    if not p > 0:
        raise op_error("renorm", f"non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise op_error("renorm", f"expected maxnorm to be >= 0 but got {maxnorm}")
    if not input.dtype.is_floating_point:
        raise op_error("renorm", f"expected a floating point input, got {describe(input)}")
    others = tuple(i for i in range(input.ndim) if i != d)
    # the norm's gradient only from the slices it rescales: a slice with a NaN norm (not > maxnorm) is left
    # as it is, gradient included, as torch's where; the norm's backward would give it 0 * NaN
    big = M.norm(input.detach(), p, others, keepdim=True) > maxnorm
    norm = M.norm(M.where(big, input, 0.0), p, others, keepdim=True)
    return input * M.where(big, maxnorm / (norm + 1e-7), 1.0)
_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double"}


def _check_weights(name, w, observations, integral):
    if w.ndim > 1:
        raise op_error("cov", f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                              f"dimensions")
    if integral and (w.dtype.is_floating_point or w.dtype.name == "bool"):
        raise op_error("cov", f"cov(): expected {name} to have integral dtype but got {name} with "
                              f"{_TORCH_NAMES[w.dtype.name]} dtype")
    if not integral and not w.dtype.is_floating_point:
        raise op_error("cov", f"cov(): expected {name} to have floating point dtype but got {name} with "
                              f"{_TORCH_NAMES[w.dtype.name]} dtype")
    if w.numel() != observations:
        raise op_error("cov", f"cov(): expected {name} to have the same numel as there are observations in the "
                              f"input but got {w.numel()} != {observations}")
    if observations and bool(M.amin(w) < 0):
        raise op_error("cov", f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (a 1-D input is one variable), the columns
    being observations: integer frequency weights `fweights`, float observation weights `aweights`, and
    `correction` subtracted from the number of observations (1: Bessel's correction). A scalar for one
    variable.

    >>> ember.cov(ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    from .._errors import warn
    if input.ndim > 2:
        raise op_error("cov", f"cov(): expected input to have two or fewer dimensions but got an input with "
                              f"{input.ndim} dimensions")
    if input.dtype.name == "bool":
        raise op_error("cov", "cov(): bool dtype is not supported for input")
    if isinstance(correction, bool) or not isinstance(correction, int):
        raise op_error("cov", f"cov(): argument 'correction' must be int, not {type(correction).__name__}",
                       TypeError)
    x = input.reshape(1, -1) if input.ndim < 2 else input        # (variables, observations)
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, integral=False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = n
        avg = M.sum(x, 1) / n
    else:
        w_sum = M.sum(w)
        if not bool(w_sum != 0):
            raise op_error("cov", "cov(): weights sum to zero, can't be normalized")
        avg = M.sum(x * w, 1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * M.sum(w * aweights) / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        warn("cov", "cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                    "observations.")
        norm_factor = norm_factor * 0
    centred = x - avg.unsqueeze(1)
    c = M.matmul(centred, (centred if w is None else centred * w).mT)   # (variables, variables)
    return M.true_divide(c, norm_factor).squeeze()


def corrcoef(input):
    """Pearson's correlation coefficients of the variables in input's rows: cov / (std_i std_j), clipped to
    [-1, 1]. A scalar (1, or NaN) for one variable.

    >>> ember.corrcoef(ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    if input.ndim > 2:
        raise op_error("corrcoef", f"corrcoef(): expected input to have two or fewer dimensions but got an input "
                                   f"with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = M.sqrt(S.diagonal(c))
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return M.clamp(c, -1, 1)


# ------------------------------------------------------------------ integration, differentiation, histograms
# torch's trapezoid, cumulative_trapezoid and gradient (ReduceOps.cpp), term for term so that the rounding is
# the same, and histogram / histogramdd (counts through searchsorted and bincount: not differentiable).

_Histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])  # type: ignore[name-match]  # torch's type name, shown in repr
_HistogramDD = collections.namedtuple("histogramdd", ["hist", "bin_edges"])  # type: ignore[name-match]  # torch's type name, shown in repr


def _cut(t, d, start, stop=None):
    """t[start:stop] along dim d, with Python's negative indices (stop None: to the end)."""
    n = t.shape[d]
    start = max(start + n, 0) if start < 0 else min(start, n)
    stop = n if stop is None else (max(stop + n, 0) if stop < 0 else min(stop, n))
    return S.narrow(t, d, start, max(stop - start, 0))


def _sample_spacing(op, y, x, dx, dim):
    """(wrapped dim, spacing): a Python number, or x's differences along dim shaped to broadcast with y's."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}(): argument 'y' (position 1) must be Tensor, not {type(y).__name__}")
    if x is not None and dx is not None:
        raise TypeError(f"{op}(): received both x and dx; pass the sample points x or their spacing dx, not both")
    d = wrap_dim(dim, y.ndim, op)
    if y.dtype.name == "bool" or (isinstance(x, Tensor) and x.dtype.name == "bool"):
        raise op_error(op, f"received a bool input for `y` or `x`, but bool is not supported (y {describe(y)})")
    if x is None:
        return d, 1 if dx is None else dx
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__}")
    check_same_device(op, y, x, "x", "y")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise op_error(op, f"There must be one `x` value for each sample point (x {describe(x)}, y "
                               f"{describe(y)}, dim {dim})")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = x.reshape(shape)
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    if x.shape[d] == 0:
        return d, x
    return d, _cut(x, d, 1) - _cut(x, d, 0, -1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along `dim` by the trapezoidal rule: with sample points x (1-D of y.shape[dim]
    values, or broadcasting with y) or a constant spacing dx (1 by default). 0 for no samples.

    >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0])).item()
    4.0
    >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([0.0, 1.0, 3.0])).item()
    6.5
    """
    d, spacing = _sample_spacing("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:   # NumPy's and torch's 0 for no samples
        return C.zeros(tuple(y.shape[:d]) + tuple(y.shape[d + 1:]), dtype=y.dtype, device=y.device)
    if isinstance(spacing, Tensor):
        return M.sum(spacing * (_cut(y, d, 1) + _cut(y, d, 0, -1)), d) / 2.0
    return (M.sum(y, d) - (_cut(y, d, 0, 1) + _cut(y, d, -1)).squeeze(d) * 0.5) * spacing


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of y along `dim` (one value fewer than y there), spacing as
    trapezoid's.

    >>> ember.cumulative_trapezoid(ember.tensor([1.0, 2.0, 3.0])).tolist()
    [1.5, 4.0]
    """
    d, spacing = _sample_spacing("cumulative_trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:
        return S.clone(y)
    return M.cumsum(spacing / 2.0 * (_cut(y, d, 1) + _cut(y, d, 0, -1)), d)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of `input` estimated by central differences in the interior and one-sided ones
    (first or second order: edge_order 1 or 2) at the ends, along each dim of `dim` (all by default):
    a tuple of one tensor per dim. spacing: one number for every dim, a list of numbers (one per dim) or
    a list of 1-D tensors of sample coordinates (one per dim, unevenly spaced allowed).

    >>> ember.gradient(ember.tensor([1.0, 4.0, 9.0, 16.0]))[0].tolist()
    [3.0, 4.0, 6.0, 7.0]
    >>> ember.gradient(ember.tensor([1.0, 4.0, 9.0]), spacing=[ember.tensor([0.0, 1.0, 3.0])])[0].tolist()
    [3.0, 2.8333332538604736, 2.5]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dtype.name == "uint8":
        raise op_error("gradient", "torch.gradient does not support uint8 input.")
    dims = None if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if _number(spacing):
        spacing = [spacing] * (input.ndim if dims is None else len(dims))
    elif isinstance(spacing, Tensor):
        raise TypeError(f"gradient(): spacing must be a number or a list of numbers or of 1-D tensors, not a "
                        f"Tensor; pass [spacing] for one dim ({describe(spacing)})")
    else:
        spacing = list(spacing)
    if dims is None and len(spacing) != input.ndim:
        raise op_error("gradient", f"torch.gradient expected spacing to be unspecified, a scalar, or a list of "
                                   f"length equal to 'self.dim() = {input.ndim}', since dim argument was not given, "
                                   f"but got a list of length {len(spacing)}")
    if dims is not None and len(spacing) != len(dims):
        raise op_error("gradient", f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                                   f"dim arguments to have the same length, but got a spacing argument of length "
                                   f"{len(spacing)} and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise op_error("gradient", f"torch.gradient only supports edge_order=1 and edge_order=2 (got {edge_order!r}).")
    dims = list(range(input.ndim)) if dims is None else [wrap_dim(d, input.ndim, "gradient") for d in dims]
    if len(set(dims)) != len(dims):
        raise op_error("gradient", f"dim {tuple(dims)} appears multiple times in the list of dims")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise op_error("gradient", f"torch.gradient expected each dimension size to be at least edge_order+1 "
                                       f"(input {describe(input)}, dim {d}, edge_order {edge_order})")
    coordinates = any(isinstance(s, Tensor) for s in spacing)
    if coordinates and not all(isinstance(s, Tensor) for s in spacing):
        raise TypeError("gradient(): spacing must be all numbers or all tensors, not a mix")
    out = []
    for d, s in zip(dims, spacing):
        if coordinates:
            check_same_device("gradient", input, s, "spacing")
            if s.ndim != 1:
                raise op_error("gradient", f"torch.gradient expected each element of spacing to have one dimension, "
                                           f"but got an element with {s.ndim} dimensions!")
            if s.shape[0] != input.shape[d]:
                raise op_error("gradient", f"spacing {describe(s)} must have one coordinate per element of dim {d} "
                                           f"of input {describe(input)}")
            out.append(_gradient_coordinates(input, s, d, edge_order))
        elif not _number(s):
            raise TypeError(f"gradient(): spacing must be numbers or 1-D tensors, got {type(s).__name__} {s!r}")
        else:
            out.append(_gradient_uniform(input, s, d, edge_order))
    return tuple(out)


def _gradient_uniform(y, h, d, edge_order):
    center = (_cut(y, d, 2) - _cut(y, d, 0, -2)) / h
    if edge_order == 1:
        first = (_cut(y, d, 1, 2) - _cut(y, d, 0, 1)) / h
        last = (_cut(y, d, -1) - _cut(y, d, -2, -1)) / h
    else:
        first = (_cut(y, d, 0, 1) * -1.5 + _cut(y, d, 1, 2) * 2 - _cut(y, d, 2, 3) * 0.5) / h
        last = (_cut(y, d, -3, -2) * 0.5 + _cut(y, d, -2, -1) * -2 + _cut(y, d, -1) * 1.5) / h
    return S.cat([first, center / 2, last], d)


def _gradient_coordinates(y, x, d, edge_order):
    """Second-order differences on the uneven grid x (torch's, NumPy's) along dim d of y."""
    shape = [1] * y.ndim
    shape[d] = -1
    h = x[1:] - x[:-1]                                                    # (n - 1,)
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = a * _cut(y, d, 0, -2) + b * _cut(y, d, 1, -1) + c * _cut(y, d, 2)
    if edge_order == 1:
        first = (_cut(y, d, 1, 2) - _cut(y, d, 0, 1)) / h[0]
        last = (_cut(y, d, -1) - _cut(y, d, -2, -1)) / h[-1]
    else:
        a = -(2.0 * h[0] + h[1]) / (h[0] * (h[0] + h[1]))
        b = (h[0] + h[1]) / (h[0] * h[1])
        c = (-h[0]) / (h[1] * (h[0] + h[1]))
        first = a * _cut(y, d, 0, 1) + b * _cut(y, d, 1, 2) + c * _cut(y, d, 2, 3)
        a = h[-1] / (h[-2] * (h[-1] + h[-2]))
        b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
        c = (2 * h[-1] + h[-2]) / (h[-1] * (h[-1] + h[-2]))
        last = a * _cut(y, d, -3, -2) + b * _cut(y, d, -2, -1) + c * _cut(y, d, -1)
    return S.cat([first, center, last], d)


def _bin_edges(op, input, k, bins, lo, hi):
    """The edges of dimension k: `bins` (a 1-D tensor of edges, or a count of equal bins over [lo, hi])."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise op_error(op, f"bins tensor should have one dimension, but got {bins.ndim} dimensions in the bins "
                               f"tensor for dimension {k}")
        if bins.dtype is not input.dtype:
            raise op_error(op, f"input tensor and bins tensors should have the same dtype, but got input with dtype "
                               f"{input.dtype.name} and bins for dimension {k} with dtype {bins.dtype.name}")
        check_same_device(op, input, bins, "bins")
        if bins.shape[0] < 2:
            raise op_error(op, f"bins must be > 0, but got {bins.shape[0] - 1} for dimension {k}")
        return bins.detach()
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise TypeError(f"{op}: bins must be an int or a 1-D tensor of bin edges, got {type(bins).__name__} {bins!r}")
    if bins <= 0:
        raise op_error(op, f"bins must be > 0, but got {bins} for dimension {k}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise op_error(op, f"dimension {k}'s range [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise op_error(op, f"min should not exceed max, but got min {lo:g} max {hi:g} for dimension {k}")
    if lo == hi:   # a point: widened to a unit interval, as NumPy and torch
        lo, hi = lo - 0.5, hi + 0.5
    return C.linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)


def _check_hist_dtype(op, input, bins, range):
    """torch's CPU kernels: float32/float64; float16/bfloat16 only where no min/max has to be found."""
    low = input.dtype.name in ("float16", "bfloat16")
    given = range is not None or input.numel() == 0 or isinstance(bins, Tensor) or \
        (isinstance(bins, (list, tuple)) and bool(bins) and all(isinstance(b, Tensor) for b in bins))
    if not input.dtype.is_floating_point or (low and not given):
        raise op_error(op, f"is not implemented for {describe(input)} (float32 and float64, or float16 and "
                           f"bfloat16 with a range, as torch's CPU kernel); convert it with .float() first",
                       NotImplementedError)


def _histogramdd(op, input, bins, range, weight, density):
    """(hist, [edges per dim]) of the points input (..., D) (the last dim holds the coordinates)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _check_hist_dtype(op, input, bins, range)
    if input.ndim < 2:
        raise op_error(op, f"input tensor should have at least 2 dimensions (input {describe(input)})")
    D = input.shape[-1]
    points = input.detach().reshape(-1, D)                                 # (N, D)
    if isinstance(bins, (int, Tensor)) and not isinstance(bins, bool):
        bins = [bins] * D
    bins = list(bins)
    if len(bins) != D:
        raise op_error(op, f"The size of bins must be equal to the innermost dimension of the input (bins "
                           f"{len(bins)}, input {describe(input)}).")
    if range is not None:
        range = [float(r) for r in range]
        if len(range) != 2 * D:
            raise op_error(op, f"for a {D}-dimensional histogram range should have {2 * D} elements, but got "
                               f"{len(range)}")
    if weight is not None:
        check_same_device(op, input, weight, "weight")
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise op_error(op, f"if weight tensor is provided it should have the same shape as the input tensor "
                               f"excluding its innermost dimension, but got input with shape {list(input.shape)} and "
                               f"weight with shape {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise op_error(op, f"if weight tensor is provided, input tensor and weight tensor should have the same "
                               f"dtype, but got input {describe(input)} and weight {describe(weight)}")
    if range is None and points.shape[0]:
        lows, highs = M.amin(points, 0).tolist(), M.amax(points, 0).tolist()
    else:
        lows, highs = (range[0::2], range[1::2]) if range is not None else ([0.0] * D, [1.0] * D)
    edges = [_bin_edges(op, input, k, b, lows[k], highs[k]) for k, b in enumerate(bins)]
    counts = [e.shape[0] - 1 for e in edges]
    flat = C.zeros(points.shape[0], dtype=_dtype.int64, device=input.device)
    inside = C.ones(points.shape[0], dtype=_dtype.bool, device=input.device)
    for k, e in enumerate(edges):
        v = points[:, k].contiguous()
        # bin b holds [e_b, e_b+1); the last bin holds its right edge too; outside (and NaN): no bin
        b = S.searchsorted(e, v, right=True) - 1
        b = M.where(v == e[-1], counts[k] - 1, b)
        inside = inside & (v >= e[0]) & (v <= e[-1])
        flat = flat * counts[k] + M.clamp(b, 0, counts[k] - 1)
    total = _prod(counts)
    w = weight.detach().reshape(-1) if weight is not None else C.ones(points.shape[0], dtype=input.dtype,
                                                                     device=input.device)
    w = M.where(inside, w, 0.0)
    hist = S.scatter_add(C.zeros(total, dtype=input.dtype, device=input.device), 0, flat, w).reshape(counts)
    if density:
        hist = hist / M.sum(hist)
        for k, e in enumerate(edges):
            shape = [1] * D
            shape[k] = counts[k]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist, edges


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): how many elements of input (or how much `weight`) fall in each bin. bins: a
    count of equal bins over `range` (min, max) (the data's range by default), or a 1-D tensor of edges;
    each bin holds its left edge, the last its right edge too; values outside, and NaN, are left out.
    density=True divides by the total and the bin widths. float32/float64 only; not differentiable.

    >>> h = ember.histogram(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3, range=(1.0, 4.0))
    >>> h.hist.tolist(), h.bin_edges.tolist()
    ([2.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"histogram(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError(f"histogram(): range is given by the bin edges when bins is a tensor; pass range only with "
                        f"a number of bins (got range={range!r})")
    if isinstance(bins, Tensor) and bins.ndim != 1:
        raise op_error("histogram", f"bins tensor should have one dimension, but got {bins.ndim} dimensions in the "
                                    f"bins tensor (bins {describe(bins)})")
    _check_hist_dtype("histogram", input, bins, range)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise op_error("histogram", f"weight {describe(weight)} should have the same shape as input {describe(input)}")
    hist, edges = _histogramdd("histogram", input.reshape(-1, 1), [bins], range, None if weight is None
                               else weight.reshape(-1), density)
    return _Histogram(hist, edges[0])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the D-dimensional points input (..., D): bins an int (for every dim), a list of
    D ints, or a list of D 1-D tensors of edges; range a flat list (min_0, max_0, ..., min_D-1, max_D-1);
    weight of input's shape without its last dim. hist has one dim per coordinate. Not differentiable.

    >>> pts = ember.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    >>> ember.histogramdd(pts, [2, 2]).hist.tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    hist, edges = _histogramdd("histogramdd", input, bins, range, weight, density)
    return _HistogramDD(hist, tuple(edges))
