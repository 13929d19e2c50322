"""vector_norm, matrix_norm and norm: composites of Tensor ops (the spectral and nuclear norms through
svdvals)."""
from __future__ import annotations

from .._errors import describe, op_error
from .._tensor import Tensor
from ..ops import math as M
from ._basic import svdvals
from ._common import _check_float


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The ord-norm of x over `dim` (all elements by default): sum(|x|^ord)^(1/ord); inf/-inf: max/min |x|;
    0: the number of non-zeros."""
    if dtype is not None:
        x = x.to(dtype)
    _check_float("vector_norm", x, "x", low_precision=True)
    if isinstance(ord, str):
        raise op_error("linalg.vector_norm", f"ord must be a number, got {ord!r}", TypeError)
    if ord in (0, 1, float("inf"), float("-inf")):
        return M.norm(x, ord, dim, keepdim)
    powered = x * x if ord == 2 else M.pow(M.abs(x), ord)
    return _root(M.sum(powered, dim, keepdim), ord)


def _root(s, p):
    """s^(1/p), with torch's zero gradient where s == 0 (the plain root's gradient there is inf * 0 = NaN)."""
    zero = s == 0
    safe = M.where(zero, 1.0, s)
    return M.where(zero, 0.0, M.sqrt(safe) if p == 2 else M.pow(safe, 1.0 / p))


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', 2/-2 (largest/smallest singular value),
    1/-1 (max/min column abs sum), inf/-inf (max/min row abs sum)."""
    if dtype is not None:
        A = A.to(dtype)
    _check_float("matrix_norm", A, low_precision=True)
    if A.ndim < 2:
        raise op_error("linalg.matrix_norm", f"The input tensor A must have at least 2 dimensions (A {describe(A)}).")
    from .._dims import wrap_dims
    if len(dim) != 2:
        raise op_error("linalg.matrix_norm", f"dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = wrap_dims(dim, A.ndim, "linalg.matrix_norm")
    if d0 == d1:
        raise op_error("linalg.matrix_norm", f"dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _root(M.sum(A * A, (d0, d1), keepdim), 2)
    if ord in ("nuc", 2, -2):
        sv = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = sv.sum(-1) if ord == "nuc" else (sv.amax(-1) if ord == 2 else sv.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord in (1, -1, float("inf"), float("-inf")):
        summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)   # 1: column sums; inf: row sums
        s = M.sum(M.abs(A), summed, keepdim=True)
        out = s.amax(reduced, keepdim=True) if ord in (1, float("inf")) else s.amin(reduced, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    raise op_error("linalg.matrix_norm", f"Order {ord!r} not supported; expected 'fro', 'nuc', 2, -2, 1, -1, "
                                         f"inf or -inf", ValueError)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector norm (dim an int, or a 1-D input) or a matrix norm (dim a pair, or a 2-D input) as torch:
    with ord=None and dim=None, the 2-norm of all elements."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise op_error("linalg.norm", f"If dim is not specified but ord is, the input must be 1D or 2D. "
                                          f"Got {A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
