"""ember/ops/elementwise.py against torch: inverse trig and hyperbolic functions, atan2, hypot, logaddexp,
copysign, the sign/infinity checks, nan_to_num, their `_` in-place forms, and the in-place comparison and
bitwise forms bound in ember/_tensor_methods.py."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, NoGrad, raises_exactly

UNARY = {   # name -> (input range low, high)
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atan": (-3, 3), "sinh": (-3, 3), "cosh": (-3, 3),
    "asinh": (-3, 3), "acosh": (1.1, 4), "atanh": (-0.9, 0.9),
    "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctan": (-3, 3), "arcsinh": (-3, 3), "arccosh": (1.1, 4),
    "arctanh": (-0.9, 0.9), "deg2rad": (-360, 360), "rad2deg": (-4, 4),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(name):
    low, high = UNARY[name]
    check_op(lambda L, x: getattr(L, name)(x), (3, 4), low=low, high=high)
    check_op(lambda L, x: getattr(x, name)(), (5,), low=low, high=high)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign"])
def test_binary_matches_torch_with_broadcasting(name):
    wrap = NoGrad if name == "copysign" else (lambda s: s)   # torch's gradient for copysign's sign source is 0
    check_op(lambda L, a, b: getattr(L, name)(a, b), (3, 4), wrap((4,)))
    check_op(lambda L, a, b: getattr(a, name)(b), (2, 1, 3), wrap((4, 1)))


def test_integer_inputs_compute_in_float_as_torch():
    for name in ["asin", "atan", "sinh", "deg2rad", "rad2deg"]:
        t = getattr(torch, name)(torch.tensor([0, 1]))
        e = getattr(ember, name)(ember.tensor([0, 1]))
        assert e.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    t = torch.atan2(torch.tensor([1, -1]), torch.tensor([2, 2]))
    e = ember.atan2(ember.tensor([1, -1]), ember.tensor([2, 2]))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_logaddexp_does_not_overflow():
    a = ember.tensor([1000.0, -1000.0])
    np.testing.assert_allclose(ember.logaddexp(a, a).numpy(), torch.logaddexp(torch.tensor([1000.0, -1000.0]),
                                                                          torch.tensor([1000.0, -1000.0])).numpy())


SPECIAL = [0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("name", ["signbit", "isposinf", "isneginf"])
def test_checks_match_torch(name):
    t = getattr(torch, name)(torch.tensor(SPECIAL))
    e = getattr(ember, name)(ember.tensor(SPECIAL))
    assert e.dtype is ember.bool and e.tolist() == t.tolist()
    assert getattr(ember.tensor(SPECIAL), name)().tolist() == t.tolist()


def test_copysign_takes_the_sign_of_negative_zero():
    t = torch.copysign(torch.tensor([1.0, 2.0]), torch.tensor([-0.0, 0.0]))
    assert ember.copysign(ember.tensor([1.0, 2.0]), ember.tensor([-0.0, 0.0])).tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("kw", [{}, {"nan": 1.0, "posinf": 7.0, "neginf": -7.0}])
def test_nan_to_num_matches_torch(dtype, kw):
    t = torch.nan_to_num(torch.tensor(SPECIAL, dtype=getattr(torch, dtype)), **kw)
    e = ember.nan_to_num(ember.tensor(SPECIAL, dtype=getattr(ember, dtype)), **kw)
    assert e.tolist() == t.float().tolist() if dtype == "bfloat16" else e.tolist() == t.tolist()
    assert ember.tensor(SPECIAL).nan_to_num(**kw).tolist() == torch.tensor(SPECIAL).nan_to_num(**kw).tolist()
    assert ember.nan_to_num(ember.tensor([1, 2])).tolist() == [1, 2]


def test_nan_to_num_gradient_passes_finite_values():
    check_op(lambda L, x: L.nan_to_num(x / (x > 0).to(x.dtype)), (3, 4))


INPLACE = ["asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "atanh_", "arcsin_", "arccos_", "arctan_",
           "arcsinh_", "arctanh_", "deg2rad_", "rad2deg_", "nan_to_num_"]


@pytest.mark.parametrize("name", INPLACE + ["acosh_", "arccosh_"])
def test_unary_inplace_forms(name):
    a = np.random.default_rng(0).uniform(1.1 if "cosh" in name else -0.9, 1.5 if "cosh" in name else 0.9, 5)
    t, e = torch.tensor(a), ember.tensor(a)
    assert getattr(e, name)() is e
    getattr(t, name)()
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["atan2_", "arctan2_", "hypot_", "copysign_", "eq_", "ne_", "lt_", "le_", "gt_",
                                  "ge_", "greater_", "greater_equal_", "less_", "less_equal_", "not_equal_",
                                  "logical_and_", "logical_or_", "logical_xor_"])
def test_binary_inplace_forms(name):
    a, b = [-1.0, 0.0, 2.0, 3.0], [1.0, 0.0, -2.0, 5.0]
    t, e = torch.tensor(a), ember.tensor(a)
    assert getattr(e, name)(ember.tensor(b)) is e
    getattr(t, name)(torch.tensor(b))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert e.dtype is ember.float32


@pytest.mark.parametrize("name", ["bitwise_and_", "bitwise_or_", "bitwise_xor_"])
def test_bitwise_inplace_forms(name):
    t, e = torch.tensor([5, 3, 12]), ember.tensor([5, 3, 12])
    getattr(t, name)(torch.tensor([3, 6, 10]))
    getattr(e, name)(ember.tensor([3, 6, 10]))
    assert e.tolist() == t.tolist()
    assert ember.tensor([5, 0]).bitwise_not_().tolist() == torch.tensor([5, 0]).bitwise_not_().tolist()


def test_cumsum_and_cumprod_inplace():
    for name in ["cumsum_", "cumprod_"]:
        t, e = torch.tensor([[1.0, 2.0, 3.0], [0.5, 2.0, 4.0]]), ember.tensor([[1.0, 2.0, 3.0], [0.5, 2.0, 4.0]])
        assert getattr(e, name)(1) is e
        assert e.tolist() == getattr(t, name)(1).tolist()


def test_inplace_with_history_is_differentiable():
    x = ember.tensor([0.1, 0.4], requires_grad=True)
    y = x * 1.0
    y.asin_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / np.sqrt(1 - np.array([0.1, 0.4], dtype=np.float32) ** 2),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "logaddexp2", "copysign"])
def test_binary_operands_on_two_devices_name_the_op(name, fake_cuda):
    raises_exactly(lambda: getattr(ember, name)(ember.ones(2), ember.ones(2, device="cuda")), RuntimeError,
                   f"{name}: expected all tensors to be on the same device, but found at least two devices, "
                   f"cpu and cuda:0")


def test_atan2_broadcast_error_names_the_op():
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        torch.atan2(torch.ones(2, 3), torch.ones(4))
    raises_exactly(lambda: ember.atan2(ember.ones(2, 3), ember.ones(4)), RuntimeError,
                   "atan2: shapes (2, 3) and (4,) cannot be broadcast together")


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "logaddexp2", "copysign"])
def test_integer_operands_compute_in_the_default_float_dtype(name):
    """Both integer operands become float32 (torch's atan2 does the same; its hypot, logaddexp and copysign
    refuse some integer dtypes, so the values are compared with torch's on float32 operands)."""
    for a, b, dt in [([3, -1, 0], [2, 2, -5], "int64"), ([3, 1, 0], [True, False, True], "uint8")]:
        want = getattr(torch, name)(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
        e = getattr(ember, name)(ember.tensor(a, dtype=getattr(ember, dt)), ember.tensor(b))
        assert e.dtype is ember.float32
        np.testing.assert_allclose(e.numpy(), want.numpy(), rtol=1e-6)
