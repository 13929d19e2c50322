"""Reductions that skip NaN, aminmax, and diff, as torch's: composites of ember.ops.math and shape
(no backward of their own). Re-exported by `ember` and bound as Tensor methods."""
from __future__ import annotations

import collections

from .._errors import describe, op_error
from .._dims import numpy_names
from . import math as M
from . import shape as S

__all__ = ["nansum", "nanmean", "aminmax", "diff", "cov", "corrcoef"]

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
