"""linalg.lu_factor, lu_factor_ex, lu_unpack, householder_product (orgqr), geqrf, ormqr against torch:
values and gradients through check_op (float32 and float64; square, wide, tall, batched, empty), double
backward numerically, errors."""
import numpy as np
import pytest

import ember
from helpers import NoGrad, check_op, raises_exactly

TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-3, grad_rtol=1e-3)
SHAPES = [(3, 3), (2, 4, 4), (5, 3), (3, 5), (2, 1, 3, 2)]


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor(shape):
    check_op(lambda L, a: tuple(L.linalg.lu_factor(a)), shape, **TOL)
    check_op(lambda L, a: tuple(L.linalg.lu_factor_ex(a)), shape, **TOL)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_unpack(shape):
    check_op(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a))), shape, **TOL)
    # torch's own backward fails on the empty L and U of unpack_data=False: values only
    check_op(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a), unpack_data=False)), shape, grad=False, **TOL)
    check_op(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a), unpack_pivots=False)), shape, **TOL)


def test_lu_factor_empty_and_singular():
    for shape, k in (((0, 3, 3), 3), ((4, 0), 0), ((2, 0, 3), 0)):
        LU, piv, info = ember.linalg.lu_factor_ex(ember.zeros(shape))
        assert (LU.shape, piv.shape, info.shape, piv.dtype) == (shape, shape[:-2] + (k,), shape[:-2], ember.int32)
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    check_op(lambda L, a: tuple(L.linalg.lu_factor_ex(a)), NoGrad(singular), grad=False)
    assert ember.linalg.lu_factor_ex(ember.tensor(singular)).info.tolist() == [2, 1, 0]


def test_lu_factor_reconstructs_and_double_backward():
    a = ember.tensor(np.random.default_rng(3).standard_normal((2, 4, 3)), requires_grad=True)
    P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(a))
    assert np.allclose((P @ L @ U).detach().numpy(), a.detach().numpy())
    assert ember.autograd.gradcheck(lambda x: ember.linalg.lu_factor(x).LU, (a,))
    assert ember.autograd.gradgradcheck(lambda x: ember.linalg.lu_factor(x).LU, (a,))


def test_lu_errors():
    raises_exactly(lambda: ember.linalg.lu_factor(ember.zeros(2, 3, 3)), ember.linalg.LinAlgError,
                   "linalg.lu_factor: (Batch element 0): U[1,1] is zero and using it on lu_solve would result in a "
                   "division by zero. If you still want to perform the factorization, consider calling "
                   "linalg.lu_factor_ex(A, pivot) (A (2, 3, 3) float32 cpu)")
    with pytest.raises(ember.linalg.LinAlgError, match="lu_factor_ex: U\\[2,2\\] is zero"):
        ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [2.0, 4.0]]), check_errors=True)
    with pytest.raises(RuntimeError, match="linalg.lu_factor: Expected tensor with 2 or more dimensions. Got size: \\[3\\]"):
        ember.linalg.lu_factor(ember.ones(3))
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented"):
        ember.linalg.lu_factor_ex(ember.eye(2), pivot=False)
    with pytest.raises(RuntimeError, match="linalg.lu_factor: Expected a floating point"):
        ember.linalg.lu_factor(ember.ones(2, 2, dtype=ember.int64))
    LU, piv = ember.linalg.lu_factor(ember.eye(3))
    with pytest.raises(RuntimeError, match="lu_unpack: LU_pivots is expected to be a contiguous tensor of int32"):
        ember.lu_unpack(LU, piv.long())
    with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and LU.size\\(-2\\) = 3"):
        ember.lu_unpack(LU, piv + 5)
    with pytest.raises(RuntimeError, match="lu_unpack: LU_pivots \\(1, 3\\) int32 cpu must have shape"):
        ember.lu_unpack(LU, piv.unsqueeze(0))
    with pytest.raises(RuntimeError, match="lu_unpack: Expected tensor with 2 or more dimensions"):
        ember.lu_unpack(ember.ones(3), piv)


@pytest.mark.parametrize("shape,k", [((4, 3), 3), ((3, 3), 2), ((2, 5, 3), 3), ((4, 2), 0)])
def test_householder_product_and_orgqr(shape, k):
    tau = shape[:-2] + (k,)
    check_op(lambda L, a, t: L.linalg.householder_product(a, t), shape, tau, **TOL)
    check_op(lambda L, a, t: L.orgqr(a, t), shape, tau, **TOL)
    check_op(lambda L, a, t: a.orgqr(t), shape, tau, **TOL)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 5, 2), (3, 5)])
def test_geqrf(shape):
    out = check_op(lambda L, a: tuple(L.geqrf(a)), NoGrad(shape), grad=False, atol=1e-5, rtol=1e-5)[1]
    check_op(lambda L, a: tuple(a.geqrf()), NoGrad(shape), grad=False, atol=1e-5, rtol=1e-5)
    assert not out[0].requires_grad
    a, tau = ember.geqrf(ember.zeros(2, 0, 3))
    assert (a.shape, tau.shape) == ((2, 0, 3), (2, 0))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr(left, transpose):
    other = (2, 4, 2) if left else (2, 2, 4)
    check_op(lambda L, a, t, c: L.ormqr(a, t, c, left, transpose), (2, 4, 3), (2, 3), other, **TOL)
    check_op(lambda L, a, t, c: a.ormqr(t, c, left=left, transpose=transpose), (2, 4, 3), (2, 3), other, **TOL)


def test_householder_errors():
    with pytest.raises(RuntimeError, match="input.shape\\[-2\\] must be greater than or equal to input.shape\\[-1\\]"):
        ember.linalg.householder_product(ember.ones(3, 4), ember.ones(2))
    with pytest.raises(RuntimeError, match="input.shape\\[-1\\] must be greater than or equal to tau.shape\\[-1\\]"):
        ember.linalg.householder_product(ember.ones(4, 3), ember.ones(4))
    with pytest.raises(RuntimeError, match="Expected batch dimensions of tau to be equal to input.shape\\[:-2\\], but got \\[3\\]"):
        ember.linalg.householder_product(ember.ones(2, 4, 3), ember.ones(3, 2))
    with pytest.raises(RuntimeError, match="tau dtype Double does not match input dtype Float"):
        ember.linalg.householder_product(ember.ones(4, 3), ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="householder_product: input must have at least 2 dimensions"):
        ember.linalg.householder_product(ember.ones(4), ember.ones(2))
    with pytest.raises(RuntimeError, match="geqrf: input must have at least 2 dimensions"):
        ember.geqrf(ember.ones(4))
    with pytest.raises(RuntimeError, match="ormqr: other.shape\\[-2\\] must be equal to input.shape\\[-2\\]"):
        ember.ormqr(ember.ones(4, 3), ember.ones(3), ember.ones(3, 2))
    with pytest.raises(RuntimeError, match="ormqr: other.shape\\[-1\\] must be equal to input.shape\\[-2\\]"):
        ember.ormqr(ember.ones(4, 3), ember.ones(3), ember.ones(4, 2), left=False)
