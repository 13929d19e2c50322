"""ember/ops/aliases.py: torch's other names for Ember's ops, as functions, methods and in-place forms."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op

BINARY = ["multiply", "divide", "subtract"]
UNARY = ["fix", "sgn", "positive"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_aliases(name):
    check_op(lambda L, a, b: getattr(L, name)(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: getattr(a, name)(b), (3, 4), (3, 1))


@pytest.mark.parametrize("name", UNARY)
def test_unary_aliases(name):
    check_op(lambda L, a: getattr(L, name)(a) * 1.0, (3, 4), grad=name == "positive")
    check_op(lambda L, a: getattr(a, name)() * 1.0, (5,), grad=False)


def test_clamp_min_and_max():
    check_op(lambda L, a: L.clamp_min(a, 0.5), (3, 4))
    check_op(lambda L, a: a.clamp_min(0.5), (3, 4))
    check_op(lambda L, a: a.clamp_max(-0.5), (3, 4))


def test_linalg_aliases():
    def well(L, a):
        return a + 3 * L.eye(3, dtype=a.dtype, device=a.device)
    check_op(lambda L, a: L.inverse(well(L, a)), (3, 3), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: well(L, a).det(), (2, 3, 3), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: L.slogdet(well(L, a))[1], (3, 3), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: L.cholesky(a @ a.mT + 3 * L.eye(3, dtype=a.dtype, device=a.device)), (3, 3), atol=1e-4, rtol=1e-4,
             grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: (a @ a.mT + 3 * L.eye(3, dtype=a.dtype, device=a.device)).cholesky(upper=True), (3, 3), atol=1e-4,
             rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: well(L, a).inverse().slogdet()[1], (3, 3), atol=1e-4, rtol=1e-4, grad_atol=1e-3,
             grad_rtol=1e-3)


def test_logdet_is_nan_for_a_negative_determinant():
    a = [[[2.0, 1.0], [1.0, -3.0]], [[2.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 1.0]]]
    t, e = torch.logdet(torch.tensor(a)), ember.logdet(ember.tensor(a))
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(ember.tensor(a).logdet().numpy(), t.numpy())


@pytest.mark.parametrize("name,args", [("multiply_", (2.0,)), ("divide_", (2.0,)), ("subtract_", (2.0,)),
                                       ("fix_", ()), ("sgn_", ()), ("clamp_min_", (0.0,)), ("clamp_max_", (0.0,)),
                                       ("negative_", ()), ("absolute_", ()), ("true_divide_", (4.0,))])
def test_inplace_aliases(name, args):
    a = [-1.5, 0.5, 2.5]
    t, e = torch.tensor(a), ember.tensor(a)
    assert getattr(e, name)(*args) is e
    assert e.tolist() == getattr(t, name)(*args).tolist()


def test_ndimension():
    assert ember.ones(2, 3, 4).ndimension() == torch.ones(2, 3, 4).ndimension() == 3


# ------------------------------------------------------------------ torch names Ember had under another name
def test_fill():
    check_op(lambda L, x: L.fill(x, 2.5), (3, 4))
    check_op(lambda L, x, v: L.fill(x, v), (3, 4), ())          # the value's gradient: the sum; input's: zero
    check_op(lambda L, x: L.fill(x.to(L.int64), 2.7), (3,), grad=False)   # input's dtype (2.7 -> 2)
    check_op(lambda L, x: L.fill(x, L.tensor(3, dtype=L.int64)), (2,))
    with pytest.raises(RuntimeError, match="fill: fill only supports 0-dimension value tensor but got tensor with "
                                           "1 dimensions"):
        ember.fill(ember.ones(2), ember.ones(2))


def test_rsub():
    check_op(lambda L, a, b: L.rsub(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: L.rsub(a, b, alpha=2.5), (3, 1), (3, 4))
    check_op(lambda L, a: L.rsub(a, 5, 2), (3, 4))
    check_op(lambda L, a: L.rsub(a.to(L.int64), 5), (3,), grad=False)


def test_range_is_end_inclusive_and_warns():
    for args, kw in [((1, 4), {}), ((0, 1, 0.1), {}), ((5, 1, -1), {}), ((0.5, 3), {}), ((1, 5, 2), {"dtype": "int32"}),
                     ((0, 5, 1.5), {"dtype": "int64"}), ((0, 2, 0.5), {"dtype": "float64"})]:
        with pytest.warns(UserWarning, match="range is deprecated"):
            e = ember.range(*args, **{k: getattr(ember, v) for k, v in kw.items()})
        with pytest.warns(UserWarning):
            t = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        assert e.dtype.name == str(t.dtype).split(".")[1], args
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, err_msg=str(args))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="range: step must be nonzero"):
        ember.range(0, 1, 0)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="range: upper bound and lower bound "
                                                                      "inconsistent with step sign"):
        ember.range(1, 0)


@pytest.mark.filterwarnings("ignore")
def test_frobenius_and_nuclear_norm():
    check_op(lambda L, x: L.frobenius_norm(x, (1, 2)), (2, 3, 4))
    check_op(lambda L, x: L.frobenius_norm(x, 1, True), (2, 3))
    check_op(lambda L, x: L.frobenius_norm(x, ()), (2, 3))
    with pytest.raises(RuntimeError, match="frobenius_norm: Expected at most 2 dimensions, but got 3"):
        ember.frobenius_norm(ember.ones(2, 3, 4), (0, 1, 2))
    check_op(lambda L, x: L.nuclear_norm(x), (3, 4), atol=1e-4, grad_atol=1e-4)
    check_op(lambda L, x: L.nuclear_norm(x, True), (3, 4), atol=1e-4, grad_atol=1e-4)
    check_op(lambda L, x: L.nuclear_norm(x), (2, 3, 4), atol=1e-4, grad_atol=1e-4)   # the last two dims
    check_op(lambda L, x: L.nuclear_norm(x, (0, 2), keepdim=True), (2, 3, 4), atol=1e-4, grad_atol=1e-4)


@pytest.mark.filterwarnings("ignore")
def test_qr_and_svd():
    # Q and R up to the sign of each column/row: compare Q R and R's diagonal magnitude, and grads through them
    check_op(lambda L, a: L.qr(a)[0] @ L.qr(a)[1], (4, 3), atol=1e-4, grad_atol=1e-3)
    check_op(lambda L, a: a.qr(some=False)[1].abs(), (4, 4), atol=1e-4, grad_atol=1e-3)
    assert [tuple(t.shape) for t in ember.qr(ember.randn(4, 3), some=False)] == [(4, 4), (4, 3)]
    # svd: V (not Vh): U diag(S) V^T is the input; singular vectors up to sign
    check_op(lambda L, a: (lambda u, s, v: (s, (u * s.unsqueeze(-2)) @ v.mT, v.abs()))(*L.svd(a)), (2, 4, 3),
             atol=1e-4, grad_atol=1e-3)
    check_op(lambda L, a: (lambda u, s, v: (u.abs(), s, v.abs()))(*a.svd(some=False)), (4, 3), atol=1e-4, grad=False)
    check_op(lambda L, a: L.svd(a, compute_uv=False), (3, 2), atol=1e-4, grad_atol=1e-3)


def test_get_device_and_anomaly_switch(fake_cuda):
    assert ember.ones(2).get_device() == ember.get_device(ember.ones(1)) == torch.ones(2).get_device() == -1
    assert ember.ones(2, device="cuda").get_device() == ember.get_device(ember.ones(1, device="cuda:0")) == 0
    assert not ember.is_anomaly_enabled()
    try:
        ember.set_anomaly_enabled(True)
        assert ember.is_anomaly_enabled() and ember.autograd.is_anomaly_check_nan_enabled()
        ember.set_anomaly_enabled(True, check_nan=False)
        assert not ember.autograd.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.autograd.is_anomaly_check_nan_enabled()


# ------------------------------------------------------------------ in-place shape methods (t_, unsqueeze_, ...)
SHAPE_INPLACE = [("t_", (), (3, 4)), ("t_", (), (4,)), ("transpose_", (0, 2), (2, 3, 4)), ("swapaxes_", (1, -1), (2, 3, 4)),
                 ("swapdims_", (0, 1), (2, 3)), ("unsqueeze_", (1,), (2, 3)), ("unsqueeze_", (-1,), (2, 3)),
                 ("squeeze_", (), (2, 1, 3, 1)), ("squeeze_", (1,), (2, 1, 3, 1)), ("squeeze_", ((1, 3),), (2, 1, 3, 1))]


@pytest.mark.parametrize("name,args,shape", SHAPE_INPLACE)
def test_shape_inplace_with_gradient(name, args, shape):
    # on a non-leaf: the tensor itself takes the new shape, and the gradient flows through the view
    def fn(L, x):
        y = x * 2
        out = getattr(y, name)(*args)
        assert out is y
        return y * L.arange(y.numel(), dtype=y.dtype, device=y.device).reshape(y.shape)
    check_op(fn, shape)


@pytest.mark.parametrize("name,args,shape", SHAPE_INPLACE)
def test_shape_inplace_without_grad_changes_the_tensor_itself(name, args, shape):
    t, e = torch.arange(float(np.prod(shape))).reshape(shape), ember.arange(float(np.prod(shape))).reshape(shape)
    tv, ev = t.view(-1), e.view(-1)           # an older view of the same memory
    assert getattr(e, name)(*args) is e and getattr(t, name)(*args) is t
    assert tuple(e.shape) == tuple(t.shape) and e._version == t._version == 1
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e.mul_(10)
    t.mul_(10)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())   # still the same memory


def test_shape_inplace_errors_as_torch():
    x = ember.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="t_: a leaf Variable that requires grad is being used in an in-place"):
        x.t_()
    with ember.no_grad():                      # allowed without grad mode, as in torch: the leaf keeps its grad
        x.t_()
    assert x.shape == (3, 2) and x.is_leaf and x.requires_grad
    (x * ember.arange(6.0).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    # a graph that saved the tensor before the change refuses it (torch: "modified by an inplace operation")
    y = ember.randn(2, 3, requires_grad=True) * 1
    u = y.sin()
    y.t_()
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation \(t_\)"):
        u.sum().backward()
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions, but self is 3D"):
        ember.ones(2, 2, 2).t_()
