"""solve_triangular, cholesky_solve, cholesky_inverse, pinv and cond: composites of solve, inv, svd and
eigh, so differentiable as those are."""
from __future__ import annotations

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ..ops import shape as S
from ._basic import eigh, inv, solve, svd, svdvals
from ._common import LinAlgError, _TORCH_NAMES, _check_float, _check_matrix, _eye_like, _info, _same_dtype
from ._ex import _lu_info, _usable
from ._norms import matrix_norm


def _triangle(A, upper, unitriangular=False):
    """The triangle of A that a triangular solver reads (with 1s on the diagonal when unitriangular)."""
    if not unitriangular:
        return A.triu() if upper else A.tril()
    return (A.triu(1) if upper else A.tril(-1)) + _eye_like(A)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with A X = B (left=True) or X A = B, reading only A's upper or lower triangle (its diagonal taken
    as 1s when unitriangular); A's gradient is in that triangle, as torch's. B has at least 2 dims.

    >>> U = ember.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> ember.linalg.solve_triangular(U, ember.tensor([[4.0], [8.0]]), upper=True).tolist()
    [[1.0], [2.0]]
    """
    _check_matrix("solve_triangular", A)
    _check_float("solve_triangular", B, "B")
    if B.ndim < 2:
        raise op_error("linalg.solve_triangular", f"The input tensor B must have at least 2 dimensions. "
                                                  f"(B {describe(B)})")
    n = A.shape[-1]
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        eq = "AX = B" if left else "XA = B"
        raise op_error("linalg.solve_triangular", f"Incompatible shapes of A and B for the equation {eq} "
                                                  f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    _same_dtype("linalg.solve_triangular", A, B)
    return solve(_triangle(A, upper, unitriangular), B, left=left)


def _reads_triangle(L, upper):
    """L with only its (upper or lower) triangle's values, and the gradient of the whole of L: torch's
    cholesky_solve and cholesky_inverse read one triangle but differentiate A = L L^T in the full L."""
    tri = L.triu() if upper else L.tril()
    return L + (tri - L).detach()


def _check_cholesky_factor(op, L):
    _check_float(op, L, "A")
    if L.ndim < 2:
        raise op_error(op, f"{op}: The input tensor A must have at least 2 dimensions. (A {describe(L)})")
    if L.shape[-1] != L.shape[-2]:
        raise op_error(op, f"{op}: A must be batches of square matrices, but they are {L.shape[-2]} by "
                           f"{L.shape[-1]} matrices (A {describe(L)})")


@autocast_op("fp32")
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with A X = B for A = L L^T (or U^T U with upper=True), given the Cholesky factor L.

    >>> L = ember.tensor([[2.0, 0.0], [1.0, 1.0]])     # A = [[4, 2], [2, 2]]
    >>> ember.cholesky_solve(ember.tensor([[6.0], [4.0]]), L).tolist()
    [[1.0], [1.0]]
    """
    _check_float("cholesky_solve", B, "B")
    if B.ndim < 2:
        raise op_error("cholesky_solve", f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                                         f"instead (b {describe(B)})")
    _check_cholesky_factor("cholesky_solve", L)
    if B.shape[-2] != L.shape[-1]:
        raise op_error("cholesky_solve", f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                                         f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} by "
                                         f"{B.shape[-1]}")
    _same_dtype("cholesky_solve", B, L, "b", "A")
    L = _reads_triangle(L, upper)
    if upper:   # A = U^T U: X = U^-1 U^-T B
        return solve(L, solve(L.mT, B))
    return solve(L.mT, solve(L, B))


@autocast_op("fp32")
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """A^-1 for A = L L^T (or U^T U with upper=True), given the Cholesky factor L.

    >>> ember.cholesky_inverse(ember.tensor([[2.0, 0.0], [0.0, 0.5]])).tolist()
    [[0.25, 0.0], [0.0, 4.0]]
    """
    _check_cholesky_factor("cholesky_inverse", L)
    zero = (S.diagonal(L.detach(), 0, -2, -1) == 0).reshape(-1, L.shape[-1]).tolist()
    batch = next((b for b, row in enumerate(zero) if any(row)), None)
    if batch is not None:
        where = f"(Batch element {batch}): " if L.ndim > 2 else ""
        raise op_error("cholesky_inverse", f"{where}The diagonal element {zero[batch].index(True) + 1} is zero, "
                                           f"the inversion could not be completed because the input matrix is "
                                           f"singular. (A {describe(L)})", LinAlgError)
    L = _reads_triangle(L, upper)
    Linv = inv(L)
    return Linv @ Linv.mT if upper else Linv.mT @ Linv   # U^-1 U^-T, or L^-T L^-1


def _default_rtol(A, atol, rtol):
    if rtol is not None:
        return rtol
    if atol is None or (not isinstance(atol, Tensor) and atol == 0):
        return float(np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
    return 0.0


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The Moore-Penrose pseudoinverse (..., n, m) of A (..., m, n), through the SVD (or eigh with
    hermitian=True): singular values at or below max(atol, rtol * largest) count as zero. rtol defaults to
    eps * max(m, n) when atol is not given; `rcond` is torch's older name for rtol. atol and rtol may be
    tensors broadcasting with A's batch dims.

    >>> ember.linalg.pinv(ember.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    _check_float("pinv", A)
    if A.ndim < 2:
        raise op_error("linalg.pinv", f"linalg.pinv({_TORCH_NAMES[A.dtype.name]}{list(A.shape)}): expected a tensor "
                                      f"with 2 or more dimensions of float, double, cfloat or cdouble types")
    if rcond is not None:
        rtol, atol = rcond, 0.0
    rtol = _default_rtol(A, atol, rtol)
    atol = 0.0 if atol is None else atol
    if hermitian:
        values, vectors = eigh(A)
        magnitude = M.abs(values)                                          # (..., n)
    else:
        U, magnitude, Vh = svd(A, full_matrices=False)                     # S: (..., k)
    largest = M.amax(magnitude, -1, keepdim=True) if magnitude.shape[-1] else magnitude.sum(-1, keepdim=True)
    atol = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    rtol = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    cutoff = M.maximum(rtol * largest, atol) if isinstance(atol, Tensor) else M.clamp(rtol * largest, min=atol)
    keep = magnitude > cutoff
    if hermitian:
        inverse = M.where(keep, 1.0 / M.where(keep, values, 1.0), 0.0)
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mT
    inverse = M.where(keep, 1.0 / M.where(keep, magnitude, 1.0), 0.0)
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


_COND_ORDS = ("fro", "nuc", float("inf"), float("-inf"), 1, -1)


@autocast_op("fp32")
def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in the norm p: smax / smin for p=None or 2 (smin / smax for -2), else
    norm(A, p) * norm(A^-1, p) for square A, inf where A is singular.

    >>> ember.linalg.cond(ember.tensor([[2.0, 0.0], [0.0, 0.5]])).item()
    4.0
    """
    _check_float("cond", A)
    if A.ndim < 2:
        raise op_error("linalg.cond", f"linalg.cond: The input tensor must have at least 2 dimensions. "
                                      f"(A {describe(A)})")
    if p is None or p in (2, -2) and not isinstance(p, bool):
        sv = svdvals(A)
        big, small = M.amax(sv, -1), M.amin(sv, -1)
        return small / big if p == -2 else big / small
    if p not in _COND_ORDS or isinstance(p, bool):
        raise op_error("linalg.cond", f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise op_error("linalg.cond", f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                                      f"{A.shape[-2]} by {A.shape[-1]} matrices")
    info = _info(A, _lu_info)
    singular = bool((info > 0).any())
    Ainv = inv(_usable(A, info)) if singular else inv(A)
    out = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return M.where(info > 0, float("inf"), out) if singular else out
