"""Householder QR: geqrf (LAPACK's packed factorisation), householder_product (`ember.orgqr`) and ormqr,
the last two composites that apply the reflectors without forming Q."""
from __future__ import annotations

import collections

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import shape as S
from ._common import _TORCH_NAMES, _check_float


_GeqrfResult = collections.namedtuple("geqrf", ["a", "tau"])


def _reflectors(A, tau):
    """[(v_i, tau_i)]: the Householder vectors H_i = I - tau_i v_i v_i^T stored below A's diagonal
    (v_i (..., m, 1): zeros above row i, 1 at row i; tau_i (..., 1, 1))."""
    from ..ops.creation import zeros, ones
    batch = tuple(A.shape[:-2])
    out = []
    for i in range(tau.shape[-1]):
        parts = [zeros(batch + (i, 1), dtype=A.dtype, device=A.device),
                 ones(batch + (1, 1), dtype=A.dtype, device=A.device), A[..., i + 1:, i:i + 1]]
        out.append((S.cat(parts, -2), tau[..., i:i + 1].unsqueeze(-1)))      # (..., m, 1), (..., 1, 1)
    return out


def _apply_reflectors(C, reflectors, left, order):
    """H_i applied to C for each reflector in `order`: H C on the left, C H on the right."""
    for v, t in order(reflectors):
        if left:
            C = C - t * (v @ (v.mT @ C))
        else:
            C = C - t * ((C @ v) @ v.mT)
    return C


def _check_householder(op, A, tau):
    _check_float(op, A, "input")
    _check_float(op, tau, "tau")
    if A.ndim < 2:
        raise op_error(op, f"input must have at least 2 dimensions. (input {describe(A)})")
    if tau.dtype is not A.dtype:
        raise op_error(op, f"tau dtype {_TORCH_NAMES[tau.dtype.name]} does not match input dtype "
                           f"{_TORCH_NAMES[A.dtype.name]}")
    if A._device is not tau._device:
        raise op_error(op, f"expected input and tau on the same device, got {describe(A)} and {describe(tau)}")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise op_error(op, f"Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])} (input {describe(A)}, tau {describe(tau)})")


@autocast_op("fp32")
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i stored below the diagonal
    of column i of A (m, n) (geqrf's output): the Q of a QR factorisation. m >= n >= k. Differentiable in
    A and tau. `ember.orgqr` is the same function.

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in ember.linalg.householder_product(a, tau).tolist()]
    [[-0.6, -0.8], [-0.8, 0.6]]
    """
    op = "linalg.householder_product"
    _check_householder(op, A, tau)
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise op_error(op, f"input.shape[-2] must be greater than or equal to input.shape[-1] (input {describe(A)})")
    if n < tau.shape[-1]:
        raise op_error(op, f"input.shape[-1] must be greater than or equal to tau.shape[-1] (input {describe(A)}, "
                           f"tau {describe(tau)})")
    from ..ops.creation import eye
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    if tau.shape[-1] == 0:   # no reflectors: the identity, still on A's and tau's graph (as torch's)
        return Q + 0 * A + 0 * tau.sum(-1, keepdim=True).unsqueeze(-1)
    return _apply_reflectors(Q, _reflectors(A, tau), True, reversed)       # H_1 (H_2 (... (H_k I)))


@autocast_op("fp32")
def geqrf(input: Tensor):
    """(a, tau): LAPACK geqrf's QR factorisation of each (m, n) matrix: R on and above a's diagonal, the
    Householder vectors of Q below it, their scales in tau (..., min(m, n)). Q is
    householder_product(a, tau). Not differentiable, as torch's (use linalg.qr).

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in a.triu().tolist()]
    [[-5.0, -2.2], [0.0, 0.4]]
    """
    _check_float("geqrf", input, "input")
    if input.ndim < 2:
        raise op_error("geqrf", f"input must have at least 2 dimensions. (input {describe(input)})")
    from ..backends import array_module
    data = input.detach()._data
    xp = array_module(data)
    m, n = input.shape[-2], input.shape[-1]
    batch = tuple(input.shape[:-2])
    if data.size == 0:   # NumPy's qr refuses empty matrices
        return _GeqrfResult(Tensor._make(data.copy(), input._device),
                            Tensor._make(xp.zeros(batch + (min(m, n),), dtype=data.dtype), input._device))
    h, tau = xp.linalg.qr(data, mode="raw")                                 # h: a transposed (Fortran order)
    a = xp.ascontiguousarray(xp.swapaxes(h, -1, -2)).astype(data.dtype, copy=False)
    return _GeqrfResult(Tensor._make(a, input._device), Tensor._make(tau.astype(data.dtype, copy=False), input._device))


@autocast_op("fp32")
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """Q other (left=True) or other Q (left=False), with Q^T instead when transpose=True, where Q (mn, mn) =
    H_1 ... H_k is given by geqrf's (input (mn, k'), tau (k)): without forming Q. Differentiable.

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in ember.ormqr(a, tau, ember.eye(2), transpose=True).tolist()]
    [[-0.6, -0.8], [-0.8, 0.6]]
    """
    _check_householder("ormqr", input, tau)
    _check_float("ormqr", other, "other")
    if other.dtype is not input.dtype:
        raise op_error("ormqr", f"other dtype {_TORCH_NAMES[other.dtype.name]} does not match input dtype "
                                f"{_TORCH_NAMES[input.dtype.name]}")
    if other.ndim != input.ndim or tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise op_error("ormqr", f"other {describe(other)} must have input's batch dimensions (input {describe(input)})")
    mn = input.shape[-2]
    side = -2 if left else -1
    if other.shape[side] != mn:
        raise op_error("ormqr", f"other.shape[{side}] must be equal to input.shape[-2] (input {describe(input)}, "
                                f"other {describe(other)})")
    if tau.shape[-1] > mn:
        raise op_error("ormqr", f"tau.shape[-1] must be less than or equal to input.shape[-2] (input "
                                f"{describe(input)}, tau {describe(tau)})")
    refl = _reflectors(input, tau)
    # Q C = H_1 (... (H_k C)); Q^T C = H_k (... (H_1 C)); C Q = ((C H_1) ...) H_k; C Q^T = ((C H_k) ...) H_1
    first_last = left == transpose
    return _apply_reflectors(other, refl, left, (lambda r: r) if first_last else reversed)
