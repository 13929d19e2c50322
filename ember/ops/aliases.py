"""torch's other names for ops Ember has: `multiply` for `mul`, `fix` for `trunc`, `torch.det` for
`torch.linalg.det`, ... Each is the same function or a one-line call, re-exported by `ember` and bound
as a Tensor method (with its `_` form) by `ember/_tensor_methods.py`."""
from __future__ import annotations

from . import math as M

__all__ = ["multiply", "divide", "subtract", "fix", "sgn", "positive", "clamp_min", "clamp_max", "inverse", "det",
           "slogdet", "logdet", "cholesky", "pdist", "ctc_loss"]
# torch.* functions of torch.nn.functional that torch.Tensor has no method for
FUNCTIONS_ONLY = ("pdist", "ctc_loss")

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


def pdist(input, p=2.0):
    """torch.pdist: `ember.nn.functional.pdist`."""
    from ..nn.functional import vision
    return vision.pdist(input, p)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss: `ember.nn.functional.ctc_loss` with torch's integer reduction (0 'none', 1 'mean',
    2 'sum'; a name works too). Its default is 'none', as torch.ctc_loss's (F.ctc_loss's is 'mean')."""
    from ..nn.functional import loss
    return loss.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _REDUCTIONS.get(reduction, reduction), zero_infinity)
