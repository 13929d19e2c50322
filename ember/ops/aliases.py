"""torch's other names for ops Ember has: `multiply` for `mul`, `fix` for `trunc`, `torch.det` for
`torch.linalg.det`, ... Each is the same function or a one-line call, re-exported by `ember` and bound
as a Tensor method (with its `_` form) by `ember/_tensor_methods.py`."""
from __future__ import annotations

from . import math as M

__all__ = ["multiply", "divide", "subtract", "fix", "sgn", "positive", "clamp_min", "clamp_max", "inverse", "det",
           "slogdet", "logdet", "cholesky"]

multiply = M.mul
divide = M.div
subtract = M.sub
fix = M.trunc
sgn = M.sign   # torch's sgn differs from sign only for complex inputs, which Ember does not have


def positive(input):
    """The input itself (torch.positive, unary +)."""
    return input


def clamp_min(input, min):
    return M.clamp(input, min=min)


def clamp_max(input, max):
    return M.clamp(input, max=max)


def inverse(input):
    from .. import linalg
    return linalg.inv(input)


def det(input):
    from .. import linalg
    return linalg.det(input)


def slogdet(input):
    from .. import linalg
    return linalg.slogdet(input)


def logdet(input):
    """log(det(input)): NaN where the determinant is negative, -inf where it is 0 (as torch)."""
    from .. import linalg
    sign, logabsdet = linalg.slogdet(input)
    return M.where(sign < 0, float("nan"), logabsdet)


def cholesky(input, upper=False):
    from .. import linalg
    return linalg.cholesky(input, upper=upper)
