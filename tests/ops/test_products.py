"""ember/ops/products.py against torch: addmm/addmv/addr/baddbmm/addbmm (beta, alpha, beta=0 ignoring NaN,
the in-place forms), kron, block_diag, cross and linalg.cross, diag_embed, cdist (every p, both compute
paths, the zero-distance gradient), adjoint; values and gradients through check_op, double backward by
numeric gradgradcheck, torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, Const, NoGrad, raises_as_torch

NAN3 = np.array([np.nan, 1.0, -2.0])

CASES = [   # (id, fn(lib, *inputs), inputs)
    ("addmm_beta0_nan", lambda L, a, b, c: L.addmm(a, b, c, beta=0, alpha=2),
     [np.full((2, 4), np.nan), (2, 3), (3, 4)]),
    ("addmm_broadcast_row", lambda L, a, b, c: L.addmm(a, b, c, beta=-1.5), [(4,), (2, 3), (3, 4)]),
    ("addmm_scalar_input", lambda L, a, b, c: L.addmm(a, b, c), [(), (2, 3), (3, 4)]),
    ("addmv", lambda L, a, b, c: L.addmv(a, b, c), [(3,), (3, 4), (4,)]),
    ("addmv_beta_alpha", lambda L, a, b, c: L.addmv(a, b, c, beta=0.5, alpha=-2), [(3,), (3, 4), (4,)]),
    ("addmv_broadcast", lambda L, a, b, c: L.addmv(a, b, c, beta=2), [(1,), (3, 4), (4,)]),
    ("addmv_scalar_input", lambda L, a, b, c: L.addmv(a, b, c), [(), (3, 4), (4,)]),
    ("addmv_beta0_nan", lambda L, a, b, c: L.addmv(a, b, c, beta=0), [NAN3, (3, 4), (4,)]),
    ("addmv_method", lambda L, a, b, c: a.addmv(b, c, alpha=3), [(3,), (3, 4), (4,)]),
    ("addr", lambda L, a, b, c: L.addr(a, b, c), [(3, 4), (3,), (4,)]),
    ("addr_beta_alpha_broadcast", lambda L, a, b, c: L.addr(a, b, c, beta=0.5, alpha=2), [(4,), (3,), (4,)]),
    ("addr_beta0_nan", lambda L, a, b, c: L.addr(a, b, c, beta=0), [np.full((3, 1), np.nan), (3,), (4,)]),
    ("addr_method", lambda L, a, b, c: a.addr(b, c), [(3, 4), (3,), (4,)]),
    ("baddbmm", lambda L, a, b, c: L.baddbmm(a, b, c), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("baddbmm_broadcast", lambda L, a, b, c: L.baddbmm(a, b, c, beta=0.5, alpha=-1), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("baddbmm_beta0_nan", lambda L, a, b, c: L.baddbmm(a, b, c, beta=0), [np.full((2, 1, 5), np.nan), (2, 3, 4),
                                                                         (2, 4, 5)]),
    ("baddbmm_method", lambda L, a, b, c: a.baddbmm(b, c, alpha=2), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm", lambda L, a, b, c: L.addbmm(a, b, c), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm_beta_alpha_broadcast", lambda L, a, b, c: L.addbmm(a, b, c, beta=2, alpha=0.5),
     [(5,), (2, 3, 4), (2, 4, 5)]),
    ("addbmm_beta0_nan", lambda L, a, b, c: L.addbmm(a, b, c, beta=0), [np.full((3, 5), np.inf), (2, 3, 4), (2, 4, 5)]),
    ("addbmm_method", lambda L, a, b, c: a.addbmm(b, c), [(3, 5), (4, 3, 2), (4, 2, 5)]),
    ("addbmm_empty_batch", lambda L, a, b, c: L.addbmm(a, b, c), [(3, 5), (0, 3, 4), (0, 4, 5)]),
    ("kron_2d", lambda L, a, b: L.kron(a, b), [(2, 3), (4, 2)]),
    ("kron_mixed_ndim", lambda L, a, b: L.kron(a, b), [(2, 3), (4,)]),
    ("kron_3d", lambda L, a, b: L.kron(a, b), [(2,), (3, 2, 2)]),
    ("kron_scalar", lambda L, a, b: a.kron(b), [(), (3,)]),
    ("block_diag", lambda L, a, b, c, d: L.block_diag(a, b, c, d), [(2, 3), (4,), (), (0, 2)]),
    ("block_diag_one", lambda L, a: L.block_diag(a), [(2, 3)]),
    ("block_diag_promotes", lambda L, a, b: L.block_diag(a, b.double()), [(2, 3), (2, 2)]),
    ("block_diag_int", lambda L, a, b: L.block_diag(a, b), [np.arange(4).reshape(2, 2), (1, 3)]),
    ("cross_dim", lambda L, a, b: L.cross(a, b, dim=0), [(3, 4), (3, 4)]),
    ("cross_dim_negative", lambda L, a, b: L.cross(a, b, -1), [(2, 4, 3), (2, 4, 3)]),
    ("cross_method", lambda L, a, b: a.cross(b, dim=1), [(2, 3), (2, 3)]),
    ("linalg_cross", lambda L, a, b: L.linalg.cross(a, b), [(4, 3), (4, 3)]),
    ("linalg_cross_broadcast", lambda L, a, b: L.linalg.cross(a, b), [(2, 4, 3), (1, 4, 3)]),
    ("linalg_cross_dim", lambda L, a, b: L.linalg.cross(a, b, dim=0), [(3, 2, 2), (3, 1, 2)]),
    ("diag_embed", lambda L, a: L.diag_embed(a), [(2, 3)]),
    ("diag_embed_offset_dims", lambda L, a: L.diag_embed(a, offset=1, dim1=0, dim2=2), [(2, 3)]),
    ("diag_embed_negative_offset", lambda L, a: L.diag_embed(a, offset=-2, dim1=-1, dim2=0), [(2, 3)]),
    ("diag_embed_swapped_dims", lambda L, a: a.diag_embed(1, 2, 1), [(4, 3)]),
    ("diag_embed_1d", lambda L, a: L.diag_embed(a, -1), [(3,)]),
    ("cdist", lambda L, a, b: L.cdist(a, b), [(4, 3), (5, 3)]),
    ("cdist_batched_broadcast", lambda L, a, b: L.cdist(a, b), [(2, 4, 3), (5, 3)]),
    ("cdist_p1", lambda L, a, b: L.cdist(a, b, p=1), [(2, 4, 3), (2, 5, 3)]),
    ("cdist_p3", lambda L, a, b: L.cdist(a, b, p=3), [(4, 3), (5, 3)]),
    ("cdist_p_half", lambda L, a, b: L.cdist(a, b, p=0.5), [(4, 3), (5, 3)]),
    ("cdist_p0", lambda L, a, b: L.cdist(a, b, p=0), [(4, 3), (5, 3)]),
    ("cdist_pinf", lambda L, a, b: L.cdist(a, b, p=float("inf")), [(4, 3), (5, 3)]),
    ("cdist_mm_path", lambda L, a, b: L.cdist(a, b), [(30, 3), (4, 3)]),
    ("cdist_mm_forced", lambda L, a, b: L.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), [(2, 4, 3), (5, 3)]),
    ("cdist_mm_refused", lambda L, a, b: L.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"), [(30, 3), (4, 3)]),
    ("cdist_empty", lambda L, a, b: L.cdist(a, b), [(0, 3), (5, 3)]),
    ("adjoint", lambda L, a: L.adjoint(a), [(2, 3, 4)]),
    ("adjoint_method", lambda L, a: a.adjoint() * 2, [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_products_match_torch(name, fn, inputs):
    tol = dict(atol=1e-4, rtol=1e-4, grad_atol=1e-4, grad_rtol=1e-4) if "cdist" in name else {}
    check_op(fn, *inputs, **tol)


ZERO_DISTANCE = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])   # row 0 of x1 is row 1 of x2


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, 0.0, float("inf")])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_gradient_at_zero_distance_as_torch(p, mode):
    x2 = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, -1.0]])
    _, out = check_op(lambda L, a, b: L.cdist(a, b, p=p, compute_mode=mode), ZERO_DISTANCE, x2, atol=1e-6)
    assert out.detach()[0, 1].item() <= 1e-15   # the matmul path clamps at 1e-30 before the root, as torch
    a = ember.tensor(ZERO_DISTANCE, requires_grad=True)
    ember.cdist(a, ember.tensor(x2)[1:], p=p, compute_mode=mode).sum().backward()
    assert a.grad[0].tolist() == [0.0, 0.0, 0.0] and not a.grad.isnan().any()


# rows with a NaN, an inf, inf and -inf (a NaN difference), a NaN and an inf, a zero difference, finite
NONFINITE_X1 = np.array([[np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [np.inf, -np.inf, 1.0], [np.nan, np.inf, 0.0],
                         [0.0, np.nan, 0.0], [0.0, 0.0, 2.0]])
NONFINITE_X2 = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [np.inf, 1.0, 2.0]])


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_at_nan_and_inf_as_torch(p, mode):
    # torch's kernels: p=0 NaN stays NaN (was a count of 1), p=1's gradient sign(NaN) = NaN (was 0), p=inf's
    # max skips a NaN but its gradient there is NaN, an inf max is inf (was inf - inf = NaN); the matmul
    # form's NaN gradient passes its clamp (was 0)
    check_op(lambda L, a, b: L.cdist(a, b, p=p, compute_mode=mode), NONFINITE_X1, NONFINITE_X2)
    check_op(lambda L, a, b: L.cdist(a, b, p=p, compute_mode=mode), NONFINITE_X2, NONFINITE_X1)


def test_cross_without_dim_warns_and_takes_the_first_size_3_dim():
    check_op(lambda L, a, b: L.cross(a, b), (3, 4), (3, 4))
    check_op(lambda L, a, b: L.cross(a, b), (2, 3, 3), (2, 3, 3))
    with pytest.warns(UserWarning, match="cross: Using torch.cross without specifying the dim arg is deprecated"):
        ember.cross(ember.ones(4, 3), ember.ones(4, 3))


def test_block_diag_of_nothing_is_one_empty_row():
    check_op(lambda L: L.block_diag(), grad=False, device="cpu")   # no input to take a device from


def ones(L, s, *shape):
    """Ones like s (its dtype and device)."""
    return L.ones(*shape, dtype=s.dtype, device=s.device)


@pytest.mark.parametrize("name,call,shape", [
    ("addmm_", lambda L, s: s.addmm_(ones(L, s, 3, 2), ones(L, s, 2, 4), beta=0.5, alpha=2), (3, 4)),
    ("addmv_", lambda L, s: s.addmv_(ones(L, s, 4, 2), ones(L, s, 2), beta=0), (4,)),
    ("addr_", lambda L, s: s.addr_(L.arange(3, dtype=s.dtype, device=s.device), ones(L, s, 4), alpha=-1), (3, 4)),
    ("baddbmm_", lambda L, s: s.baddbmm_(ones(L, s, 2, 3, 2), ones(L, s, 2, 2, 4)), (2, 3, 4)),
    ("addbmm_", lambda L, s: s.addbmm_(ones(L, s, 5, 3, 2), ones(L, s, 5, 2, 4), beta=3), (3, 4)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_inplace_forms_match_torch(name, call, shape):
    def fn(L, x):
        s = x * 1   # not a leaf: in-place on it is differentiable
        out = call(L, s)
        assert out is s
        return s
    check_op(fn, shape)


# ------------------------------------------------------------------ double backward (numeric, float64)
DOUBLE = [
    ("addbmm", lambda a, b, c: ember.addbmm(a, b, c, beta=0.5, alpha=2), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addr", lambda a, b, c: ember.addr(a, b, c, beta=0), [(3, 4), (3,), (4,)]),
    ("kron", lambda a, b: ember.kron(a, b), [(2, 3), (2, 2)]),
    ("linalg_cross", lambda a, b: ember.linalg.cross(a, b), [(2, 3), (2, 3)]),
    ("diag_embed", lambda a: ember.diag_embed(a, 1), [(2, 3)]),
    ("cdist", lambda a, b: ember.cdist(a, b), [(3, 2), (4, 2)]),
    ("cdist_p3", lambda a, b: ember.cdist(a, b, p=3), [(3, 2), (4, 2)]),
    ("cdist_mm", lambda a, b: ember.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), [(3, 2), (4, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_products_double_backward(name, fn, shapes):
    rng = np.random.default_rng(3)
    inputs = tuple(ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True) for s in shapes)
    assert ember.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-4)
    assert ember.autograd.gradgradcheck(fn, inputs, atol=1e-5, rtol=1e-4)


def test_compiled_products_match_eager():
    def f(a, b, c):
        return ember.addmv(a, b, c, beta=0.5) .sum() + ember.cdist(b, b).sum() + ember.kron(a, c).sum()
    rng = np.random.default_rng(0)
    a, b, c = (ember.tensor(rng.standard_normal(s)) for s in [(3,), (3, 4), (4,)])
    np.testing.assert_allclose(ember.compile(f)(a, b, c).item(), f(a, b, c).item(), rtol=1e-5)


# ------------------------------------------------------------------ errors as torch's
R = lambda L, *s, **k: L.ones(*s, **k)   # noqa: E731
ERRORS = [   # (call on lib, torch's exception type, a fragment both messages share)
    (lambda L: L.addmv(R(L, 3), R(L, 3, 4), R(L, 5)), RuntimeError, "size mismatch, got input (3), mat (3x4), vec (5)"),
    (lambda L: L.addmv(R(L, 2), R(L, 3, 4), R(L, 4)), RuntimeError, "size mismatch, got input (2), mat (3x4), vec (4)"),
    (lambda L: L.addmv(R(L, 3), R(L, 3, 4, 1), R(L, 4)), RuntimeError, "vector + matrix @ vector expected, got 1, 3, 1"),
    (lambda L: L.addmv(R(L, 3), R(L, 3, 4), R(L, 4, dtype=L.float64)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Float, Float, and Double"),
    (lambda L: L.addr(R(L, 3, 4), R(L, 3), R(L, 5)), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (4) at non-singleton dimension 1"),
    (lambda L: L.addr(R(L, 3, 4), R(L, 3, 1), R(L, 4)), RuntimeError, "Expected 1-D argument vec1, but got 2-D"),
    (lambda L: L.baddbmm(R(L, 3, 5), R(L, 2, 3, 4), R(L, 3, 4, 5)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    (lambda L: L.baddbmm(R(L, 4, 3, 5), R(L, 2, 3, 4), R(L, 2, 4, 5)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (4) at non-singleton dimension 0"),
    (lambda L: L.addbmm(R(L, 3, 5), R(L, 2, 3, 4), R(L, 3, 4, 5)), RuntimeError,
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda L: L.addbmm(R(L, 3, 5), R(L, 2, 3, 4), R(L, 2, 3, 5)), RuntimeError,
     "Incompatible matrix sizes for bmm (3x4 and 3x5)"),
    (lambda L: L.addbmm(R(L, 2, 3, 5), R(L, 2, 3, 4), R(L, 2, 4, 5)), RuntimeError,
     "the number of sizes provided (2) must be greater or equal to the number of dimensions in the tensor (3)"),
    (lambda L: L.addmm(R(L, 2, 5), R(L, 3, 4), R(L, 4, 5)), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0"),
    (lambda L: L.addmm(R(L, 3, 5, dtype=L.float64), R(L, 3, 4), R(L, 4, 5)), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda L: R(L, 5).addmm_(R(L, 3, 4), R(L, 4, 5)), RuntimeError,
     "Bad in-place call: input tensor size [5] and output tensor size [3, 5] should match"),
    (lambda L: R(L, 1).addmv_(R(L, 3, 4), R(L, 4)), RuntimeError,
     "Bad in-place call: input tensor size [1] and output tensor size [3] should match"),
    (lambda L: R(L, 3, 5).baddbmm_(R(L, 2, 3, 4), R(L, 2, 4, 5)), RuntimeError,
     "Bad in-place call: input tensor size [3, 5] and output tensor size [2, 3, 5] should match"),
    (lambda L: L.block_diag(R(L, 2, 3, 4)), RuntimeError, "Input tensors must have 2 or fewer dimensions. Input 0 has 3"),
    (lambda L: L.cross(R(L, 4, 3, 3), R(L, 3), dim=-1), RuntimeError, "linalg.cross: inputs must have the same number "
                                                                      "of dimensions."),
    (lambda L: L.cross(R(L, 3, 4), R(L, 3, 4), dim=1), RuntimeError, "linalg.cross: inputs dimension 1 must have "
                                                                     "length 3. Got 4 and 4"),
    (lambda L: L.linalg.cross(R(L, 3, 4), R(L, 3, 4)), RuntimeError, "linalg.cross: inputs dimension -1 must have "
                                                                     "length 3. Got 4 and 4"),
    (lambda L: L.linalg.cross(R(L, 3, 4), R(L, 3, 4), dim=2), IndexError, "Dimension out of range (expected to be in "
                                                                          "range of [-2, 1], but got 2)"),
    (lambda L: L.linalg.cross(R(L, 3), R(L, 3, dtype=L.float64)), RuntimeError, "expected scalar type Float but "
                                                                                "found Double"),
    (lambda L: L.diag_embed(R(L, 2, 3), dim1=1, dim2=1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda L: L.diag_embed(R(L, 2, 3), dim1=3), IndexError, "Dimension out of range (expected to be in range of "
                                                             "[-3, 2], but got 3)"),
    (lambda L: L.cdist(R(L, 4, 3), R(L, 5, 2)), RuntimeError, "X1 and X2 must have the same number of columns. X1: 3 "
                                                              "X2: 2"),
    (lambda L: L.cdist(R(L, 3), R(L, 5, 3)), RuntimeError, "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda L: L.cdist(R(L, 4, 3), R(L, 5, 3), p=-1), RuntimeError, "cdist only supports non-negative p values"),
    (lambda L: L.cdist(R(L, 4, 3, dtype=L.int64), R(L, 5, 3, dtype=L.int64)), RuntimeError,
     "cdist only supports floating-point dtypes, X1 got: Long"),
    (lambda L: L.cdist(R(L, 4, 3), R(L, 5, 3), compute_mode="foo"), ValueError, "foo is not a valid value for "
                                                                               "compute_mode"),
    (lambda L: L.cdist(R(L, 4, 3, dtype=L.float16), R(L, 5, 3, dtype=L.float16)), NotImplementedError,
     "\"cdist\" not implemented for 'Half'"),
    (lambda L: L.adjoint(R(L, 3)), RuntimeError, "tensor.adjoint() is only supported on matrices or batches of "
                                                 "matrices. Got 1-D tensor."),
]


@pytest.mark.parametrize("call,exc,fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_as_torch(call, exc, fragment):
    assert "test_products.py:" in str(raises_as_torch(call, exc, fragment))


# ------------------------------------------------------------------ linalg.multi_dot, linalg.vecdot
@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(3,), (3, 4), (4,)], [(5, 2), (2, 6), (6, 3), (3, 1)],
                                    [(4,), (4, 30), (30, 2), (2, 7)], [(2, 3), (3,)], [(10, 2), (2, 10), (10, 3)]],
                         ids=str)
def test_multi_dot_matches_torch(shapes):
    check_op(lambda L, *ts: L.linalg.multi_dot(list(ts)), *shapes)


def test_multi_dot_takes_the_cheapest_order():
    from ember.linalg._products import _chain_order
    # (10x100)(100x5)(5x50): (AB)C costs 5000 + 2500, A(BC) costs 25000 + 50000
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0


@pytest.mark.parametrize("shapes,dim", [([(2, 3), (3,)], -1), ([(2, 3), (2, 1)], 0), ([(4, 1, 3), (2, 3)], -1)],
                         ids=str)
def test_vecdot_matches_torch(shapes, dim):
    check_op(lambda L, a, b: L.linalg.vecdot(a, b, dim=dim), *shapes)


LINALG_ERRORS = [
    (lambda L: L.linalg.multi_dot([R(L, 2, 3)]), RuntimeError, "multi_dot(): expected at least 2 tensors but got 1"),
    (lambda L: L.linalg.multi_dot([]), RuntimeError, "multi_dot(): expected at least 2 tensors but got 0"),
    (lambda L: L.linalg.multi_dot([R(L, 3), R(L, 3, 4), R(L, 5)]), RuntimeError,
     "multi_dot(): tensors 1 and 2 with shapes [3, 4] and [5] cannot be multiplied"),
    (lambda L: L.linalg.multi_dot([R(L, 2, 3, 3), R(L, 3, 4)]), RuntimeError,
     "multi_dot(): the first tensor must be 1D or 2D but got 3D"),
    (lambda L: L.linalg.multi_dot([R(L, 2, 3), R(L, 3, 3, 3), R(L, 3)]), RuntimeError,
     "multi_dot(): tensor 1 must be 2D but got 3D"),
    (lambda L: L.linalg.multi_dot([R(L, 2, 3), R(L, 3, dtype=L.float64)]), RuntimeError,
     "multi_dot(): all tensors must have be the same dtype but tensor 0 is float and tensor 1 double"),
    (lambda L: L.linalg.vecdot(R(L, 2, 3), R(L, 3, dtype=L.float64)), RuntimeError,
     "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Float and y of type Double"),
    (lambda L: L.linalg.vecdot(R(L, 3, dtype=L.int64), R(L, 3, dtype=L.int64)), RuntimeError,
     "Expected a floating point or complex tensor as input. Got Long"),
]


@pytest.mark.parametrize("call,exc,fragment", LINALG_ERRORS, ids=[e[2][:40] for e in LINALG_ERRORS])
def test_linalg_product_errors_as_torch(call, exc, fragment):
    test_errors_as_torch(call, exc, fragment)
