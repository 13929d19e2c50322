"""torch.svd_lowrank and torch.pca_lowrank: randomized SVD (Halko, Martinsson and Tropp 2009, algorithms
4.4 and 5.1) as composites of matmul, linalg.qr and linalg.svd, so differentiable as those are. The random
test matrix comes from Ember's generator (`ember.manual_seed`), so results differ from torch's for
matrices of rank above q; for rank <= q they are determined (up to the signs of singular vectors).
"""
from __future__ import annotations

from ._errors import describe, op_error
from ._tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _approximate_basis(A, q, niter, M=None):
    """Q (..., m, q) with orthonormal columns such that Q Q^T (A - M) approximates A - M (algorithm 4.4)."""
    from . import linalg
    from .random import randn
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = linalg.qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q if M is None else A.mT @ Q - M.mT @ Q
        Q = linalg.qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    from . import linalg
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def _check(op, A, niter):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: expected a Tensor for A, got {type(A).__name__}")
    if A.ndim < 2:
        raise op_error(op, f"A must have at least 2 dimensions (A {describe(A)})")
    if not A.dtype.is_floating_point:
        raise op_error(op, f"A must be a floating point tensor (A {describe(A)})")
    if niter is not None and niter < 0:
        raise op_error(op, f"niter(={niter}) must be non-negative integer", ValueError)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """(U (..., m, q), S (..., q), V (..., n, q)) with A - M ~= U diag(S) V^T: a randomized truncated SVD of
    A (..., m, n) (M, broadcast to A's shape, defaults to zero), with `niter` subspace iterations. q must
    not exceed min(m, n) when gradients are needed (Ember's QR has no gradient for wide inputs).

    >>> A = ember.ones(4, 1) @ ember.tensor([[1.0, 2.0, 2.0]])            # rank 1, singular value 6
    >>> U, S, V = ember.svd_lowrank(A, q=1)
    >>> round(S.item(), 4)
    6.0
    """
    _check("svd_lowrank", A, niter)
    q = 6 if q is None else q
    return _svd_lowrank(A, q, 2 if niter is None else niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V): svd_lowrank of A with its column means subtracted (center=True), A (..., m, n) holding m
    samples of n features; V's columns are the principal directions, S ** 2 / (m - 1) the variances.
    q defaults to min(6, m, n) and must lie in [0, min(m, n)].

    >>> A = ember.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    >>> U, S, V = ember.pca_lowrank(A, q=1)
    >>> round(S.item() ** 2 / 2, 4)                                     # the variance along (1, 1) / sqrt(2)
    2.0
    """
    _check("pca_lowrank", A, niter)
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise op_error("pca_lowrank", f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                                      f"{min(m, n)} (A {describe(A)})", ValueError)
    if center:
        A = A - A.mean(-2, keepdim=True)
    return _svd_lowrank(A, q, niter, None)
