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
