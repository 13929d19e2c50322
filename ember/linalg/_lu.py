"""The LU factorisation with partial pivoting: lu_factor and lu_factor_ex (the LuFactor primitive, LAPACK
getrf written against xp), lu_unpack, and lu and lu_solve on top of them."""
from __future__ import annotations

import collections

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import linalg as P
from ._common import _check_float, _raise_info, _same_dtype
from ._solvers import solve_triangular


_LUFactorResult = collections.namedtuple("lu_factor", ["LU", "pivots"])
_LUFactorExResult = collections.namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
_LUUnpackResult = collections.namedtuple("lu_unpack", ["P", "L", "U"])
_LUResult = collections.namedtuple("lu", ["P", "L", "U"])


def _check_lu_input(op, A, pivot):
    _check_float(op, A)
    if A.ndim < 2:
        raise op_error(f"linalg.{op}", f"Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead "
                                       f"(A {describe(A)})")
    if not pivot:
        raise op_error(f"linalg.{op}", "LU without pivoting is not implemented on the CPU", RuntimeError)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """(LU, pivots, info): the LU factorisation with partial pivoting A = P L U of each (m, n) matrix, packed
    as LAPACK's getrf: L's multipliers below the diagonal of LU (its unit diagonal implied), U on and above;
    pivots (..., min(m, n)) int32, the 1-based row swapped with row i at step i; info 0, or the 1-based
    index of the first zero pivot (U singular). Differentiable in A (as torch). check_errors=True raises
    LinAlgError where info > 0.

    >>> LU, pivots, info = ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> LU.tolist(), pivots.tolist(), info.item()
    ([[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]], [2, 2], 0)
    """
    _check_lu_input("lu_factor_ex", A, pivot)
    LU, pivots, info = P.LuFactor.apply(A)
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info, A,
                    lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero.")
    return _LUFactorExResult(LU, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True):
    """(LU, pivots) of lu_factor_ex, raising LinAlgError where U has a zero pivot (A singular).

    >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[0.0, 1.0], [2.0, 3.0]]))
    >>> LU.tolist(), pivots.tolist()
    ([[2.0, 3.0], [0.0, 1.0]], [2, 2])
    """
    _check_lu_input("lu_factor", A, pivot)
    LU, pivots, info = P.LuFactor.apply(A)
    _raise_info("linalg.lu_factor", info, A,
                lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If you "
                          f"still want to perform the factorization, consider calling linalg.lu_factor_ex(A, pivot)")
    return _LUFactorResult(LU, pivots)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True):
    """(P, L, U) with A = P L U from lu_factor's packed (LU, pivots): P (..., m, m) a permutation matrix in
    LU's dtype, L (..., m, k) unit lower triangular, U (..., k, n) upper triangular (k = min(m, n)). With
    unpack_data=False L and U, with unpack_pivots=False P, are empty tensors. L and U are differentiable.

    >>> P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(ember.tensor([[0.0, 1.0], [2.0, 3.0]])))
    >>> P.tolist(), L.tolist(), U.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [0.0, 1.0]])
    """
    _check_float("lu_unpack", LU_data, "LU_data")
    if LU_data.ndim < 2:
        raise op_error("lu_unpack", f"Expected tensor with 2 or more dimensions. Got size: {list(LU_data.shape)} "
                                    f"instead (LU_data {describe(LU_data)})")
    if not isinstance(LU_pivots, Tensor) or LU_pivots.dtype.name != "int32":
        raise op_error("lu_unpack", f"LU_pivots is expected to be a contiguous tensor of int32 dtype (got "
                                    f"{describe(LU_pivots)}); pass the pivots that linalg.lu_factor returns")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if tuple(LU_pivots.shape[:-1]) != tuple(LU_data.shape[:-2]) or LU_pivots.ndim == 0 or LU_pivots.shape[-1] > k:
        raise op_error("lu_unpack", f"LU_pivots {describe(LU_pivots)} must have shape LU_data.shape[:-2] + (k,) with "
                                    f"k <= min(m, n) = {k} (LU_data {describe(LU_data)})")
    from ..ops.creation import empty
    nothing = LU_data.reshape(-1)[:0]                 # empty, still on LU_data's graph (as torch's)
    L, U = P._unpack(LU_data) if unpack_data else (nothing, nothing)
    if not unpack_pivots:
        return _LUUnpackResult(empty(0, dtype=LU_data.dtype, device=LU_data.device), L, U)
    piv = LU_pivots.detach()._data
    if LU_pivots.numel() and not bool(((LU_pivots >= 1) & (LU_pivots <= m)).all()):
        raise op_error("lu_unpack", f"pivots passed to lu_unpack must be between 1 and LU.size(-2) = {m} inclusive "
                                    f"(LU_pivots {describe(LU_pivots)}); pass the pivots that linalg.lu_factor returns")
    from ..backends import array_module
    xp = array_module(piv)
    count = P._count(piv.shape[:-1])
    perm = P.lu_permutation(xp, piv.reshape((count, piv.shape[-1])), m)         # A[perm] = L U
    eye = xp.eye(m, dtype=LU_data.dtype.np)
    Pm = xp.swapaxes(eye[perm], -1, -2).reshape(tuple(LU_data.shape[:-2]) + (m, m))
    return _LUUnpackResult(Tensor._make(xp.ascontiguousarray(Pm), LU_data._device), L, U)


def lu(A: Tensor, *, pivot: bool = True):
    """(P, L, U) with A = P L U, partial pivoting, for A (..., m, n): P (..., m, m), L (..., m, k) unit lower,
    U (..., k, n) upper, k = min(m, n). A singular matrix is fine (U has a zero on its diagonal). L and U
    are differentiable (as torch's).

    >>> P, L, U = ember.linalg.lu(ember.tensor([[0.0, 1.0], [2.0, 3.0]]))
    >>> P.tolist(), L.tolist(), U.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [0.0, 1.0]])
    """
    _check_lu_input("lu", A, pivot)
    LU, pivots, _ = P.LuFactor.apply(A)
    return _LUResult(*lu_unpack(LU, pivots))


def _check_factor_solve(op, LU, pivots, B, left, lu_name="LU"):
    """The checks shared by lu_solve and ldl_solve: a square factor, int32 pivots of shape LU.shape[:-1],
    B (..., n, k) (or (..., k, n) when not left) of LU's dtype."""
    _check_float(op, LU, lu_name)
    _check_float(op, B, "B")
    if LU.ndim < 2:
        raise op_error(f"linalg.{op}", f"The input tensor {lu_name} must have at least 2 dimensions. "
                                       f"({lu_name} {describe(LU)})")
    if LU.shape[-1] != LU.shape[-2]:
        raise op_error(f"linalg.{op}", f"{lu_name} must be batches of square matrices, but they are {LU.shape[-2]} "
                                       f"by {LU.shape[-1]} matrices ({lu_name} {describe(LU)})")
    if B.ndim < 2:
        raise op_error(f"linalg.{op}", f"The input tensor B must have at least 2 dimensions. (B {describe(B)})")
    if not isinstance(pivots, Tensor) or pivots.dtype.name != "int32":
        raise op_error(f"linalg.{op}", f"pivots should be a Tensor of scalar type torch.int32 (got "
                                       f"{describe(pivots)})")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise op_error(f"linalg.{op}", f"Expected {lu_name}.shape[:-1] and pivots.shape to be the same, but got "
                                       f"pivots {describe(pivots)} and {lu_name} {describe(LU)}")
    n = LU.shape[-1]
    if op == "ldl_solve" and B.shape[-2] != n:
        raise op_error(f"linalg.{op}", f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} "
                                       f"by {n} but each b matrix is {B.shape[-2]} by {B.shape[-1]} (LD "
                                       f"{describe(LU)}, B {describe(B)})")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise op_error(f"linalg.{op}", f"Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                                       f"{B.shape[-2]}x{B.shape[-1]}) ({lu_name} {describe(LU)}, B {describe(B)})")
    _same_dtype(f"linalg.{op}", LU, B, lu_name, "B")
    if LU._device is not B._device or LU._device is not pivots._device:
        raise op_error(f"linalg.{op}", f"expected {lu_name}, pivots and B on the same device, got "
                                       f"{describe(LU)}, {describe(pivots)} and {describe(B)}")


@autocast_op("fp32")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with A X = B (left=True) or X A = B, or with A^T in place of A (adjoint=True), given lu_factor's
    (LU, pivots) of A = P L U; batch dims of LU and B broadcast. Differentiable in LU and B.

    >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[3.0, 1.0], [1.0, 2.0]]))
    >>> [round(v, 4) for v in ember.linalg.lu_solve(LU, pivots, ember.tensor([[9.0], [8.0]])).flatten().tolist()]
    [2.0, 3.0]
    """
    _check_factor_solve("lu_solve", LU, pivots, B, left)
    try:
        np.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise op_error("linalg.lu_solve", f"batch dimensions of LU {describe(LU)} and B {describe(B)} cannot be "
                                          f"broadcast together") from None
    if not left:   # X A = B <=> A^T X^T = B^T; X A^T = B <=> A X^T = B^T
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    Pm, L, U = lu_unpack(LU, pivots)
    if not adjoint:                  # P L U X = B: X = U^-1 L^-1 P^T B
        Y = solve_triangular(L, Pm.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    Y = solve_triangular(U.mT, B, upper=False)   # U^T L^T P^T X = B: X = P L^-T U^-T B
    return Pm @ solve_triangular(L.mT, Y, upper=True, unitriangular=True)
