"""Reductions that skip NaN, aminmax, and diff, as torch's: composites of ember.ops.math and shape
(no backward of their own). Re-exported by `ember` and bound as Tensor methods."""
from __future__ import annotations

import collections

from .._errors import describe, op_error
from .._dims import numpy_names
from . import math as M
from . import shape as S

__all__ = ["nansum", "nanmean", "aminmax", "diff"]

_MinMax = collections.namedtuple("aminmax", ["min", "max"])


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
