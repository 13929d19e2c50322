"""matrix_power (repeated squaring) and matrix_exp (Pade approximation with scaling and squaring):
composites, differentiable twice."""
from __future__ import annotations

import math

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ._basic import inv, solve
from ._common import _check_float, _eye_like


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n for each square matrix by repeated squaring: n = 0 gives the identity, n < 0 the power of inv(A)
    (float A only; integer A is fine for n >= 0). Also `ember.matrix_power` and `Tensor.matrix_power`.

    >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [1, 0]]), 5).tolist()
    [[8, 5], [5, 3]]
    """
    op = "linalg.matrix_power"
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: expected a Tensor for A, got {type(A).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise op_error(op, f"argument 'n' must be int, not {type(n).__name__} ({n!r})", TypeError)
    if A.ndim < 2:
        raise op_error(op, f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error(op, f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices (A {describe(A)})")
    if n == 0:   # the identity, on A's graph with a zero gradient (as torch's)
        from ..ops.creation import ones
        return M.where(ones((), dtype="bool", device=A.device), _eye_like(A).to(A.dtype), A)
    if n < 0:
        A, n = inv(A), -n
    result, z = None, None
    while n:
        z = A if z is None else z @ z
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
    return result if result is not A else A * 1


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the degrees of
# the diagonal Pade approximants, the largest 1-norm each is accurate for in double precision, and their
# coefficients b_0..b_m.
_PADE_THETA = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
               (9, 2.097847961257068e0), (13, 5.371920351148152e0))
_PADE_B = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0,
        90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0,
         1.0),
}


def _pade(A, m):
    """r_m(A) = (V - U)^-1 (V + U), U and V the odd and even parts of the degree-m Pade numerator."""
    b = _PADE_B[m]
    eye = _eye_like(A)
    A2 = A @ A
    if m == 13:
        A4 = A2 @ A2
        A6 = A4 @ A2
        U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
        V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    else:
        powers = [eye, A2]
        while len(powers) < (m + 1) // 2:
            powers.append(powers[-1] @ A2)
        U = A @ sum(b[2 * j + 1] * P_ for j, P_ in enumerate(powers))
        V = sum(b[2 * j] * P_ for j, P_ in enumerate(powers))
    return solve(V - U, V + U)


@autocast_op("fp32")
def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of each square matrix, by Pade approximation with scaling and squaring (Higham 2005): the
    degree from the largest 1-norm in the batch, the number of squarings per matrix. Differentiable (the
    derivative of the same scaled approximant, which is the Frechet derivative of exp to working accuracy;
    twice). float16/bfloat16 are computed in float32. Also `ember.matrix_exp` and `Tensor.matrix_exp`.

    >>> ember.linalg.matrix_exp(ember.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    _check_float("matrix_exp", A, low_precision=True)
    if A.ndim < 2:
        raise op_error("linalg.matrix_exp", f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error("linalg.matrix_exp", f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                                            f"{A.shape[-1]} matrices (A {describe(A)})")
    if A.dtype.name in ("float16", "bfloat16"):
        return matrix_exp(A.float()).to(A.dtype)
    if A.numel() == 0:
        return A * 1
    from ..ops.creation import tensor
    norms = M.amax(M.sum(M.abs(A.detach()), -2), -1).reshape(-1).to("float64").tolist()   # each 1-norm
    largest = max(norms)
    if not math.isfinite(largest):
        return _pade(A, 13)                     # NaN or inf in: NaN out, as torch's
    for m, theta in _PADE_THETA[:-1]:
        if largest <= theta:
            return _pade(A, m)
    theta = _PADE_THETA[-1][1]
    squarings = [max(0, math.ceil(math.log2(x / theta))) if x > 0 else 0 for x in norms]
    batch = tuple(A.shape[:-2]) + (1, 1)
    scale = tensor([2.0 ** -s for s in squarings], dtype=A.dtype, device=A.device).reshape(batch)
    R = _pade(A * scale, 13)
    steps = tensor(squarings, device=A.device).reshape(batch)
    for j in range(max(squarings)):
        R = M.where(steps > j, R @ R, R)
    return R
