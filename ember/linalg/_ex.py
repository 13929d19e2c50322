"""inv_ex, solve_ex and cholesky_ex: the result and an info tensor (LAPACK's getrf/potrf info, computed
against xp) instead of an error; NaN where a matrix failed, LinAlgError with check_errors=True."""
from __future__ import annotations

import collections

from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ._basic import cholesky, inv, solve
from ._common import _check_matrix, _eye_like, _info, _raise_info


_ExResult = collections.namedtuple("inv_ex", ["inverse", "info"])
_SolveExResult = collections.namedtuple("solve_ex", ["result", "info"])
_CholeskyExResult = collections.namedtuple("cholesky_ex", ["L", "info"])


def _lu_info(xp, a):
    """LAPACK getrf's info for each matrix of a (batch, n, n) array: 0, or the 1-based index of the first
    exactly-zero pivot of the LU factorisation with partial pivoting (computed in a's dtype)."""
    a = a.copy()
    count, n = a.shape[0], a.shape[-1]
    info = xp.zeros(count, dtype="int32")
    rows = xp.arange(count)
    for k in range(n):
        p = k + xp.argmax(xp.abs(a[:, k:, k]), axis=1)                 # the pivot row of each matrix
        top = a[rows, k, :].copy()
        a[rows, k, :] = a[rows, p, :]
        a[rows, p, :] = top
        pivot = a[:, k, k]
        zero = pivot == 0
        info[(info == 0) & zero] = k + 1
        factors = xp.where(zero[:, None], 0, a[:, k + 1:, k] / xp.where(zero, 1, pivot)[:, None])
        a[:, k + 1:, k + 1:] -= factors[:, :, None] * a[:, k, None, k + 1:]
    return info


def _cholesky_info(xp, a):
    """potrf's info for each (lower-triangle-read) matrix of a (batch, n, n): 0, or the order of the first
    leading minor that is not positive-definite."""
    count, n = a.shape[0], a.shape[-1]
    L = xp.zeros_like(a)
    info = xp.zeros(count, dtype="int32")
    for k in range(n):
        d = a[:, k, k] - (L[:, k, :k] ** 2).sum(-1)
        bad = ~(d > 0)                                                  # NaN counts as not positive
        info[(info == 0) & bad] = k + 1
        root = xp.sqrt(xp.where(bad, 1, d))
        L[:, k, k] = root
        L[:, k + 1:, k] = (a[:, k + 1:, k] - (L[:, k + 1:, :k] @ L[:, k, :k, None])[..., 0]) / root[:, None]
    return info


def _nan_where(info, A, X, tail):
    """X with NaN in the results of the matrices whose info is non-zero (A's batch dims, then `tail` dims)."""
    failed = (info > 0).reshape(tuple(A.shape[:-2]) + (1,) * tail)
    return M.where(failed, float("nan"), X)


def _usable(A, info):
    """A with the identity in place of the failed matrices, so that the batched op runs for the others."""
    failed = (info > 0).reshape(tuple(A.shape[:-2]) + (1, 1))
    return M.where(failed, _eye_like(A), A)


@autocast_op("fp32")
def inv_ex(A: Tensor, *, check_errors: bool = False):
    """(inverse, info) with info (A's batch shape, int32) 0 for an invertible matrix, else the 1-based index
    of the first zero pivot of its LU factorisation; that matrix's inverse is NaN. check_errors=True raises
    LinAlgError instead.

    >>> ember.linalg.inv_ex(ember.zeros(2, 2)).info.item()
    1
    """
    _check_matrix("inv_ex", A)
    info = _info(A, _lu_info)
    if check_errors:
        _raise_info("linalg.inv_ex", info, A, lambda k: f"The diagonal element {k} is zero, the inversion could not "
                                                        f"be completed because the input matrix is singular.")
    if not bool((info > 0).any()):
        return _ExResult(inv(A), info)
    return _ExResult(_nan_where(info, A, inv(_usable(A, info)), 2), info)


@autocast_op("fp32")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """(result, info) of solve(A, B, left=left), info as inv_ex's (NaN results for singular matrices);
    check_errors=True raises LinAlgError instead."""
    _check_matrix("solve_ex", A)
    info = _info(A, _lu_info)
    if check_errors:
        _raise_info("linalg.solve_ex", info, A, lambda k: "The solver failed because the input matrix is singular.")
    if not bool((info > 0).any()):
        return _SolveExResult(solve(A, B, left=left), info)
    X = solve(_usable(A, info), B, left=left)
    return _SolveExResult(_nan_where(info, A, X, X.ndim - (A.ndim - 2)), info)


@autocast_op("fp32")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """(L, info) with info 0 where A is positive-definite, else the order of its first leading minor that
    is not (that L is NaN); check_errors=True raises LinAlgError instead.

    >>> ember.linalg.cholesky_ex(-ember.eye(2)).info.item()
    1
    """
    _check_matrix("cholesky_ex", A)
    info = _info(A, _cholesky_info)
    if check_errors:
        _raise_info("linalg.cholesky_ex", info, A, lambda k: f"The factorization could not be completed because the "
                                                             f"input is not positive-definite (the leading minor of "
                                                             f"order {k} is not positive-definite).")
    if not bool((info > 0).any()):
        return _CholeskyExResult(cholesky(A, upper=upper), info)
    return _CholeskyExResult(_nan_where(info, A, cholesky(_usable(A, info), upper=upper), 2), info)
