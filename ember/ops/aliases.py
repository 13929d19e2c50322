"""torch's other names for ops Ember has: `multiply` for `mul`, `fix` for `trunc`, `torch.det` for
`torch.linalg.det`, ... Each is the same function or a one-line call, re-exported by `ember` and bound
as a Tensor method (with its `_` form) by `ember/_tensor_methods.py`."""
from __future__ import annotations

import builtins
import math as _math

from .._errors import op_error, warn
from .._tensor import Tensor
from . import math as M

__all__ = ["multiply", "divide", "subtract", "fix", "sgn", "positive", "clamp_min", "clamp_max", "inverse", "det",
           "slogdet", "logdet", "cholesky", "pdist", "ctc_loss", "fill", "rsub", "range", "frobenius_norm",
           "nuclear_norm", "qr", "svd"]
# torch.* functions that torch.Tensor has no method for
FUNCTIONS_ONLY = ("pdist", "ctc_loss", "fill", "rsub", "range", "frobenius_norm", "nuclear_norm")

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


def fill(input, value):
    """A new tensor of input's shape and dtype filled with `value` (a number or a 0-dim tensor, whose
    gradient is the sum of the output's; input gets a zero gradient), as torch.fill.

    >>> ember.fill(ember.zeros(2, 2), 7).tolist()
    [[7.0, 7.0], [7.0, 7.0]]
    """
    from . import creation as C
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise op_error("fill", f"fill only supports 0-dimension value tensor but got tensor with "
                                   f"{value.ndim} dimensions")
        value = value.to(input.dtype)
    else:
        value = C.full_like(input, value)
    return M.where(C.ones_like(input, dtype=_bool()), value, input)   # where: input's gradient is zero


def _bool():
    from .. import _dtype
    return _dtype.bool


def rsub(input, other, alpha=1):
    """other - alpha * input (torch.rsub: sub with its operands swapped).

    >>> ember.rsub(ember.tensor([1.0, 2.0]), 5).tolist()
    [4.0, 3.0]
    """
    if not isinstance(other, Tensor):
        from . import creation as C
        other = C.tensor(other, device=input.device)
    return M.sub(other, input, alpha=alpha)


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):   # noqa: A001 (torch's name)
    """Values from start to end INCLUSIVE, in steps of `step`; the default dtype is the default float
    dtype whatever the arguments. Deprecated in torch (it warns, as torch does): use `ember.arange`.

    >>> ember.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    from .. import _dtype
    from . import creation as C
    warn("range", "ember.range is deprecated and will be removed in a future release because its behavior is "
                   "inconsistent with Python's range builtin. Instead, use ember.arange, which produces values "
                   "in [start, end).")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if not dt.is_floating_point and dt is not _dtype.bool:   # computed in the dtype's scalars, as torch's
        start, end, step = builtins.int(start), builtins.int(end), builtins.int(step)
    if step == 0:
        raise op_error("range", "step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise op_error("range", f"upper bound and lower bound inconsistent with step sign (start={start}, "
                                f"end={end}, step={step})")
    if dt is _dtype.bool:
        raise op_error("range", "not implemented for 'Bool'", NotImplementedError)
    n = int(_math.floor((end - start) / step)) + 1
    out = (C.arange(n, dtype=_dtype.float64, device=device) * step + start).to(dt)
    return out.requires_grad_(True) if requires_grad else out


def frobenius_norm(input, dim, keepdim=False):
    """sqrt(sum(input ** 2)) over `dim` (at most 2 dims; () for all). Deprecated in torch: use
    `ember.linalg.vector_norm(input, 2, dim, keepdim)`.

    >>> ember.frobenius_norm(ember.ones(2, 2), (0, 1)).item()
    2.0
    """
    from .. import linalg
    dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
    if len(dims) > 2:
        raise op_error("frobenius_norm", f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead "
                                         f"(dim={dim})")
    return linalg.vector_norm(input, 2, dims if dims else None, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values over the matrix dims `dim` (default the last two), as torch's
    `nuclear_norm(input, keepdim=False)` and `nuclear_norm(input, dim, keepdim=False)`. Deprecated in
    torch: use `ember.linalg.matrix_norm(input, 'nuc', dim, keepdim)`.

    >>> round(ember.nuclear_norm(ember.eye(3)).item(), 4)
    3.0
    """
    from .. import linalg
    if isinstance(dim, builtins.bool):   # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def qr(input, some=True):
    """(Q, R) of `ember.linalg.qr`: reduced with some=True, complete with some=False (torch.qr).

    >>> q, r = ember.qr(ember.eye(2))
    >>> q.shape, r.shape
    ((2, 2), (2, 2))
    """
    from .. import linalg
    return linalg.qr(input, "reduced" if some else "complete")


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T: V, not linalg.svd's Vh. some=False gives square U and V;
    compute_uv=False gives S and zero-filled U (m, m) and V (n, n), as torch.svd.

    >>> u, s, v = ember.svd(ember.tensor([[3.0, 0.0], [0.0, -2.0]]))
    >>> s.tolist()
    [3.0, 2.0]
    """
    from .. import linalg
    from . import creation as C
    if not compute_uv:
        s = linalg.svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return (C.zeros(*batch, m, m, dtype=s.dtype, device=input.device), s,
                C.zeros(*batch, n, n, dtype=s.dtype, device=input.device))
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return u, s, vh.mT
