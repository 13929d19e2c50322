"""lstsq (Householder QR where A has full rank, pinv where it does not) and matrix_rank: composites."""
from __future__ import annotations

import collections

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ._basic import eigvalsh, qr, svdvals
from ._common import LinAlgError, _TORCH_NAMES, _check_float, _check_matrix
from ._solvers import _default_rtol, pinv, solve_triangular


_LstsqResult = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _empty_like(A, dtype=None):
    from ..ops.creation import empty
    return empty(0, dtype=A.dtype if dtype is None else dtype, device=A.device)


def _full_rank_lstsq(A, B):
    """The least-squares solution (m >= n) or the minimum-norm solution (m < n) of a full-rank A through
    Householder QR, as LAPACK's gels: stable in value (no normal equations) and differentiable twice."""
    m, n = A.shape[-2], A.shape[-1]
    if m >= n:                                      # A = Q R: X = R^-1 Q^T B
        Q, R = qr(A)
        return solve_triangular(R, Q.mT @ B, upper=True)
    Q, R = qr(A.mT)                                 # A^T = Q R: X = Q R^-T B
    return Q @ solve_triangular(R.mT, B, upper=False)


@autocast_op("fp32")
def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values): X minimising ||A X - B|| for A (..., m, n), B (..., m, k)
    or a batch of vectors (..., m); the minimum-norm X where A is wide or rank-deficient. As torch's CPU
    drivers: 'gelsy' (default) and 'gelsd'/'gelss' find the rank, singular values at or below rcond *
    largest counting as zero (rcond defaults to eps * max(m, n)); 'gels' assumes A has full rank. Which
    fields are filled: rank (int64, A's batch shape) for all but 'gels'; singular_values for 'gelsd' and
    'gelss'; residuals (the squared residual norm of each column of B) where m > n, for 'gels' always and
    for 'gelsd'/'gelss' when every matrix has full rank; the others are empty. Solution and residuals are
    differentiable in A and B (the gradient of pinv(A) @ B, as torch's); rank and singular values are not.
    Rank decisions use the SVD for all drivers ('gelsy' uses a pivoted QR in LAPACK).

    >>> ember.linalg.lstsq(ember.tensor([[1.0], [1.0]]), ember.tensor([[1.0], [3.0]])).solution.tolist()
    [[2.0]]
    """
    op = "linalg.lstsq"
    _check_float("lstsq", A, "input")
    _check_float("lstsq", B, "other")
    if A.ndim < 2:
        raise op_error(op, f"input must have at least 2 dimensions. (input {describe(A)})")
    if B.ndim < 1:
        raise op_error(op, f"other must have at least 1 dimension. (other {describe(B)})")
    if A.dtype is not B.dtype:
        raise op_error(op, f"Expected input and other to have the same dtype, but got input's dtype "
                           f"{_TORCH_NAMES[A.dtype.name]} and other's dtype {_TORCH_NAMES[B.dtype.name]} "
                           f"(input {describe(A)}, other {describe(B)})")
    if A._device is not B._device:
        raise op_error(op, f"expected input and other on the same device, got {describe(A)} and {describe(B)}")
    if A.ndim - B.ndim not in (0, 1):
        raise op_error(op, f"input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) "
                           f"<= 1 (input {describe(A)}, other {describe(B)})")
    vector = A.ndim - B.ndim == 1
    if vector and tuple(B.shape) != tuple(A.shape[:-1]):
        raise op_error(op, f"other {describe(B)} has one dimension fewer than input {describe(A)}, so it is read "
                           f"as a batch of vectors and must have shape input.shape[:-1] = {tuple(A.shape[:-1])}")
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise op_error(op, f"input.size(-2) should match other.size(-2) (input {describe(A)}, other {describe(B)})")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    except ValueError:
        raise op_error(op, f"batch dimensions of input {describe(A)} and other {describe(B)} cannot be broadcast "
                           f"together") from None
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise op_error(op, f"parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got {driver!r}")
    k = min(m, n)
    rank = singular_values = None
    if driver != "gels":
        rcond = float(np.finfo(A.dtype.np).eps) * max(m, n) if rcond is None else rcond
        singular_values = svdvals(A.detach())                                    # (A's batch, k)
        if k:
            cutoff = rcond * singular_values.amax(-1, keepdim=True)
            rank = M.sum(singular_values > cutoff, -1)
        else:
            rank = M.sum(singular_values > 0, -1)
    full = rank is None or bool((rank == k).all())
    empty = m == 0 or n == 0 or Bm.shape[-1] == 0
    if empty:                 # LAPACK returns at once: X = 0, rank 0; keep both inputs on the graph
        from ..ops.creation import zeros
        X = zeros(tuple(batch) + (n, Bm.shape[-1]), dtype=A.dtype, device=A.device) + 0 * (A.sum() + B.sum())
        rank = None if rank is None else rank * 0
    elif full:
        try:
            X = _full_rank_lstsq(A, Bm)
        except LinAlgError:
            raise op_error(op, f"The least squares solution could not be computed because the input matrix does "
                               f"not have full rank (driver {driver!r}; input {describe(A)})", LinAlgError) from None
    else:
        X = pinv(A, rtol=rcond) @ Bm
    fills_residuals = driver == "gels" or (driver in ("gelsd", "gelss") and full)
    if m > n and fills_residuals:
        residuals = M.sum((A @ X - Bm) ** 2, -2)                               # (batch, k)
        if empty and driver == "gels":
            residuals = residuals * 0              # torch's gels leaves them zero, not |B|^2
    else:
        residuals = X.reshape(-1)[:0]                  # empty, still on the graph (as torch's)
    if vector:
        X = X.squeeze(-1)
    if driver == "gels":
        return _LstsqResult(X, residuals, _empty_like(A, "int64"), _empty_like(A))
    if driver == "gelsy":
        singular_values = _empty_like(A)
    return _LstsqResult(X, residuals, rank, singular_values)


def _rank_tolerances(A, atol, rtol, largest):
    """max(atol, rtol * largest), atol and rtol numbers or tensors over A's batch dims (`largest` (..., 1))."""
    rtol = _default_rtol(A, atol, rtol)
    atol = 0.0 if atol is None else atol
    atol = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    rtol = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    return M.maximum(rtol * largest, atol) if isinstance(atol, Tensor) else M.clamp(rtol * largest, min=atol)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The numerical rank of each matrix: the number of singular values (absolute eigenvalues with
    hermitian=True) above max(atol, rtol * largest), int64 over A's batch dims. rtol defaults to eps *
    max(m, n) when atol is not given; atol and rtol may be tensors over the batch. `tol` is torch's
    deprecated name for atol (with rtol=0).

    >>> ember.linalg.matrix_rank(ember.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_rank: expected a Tensor for A, got {type(A).__name__}")
    if A.dtype.name not in ("float32", "float64"):
        raise op_error("linalg.matrix_rank", f"This function doesn't handle types other than float and double "
                                             f"(A {describe(A)})")
    if A.ndim < 2:
        raise op_error("linalg.matrix_rank", f"The input tensor input must have at least 2 dimensions. "
                                             f"(A {describe(A)})")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise op_error("linalg.matrix_rank", "tol is the deprecated form of atol: pass one or the other, "
                                                 "not both", TypeError)
        atol, rtol = tol, 0.0
    if hermitian:
        _check_matrix("matrix_rank", A)
        magnitude = M.abs(eigvalsh(A.detach()))
    else:
        magnitude = svdvals(A.detach())
    largest = M.amax(magnitude, -1, keepdim=True) if magnitude.shape[-1] else magnitude.sum(-1, keepdim=True)
    return M.sum(magnitude > _rank_tolerances(A, atol, rtol, largest), -1)
