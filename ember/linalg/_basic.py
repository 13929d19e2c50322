"""solve, inv, slogdet, det and the decompositions (cholesky, qr, svd, svdvals, eigh, eigvalsh): the
checked front ends of the primitives of `ember/ops/linalg.py` (det is the composite sign * exp(log|det|))."""
from __future__ import annotations

import collections

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import linalg as P
from ..ops import math as M
from ._common import _TORCH_NAMES, _check_float, _check_matrix, _run


_SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])
_QRResult = collections.namedtuple("qr", ["Q", "R"])
_SVDResult = collections.namedtuple("svd", ["U", "S", "Vh"])
_EighResult = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])


# ---------------------------------------------------------------- solve, inv, det
@autocast_op("fp32")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (left=True) or X A = B (left=False); B may be a vector (or a batch of vectors)."""
    _check_matrix("solve", A)
    _check_float("solve", B, "B")
    if A.dtype is not B.dtype:
        raise op_error("linalg.solve", f"Expected A and B to have the same dtype, but found A of type "
                                       f"{_TORCH_NAMES[A.dtype.name]} and B of type {_TORCH_NAMES[B.dtype.name]} "
                                       f"instead (A {describe(A)}, B {describe(B)})")
    if A._device is not B._device:
        raise op_error("linalg.solve", f"expected A and B on the same device, got A {describe(A)} and B {describe(B)}")
    if not left:   # X A = B  <=>  A^T X^T = B^T
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if Bm.ndim < 2 or Bm.shape[-2] != n:
        shown = f"{Bm.shape[-2]}x{Bm.shape[-1]}" if Bm.ndim >= 2 else f"{B.shape[0]}x1"
        raise op_error("linalg.solve", f"Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                                       f"{shown}) (A {describe(A)}, B {describe(B)})")
    try:
        np.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    except ValueError:
        raise op_error("linalg.solve", f"batch dimensions of A {describe(A)} and B {describe(B)} cannot be "
                                       f"broadcast together") from None
    X = _run("solve", P.Solve, A, Bm)
    return X.squeeze(-1) if vector else X


@autocast_op("fp32")
def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix in A (..., n, n)."""
    _check_matrix("inv", A)
    return _run("inv", P.Inv, A)


def slogdet(A: Tensor):
    """(sign, log|det A|) of each square matrix: the log is differentiable, the sign is not."""
    _check_matrix("slogdet", A)
    return _SlogdetResult(P.SlogdetSign.apply(A), P.LogAbsDet.apply(A))


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix: sign * exp(log|det|), so its gradient is det(A) A^-T
    (not finite at a singular matrix)."""
    _check_matrix("det", A)
    sign, logabsdet = slogdet(A)
    return sign * M.exp(logabsdet)


# ---------------------------------------------------------------- decompositions
@autocast_op("fp32")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L with A = L L^T (lower), or U = L^T with A = U^T U (upper=True), for symmetric positive-definite A."""
    _check_matrix("cholesky", A)
    L = _run("cholesky", P.Cholesky, A)
    return L.mT if upper else L


@autocast_op("fp32")
def qr(A: Tensor, mode: str = "reduced"):
    """(Q, R) with A = Q R: mode 'reduced' (Q (..., m, k)), 'complete' (Q (..., m, m)) or 'r' (R only; Q empty)."""
    _check_matrix("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise op_error("linalg.qr", f"qr received unrecognized mode {mode!r} but expected one of 'reduced' "
                                    f"(default), 'r', or 'complete'", ValueError)
    m, n = A.shape[-2], A.shape[-1]
    from ..autograd.grad_mode import STATE
    if STATE.enabled and A.requires_grad:
        if mode == "r":
            raise op_error("linalg.qr", "The derivative of linalg.qr depends on Q, which is not computed when "
                                        "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                                        "differentiate through linalg.qr.")
        if m < n:
            raise op_error("linalg.qr", f"the gradient for wide matrices (m < n) is not implemented in Ember "
                                        f"(A {describe(A)}); factor A.mT instead", NotImplementedError)
        if mode == "complete" and m > n:
            raise op_error("linalg.qr", "The QR decomposition is not differentiable when mode='complete' and "
                                        "nrows > ncols.")
    Q, R = _run("qr", P.Qr, A, mode="complete" if mode == "complete" and m > n else "reduced")
    if mode == "r":
        from ..ops.creation import empty
        return _QRResult(empty(0, dtype=A.dtype, device=A.device), R)
    return _QRResult(Q, R)


@autocast_op("fp32")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. Gradients as torch's (gauge-invariant losses only:
    singular vectors are defined up to sign); full_matrices=True on a non-square A is not differentiable."""
    _check_matrix("svd", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        from ..autograd.grad_mode import STATE
        if STATE.enabled and A.requires_grad:
            raise op_error("linalg.svd", f"the gradient with full_matrices=True on a non-square input is not "
                                         f"implemented (A {describe(A)}); pass full_matrices=False",
                           NotImplementedError)
        return _SVDResult(*_run("svd", P.Svd, A, full_matrices=True))
    return _SVDResult(*_run("svd", P.Svd, A))


@autocast_op("fp32")
def svdvals(A: Tensor) -> Tensor:
    """The singular values of A, descending."""
    _check_matrix("svdvals", A, square=False)
    return _run("svdvals", P.Svd, A)[1]


@autocast_op("fp32")
def eigh(A: Tensor, UPLO: str = "L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading its lower (UPLO='L') or
    upper triangle. Eigenvectors are defined up to sign: differentiate gauge-invariant losses only."""
    _check_matrix("eigh", A)
    if UPLO not in ("L", "U"):
        raise op_error("linalg.eigh", f"Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}", ValueError)
    return _EighResult(*_run("eigh", P.Eigh, A, UPLO=UPLO))


@autocast_op("fp32")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of symmetric A, ascending."""
    _check_matrix("eigvalsh", A)
    return eigh(A, UPLO).eigenvalues
