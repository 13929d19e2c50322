"""ember/linalg/ and ember/ops/linalg.py against torch.linalg: values and gradients through check_op
(float32 and float64, batched), double backward by numeric gradgradcheck, torch's errors, and the lecture
notes' Newton step (x* = a - H^-1 grad f(a)) run in Ember alone.

Eigenvectors and singular vectors are defined up to sign, so their tests compare what does not depend on
the sign (their abs or square, a reconstruction), as torch's own tests do."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, Const

TOL = dict(atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)   # float32 through LAPACK: a few ulp more


def well(L, a):
    """A well-conditioned square matrix: a + 3 I."""
    return a + 3 * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def spd(L, a):
    """A symmetric positive-definite matrix: a a^T + n I."""
    return a @ a.mT + a.shape[-1] * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


CASES = [   # (id, fn(lib, *inputs), input shapes)
    ("solve", lambda L, a, b: L.linalg.solve(well(L, a), b), [(4, 4), (4, 3)]),
    ("solve_batched", lambda L, a, b: L.linalg.solve(well(L, a), b), [(2, 3, 4, 4), (2, 3, 4, 2)]),
    ("solve_broadcast", lambda L, a, b: L.linalg.solve(well(L, a), b), [(4, 4), (3, 4, 2)]),
    ("solve_vector", lambda L, a, b: L.linalg.solve(well(L, a), b), [(4, 4), (4,)]),
    ("solve_batched_vector", lambda L, a, b: L.linalg.solve(well(L, a), b), [(3, 4, 4), (3, 4)]),
    ("solve_right", lambda L, a, b: L.linalg.solve(well(L, a), b, left=False), [(4, 4), (2, 4)]),
    ("inv", lambda L, a: L.linalg.inv(well(L, a)), [(2, 4, 4)]),
    ("det", lambda L, a: L.linalg.det(a), [(3, 3, 3)]),
    ("slogdet", lambda L, a: (lambda r: (r.sign.detach(), r.logabsdet))(L.linalg.slogdet(a)), [(2, 4, 4)]),
    ("slogdet_two_batch_dims", lambda L, a: L.linalg.slogdet(a).logabsdet, [(2, 3, 4, 4)]),
    ("cholesky", lambda L, a: L.linalg.cholesky(spd(L, a)), [(2, 4, 4)]),
    ("cholesky_upper", lambda L, a: L.linalg.cholesky(spd(L, a), upper=True), [(4, 4)]),
    ("cholesky_lower_triangle_read", lambda L, a: L.linalg.cholesky(a + 6 * L.eye(4, dtype=a.dtype, device=a.device)), [(4, 4)]),
    ("qr_square", lambda L, a: tuple(L.linalg.qr(a)), [(2, 4, 4)]),
    ("qr_tall", lambda L, a: tuple(L.linalg.qr(a)), [(5, 3)]),
    ("qr_r", lambda L, a: L.linalg.qr(a.detach(), mode="r")[1], [(5, 3)]),
    ("qr_complete_square", lambda L, a: tuple(L.linalg.qr(a, mode="complete")), [(3, 3)]),
    ("svd_vals_and_abs_vectors", lambda L, a: (lambda r: (r[0].abs(), r[1], r[2].abs()))(
        L.linalg.svd(a, full_matrices=False)), [(2, 4, 4)]),
    ("svd_tall", lambda L, a: (lambda r: (r[0] ** 2, r[1], r[2] ** 2))(L.linalg.svd(a, full_matrices=False)), [(5, 3)]),
    ("svd_wide", lambda L, a: (lambda r: (r[0] ** 2, r[1], r[2] ** 2))(L.linalg.svd(a, full_matrices=False)), [(3, 5)]),
    ("svd_wide_batched", lambda L, a: (lambda r: (r[0] ** 2, r[1], r[2] ** 2))(L.linalg.svd(a, full_matrices=False)),
     [(2, 3, 5)]),
    ("svd_tall_batched", lambda L, a: (lambda r: (r[0] ** 2, r[1], r[2] ** 2))(L.linalg.svd(a, full_matrices=False)),
     [(2, 5, 3)]),
    ("svd_reconstruct", lambda L, a: (lambda r: r[0] @ (r[1].unsqueeze(-1) * r[2]))(L.linalg.svd(a)), [(4, 4)]),
    ("svdvals", lambda L, a: L.linalg.svdvals(a), [(2, 3, 5)]),
    ("eigh", lambda L, a: (lambda r: (r[0], r[1].abs()))(L.linalg.eigh(a)), [(2, 4, 4)]),
    ("eigh_upper", lambda L, a: (lambda r: (r[0], r[1] ** 2))(L.linalg.eigh(a, UPLO="U")), [(4, 4)]),
    ("eigh_reconstruct", lambda L, a: (lambda r: r[1] @ (r[0].unsqueeze(-1) * r[1].mT))(L.linalg.eigh(a + a.mT)),
     [(3, 3)]),
    ("eigvalsh", lambda L, a: L.linalg.eigvalsh(a), [(2, 5, 5)]),
    ("vector_norm", lambda L, a: L.linalg.vector_norm(a), [(3, 4)]),
    ("vector_norm_ord3_dim", lambda L, a: L.linalg.vector_norm(a, 3, dim=1, keepdim=True), [(3, 4)]),
    ("vector_norm_inf", lambda L, a: L.linalg.vector_norm(a, float("inf"), dim=(0, 1)), [(3, 4)]),
    ("vector_norm_1", lambda L, a: L.linalg.vector_norm(a, 1, dim=-1), [(2, 3, 4)]),
    ("matrix_norm_fro", lambda L, a: L.linalg.matrix_norm(a), [(2, 3, 4)]),
    ("matrix_norm_nuc", lambda L, a: L.linalg.matrix_norm(a, "nuc"), [(2, 3, 4)]),
    ("matrix_norm_2", lambda L, a: L.linalg.matrix_norm(a, 2), [(3, 4)]),
    ("matrix_norm_-2", lambda L, a: L.linalg.matrix_norm(a, -2, keepdim=True), [(2, 3, 4)]),
    ("matrix_norm_1", lambda L, a: L.linalg.matrix_norm(a, 1), [(2, 3, 4)]),
    ("matrix_norm_-1", lambda L, a: L.linalg.matrix_norm(a, -1, dim=(0, 2)), [(3, 2, 4)]),
    ("matrix_norm_inf", lambda L, a: L.linalg.matrix_norm(a, float("inf"), keepdim=True), [(2, 3, 4)]),
    ("matrix_norm_-inf", lambda L, a: L.linalg.matrix_norm(a, float("-inf"), dim=(2, 0)), [(3, 2, 4)]),
    ("norm_default", lambda L, a: L.linalg.norm(a), [(2, 3, 4)]),
    ("norm_matrix_ord", lambda L, a: L.linalg.norm(a, "nuc"), [(3, 4)]),
    ("norm_vector_dim", lambda L, a: L.linalg.norm(a, 3, dim=1), [(3, 4)]),
    ("norm_matrix_dim", lambda L, a: L.linalg.norm(a, 1, dim=(0, 1)), [(3, 4, 2)]),
    # torch.norm with a string p other than 'fro' over <= 2 dims is linalg.matrix_norm's (it was a TypeError)
    ("torch_norm_nuc", lambda L, a: L.norm(a, p="nuc"), [(3, 4)]),
    ("torch_norm_nuc_dim", lambda L, a: a.norm(p="nuc", dim=(0, 2), keepdim=True), [(3, 2, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_linalg_matches_torch(name, fn, shapes):
    check_op(fn, *shapes, **TOL)


def test_svd_full_matrices_values_match_torch():
    a = np.random.default_rng(0).standard_normal((5, 3))
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a))
    eu, es, evh = ember.linalg.svd(ember.tensor(a))
    assert tuple(eu.shape) == tuple(tu.shape) == (5, 5)
    np.testing.assert_allclose(es.numpy(), ts.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.abs(evh.numpy()), np.abs(tvh.numpy()), atol=1e-12)
    np.testing.assert_allclose(eu.numpy().T @ eu.numpy(), np.eye(5), atol=1e-12)


def test_qr_complete_tall_values():
    a = np.random.default_rng(1).standard_normal((5, 3))
    q, r = ember.linalg.qr(ember.tensor(a), mode="complete")
    assert tuple(q.shape) == (5, 5) and tuple(r.shape) == (5, 3)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-12)


def test_named_results():
    a = ember.eye(3, dtype=ember.float64) * 2
    r = ember.linalg.slogdet(a)
    assert r.sign.item() == 1.0 and abs(r.logabsdet.item() - 3 * np.log(2)) < 1e-12
    assert ember.linalg.eigh(a).eigenvalues.tolist() == [2.0, 2.0, 2.0]
    assert tuple(ember.linalg.qr(a).Q.shape) == (3, 3) and ember.linalg.svd(a).S.tolist() == [2.0, 2.0, 2.0]


# ------------------------------------------------------------------ double backward (numeric, float64)
DOUBLE = [
    ("solve", lambda a, b: ember.linalg.solve(well(ember, a), b), [(3, 3), (3, 2)]),
    ("inv", lambda a: ember.linalg.inv(well(ember, a)), [(3, 3)]),
    ("slogdet", lambda a: ember.linalg.slogdet(well(ember, a)).logabsdet, [(3, 3)]),
    ("det", lambda a: ember.linalg.det(well(ember, a)), [(2, 3, 3)]),
    ("cholesky", lambda a: ember.linalg.cholesky(spd(ember, a)), [(3, 3)]),
    ("qr", lambda a: tuple(ember.linalg.qr(a)), [(4, 3)]),
    ("svd", lambda a: (lambda r: (r[0] ** 2, r[1], r[2] ** 2))(ember.linalg.svd(a, full_matrices=False)), [(4, 3)]),
    ("eigh", lambda a: (lambda r: (r[0], r[1] ** 2))(ember.linalg.eigh(a + a.mT)), [(3, 3)]),
    ("matrix_norm_nuc", lambda a: ember.linalg.matrix_norm(a, "nuc"), [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_linalg_double_backward(name, fn, shapes):
    rng = np.random.default_rng(3)
    inputs = [ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True) for s in shapes]
    inputs = tuple(inputs)
    assert ember.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-4)
    assert ember.autograd.gradgradcheck(fn, inputs, atol=1e-5, rtol=1e-4)


# ------------------------------------------------------------------ errors as torch's
ERRORS = [   # (call on lib, torch's exception type, a fragment both messages share)
    (lambda L: L.linalg.inv(L.ones(2, 3)), RuntimeError, "A must be batches of square matrices, but they are 2 by 3"),
    (lambda L: L.linalg.inv(L.ones(3)), RuntimeError, "The input tensor A must have at least 2 dimensions"),
    (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.float16)), RuntimeError, "Low precision dtypes not supported. Got Half"),
    (lambda L: L.linalg.det(L.ones(2, 2, dtype=L.int64)), RuntimeError, "Expected a floating point or complex tensor"),
    (lambda L: L.linalg.solve(L.ones(2, 2), L.ones(3)), RuntimeError, "Incompatible shapes of A and B for the "
                                                                      "equation AX = B (2x2 and 3x1)"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(2, dtype=L.float64)), RuntimeError, "Expected A and B to have the same "
                                                                                   "dtype, but found A of type Float"),
    (lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)), RuntimeError, "singular"),
    (lambda L: L.linalg.inv(L.zeros(2, 2)), RuntimeError, "singular"),
    (lambda L: L.linalg.cholesky(-L.eye(2)), RuntimeError, "not positive-definite"),
    (lambda L: L.linalg.eigh(L.ones(2, 3)), RuntimeError, "A must be batches of square matrices"),
    (lambda L: L.linalg.matrix_norm(L.ones(3)), RuntimeError, "The input tensor A must have at least 2 dimensions"),
    (lambda L: L.linalg.norm(L.ones(2, 2, 2), ord=2), RuntimeError, "If dim is not specified but ord is, the input "
                                                                    "must be 1D or 2D. Got 3D"),
    (lambda L: L.linalg.qr(L.ones(3, 2, requires_grad=True), mode="r"), RuntimeError, "mode='r'"),
    (lambda L: L.linalg.qr(L.ones(3, 2, requires_grad=True), mode="complete"), RuntimeError,
     "not differentiable when mode='complete' and nrows > ncols"),
]


@pytest.mark.parametrize("call,exc,fragment", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_errors_as_torch(call, exc, fragment):
    with pytest.raises(exc, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        out = call(torch)
        if isinstance(out, tuple):   # torch's mode='r' / 'complete' errors come at backward
            out[1].sum().backward() if out[0].numel() == 0 else out[0].sum().backward()
    with pytest.raises(exc, match=fragment.replace("(", r"\(").replace(")", r"\)")) as e:
        call(ember)
    assert "test_linalg.py:" in str(e.value) and "linalg." in str(e.value)


def test_singular_matrix_is_a_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.solve: .*singular.*\(A \(2, 2\) float32 cpu\)"):
        ember.linalg.solve(ember.zeros(2, 2), ember.ones(2))
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


def test_not_implemented_gradients_say_so():
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        ember.linalg.svd(ember.ones(3, 2, requires_grad=True))
    with pytest.raises(NotImplementedError, match="wide matrices"):
        ember.linalg.qr(ember.ones(2, 3, requires_grad=True))


def test_import_ember_does_not_load_scipy():
    import subprocess
    import sys
    code = "import sys, ember; ember.linalg.inv(ember.eye(2)); print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ the lecture's Newton step, in Ember alone
def _f(x, A, b):
    """A smooth strictly convex function: 1/2 x^T A x - b^T x + sum(log cosh x)."""
    return 0.5 * (x @ (A @ x)) - (b @ x) + ember.log(ember.exp(x) + ember.exp(-x)).sum()


def _newton_step(a, A, b):
    """x* = a - H^-1 grad f(a), the Hessian row by row through double backward."""
    a = a.detach().requires_grad_()
    (g,) = ember.autograd.grad(_f(a, A, b), a, create_graph=True)
    H = ember.stack([ember.autograd.grad(g[i], a, retain_graph=True)[0] for i in range(a.shape[0])])
    return (a - ember.linalg.solve(H, g)).detach(), g.detach(), H.detach()


def test_newton_step_from_the_lecture_runs_in_ember():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((4, 4))
    A = ember.tensor(M @ M.T + np.eye(4))
    b = ember.tensor(rng.standard_normal(4))
    x = ember.tensor(rng.standard_normal(4))
    _, g0, H = _newton_step(x, A, b)
    # the explicit Hessian: A + diag(1 - tanh(x)^2)
    np.testing.assert_allclose(H.numpy(), A.numpy() + np.diag(1 - np.tanh(x.numpy()) ** 2), rtol=1e-12)
    norms = []
    for _ in range(6):
        x, g, _ = _newton_step(x, A, b)
        norms.append(float(ember.linalg.vector_norm(g)))
    final = _newton_step(x, A, b)[1]
    assert float(ember.linalg.vector_norm(final)) < 1e-10 < float(ember.linalg.vector_norm(g0))
    assert norms[2] < 1e-3 * norms[0]   # quadratic convergence: the gradient collapses within a few steps


def test_anomaly_mode_names_the_decomposition():
    a = ember.tensor([[2.0, 0.0], [0.0, 2.0]], requires_grad=True)   # repeated eigenvalues: 0/0 in eigh's backward
    with ember.autograd.detect_anomaly():
        L, V = ember.linalg.eigh(a)
        with pytest.raises(RuntimeError, match="Eigh") as e:
            (V * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert "test_linalg.py" in str(e.value)


@pytest.mark.parametrize("ord", [2, 3, 1.5, 1, float("inf")])
def test_vector_norm_gradient_at_zero_is_zero_as_torch(ord):
    check_op(lambda L, x: L.linalg.vector_norm(x * (L.arange(4, device=x.device) > 0), ord, dim=0), (3, 4))   # column 0 is zero
    x = ember.zeros(2, 3, requires_grad=True)
    ember.linalg.vector_norm(x, ord, dim=1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("ord", [float("inf"), float("-inf")])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_vector_norm_inf_gradient_with_ties_and_nan_as_torch(ord, dim):
    # ties share the gradient (with their signs); a NaN norm's gradient is 0, not amax's NaN
    x = np.array([[1.0, np.nan, -3.0, 3.0], [2.0, -2.0, 1.0, 0.0], [np.inf, -np.inf, np.nan, 1.0]])
    check_op(lambda L, x: L.linalg.vector_norm(x, ord, dim), x)
    check_op(lambda L, x: L.norm(x, ord, dim), x)
    check_op(lambda L, x: L.linalg.vector_norm(x, ord, dim), TIES_NORM)


TIES_NORM = np.array([[1.0, -3.0, 3.0, 3.0], [-2.0, 2.0, 0.5, -0.5], [0.0, 0.0, 0.0, 0.0]])


def test_matrix_norm_fro_gradient_at_zero_is_zero_as_torch():
    x = ember.zeros(2, 3, requires_grad=True)
    ember.linalg.matrix_norm(x).backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    check_op(lambda L, x: L.linalg.norm(x * 0), (2, 3))


@pytest.mark.parametrize("name", ["eigh", "svd_tall", "svd_wide", "cholesky", "slogdet"])
def test_backward_on_the_device(name, fake_cuda):
    """The identities the backward formulas build (`_eye`) are made on the input's device."""
    fn, shapes = next((fn, shapes) for case, fn, shapes in CASES if case == name)
    check_op(fn, *shapes, dtypes=("float64",), check_dtype=False, device="cuda", **TOL)


def test_linalg_diagonal_and_matmul():
    # linalg.diagonal's defaults are the last two dims (torch.diagonal's are 0 and 1)
    check_op(lambda L, a: L.linalg.diagonal(a), (2, 3, 4))
    check_op(lambda L, a: L.linalg.diagonal(a, offset=1, dim1=0, dim2=2), (3, 2, 4))
    check_op(lambda L, a: L.linalg.diagonal(a, offset=-1), (4, 4))
    check_op(lambda L, a, b: L.linalg.matmul(a, b), (2, 3, 4), (4, 5))
    check_op(lambda L, a, b: L.linalg.matmul(a, b), (4,), (2, 4, 3))
    with pytest.raises(RuntimeError, match="matmul"):
        ember.linalg.matmul(ember.ones(2, 3), ember.ones(2, 3))
