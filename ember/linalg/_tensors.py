"""tensorinv and tensorsolve (a tensor read as a matrix), and the Vandermonde matrices of
`ember.linalg.vander` (increasing powers) and `ember.vander` (NumPy's)."""
from __future__ import annotations

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ..ops import shape as S
from ._basic import inv, solve
from ._common import _check_float


def _prod(shape):
    out = 1
    for s in shape:
        out *= s
    return out


@autocast_op("fp32")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a matrix (prod(shape[:ind]) rows): shape A.shape[ind:] + A.shape[:ind], so that
    tensordot(tensorinv(A, ind), A, ind) is the identity."""
    _check_float("tensorinv", A, low_precision=True)
    if ind <= 0:
        raise op_error("linalg.tensorinv", f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(rows) != _prod(cols):
        raise op_error("linalg.tensorinv", f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                                           f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}")
    return inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows)


@autocast_op("fp32")
def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) == B: X has shape A.shape[B.ndim:]; `dims` of A are moved to the end first."""
    _check_float("tensorsolve", A, low_precision=True)
    if dims is not None:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        A = A.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    cols = tuple(A.shape[B.ndim:])
    n = _prod(cols)
    if n != B.numel():
        raise op_error("linalg.tensorsolve", f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                                             f"== prod(self.shape[:other.ndim]), but got {n} != {B.numel()}")
    if A.numel() != n * n:
        raise op_error("linalg.tensorsolve", f"A {describe(A)} is not square when read as a ({n}, {n}) matrix "
                                             f"(B {describe(B)})")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(cols)


def vander(x: Tensor, *, N=None) -> Tensor:
    """The Vandermonde matrix of x's last dim, increasing powers: (..., n, N) with column j = x ** j
    (N defaults to n and must be > 1). `ember.vander` is NumPy's: 1-D, decreasing unless increasing=True."""
    if x.ndim == 0:
        x = x.reshape(1)
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise op_error("linalg.vander", f"N must be greater than 1. (got N={N})")
    return _powers(x, N)


def _powers(x, N):
    """[1, x, x^2, ..., x^(N-1)] along a new last dim, as torch: the cumulative product of [1, x, x, ...]."""
    from ..ops.creation import ones
    if x.dtype.name == "bool":
        x = x.to("int64")
    first = ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    return M.cumprod(S.cat([first, x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,))], -1), -1)


def _vander(x: Tensor, N=None, increasing: bool = False) -> Tensor:
    """torch.vander (NumPy's): x 1-D, N columns (len(x) by default), powers decreasing unless `increasing`.

    >>> ember.vander(ember.tensor([1, 2, 3]), N=3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    if x.ndim != 1:
        raise op_error("vander", f"x must be a one-dimensional tensor. (x {describe(x)})")
    N = x.shape[0] if N is None else N
    if N < 0:
        raise op_error("vander", f"N must be non-negative. (got N={N})")
    if N == 0:
        from ..ops.creation import empty
        return empty((x.shape[0], 0), dtype="int64" if x.dtype.name == "bool" else x.dtype, device=x.device)
    out = _powers(x, N)
    return out if increasing else S.flip(out, (-1,))
