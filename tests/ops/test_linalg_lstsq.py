"""linalg.lstsq (each CPU driver), matrix_rank, matrix_power and matrix_exp (with ember.* and Tensor.*
forms) against torch: values and gradients through check_op (float32 and float64; tall, wide, square,
batched, broadcast, vector right-hand sides, empty), double backward numerically, torch's errors."""

import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_as_torch

TOL = dict(atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)   # float32 through LAPACK
DRIVERS = ["gelsy", "gelsd", "gelss", "gels"]


# ------------------------------------------------------------------ lstsq
@pytest.mark.parametrize("driver", DRIVERS + [None])
@pytest.mark.parametrize("a,b", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((3, 3), (3, 4)), ((2, 6, 3), (2, 6, 1)),
                                 ((2, 1, 5, 3), (1, 4, 5, 2)), ((5, 3), (5,)), ((2, 3, 5), (2, 3)),
                                 ((0, 5, 3), (0, 5, 2))])
def test_lstsq(driver, a, b):
    check_op(lambda L, A, B: tuple(L.linalg.lstsq(A, B, driver=driver)), a, b, **TOL)


@pytest.mark.parametrize("driver", DRIVERS)
def test_lstsq_empty_matrices(driver):
    for a, b in (((5, 0), (5, 2)), ((0, 3), (0, 2))) + ((((4, 3), (4, 0)),) if driver in ("gelsy", "gels") else ()):
        check_op(lambda L, A, B: tuple(L.linalg.lstsq(A, B, driver=driver)), NoGrad(a), NoGrad(b), grad=False)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
def test_lstsq_rank_deficient_is_minimum_norm(driver, shape):
    """A of rank 2: the rank, no residuals, and pinv(A) @ B (and its gradient) as torch's."""
    m, n = shape
    check_op(lambda L, x, y, B: tuple(L.linalg.lstsq(x @ y, B, driver=driver)), (m, 2), (2, n), (m, 3), **TOL)
    A = np.random.default_rng(0).standard_normal((m, 2)) @ np.random.default_rng(1).standard_normal((2, n))
    out = ember.linalg.lstsq(ember.tensor(A), ember.ones(m, 3, dtype=ember.float64), driver=driver)
    assert out.rank.item() == 2 and out.residuals.shape == (0,)
    np.testing.assert_allclose(out.solution.numpy(), np.linalg.pinv(A) @ np.ones((m, 3)), atol=1e-10)


def test_lstsq_rcond_and_mixed_batch():
    a = np.stack([np.diag([3.0, 1.0, 1e-3]), np.diag([3.0, 2.0, 1.0])])
    a = np.concatenate([a, [[[0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0]]]], -2)  # (2, 4, 3)
    for rcond in (None, 1e-2, 0.5):
        for driver in ("gelsd", "gelss"):
            check_op(lambda L, A, B: tuple(L.linalg.lstsq(A, B, rcond, driver=driver)), NoGrad(a), NoGrad((2, 4, 2)),
                     grad=False)
    out = ember.linalg.lstsq(ember.tensor(a), ember.ones(2, 4, 2, dtype=ember.float64), 1e-2, driver="gelsd")
    assert out.rank.tolist() == [2, 3] and out.residuals.shape == (0,)   # one deficient matrix: no residuals


def test_lstsq_gradient_of_residuals_and_double_backward():
    check_op(lambda L, A, B: L.linalg.lstsq(A, B, driver="gelsd").residuals, (2, 6, 3), (2, 6, 2), **TOL)
    rng = np.random.default_rng(3)
    for shape in ((5, 3), (3, 5)):
        A = ember.tensor(rng.standard_normal(shape), requires_grad=True)
        B = ember.tensor(rng.standard_normal((shape[0], 2)), requires_grad=True)
        f = lambda a, b: ember.linalg.lstsq(a, b).solution   # noqa: E731
        assert ember.autograd.gradcheck(f, (A, B))
        assert ember.autograd.gradgradcheck(f, (A, B))


def test_lstsq_is_accurate_on_ill_conditioned_input():
    """Householder QR, not the normal equations: the error grows with cond(A), not cond(A)^2."""
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((8, 4)))
    A = u @ np.diag([1.0, 1e-3, 1e-5, 1e-7])
    x = rng.standard_normal((4, 1))
    out = ember.linalg.lstsq(ember.tensor(A), ember.tensor(A @ x), driver="gels").solution.numpy()
    assert np.abs(out - x).max() < 1e-7


# ------------------------------------------------------------------ matrix_rank
def test_matrix_rank():
    rng = np.random.default_rng(0)
    low = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))   # rank 2
    scaled = np.diag([4.0, 1.0, 1e-2, 1e-9])
    for kw in [{}, {"atol": 0.5}, {"rtol": 0.1}, {"atol": 0.05, "rtol": 0.1}, {"hermitian": True},
               {"hermitian": True, "rtol": 1e-3}, {"tol": 0.5}]:
        for a in (low, scaled, -scaled, np.zeros((2, 3, 3))):
            if kw.get("hermitian") and a.shape[-1] != a.shape[-2]:
                continue
            check_op(lambda L, A: L.linalg.matrix_rank(A, **kw), NoGrad(a), grad=False)
    check_op(lambda L, A: L.linalg.matrix_rank(A, 0.5), NoGrad(scaled), grad=False)
    check_op(lambda L, A, t: L.linalg.matrix_rank(A, atol=t), NoGrad(np.stack([scaled, 2 * scaled])),
             NoGrad(np.array([0.5, 3.0])), grad=False)
    assert ember.linalg.matrix_rank(ember.tensor(low)).tolist() == [2, 2, 2]
    assert ember.linalg.matrix_rank(ember.tensor(scaled), rtol=0.1).item() == 2
    assert ember.linalg.matrix_rank(ember.ones(3, 0)).item() == 0
    empty = ember.linalg.matrix_rank(ember.zeros(0, 3, 3))
    assert (empty.shape, empty.dtype) == ((0,), ember.int64)


# ------------------------------------------------------------------ matrix_power
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)])
def test_matrix_power(n, shape):
    well = lambda L, a: a + 3 * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)    # noqa: E731  (invertible for n < 0)
    check_op(lambda L, a: L.linalg.matrix_power(well(L, a), n), shape, **TOL)
    check_op(lambda L, a: L.matrix_power(well(L, a), n), shape, **TOL)
    check_op(lambda L, a: well(L, a).matrix_power(n), shape, **TOL)


def test_matrix_power_integers():
    fib = np.array([[1, 1], [1, 0]])
    for n in (0, 1, 2, 7, 30):
        check_op(lambda L, a: L.linalg.matrix_power(a, n), fib, grad=False)
    check_op(lambda L, a: L.linalg.matrix_power(a, 3), np.arange(18).reshape(2, 3, 3), grad=False)


def test_matrix_power_one_is_a_new_tensor():
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = ember.linalg.matrix_power(a, 1)
    assert out is not a
    out.add_(1.0)                          # torch's result is a copy: writing it leaves A alone
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_default_rcond_counts_max_m_n(driver):
    """A (6, 2) with singular values 1 and 4 eps: below eps * max(m, n) = 6 eps, so rank 1 (as torch)."""
    u, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 2)))
    v, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((2, 2)))
    a = u @ np.diag([1.0, 4 * np.finfo(np.float64).eps]) @ v.T
    b = np.ones((6, 1))
    got = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    assert got.rank.item() == want.rank.item() == 1
    np.testing.assert_allclose(got.solution.numpy(), want.solution.numpy(), rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------ matrix_exp
@pytest.mark.parametrize("scale", [1e-3, 0.2, 1.0, 5.0, 12.0])
def test_matrix_exp(scale):
    """Each Pade degree (the 1-norm picks it) and several squarings; per-matrix squarings in a batch."""
    check_op(lambda L, a: L.linalg.matrix_exp(a * scale), (3, 3), **TOL)
    check_op(lambda L, a, s: L.matrix_exp(a * s), (3, 4, 4), NoGrad(np.array([scale, 1.0, 1e-2])[:, None, None]),
             atol=1e-4 * max(1, scale), rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: (a * scale).matrix_exp(), (2, 2), **TOL)


def test_matrix_exp_special_inputs():
    rng = np.random.default_rng(0)
    check_op(lambda L, a: L.linalg.matrix_exp(a), np.zeros((0, 3, 3)), **TOL)
    check_op(lambda L, a: L.linalg.matrix_exp(a), np.zeros((2, 0, 0)), grad=False)
    check_op(lambda L, a: L.linalg.matrix_exp(a), (1, 1), **TOL)
    skew = rng.standard_normal((4, 4))
    check_op(lambda L, a: L.linalg.matrix_exp(a - a.mT), skew, **TOL)          # a rotation
    nilpotent = np.triu(rng.standard_normal((4, 4)), 1) * 10
    check_op(lambda L, a: L.linalg.matrix_exp(a), nilpotent, atol=1e-3, rtol=1e-4, grad_atol=1e-2, grad_rtol=1e-3)
    x = ember.tensor(np.diag([1.0, 2.0]))
    np.testing.assert_allclose(ember.linalg.matrix_exp(x).numpy(), np.diag(np.exp([1.0, 2.0])), rtol=1e-15)
    assert ember.linalg.matrix_exp(x.half()).dtype == ember.float16


def test_matrix_exp_double_backward():
    rng = np.random.default_rng(3)
    for scale in (0.1, 3.0):
        a = ember.tensor(rng.standard_normal((2, 3, 3)) * scale, requires_grad=True)
        assert ember.autograd.gradcheck(ember.linalg.matrix_exp, (a,))
        assert ember.autograd.gradgradcheck(ember.linalg.matrix_exp, (a,))


def test_matrix_exp_gradient_is_torchs_block_formula():
    """torch's backward: the top-right block of exp([[A^T, G], [0, A^T]])."""
    rng = np.random.default_rng(5)
    a, g = rng.standard_normal((4, 4)) * 2, rng.standard_normal((4, 4))
    x = ember.tensor(a, requires_grad=True)
    ember.linalg.matrix_exp(x).backward(ember.tensor(g))
    block = np.block([[a.T, g], [np.zeros((4, 4)), a.T]])
    expected = torch.linalg.matrix_exp(torch.tensor(block))[:4, 4:].numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ errors as torch's
R = lambda L, *s, **k: L.ones(*s, **k)   # noqa: E731
ERRORS = [   # (call on lib, exception type, a fragment both messages share)
    (lambda L: L.linalg.lstsq(R(L, 3), R(L, 3)), RuntimeError, "lstsq: input must have at least 2 dimensions."),
    (lambda L: L.linalg.lstsq(R(L, 5, 3), R(L, 2, 5, 2)), RuntimeError,
     "input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"),
    (lambda L: L.linalg.lstsq(R(L, 5, 3), R(L, 4, 2)), RuntimeError, "input.size(-2) should match other.size(-2)"),
    (lambda L: L.linalg.lstsq(R(L, 5, 3), R(L, 5, 2), driver="qr"), RuntimeError,
     "parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"),
    (lambda L: L.linalg.lstsq(R(L, 5, 3), R(L, 5, 2, dtype=L.float64)), RuntimeError,
     "Expected input and other to have the same dtype, but got input's dtype Float and other's dtype Double"),
    (lambda L: L.linalg.matrix_rank(R(L, 3)), RuntimeError,
     "linalg.matrix_rank: The input tensor input must have at least 2 dimensions."),
    (lambda L: L.linalg.matrix_rank(R(L, 3, 3, dtype=L.int64)), RuntimeError,
     "This function doesn't handle types other than float and double"),
    (lambda L: L.linalg.matrix_power(R(L, 2, 3), 2), RuntimeError,
     "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda L: L.linalg.matrix_power(R(L, 3), 2), RuntimeError,
     "linalg.matrix_power: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.linalg.matrix_power(R(L, 2, 2, dtype=L.int64), -1), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda L: L.linalg.matrix_power(R(L, 2, 2), 1.5), TypeError, "must be int, not float"),
    (lambda L: L.linalg.matrix_exp(R(L, 2, 3)), RuntimeError,
     "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda L: L.linalg.matrix_exp(R(L, 3)), RuntimeError,
     "linalg.matrix_exp: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.linalg.matrix_exp(R(L, 2, 2, dtype=L.int64)), RuntimeError,
     "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got Long"),
]


@pytest.mark.parametrize("call,exc,fragment", ERRORS, ids=[f"{i}-{e[2][:30]}" for i, e in enumerate(ERRORS)])
def test_errors_as_torch(call, exc, fragment):
    assert "test_linalg_lstsq.py:" in str(raises_as_torch(call, exc, fragment)) or exc is TypeError


def test_ember_only_errors():
    with pytest.raises(RuntimeError, match=r"linalg.lstsq: other \(5, 2\) float32 cpu has one dimension fewer than "
                                           r"input \(2, 5, 3\) float32 cpu"):
        ember.linalg.lstsq(ember.ones(2, 5, 3), ember.ones(5, 2))
    with pytest.raises(RuntimeError, match=r"linalg.lstsq: batch dimensions of input \(2, 5, 3\) float32 cpu and "
                                           r"other \(3, 5, 2\) float32 cpu cannot be broadcast"):
        ember.linalg.lstsq(ember.ones(2, 5, 3), ember.ones(3, 5, 2))
    with pytest.raises(TypeError, match="linalg.matrix_rank: tol is the deprecated form of atol"):
        ember.linalg.matrix_rank(ember.eye(2), 0.5, atol=0.1)
