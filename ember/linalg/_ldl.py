"""The Bunch-Kaufman LDL^T factorisation: ldl_factor, ldl_factor_ex and ldl_solve (LAPACK sytf2/sytrs
written against xp in `ember/ops/linalg.py`); not differentiable, as torch's."""
from __future__ import annotations

import collections

from .._errors import describe, op_error
from .._tensor import Tensor
from ..ops import linalg as P
from ._common import _check_float, _raise_info
from ._lu import _check_factor_solve


_LDLFactorResult = collections.namedtuple("ldl_factor", ["LD", "pivots"])
_LDLFactorExResult = collections.namedtuple("ldl_factor_ex", ["LD", "pivots", "info"])


def _no_derivative(op, outputs, inputs):
    """outputs on the graph of `inputs` whose backward raises (torch: 'derivative ... is not implemented'),
    so that a loss through them fails loudly instead of getting no gradient."""
    from ..autograd.function import Function
    from ..autograd.grad_mode import STATE
    if not (STATE.enabled and any(t.requires_grad for t in inputs)):
        return outputs

    class _NotDifferentiable(Function):
        @staticmethod
        def forward(ctx, *args):
            return tuple(o.detach() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            raise op_error(op, "the derivative is not implemented (torch has none either)", NotImplementedError)
    _NotDifferentiable.__name__ = op.replace("linalg.", "").title().replace("_", "") + "Backward"
    return _NotDifferentiable.apply(*inputs)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    """(LD, pivots, info): the Bunch-Kaufman factorisation A = L D L^T of each symmetric matrix (its lower
    triangle read), as LAPACK's sytrf: D block diagonal (1x1 and 2x2 blocks) on LD's diagonal, L's
    multipliers below it (the upper triangle zero); pivots int32, 1-based (k: row k swapped in for a 1x1
    block, -k on both rows of a 2x2 block); info 0, or the index of the first zero 1x1 block of D (A is
    singular; the factorisation still completes). hermitian only matters for complex inputs. check_errors
    raises LinAlgError where info > 0. Not differentiable (as torch's: a backward through it raises).

    >>> LD, pivots, info = ember.linalg.ldl_factor_ex(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> LD.tolist(), pivots.tolist(), info.item()
    ([[4.0, 0.0], [0.5, 2.0]], [1, 2], 0)
    """
    op = "linalg.ldl_factor_ex"
    _check_float("ldl_factor_ex", A)
    if A.ndim < 2:
        raise op_error(op, f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error(op, f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices (A {describe(A)})")
    from ..backends import array_module
    data = A.detach()._data
    xp = array_module(data)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    ld, piv, info = P._ldl_kernel(xp, data.reshape((-1, n, n)))
    LD = Tensor._make(ld.reshape(A.shape), A._device)
    info = Tensor._make(info.reshape(batch), A._device)
    if check_errors:
        _raise_info(op, info, A, lambda k: f"The factorization could not be completed because the input is "
                                           f"singular: D[{k},{k}] is zero.")
    LD, = _no_derivative("linalg.ldl_factor", (LD,), (A,))
    return _LDLFactorExResult(LD, Tensor._make(piv.reshape(batch + (n,)), A._device), info)


def ldl_factor(A: Tensor, *, hermitian: bool = False):
    """(LD, pivots) of ldl_factor_ex, raising LinAlgError where D is singular.

    >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[0.0, 1.0], [1.0, 0.0]]))   # a 2x2 block
    >>> LD.tolist(), pivots.tolist()
    ([[0.0, 0.0], [1.0, 0.0]], [-2, -2])
    """
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_info("linalg.ldl_factor", info, A, lambda k: f"The factorization could not be completed because the "
                                                        f"input is singular: D[{k},{k}] is zero.")
    return _LDLFactorResult(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """X with A X = B, given ldl_factor's (LD, pivots) of symmetric A (LAPACK sytrs). LD, pivots and B have
    the same batch dims (torch does not broadcast them either). Not differentiable (as torch's).

    >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> ember.linalg.ldl_solve(LD, pivots, ember.tensor([[6.0], [5.0]])).tolist()
    [[1.0], [1.0]]
    """
    op = "linalg.ldl_solve"
    _check_factor_solve("ldl_solve", LD, pivots, B, True, "LD")
    if tuple(B.shape[:-2]) != tuple(LD.shape[:-2]):
        raise op_error(op, f"LD and B must have the same batch dimensions (LD {describe(LD)}, B {describe(B)})")
    from ..backends import array_module
    ld, piv, rhs = LD.detach()._data, pivots._data, B.detach()._data
    n, k = LD.shape[-1], B.shape[-1]
    if piv.size and not bool(((abs(pivots) >= 1) & (abs(pivots) <= n)).all()):
        raise op_error(op, f"pivots must be between 1 and n = {n} in absolute value (pivots {describe(pivots)}); "
                           f"pass the pivots that linalg.ldl_factor returns")
    xp = array_module(ld)
    X = P._ldl_solve_kernel(xp, ld.reshape((-1, n, n)), piv.reshape((-1, n)), rhs.reshape((-1, n, k)))
    X = Tensor._make(X.reshape(B.shape), B._device)
    return _no_derivative("linalg.ldl_solve", (X,), (LD, B))[0]
