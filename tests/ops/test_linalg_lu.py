"""linalg.lu_factor, lu_factor_ex, lu_unpack, householder_product (orgqr), geqrf, ormqr against torch:
values and gradients through check_op (float32 and float64; square, wide, tall, batched, empty), double
backward numerically, errors."""
import numpy as np
import torch
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


# ------------------------------------------------------------------ linalg.lu, linalg.lu_solve
@pytest.mark.parametrize("shape", SHAPES + [(0, 3, 3), (2, 0, 3)])
def test_lu(shape):
    # torch skips its dtype check on empty inputs (float16 accepted): no dtype pass for those
    check_op(lambda L, a: tuple(L.linalg.lu(a)), shape, check_dtype=0 not in shape, **TOL)


def test_lu_singular_and_double_backward():
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]])
    check_op(lambda L, a: tuple(L.linalg.lu(a)), NoGrad(singular), grad=False)
    a = ember.tensor(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x: ember.linalg.lu(x).U, (a,))


def _well(L, a):
    return a + 3 * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
@pytest.mark.parametrize("a,b", [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((2, 1, 3, 3), (4, 3, 3)),
                                 ((3, 3), (0, 3, 3))])
def test_lu_solve(left, adjoint, a, b):
    b = b if left else b[:-2] + (b[-1], b[-2])
    dtype_pass = 0 not in b                  # torch skips its dtype check on an empty B
    check_op(lambda L, x, y: L.linalg.lu_solve(*L.linalg.lu_factor(_well(L, x)), y, left=left, adjoint=adjoint),
             a, b, check_dtype=dtype_pass, **TOL)
    # the gradient of LU itself (a factor given as data): its triangles, as torch's
    LU, piv = ember.linalg.lu_factor(ember.tensor(np.random.default_rng(0).standard_normal(a)) + 3 * ember.eye(a[-1]))
    check_op(lambda L, lu, y: L.linalg.lu_solve(lu, L.tensor(piv.numpy(), device=lu.device), y, left=left, adjoint=adjoint),
             LU.numpy(), b, check_dtype=dtype_pass, **TOL)


def test_lu_solve_double_backward():
    rng = np.random.default_rng(2)
    a = ember.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3), requires_grad=True)
    b = ember.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    f = lambda x, y: ember.linalg.lu_solve(*ember.linalg.lu_factor(x), y, adjoint=True)   # noqa: E731
    assert ember.autograd.gradcheck(f, (a, b)) and ember.autograd.gradgradcheck(f, (a, b))


# ------------------------------------------------------------------ ldl_factor(_ex), ldl_solve (not differentiable)
def _symmetric(shape, seed, zero_diagonal=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    if zero_diagonal:   # forces 2x2 blocks and interchanges
        a[..., range(shape[-1]), range(shape[-1])] = 0
    return a


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 5), (3, 1, 4, 4), (0, 3, 3), (8, 8)])
@pytest.mark.parametrize("zero_diagonal", [False, True])
def test_ldl_factor_is_lapacks(shape, zero_diagonal):
    """The same Bunch-Kaufman pivoting as LAPACK's sytrf: LD, pivots and info equal torch's."""
    a = _symmetric(shape, 1, zero_diagonal)
    kw = dict(grad=False, check_dtype=0 not in shape)    # torch skips its dtype check on empty inputs
    check_op(lambda L, x: tuple(L.linalg.ldl_factor_ex(x)), NoGrad(a), atol=1e-5, rtol=1e-5, **kw)
    if a.shape == (1, 1) and zero_diagonal:
        return                                          # singular: torch's ldl_factor fails an internal assert
    check_op(lambda L, x: tuple(L.linalg.ldl_factor(x, hermitian=True)), NoGrad(a), atol=1e-5, rtol=1e-5, **kw)
    check_op(lambda L, x, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(x), b), NoGrad(a),
             NoGrad(shape[:-1] + (2,)), atol=1e-4, rtol=1e-4, **kw)


def test_ldl_pivots_and_singular():
    a = np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]])             # a 2x2 block with an interchange
    LD, pivots = ember.linalg.ldl_factor(ember.tensor(a))
    assert pivots.tolist() == [-3, -3, 3] and pivots.dtype == ember.int32
    assert LD.triu(1).abs().sum().item() == 0
    singular = np.stack([np.zeros((2, 2)), np.eye(2), np.diag([1.0, 0.0])])
    check_op(lambda L, x: tuple(L.linalg.ldl_factor_ex(x)), NoGrad(singular), grad=False)
    assert ember.linalg.ldl_factor_ex(ember.tensor(singular)).info.tolist() == [1, 0, 2]
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.ldl_factor: \(Batch element 0\): The factorization "
                                                       r"could not be completed because the input is singular"):
        ember.linalg.ldl_factor(ember.tensor(singular))
    with pytest.raises(ember.linalg.LinAlgError, match=r"ldl_factor_ex: .*D\[2,2\] is zero"):
        ember.linalg.ldl_factor_ex(ember.tensor(singular[2]), check_errors=True)


def test_ldl_backward_raises_as_torch():
    for lib in (torch, ember):
        a = lib.tensor(_symmetric((3, 3), 2), requires_grad=True)
        LD, pivots = lib.linalg.ldl_factor(a)
        with pytest.raises(Exception, match="not implemented"):
            LD.sum().backward()
        b = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(Exception, match="not implemented"):
            lib.linalg.ldl_solve(LD.detach(), pivots, b).sum().backward()
    with ember.no_grad():
        assert not ember.linalg.ldl_factor(a).LD.requires_grad


R = lambda L, *s, **k: L.ones(*s, **k)   # noqa: E731
PIV = lambda L, *s: L.ones(*s, dtype=L.int32)   # noqa: E731
SOLVE_ERRORS = [   # (call on lib, a fragment both messages share)
    (lambda L: L.linalg.lu_solve(R(L, 3, 3), PIV(L, 3), R(L, 3)), "linalg.lu_solve: The input tensor B must have at least 2"),
    (lambda L: L.linalg.lu_solve(R(L, 3, 3), PIV(L, 3), R(L, 2, 2)),
     "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x2)"),
    (lambda L: L.linalg.lu_solve(R(L, 3, 3), PIV(L, 3), R(L, 2, 2), left=False),
     "Incompatible shapes of A and B for the equation XA = B (3x3 and 2x2)"),
    (lambda L: L.linalg.lu_solve(R(L, 3, 3), PIV(L, 3).long(), R(L, 3, 2)),
     "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"),
    (lambda L: L.linalg.lu_solve(R(L, 3, 4), PIV(L, 3), R(L, 3, 2)), "must be batches of square matrices"),
    (lambda L: L.linalg.lu(R(L, 3)), "linalg.lu: Expected tensor with 2 or more dimensions. Got size: [3]"),
    (lambda L: L.linalg.ldl_factor_ex(R(L, 3, 4)),
     "ldl_factor_ex: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.linalg.ldl_factor(R(L, 3)), "ldl_factor_ex: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.linalg.ldl_solve(L.eye(3), PIV(L, 3), R(L, 2, 3)),
     "each A matrix is 3 by 3 but each b matrix is 2 by 3"),
]


@pytest.mark.parametrize("call,fragment", SOLVE_ERRORS, ids=[f"{i}" for i in range(len(SOLVE_ERRORS))])
def test_lu_ldl_errors_as_torch(call, fragment):
    import re
    with pytest.raises(RuntimeError, match=re.escape(fragment)):
        call(torch)
    with pytest.raises(RuntimeError, match=re.escape(fragment)) as e:
        call(ember)
    assert "test_linalg_lu.py:" in str(e.value)


def test_lu_ldl_ember_errors():
    with pytest.raises(RuntimeError, match=r"linalg.ldl_solve: LD and B must have the same batch dimensions"):
        ember.linalg.ldl_solve(ember.eye(3).expand(2, 3, 3), ember.ones(2, 3, dtype=ember.int32), ember.ones(3, 3, 1))
    with pytest.raises(RuntimeError, match=r"linalg.ldl_solve: pivots must be between 1 and n = 3"):
        ember.linalg.ldl_solve(ember.eye(3), ember.full((3,), 7, dtype=ember.int32), ember.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"linalg.lu_solve: Expected LU.shape\[:-1\] and pivots.shape to be the same"):
        ember.linalg.lu_solve(ember.eye(3), ember.ones(2, dtype=ember.int32), ember.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"linalg.lu_solve: batch dimensions of LU \(2, 3, 3\) float32 cpu and B"):
        ember.linalg.lu_solve(ember.eye(3).expand(2, 3, 3), ember.ones(2, 3, dtype=ember.int32), ember.ones(3, 3, 1))
