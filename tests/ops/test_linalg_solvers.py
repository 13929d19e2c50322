"""ember/linalg/'s solvers (_solvers.py, _ex.py, _tensors.py) against torch: solve_triangular, cholesky_solve,
cholesky_inverse, pinv, cond, inv_ex / solve_ex / cholesky_ex (info tensors, check_errors), tensorinv,
tensorsolve, linalg.vander and torch.vander: values and gradients through check_op (float32 and float64,
batched, broadcast), double backward by numeric gradgradcheck, torch's errors."""

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, Const, NoGrad, raises_as_torch

TOL = dict(atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)   # float32 through LAPACK


def well(L, a):
    """A well-conditioned matrix (its triangles too): a + 3 I."""
    return a + 3 * L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


_rng = np.random.default_rng(7)
LOWER = np.tril(_rng.uniform(-1, 1, (3, 3))) + 2 * np.eye(3)
UPPER_BATCH = np.triu(_rng.uniform(-1, 1, (2, 4, 4))) + 2 * np.eye(4)

CASES = [   # (id, fn(lib, *inputs), inputs)
    ("solve_triangular_upper", lambda L, a, b: L.linalg.solve_triangular(well(L, a), b, upper=True), [(4, 4), (4, 3)]),
    ("solve_triangular_lower", lambda L, a, b: L.linalg.solve_triangular(well(L, a), b, upper=False), [(4, 4), (4, 2)]),
    ("solve_triangular_right", lambda L, a, b: L.linalg.solve_triangular(well(L, a), b, upper=True, left=False),
     [(4, 4), (2, 4)]),
    ("solve_triangular_unit", lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
     [(4, 4), (4, 3)]),
    ("solve_triangular_unit_upper_right", lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True, left=False,
                                                                                    unitriangular=True),
     [(2, 3, 3), (2, 4, 3)]),
    ("solve_triangular_broadcast", lambda L, a, b: L.linalg.solve_triangular(well(L, a), b, upper=True),
     [(2, 1, 3, 3), (4, 3, 2)]),
    # a triangular factor given as data: its gradient is the whole matrix's, as torch's (A = L L^T in the full L)
    ("cholesky_solve", lambda L, b, l: L.cholesky_solve(b, l), [(3, 2), LOWER]),
    ("cholesky_solve_upper", lambda L, b, u: L.cholesky_solve(b, u, upper=True), [(3, 2), LOWER.T.copy()]),
    ("cholesky_solve_batched_broadcast", lambda L, b, l: L.cholesky_solve(b, l), [(2, 3, 2), LOWER]),
    ("cholesky_solve_method", lambda L, b, u: b.cholesky_solve(u, True), [(4, 1), UPPER_BATCH]),
    ("cholesky_solve_of_cholesky", lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(a @ a.mT + 3 * L.eye(
        3, dtype=a.dtype, device=a.device))), [(3, 2), (3, 3)]),
    ("cholesky_solve_triangle_read", lambda L, b, a: L.cholesky_solve(b, well(L, a).detach()), [(3, 2), (3, 3)]),
    ("cholesky_inverse", lambda L, l: L.cholesky_inverse(l), [LOWER]),
    ("cholesky_inverse_upper_batched", lambda L, u: L.cholesky_inverse(u, upper=True), [UPPER_BATCH]),
    ("cholesky_inverse_method", lambda L, l: (l * 1).cholesky_inverse(), [LOWER]),
    ("cholesky_inverse_triangle_read", lambda L, a: L.cholesky_inverse(well(L, a).detach(), upper=True), [(3, 3)]),
    ("pinv_wide", lambda L, a: L.linalg.pinv(a), [(3, 4)]),
    ("pinv_tall_batched", lambda L, a: L.linalg.pinv(a), [(2, 5, 3)]),
    ("pinv_square", lambda L, a: L.linalg.pinv(well(L, a)), [(3, 3)]),
    ("pinv_hermitian", lambda L, a: L.linalg.pinv(a + a.mT, hermitian=True), [(2, 4, 4)]),
    ("pinv_atol_rtol", lambda L, a: L.linalg.pinv(a, atol=1e-3, rtol=1e-4), [(3, 4)]),
    ("pinv_rcond", lambda L, a: L.linalg.pinv(a, 1e-6), [(4, 3)]),
    ("cond", lambda L, a: L.linalg.cond(a), [(2, 3, 3)]),
    ("cond_rectangular", lambda L, a: L.linalg.cond(a, 2), [(3, 5)]),
    ("cond_-2", lambda L, a: L.linalg.cond(a, -2), [(4, 3)]),
    ("cond_fro", lambda L, a: L.linalg.cond(well(L, a), "fro"), [(2, 3, 3)]),
    ("cond_nuc", lambda L, a: L.linalg.cond(well(L, a), "nuc"), [(3, 3)]),
    ("cond_1", lambda L, a: L.linalg.cond(well(L, a), 1), [(3, 3)]),
    ("cond_-1", lambda L, a: L.linalg.cond(well(L, a), -1), [(3, 3)]),
    ("cond_inf", lambda L, a: L.linalg.cond(well(L, a), float("inf")), [(2, 3, 3)]),
    ("cond_-inf", lambda L, a: L.linalg.cond(well(L, a), float("-inf")), [(3, 3)]),
    ("inv_ex", lambda L, a: tuple(L.linalg.inv_ex(well(L, a))), [(2, 3, 3)]),
    ("solve_ex", lambda L, a, b: tuple(L.linalg.solve_ex(well(L, a), b)), [(2, 3, 3), (3, 2)]),
    ("solve_ex_vector_left_false", lambda L, a, b: tuple(L.linalg.solve_ex(well(L, a), b, left=False)), [(3, 3), (2, 3)]),
    ("cholesky_ex", lambda L, a: tuple(L.linalg.cholesky_ex(a @ a.mT + 3 * L.eye(3, dtype=a.dtype, device=a.device))),
     [(2, 3, 3)]),
    ("cholesky_ex_upper", lambda L, a: tuple(L.linalg.cholesky_ex(a @ a.mT + 3 * L.eye(3, dtype=a.dtype,
                                                                                         device=a.device), upper=True)),
     [(3, 3)]),
    ("tensorinv", lambda L, a: L.linalg.tensorinv(well(L, a.reshape(6, 6)).reshape(2, 3, 3, 2), ind=2), [(36,)]),
    ("tensorinv_ind1", lambda L, a: L.linalg.tensorinv(well(L, a).reshape(4, 2, 2), ind=1), [(4, 4)]),
    ("tensorsolve", lambda L, a, b: L.linalg.tensorsolve(well(L, a.reshape(6, 6)).reshape(2, 3, 6), b), [(36,), (2, 3)]),
    ("tensorsolve_dims", lambda L, a, b: L.linalg.tensorsolve(well(L, a.reshape(6, 6)).reshape(6, 2, 3), b,
                                                              dims=(0,)), [(36,), (2, 3)]),
    ("linalg_vander", lambda L, x: L.linalg.vander(x), [(3,)]),
    ("linalg_vander_batched_N", lambda L, x: L.linalg.vander(x, N=5), [(2, 3)]),
    ("linalg_vander_scalar", lambda L, x: L.linalg.vander(x, N=4), [()]),
    ("vander", lambda L, x: L.vander(x), [(4,)]),
    ("vander_increasing_N", lambda L, x: L.vander(x, N=2, increasing=True), [(3,)]),
    ("vander_N0", lambda L, x: L.vander(x, N=0), [(3,)]),
    ("vander_int", lambda L, x: L.vander(x, 3), [np.array([1, -2, 3])]),
    ("linalg_vander_int", lambda L, x: L.linalg.vander(x), [np.array([[1, 2], [0, -3]])]),
]


# torch's own backward fails for these (an in-place write in linalg.cond's inv_ex, in vander's cumprod):
# values against torch, Ember's gradient by numeric gradcheck
TORCH_NO_BACKWARD = {"cond_fro", "cond_nuc", "cond_1", "cond_-1", "cond_inf", "cond_-inf", "vander",
                     "vander_increasing_N"}


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_solvers_match_torch(name, fn, inputs):
    if name not in TORCH_NO_BACKWARD:
        check_op(fn, *inputs, **TOL)
        return
    check_op(fn, *inputs, grad=False, **TOL)
    rng = np.random.default_rng(0)
    x = tuple(ember.tensor(rng.uniform(-2, 2, s), dtype=ember.float64, requires_grad=True) for s in inputs)
    assert ember.autograd.gradcheck(lambda *t: fn(ember, *t), x, atol=1e-5, rtol=1e-4)


def test_pinv_cuts_off_small_singular_values_as_torch():
    a = np.diag([3.0, 1.0, 1e-3]) @ np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 1]])
    for kw in [{}, {"rtol": 1e-2}, {"atol": 0.5}, {"atol": 2.0, "rtol": 0.1}, {"hermitian": True, "rtol": 1e-2}]:
        sym = a + a.T if kw.get("hermitian") else a
        _, out = check_op(lambda L, x: L.linalg.pinv(x, **kw), NoGrad(sym), grad=False)
    assert abs(out.detach()).max().item() < 1   # the eigenvalue 2e-3 cut off, not inverted
    # atol and rtol as tensors broadcast over the batch: one cutoff per matrix
    batch = np.stack([a, 2 * a])
    check_op(lambda L, x, t: L.linalg.pinv(x, atol=t), NoGrad(batch), NoGrad(np.array([0.5, 1.5])), grad=False)
    check_op(lambda L, x, t: L.linalg.pinv(x, rtol=t), NoGrad(batch), NoGrad(np.array([1e-2, 1e-5])), grad=False)


def test_singular_matrices_give_info_and_inf_condition_as_torch():
    batch = np.stack([np.eye(3) * 2, np.zeros((3, 3)), [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]])
    for lib in (torch, ember):
        assert lib.linalg.inv_ex(lib.tensor(batch)).info.tolist() == [0, 1, 3]
        assert lib.linalg.solve_ex(lib.tensor(batch), lib.ones(3, 1, dtype=lib.float64)).info.tolist() == [0, 1, 3]
        assert lib.linalg.inv_ex(lib.tensor(batch)).info.dtype == lib.int32
    for lib in (torch, ember):
        inverse = lib.linalg.inv_ex(lib.tensor(batch)).inverse
        assert inverse[0].tolist() == (np.eye(3) / 2).tolist()
    spd = np.stack([np.eye(3), np.diag([1.0, 2, -1]), -np.eye(3), np.diag([1.0, 0, 1])])
    for lib in (torch, ember):
        out = lib.linalg.cholesky_ex(lib.tensor(spd))
        assert out.info.tolist() == [0, 3, 1, 2] and out.L[0].tolist() == np.eye(3).tolist()
    check_op(lambda L, x: L.linalg.cond(x, 1), NoGrad(batch), grad=False)
    check_op(lambda L, x: L.linalg.cond(x, "fro"), NoGrad(batch[1:]), grad=False)
    assert ember.linalg.cond(ember.tensor(batch), "nuc")[1:].tolist() == [float("inf")] * 2


# ------------------------------------------------------------------ double backward (numeric, float64)
DOUBLE = [
    ("solve_triangular", lambda a, b: ember.linalg.solve_triangular(well(ember, a), b, upper=True), [(3, 3), (3, 2)]),
    ("solve_triangular_unit", lambda a, b: ember.linalg.solve_triangular(a, b, upper=False, unitriangular=True,
                                                                         left=False), [(3, 3), (2, 3)]),
    ("cholesky_solve", lambda b, a: ember.cholesky_solve(b, well(ember, a.tril())), [(3, 2), (3, 3)]),
    ("cholesky_inverse", lambda a: ember.cholesky_inverse(well(ember, a.triu()), upper=True), [(3, 3)]),
    ("pinv", lambda a: ember.linalg.pinv(a), [(3, 4)]),
    ("pinv_hermitian", lambda a: ember.linalg.pinv(a + a.mT, hermitian=True), [(3, 3)]),
    ("cond", lambda a: ember.linalg.cond(a), [(3, 3)]),
    ("tensorsolve", lambda a, b: ember.linalg.tensorsolve(well(ember, a).reshape(2, 2, 4), b), [(4, 4), (2, 2)]),
    ("vander", lambda x: ember.linalg.vander(x, N=4), [(3,)]),
]


@pytest.mark.parametrize("name,fn,shapes", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_solvers_double_backward(name, fn, shapes):
    rng = np.random.default_rng(3)
    inputs = tuple(ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True) for s in shapes)
    assert ember.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-4)
    assert ember.autograd.gradgradcheck(fn, inputs, atol=1e-5, rtol=1e-4)


def test_compiled_solvers_match_eager():
    def f(a, b):
        return ember.linalg.solve_triangular(a, b, upper=True).sum() + ember.cholesky_solve(b, a).sum()
    rng = np.random.default_rng(1)
    a = ember.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3))
    b = ember.tensor(rng.standard_normal((3, 2)))
    np.testing.assert_allclose(ember.compile(f)(a, b).item(), f(a, b).item(), rtol=1e-6)


# ------------------------------------------------------------------ errors as torch's
R = lambda L, *s, **k: L.ones(*s, **k)   # noqa: E731
SING = lambda L: L.stack([L.eye(3), L.zeros(3, 3)])   # noqa: E731
ERRORS = [   # (call on lib, torch's exception type, a fragment both messages share)
    (lambda L: L.linalg.solve_triangular(R(L, 3, 3), R(L, 3), upper=True), RuntimeError,
     "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
    (lambda L: L.linalg.solve_triangular(R(L, 3, 3), R(L, 4, 2), upper=True), RuntimeError,
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    (lambda L: L.linalg.solve_triangular(R(L, 3, 3), R(L, 3, 2), upper=True, left=False), RuntimeError,
     "Incompatible shapes of A and B for the equation XA = B (3x3 and 3x2)"),
    (lambda L: L.linalg.solve_triangular(R(L, 3, 4), R(L, 3, 2), upper=True), RuntimeError,
     "linalg.solve_triangular: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.linalg.solve_triangular(R(L, 3, 3), R(L, 3, 2)), TypeError, "upper"),
    (lambda L: L.cholesky_solve(R(L, 3), R(L, 3, 3)), RuntimeError,
     "b should have at least 2 dimensions, but has 1 dimensions instead"),
    (lambda L: L.cholesky_solve(R(L, 4, 2), R(L, 3, 3)), RuntimeError,
     "Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b matrix is 4 by 2"),
    (lambda L: L.cholesky_solve(R(L, 3, 2), R(L, 3, 4)), RuntimeError,
     "A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.cholesky_solve(R(L, 3, 2), R(L, 3, 3, dtype=L.float64)), RuntimeError,
     "Expected b and A to have the same dtype, but found b of type Float and A of type Double instead"),
    (lambda L: L.cholesky_inverse(R(L, 3, 4)), RuntimeError,
     "cholesky_inverse: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.cholesky_inverse(R(L, 3)), RuntimeError,
     "cholesky_inverse: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.cholesky_inverse(L.zeros(3, 3)), RuntimeError,
     "cholesky_inverse: The diagonal element 1 is zero, the inversion could not be completed because the input "
     "matrix is singular."),
    (lambda L: L.linalg.pinv(R(L, 3)), RuntimeError,
     "linalg.pinv(Float[3]): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
    (lambda L: L.linalg.pinv(R(L, 3, 4), hermitian=True), RuntimeError,
     "A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.linalg.cond(R(L, 3, 4), "fro"), RuntimeError,
     "linalg.cond(ord=fro): A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda L: L.linalg.cond(R(L, 3, 3), "foo"), RuntimeError, "linalg.cond got an invalid norm type: foo"),
    (lambda L: L.linalg.cond(R(L, 3, 3), 3), RuntimeError, "linalg.cond got an invalid norm type: 3"),
    (lambda L: L.linalg.cond(R(L, 3)), RuntimeError, "linalg.cond: The input tensor must have at least 2 dimensions."),
    (lambda L: L.linalg.inv_ex(L.zeros(3, 3), check_errors=True), RuntimeError,
     "linalg.inv_ex: The diagonal element 1 is zero, the inversion could not be completed because the input matrix "
     "is singular."),
    (lambda L: L.linalg.inv_ex(SING(L), check_errors=True), RuntimeError,
     "linalg.inv_ex: (Batch element 1): The diagonal element 1 is zero"),
    (lambda L: L.linalg.inv_ex(R(L, 2, 3)), RuntimeError, "A must be batches of square matrices, but they are 2 by 3"),
    (lambda L: L.linalg.solve_ex(L.zeros(3, 3), R(L, 3), check_errors=True), RuntimeError,
     "linalg.solve_ex: The solver failed because the input matrix is singular."),
    (lambda L: L.linalg.cholesky_ex(L.diag(L.tensor([1.0, 2, -1])), check_errors=True), RuntimeError,
     "linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite (the "
     "leading minor of order 3 is not positive-definite)."),
    (lambda L: L.linalg.tensorinv(R(L, 4, 6, 8, 3), ind=0), RuntimeError,
     "Expected a strictly positive integer for 'ind', but got 0"),
    (lambda L: L.linalg.tensorinv(R(L, 4, 6, 8, 2), ind=2), RuntimeError,
     "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 16 != 24"),
    (lambda L: L.linalg.tensorsolve(R(L, 2, 3, 6), R(L, 2, 4)), RuntimeError,
     "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
     "got 6 != 8"),
    (lambda L: L.linalg.tensorsolve(R(L, 2, 3, 5), R(L, 2, 3)), RuntimeError,
     "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
     "got 5 != 6"),
    (lambda L: L.linalg.vander(R(L, 3), N=1), RuntimeError, "N must be greater than 1."),
    (lambda L: L.vander(R(L, 2, 3)), RuntimeError, "x must be a one-dimensional tensor."),
    (lambda L: L.vander(R(L, 3), N=-1), RuntimeError, "N must be non-negative."),
]


@pytest.mark.parametrize("call,exc,fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_as_torch(call, exc, fragment):
    torch_fragment = fragment.replace("linalg.pinv(Float[3])", "linalg.pinv(Float{[3]})")
    e = raises_as_torch(call, exc, fragment, torch_fragment)
    assert "test_linalg_solvers.py:" in str(e) or exc is TypeError


def test_singular_inputs_raise_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 1\): The factorization could not"):
        ember.linalg.cholesky_ex(ember.stack([ember.eye(2), -ember.eye(2)]), check_errors=True)
    with pytest.raises(ember.linalg.LinAlgError, match="diagonal element 2 is zero"):
        ember.cholesky_inverse(ember.diag(ember.tensor([1.0, 0.0])))


@pytest.mark.parametrize("name", ["ember.linalg", "ember.ops.products", "ember.ops.reductions"])
def test_docstring_examples(name):
    import doctest
    import importlib
    import pkgutil
    module = importlib.import_module(name)
    # a package's examples are in its files (ember/linalg/_lu.py, ...): testmod of the package finds only its own
    files = [module] + [importlib.import_module(f"{name}.{m.name}") for m in pkgutil.iter_modules(
        getattr(module, "__path__", []))]
    attempted = 0
    for mod in files:
        result = doctest.testmod(mod, extraglobs={"ember": ember}, report=True)
        assert result.failed == 0, mod.__name__
        attempted += result.attempted
    assert attempted > 0
