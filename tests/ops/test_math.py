"""ember/ops/math.py against torch: elementwise, comparison, reductions, linear algebra."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from helpers import check_op, NoGrad, raises_exactly

# ------------------------------------------------------------------ binary arithmetic, broadcasting
BINARY = {
    "add": lambda L, a, b: L.add(a, b),
    "add_alpha": lambda L, a, b: L.add(a, b, alpha=2.5),
    "sub": lambda L, a, b: L.sub(a, b),
    "sub_alpha": lambda L, a, b: a.sub(b, alpha=0.5),
    "mul": lambda L, a, b: L.mul(a, b),
    "div": lambda L, a, b: L.div(a, b),
    "true_divide": lambda L, a, b: L.true_divide(a, b),
    "op+": lambda L, a, b: a + b,
    "op-": lambda L, a, b: a - b,
    "op*": lambda L, a, b: a * b,
    "op/": lambda L, a, b: a / b,
    "method_add": lambda L, a, b: a.add(b),
    "method_mul": lambda L, a, b: a.mul(b),
    "method_div": lambda L, a, b: a.div(b),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b),
    "method_maximum": lambda L, a, b: a.maximum(b),
    "method_minimum": lambda L, a, b: a.minimum(b),
}
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)), ((), (2, 3)),
          ((2, 1, 3), (5, 1))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, shapes):
    fn = BINARY[name]
    if "div" in name or name == "op/":
        # keep the divisor away from 0
        b = np.random.default_rng(1).uniform(0.5, 2, size=shapes[1]) * np.where(
            np.random.default_rng(2).random(shapes[1]) < 0.5, -1, 1)
        check_op(fn, shapes[0], b)
    else:
        check_op(fn, *shapes)


REFLECTED = {
    "scalar+t": lambda L, a: 2.5 + a,
    "scalar-t": lambda L, a: 2.5 - a,
    "scalar*t": lambda L, a: 3 * a,
    "scalar/t": lambda L, a: 1.5 / a,
    "t+scalar": lambda L, a: a + 2,
    "t-scalar": lambda L, a: a - 0.5,
    "t*scalar": lambda L, a: a * -1.5,
    "t/scalar": lambda L, a: a / 4,
    "t+int": lambda L, a: a + 3,
    "t+bool": lambda L, a: a + True,
}


@pytest.mark.parametrize("name", list(REFLECTED))
def test_reflected_scalar(name):
    check_op(REFLECTED[name], (3, 4), positive=True)


def test_numpy_scalar_left():
    check_op(lambda L, a: np.float64(2.0) * a, (3,))   # __array_priority__: ours, not numpy's


INPLACE = {
    "+=": lambda L, a, b: _iop(a, b, "__iadd__"),
    "-=": lambda L, a, b: _iop(a, b, "__isub__"),
    "*=": lambda L, a, b: _iop(a, b, "__imul__"),
    "/=": lambda L, a, b: _iop(a, b, "__itruediv__"),
    "add_": lambda L, a, b: (a * 1).add_(b),
    "add_alpha_": lambda L, a, b: (a * 1).add_(b, alpha=-2),
    "sub_": lambda L, a, b: (a * 1).sub_(b),
    "mul_": lambda L, a, b: (a * 1).mul_(b),
    "div_": lambda L, a, b: (a * 1).div_(b),
    "maximum_": lambda L, a, b: (a * 1).maximum_(b) if L is ember else torch.maximum(a, b),
    "clamp_": lambda L, a, b: (a * 1).clamp_(-0.5, 0.5) + b,
    "exp_": lambda L, a, b: (a * 1).exp_() * b,
    "tanh_": lambda L, a, b: (a * 1).tanh_() * b,
    "sigmoid_": lambda L, a, b: (a * 1).sigmoid_() * b,
    "neg_": lambda L, a, b: (a * 1).neg_() * b,
    "pow_": lambda L, a, b: (a * 1).pow_(2) * b,
}


def _iop(a, b, op):
    c = a * 1          # a non-leaf copy; in-place on a leaf that requires grad is an error
    c2 = getattr(c, op)(b)
    assert c2 is c     # in place: the same tensor comes back
    return c


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_arith(name):
    b = np.random.default_rng(3).uniform(0.5, 2, size=(4,))
    check_op(INPLACE[name], (3, 4), b)


def test_inplace_bumps_version_and_views_see_it():
    x = ember.zeros(2, 3)
    v = x[0]
    v0 = x._version
    x += 1
    x.add_(ember.ones(3))
    assert x._version == v0 + 2
    assert v.tolist() == [2.0, 2.0, 2.0]
    v.mul_(3)   # a write through the view is seen by the base
    assert x.tolist() == [[6.0, 6.0, 6.0], [2.0, 2.0, 2.0]]


def test_inplace_int_tensor_rejects_float_result():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x += 1.5
    assert x.tolist() == [1, 2, 3]


def test_floor_divide_remainder_ints():
    a = np.array([7, -7, 5, -5, 0], dtype=np.int64)
    b = np.array([2, 2, -3, -3, 4], dtype=np.int64)
    check_op(lambda L, a, b: L.floor_divide(a, b), a, b)
    check_op(lambda L, a, b: a // b, a, b)
    check_op(lambda L, a, b: L.remainder(a, b), a, b)
    check_op(lambda L, a, b: a % b, a, b)
    check_op(lambda L, a, b: L.div(a, b), a, b)   # int / int -> float
    check_op(lambda L, a, b: L.div(a, b, rounding_mode="trunc"), a, b)
    check_op(lambda L, a, b: L.div(a, b, rounding_mode="floor"), a, b)


def test_remainder_float_grad():
    check_op(lambda L, a: L.remainder(a, 0.7), (3, 4))
    check_op(lambda L, a: a.div(0.3, rounding_mode="trunc"), (3, 4), grad=False)


@pytest.mark.parametrize("op", ["fmod", "remainder"])
def test_fmod_and_remainder_signs_ints(op):
    # fmod takes the dividend's sign (C), remainder the divisor's (Python): fmod([-7, 7], 3) == [-1, 1]
    a = np.array([-7, 7, -7, 7, 0, 5, -6], dtype=np.int64)
    b = np.array([3, 3, -3, -3, 4, 5, 4], dtype=np.int64)
    check_op(lambda L, a, b: getattr(L, op)(a, b), a, b)
    check_op(lambda L, a: getattr(L, op)(a, 3), a)          # scalar divisor
    check_op(lambda L, a: getattr(L, op)(a, -3), a)
    check_op(lambda L, a, b: getattr(a, op)(b), a, b)        # method
    check_op(lambda L, a: getattr(L, op)(a, 2.5), a, grad=False)   # int by float -> float
    assert ember.fmod(ember.tensor([-7, 7]), 3).tolist() == [-1, 1]


@pytest.mark.parametrize("op", ["fmod", "remainder"])
def test_fmod_and_remainder_floats_and_gradients(op):
    # negative dividends and divisors, a broadcast tensor divisor: gradients 1 and -trunc(a/b) (fmod)
    # or -floor(a/b) (remainder) for both operands
    a = np.array([[-7.5, 7.5, -2.25, 2.25], [5.5, -5.5, 0.75, -0.25]])
    b = np.array([[3.0, -3.0, 2.0, -2.0], [-1.5, 1.5, 0.5, 4.0]])
    check_op(lambda L, a, b: getattr(L, op)(a, b), a, b)
    check_op(lambda L, a, b: getattr(L, op)(a, b), a, np.array([1.75, -1.25, 2.5, -0.5]))
    check_op(lambda L, a: getattr(L, op)(a, 0.7), (3, 4))
    check_op(lambda L, a: getattr(L, op)(a, -0.7), (3, 4))
    check_op(lambda L, a, b: getattr(a, op)(b), (3, 4), NoGrad(np.array([0.9, -1.1, 1.3, -0.6])))


# ------------------------------------------------------------------ pow
POW = {
    "t**2": (lambda L, a: a ** 2, False),
    "t**3": (lambda L, a: a ** 3, False),
    "t**0.5": (lambda L, a: a ** 0.5, True),
    "t**-1.5": (lambda L, a: a ** -1.5, True),
    "t**1": (lambda L, a: a ** 1, False),
    "t**0": (lambda L, a: a ** 0, False),
    "2**t": (lambda L, a: 2 ** a, False),
    "2.5**t": (lambda L, a: 2.5 ** a, False),
    "pow(t,3)": (lambda L, a: L.pow(a, 3), False),
    "pow(2,t)": (lambda L, a: L.pow(2.0, a), False),
    "t.pow(-2)": (lambda L, a: a.pow(-2), True),
}


@pytest.mark.parametrize("name", list(POW))
def test_pow_scalar(name):
    fn, pos = POW[name]
    check_op(fn, (3, 4), positive=pos)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (3,))], ids=str)
def test_pow_tensor_tensor(shapes):
    check_op(lambda L, a, b: a ** b, *shapes, positive=True)
    check_op(lambda L, a, b: L.pow(a, b), *shapes, positive=True)


def test_pow_zero_base_grad():
    # d(a^b)/db at a == 0 is 0 in torch, not nan
    check_op(lambda L, a, b: a ** b, np.array([0.0, 1.0, 2.0]), np.array([2.0, 2.0, 0.5]))


def test_pow_int():
    a = np.array([1, 2, 3, -4], dtype=np.int64)
    check_op(lambda L, a: a ** 2, a)
    check_op(lambda L, a: a ** 0.5, np.array([1, 4, 9], dtype=np.int64))
    check_op(lambda L, a: 2 ** a, np.array([0, 1, 5], dtype=np.int64))


def test_pow_of_special_values_as_torch():
    # torch runs ** -0.5 as rsqrt: (-inf) ** -0.5 is NaN and (-0.0) ** -0.5 is -inf (C's pow: 0 and inf)
    x = np.array([-np.inf, -1.0, -0.0, 0.0, np.inf, np.nan, 4.0])
    for e in (0.5, -0.5, 2.0, -1.0, -2.0, 3.0, 1.5, -1.5, 0.0):
        check_op(lambda L, a: a ** e, NoGrad(x), grad=False, dtypes=("float32", "float64", "float16", "bfloat16"))
    check_op(lambda L, a: a ** -0.5, np.array([0.25, 4.0, 9.0]))


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64"])
def test_pow_int_negative_tensor_exponents_as_torch(dt):
    # NumPy refuses negative integer powers (a raw ValueError); torch gives 1 ** -n = 1, (-1) ** -n = +-1
    # and 0 for every other base
    base = np.array([2, 1, 0, 3, 1, 7, 4, 0, 9]) if dt == "uint8" else np.array([2, 1, -1, 0, 3, -2, 1, -1, 5])
    exp = np.array([-1, -1, -1, -1, -2, -3, 3, -4, 2], dtype=np.int32)
    check_op(lambda L, a, b: a ** b, base.astype(dt), exp, dtypes=(None,), grad=False)
    check_op(lambda L, b: L.pow(3, b), exp.astype(np.int64), dtypes=(None,), grad=False)
    check_op(lambda L, a, b: a.pow_(b), base.astype(dt).astype(np.int64), exp, dtypes=(None,), grad=False)
    raises_exactly(lambda: ember.tensor(base.astype(dt)) ** -1, RuntimeError,
                   f"pow: integers to negative integer powers are not allowed: (9,) {dt} cpu ** -1 (as torch; "
                   f"a tensor exponent gives torch's integer results)")


# ------------------------------------------------------------------ unary
UNARY = {  # name: (fn, positive inputs, extra grad tolerance)
    "neg": (lambda L, a: L.neg(a), False),
    "-t": (lambda L, a: -a, False),
    "abs": (lambda L, a: L.abs(a), False),
    "abs()": (lambda L, a: abs(a), False),
    "exp": (lambda L, a: L.exp(a), False),
    "log": (lambda L, a: L.log(a), True),
    "log1p": (lambda L, a: L.log1p(a), True),
    "expm1": (lambda L, a: L.expm1(a), False),
    "log2": (lambda L, a: L.log2(a), True),
    "log10": (lambda L, a: L.log10(a), True),
    "exp2": (lambda L, a: L.exp2(a), False),
    "sqrt": (lambda L, a: L.sqrt(a), True),
    "rsqrt": (lambda L, a: L.rsqrt(a), True),
    "sin": (lambda L, a: L.sin(a), False),
    "cos": (lambda L, a: L.cos(a), False),
    "tan": (lambda L, a: L.tan(a), False),
    "tanh": (lambda L, a: L.tanh(a), False),
    "sigmoid": (lambda L, a: L.sigmoid(a), False),
    "erf": (lambda L, a: L.erf(a), False),
    "reciprocal": (lambda L, a: L.reciprocal(a), True),
    "square": (lambda L, a: L.square(a), False),
    "relu": (lambda L, a: L.relu(a), False),
    "floor": (lambda L, a: L.floor(a), False),
    "ceil": (lambda L, a: L.ceil(a), False),
    "round": (lambda L, a: L.round(a), False),
    "round_dec": (lambda L, a: L.round(a, decimals=1), False),
    "sign": (lambda L, a: L.sign(a), False),
    "trunc": (lambda L, a: L.trunc(a), False),
    "frac": (lambda L, a: L.frac(a), False),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function(name):
    fn, pos = UNARY[name]
    check_op(fn, (3, 4), positive=pos, low=-1.3, high=1.3)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function_of_0d_tensor(name):
    # float32 erf on the CPU crashed on a 0-d tensor (its in-place ufuncs met NumPy scalars)
    fn, pos = UNARY[name]
    check_op(fn, (), positive=pos, low=-1.3, high=1.3)


@pytest.mark.parametrize("name", [n for n in UNARY if n.isidentifier() and n not in ("round_dec",)])
def test_unary_method(name):
    _, pos = UNARY[name]
    check_op(lambda L, a: getattr(a, name)(), (2, 3), positive=pos, low=-1.3, high=1.3)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "abs", "neg", "floor"])
def test_unary_half_precision(name):
    fn, pos = UNARY[name]
    check_op(fn, (3, 4), positive=pos, dtypes=("float16", "bfloat16"))


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "sigmoid", "abs", "neg", "floor", "sign", "erf"])
def test_unary_int_input(name):
    fn, _ = UNARY[name]
    check_op(fn, np.array([[0, 1, 4], [9, 2, 3]], dtype=np.int64))


def test_sigmoid_extremes():
    check_op(lambda L, a: L.sigmoid(a), np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]))


def test_aliases_and_float_power():
    check_op(lambda L, a: L.absolute(a), (3, 4))
    check_op(lambda L, a, b: L.float_power(a, b), (3, 4), (4,), positive=True)     # computed in float64
    check_op(lambda L, a: L.float_power(a, 2), (3, 4), dtypes=("float32",))
    check_op(lambda L, a: L.fmod(a, 1.5), (3, 4), positive=True)  # negative operands: see test_fmod_*


def test_round_half_to_even():
    check_op(lambda L, a: L.round(a), np.array([0.5, 1.5, 2.5, -0.5, -1.5]))


@pytest.mark.parametrize("args", [dict(min=-0.5, max=0.5), dict(min=0.0), dict(max=0.3),
                                  dict(min=-1, max=1)], ids=str)
def test_clamp(args):
    check_op(lambda L, a: L.clamp(a, **args), (3, 4))
    check_op(lambda L, a: a.clamp(**args), (3, 4))
    check_op(lambda L, a: L.clip(a, **args), (3, 4))
    check_op(lambda L, a: a.clip(**args), (3, 4))


def test_clamp_tensor_bounds():
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), (3, 4), (4,), NoGrad(np.full((3, 1), 1.0)))
    check_op(lambda L, a, lo: a.clamp(min=lo), (3, 4), (3, 4))


def test_clamp_int():
    check_op(lambda L, a: a.clamp(0, 3), np.array([-2, 0, 2, 5], dtype=np.int64))


def test_where():
    cond = np.random.default_rng(0).random((3, 4)) < 0.5
    check_op(lambda L, c, a, b: L.where(c, a, b), cond, (3, 4), (3, 4))
    check_op(lambda L, c, a, b: L.where(c, a, b), cond, (4,), (3, 1))
    check_op(lambda L, c, a: L.where(c, a, 0.0), cond, (3, 4))
    check_op(lambda L, c, a: L.where(c, 1.5, a), cond, (3, 4))
    check_op(lambda L, c, a, b: a.where(c, b), cond, (3, 4), (3, 4))
    check_op(lambda L, c: L.where(c), cond)


def test_lerp_addcmul_addcdiv():
    check_op(lambda L, a, b: L.lerp(a, b, 0.3), (3, 4), (4,))
    check_op(lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), (3, 4), (3, 4), (4,))
    check_op(lambda L, a, b, c: L.addcdiv(a, b, c, value=2), (3, 4), (3, 4), (4,), positive=True)


# ------------------------------------------------------------------ comparison and logic
CMP = {
    "eq": lambda L, a, b: L.eq(a, b), "ne": lambda L, a, b: L.ne(a, b),
    "lt": lambda L, a, b: L.lt(a, b), "le": lambda L, a, b: L.le(a, b),
    "gt": lambda L, a, b: L.gt(a, b), "ge": lambda L, a, b: L.ge(a, b),
    "==": lambda L, a, b: a == b, "!=": lambda L, a, b: a != b, "<": lambda L, a, b: a < b,
    "<=": lambda L, a, b: a <= b, ">": lambda L, a, b: a > b, ">=": lambda L, a, b: a >= b,
    "gt_scalar": lambda L, a, b: a > 0.5, "scalar_lt": lambda L, a, b: 0.5 < b,
    "eq_int_scalar": lambda L, a, b: a.round() == 1,
}


@pytest.mark.parametrize("name", list(CMP))
def test_compare(name):
    a = np.round(np.random.default_rng(0).uniform(-2, 2, (3, 4)))
    b = np.round(np.random.default_rng(1).uniform(-2, 2, (4,)))
    check_op(CMP[name], a, b, grad=False)


LOGICAL = {
    "logical_and": lambda L, a, b: L.logical_and(a, b), "logical_or": lambda L, a, b: L.logical_or(a, b),
    "logical_xor": lambda L, a, b: L.logical_xor(a, b), "logical_not": lambda L, a, b: L.logical_not(a),
    "&": lambda L, a, b: a & b, "|": lambda L, a, b: a | b, "^": lambda L, a, b: a ^ b,
    "~": lambda L, a, b: ~a, "method_and": lambda L, a, b: a.logical_and(b),
}


@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical(name):
    rng = np.random.default_rng(0)
    check_op(LOGICAL[name], rng.random((3, 4)) < 0.5, rng.random((4,)) < 0.5)


def test_logical_on_numbers_and_bitwise_ints():
    check_op(lambda L, a, b: L.logical_and(a, b), np.array([0.0, 1.5, 0.0, -2.0]), np.array([1.0, 2.0, 0.0, 0.0]),
             grad=False)
    a, b = np.array([5, 3, 12], dtype=np.int64), np.array([3, 6, 10], dtype=np.int64)
    check_op(lambda L, a, b: a & b, a, b)
    check_op(lambda L, a, b: a | b, a, b)
    check_op(lambda L, a, b: ~a, a, b)


@pytest.mark.parametrize("fn", ["isnan", "isinf", "isfinite"])
def test_isnan_isinf_isfinite(fn):
    a = np.array([0.0, np.nan, np.inf, -np.inf, 1.0])
    check_op(lambda L, a: getattr(L, fn)(a), a, grad=False)
    check_op(lambda L, a: getattr(a, fn)(), a, grad=False)


def test_equal_allclose_isclose():
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 2e-6])
    assert ember.equal(a, a) and not ember.equal(a, b)
    assert ember.allclose(a, b) and not ember.allclose(a, b * 2)
    assert ember.isclose(a, b * ember.tensor([1.0, 2.0])).tolist() == [True, False]


# ------------------------------------------------------------------ reductions
REDUCE = {
    "sum": lambda L, a: L.sum(a),
    "sum_dim": lambda L, a: a.sum(1),
    "sum_dims_keep": lambda L, a: a.sum((0, 2), keepdim=True),
    "sum_neg_dim": lambda L, a: L.sum(a, dim=-1),
    "mean": lambda L, a: a.mean(),
    "mean_dim": lambda L, a: L.mean(a, 0, keepdim=True),
    "mean_dims": lambda L, a: a.mean((1, 2)),
    "prod": lambda L, a: a.prod(),
    "prod_dim": lambda L, a: L.prod(a, 1),
    "prod_dim_keep": lambda L, a: a.prod(-1, keepdim=True),
    "var": lambda L, a: a.var(),
    "var_dim": lambda L, a: L.var(a, 1),
    "var_biased": lambda L, a: a.var(1, unbiased=False),
    "var_correction0": lambda L, a: L.var(a, dim=(0, 2), correction=0),
    "var_correction2": lambda L, a: a.var(dim=2, correction=2, keepdim=True),
    "std": lambda L, a: a.std(),
    "std_dim": lambda L, a: L.std(a, 0),
    "std_biased": lambda L, a: a.std(-1, unbiased=False, keepdim=True),
    "std_correction": lambda L, a: a.std(dim=1, correction=0),
    "amax": lambda L, a: L.amax(a),
    "amax_dim": lambda L, a: a.amax(1),
    "amax_dims": lambda L, a: a.amax((0, 2), keepdim=True),
    "amin_dim": lambda L, a: L.amin(a, -1),
    "max": lambda L, a: a.max(),
    "min": lambda L, a: L.min(a),
    "max_dim": lambda L, a: L.max(a, 1),
    "max_dim_keep": lambda L, a: a.max(dim=-1, keepdim=True),
    "min_dim": lambda L, a: a.min(0),
    "max_dim_values": lambda L, a: a.max(1).values,
    "max_dim_indices": lambda L, a: a.max(1).indices,
    "min_dim_tuple": lambda L, a: tuple(L.min(a, 2)),
    "argmax": lambda L, a: a.argmax(),
    "argmax_dim": lambda L, a: L.argmax(a, 1),
    "argmax_keep": lambda L, a: a.argmax(-1, keepdim=True),
    "argmin": lambda L, a: L.argmin(a),
    "argmin_dim": lambda L, a: a.argmin(0),
    "logsumexp": lambda L, a: L.logsumexp(a, 1),
    "logsumexp_keep": lambda L, a: a.logsumexp((0, 2), keepdim=True),
    "logsumexp_neg": lambda L, a: a.logsumexp(-1),
    "cumsum": lambda L, a: L.cumsum(a, 1),
    "cumsum_neg": lambda L, a: a.cumsum(-1),
    "cumprod": lambda L, a: L.cumprod(a, 2),
    "cumprod0": lambda L, a: a.cumprod(0),
    "norm": lambda L, a: a.norm(),
    "norm_dim": lambda L, a: L.norm(a, dim=1),
    "norm_p1": lambda L, a: a.norm(p=1, dim=-1, keepdim=True),
    "norm_p3": lambda L, a: L.norm(a, p=3),
    "norm_inf": lambda L, a: a.norm(p=float("inf"), dim=1),
    "softmax": lambda L, a: L.softmax(a, 1),
    "log_softmax": lambda L, a: L.log_softmax(a, -1),
    "softmax_method": lambda L, a: a.softmax(dim=0),
}


@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce(name):
    check_op(REDUCE[name], (2, 3, 4))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "amax_dim", "logsumexp", "cumsum", "norm",
                                  "softmax"])
def test_reduce_half(name):
    check_op(REDUCE[name], (2, 3, 4), dtypes=("float16", "bfloat16"), atol=2e-2, rtol=2e-2,
             grad_atol=5e-2, grad_rtol=5e-2)


def test_reduce_0d():
    check_op(lambda L, a: a.sum(), ())
    check_op(lambda L, a: a.sum(0), ())
    check_op(lambda L, a: a.mean(), ())
    check_op(lambda L, a: a.max(0), (), grad=False)
    check_op(lambda L, a: a.cumsum(0), ())
    check_op(lambda L, a: a.logsumexp(0), ())


def test_max_min_ties_grad():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    check_op(lambda L, a: L.amax(a, 1), a)   # amax shares the gradient among ties
    check_op(lambda L, a: L.max(a), a)
    check_op(lambda L, a: L.amin(a), a)


# Ties: random inputs never tie, so these fix the values. torch splits a binary tie evenly
# (maximum/minimum, max/min(a, b)), shares a reduction's gradient evenly among tied elements (amax/amin,
# max()/min() with no dim), gives max/min(dim) gradient to the returned index only, and gives clamp's
# gradient wholly to x at a bound (no split).
TIE_A = np.array([[1.0, 3.0, 3.0, -2.0], [2.0, 2.0, 0.5, 2.0], [-1.0, -1.0, -1.0, 4.0]])
TIE_B = np.array([[1.0, 0.0, 3.0, -2.0], [2.0, 5.0, 0.5, 1.0], [-1.0, 7.0, -3.0, 4.0]])


@pytest.mark.parametrize("name, fn", [
    ("maximum", lambda L, a, b: L.maximum(a, b)), ("minimum", lambda L, a, b: L.minimum(a, b)),
    ("max_other", lambda L, a, b: L.max(a, b)), ("min_other", lambda L, a, b: L.min(a, b)),
    ("method_maximum", lambda L, a, b: a.maximum(b)), ("method_minimum", lambda L, a, b: a.minimum(b)),
], ids=lambda x: x if isinstance(x, str) else "")
def test_binary_max_min_split_ties(name, fn):
    check_op(fn, TIE_A, TIE_B)
    check_op(fn, TIE_A, np.array([2.0]))             # broadcast: the split halves are summed back
    check_op(fn, TIE_A, np.array([1.0, 3.0, 3.0, 4.0]))


@pytest.mark.parametrize("fn", [
    lambda L, a: L.amax(a), lambda L, a: L.amin(a), lambda L, a: a.amax(1), lambda L, a: a.amin(0),
    lambda L, a: a.amax((0, 1), keepdim=True), lambda L, a: a.amin(-1, keepdim=True),
    lambda L, a: L.max(a), lambda L, a: L.min(a), lambda L, a: a.max(), lambda L, a: a.min(),
    lambda L, a: a.max(1), lambda L, a: a.min(1), lambda L, a: a.max(0, keepdim=True),
    lambda L, a: a.min(0, keepdim=True), lambda L, a: L.max(a, dim=-1),
], ids=["amax", "amin", "amax_1", "amin_0", "amax_01_keep", "amin_-1_keep", "max", "min", "method_max",
        "method_min", "max_dim1", "min_dim1", "max_dim0_keep", "min_dim0_keep", "max_dim-1"])
def test_reductions_with_ties(fn):
    check_op(fn, TIE_A)
    check_op(fn, np.full((2, 3), 1.5))                  # everything tied


# NaN and inf against finite values, ties and each other (columns of NAN_A/NAN_B)
NAN_A = np.array([[np.nan, 1.0, np.nan, 2.0, 2.0, np.inf, -np.inf, np.nan], [3.0, -np.inf, 0.5, np.inf, 1.0, 1.0, 4.0, -1.0]])
NAN_B = np.array([[1.0, np.nan, np.nan, 2.0, 3.0, np.inf, 1.0, -np.inf], [np.nan, -np.inf, 0.5, 1.0, 1.0, np.nan, 4.0, 0.0]])


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_binary_max_min_gradient_with_nan_as_torch(name):
    # torch: a NaN on either side gives both sides all of g (no comparison holds); Ember gave it to one
    check_op(lambda L, a, b: getattr(L, name)(a, b), NAN_A, NAN_B)
    check_op(lambda L, a, b: getattr(L, name)(a, b), NAN_A, NAN_B[:1, :1])   # broadcast


@pytest.mark.parametrize("fn", [lambda L, a: a.max(), lambda L, a: a.min(), lambda L, a: L.amax(a, 1),
                                lambda L, a: L.amin(a, 0), lambda L, a: a.max(1), lambda L, a: L.amax(a)],
                         ids=["max", "min", "amax_1", "amin_0", "max_dim1", "amax_all"])
def test_reductions_gradient_with_nan_as_torch(fn):
    # torch.max()/min() share the gradient among the NaNs when the result is NaN; amax/amin give NaN there
    check_op(fn, NAN_A)
    check_op(fn, np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 3.0, 3.0, -np.inf]]))


@pytest.mark.parametrize("args", [dict(min=-1.0, max=3.0), dict(min=2.0), dict(max=2.0), dict(min=-1, max=-1)],
                         ids=str)
def test_clamp_at_the_bounds(args):
    check_op(lambda L, a: a.clamp(**args), TIE_A)


def test_clamp_tensor_bounds_at_the_bounds():
    lo = np.array([1.0, 0.0, 3.0, 4.0])                 # ties with TIE_A in rows 0 and 2
    hi = np.array([[3.0], [2.0], [-1.0]])               # ties in every row
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), TIE_A, lo, hi)
    check_op(lambda L, a, lo: a.clamp(min=lo), TIE_A, lo)
    check_op(lambda L, a, hi: a.clamp(max=hi), TIE_A, hi)
    # lo > hi gives hi; lo == hi below x: torch gives the gradient to nobody
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), TIE_A, np.array([3.0, 3.0, 2.0, 2.0]),
             np.array([2.0, 3.0, 1.0, 2.0]))
    check_op(lambda L, a, lo, hi: a.clamp(lo, hi), np.array([1, 5, 9], dtype=np.int64),
             np.array([2, 2, 2], dtype=np.int64), np.array([8, 5, 8], dtype=np.int64))


def test_max_min_binary_forms():
    check_op(lambda L, a, b: L.max(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: a.min(b), (3, 4), (3, 4))


def test_prod_with_zero_grad():
    check_op(lambda L, a: a.prod(), np.array([1.5, 0.0, 2.0, -1.0]))
    check_op(lambda L, a: a.prod(1), np.array([[1.5, 0.0, 2.0], [1.0, 2.0, 3.0]]))


def test_reduce_int_and_bool_dtypes():
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    for fn in [lambda L, a: a.sum(), lambda L, a: a.sum(1), lambda L, a: a.prod(), lambda L, a: a.cumsum(0),
               lambda L, a: a.max(), lambda L, a: a.max(1), lambda L, a: a.amax(0), lambda L, a: a.argmax(),
               lambda L, a: a.min(0), lambda L, a: a.cumprod(1)]:
        check_op(fn, a)
    b = np.array([[True, False, True], [True, True, True]])
    check_op(lambda L, a: a.sum(), b)
    check_op(lambda L, a: a.sum(0), b)


@pytest.mark.parametrize("fn", [lambda L, a: a.all(), lambda L, a: a.any(), lambda L, a: L.all(a, 1),
                                lambda L, a: L.any(a, 0), lambda L, a: a.all(dim=-1, keepdim=True),
                                lambda L, a: a.any(1, keepdim=True)])
def test_all_any(fn):
    b = np.array([[True, False, True], [True, True, True]])
    check_op(fn, b)
    check_op(fn, np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 0.5]]), grad=False)


def test_count_nonzero():
    check_op(lambda L, a: L.count_nonzero(a), np.array([[0.0, 1.0], [2.0, 0.0]]), grad=False)


def test_mean_int_raises():
    with pytest.raises(RuntimeError, match="mean"):
        ember.tensor([1, 2]).mean()


def test_var_correction_edge():
    check_op(lambda L, a: a.var(correction=0), (1,), grad=False)


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_var_without_degrees_of_freedom_warns_as_torch(name):
    import warnings
    for L in (torch, ember):
        with pytest.warns(UserWarning, match=r"degrees of freedom is <= 0\. Correction should be strictly less "
                                             r"than the reduction factor \(input numel divided by output numel\)"):
            out = getattr(L, name)(L.ones(3, 1), 1)
        assert L.isnan(out[0] if isinstance(out, tuple) else out).all()
        with pytest.warns(UserWarning, match=f"{name}.*degrees of freedom"):
            getattr(L, name)(L.tensor([1.0, 2.0]), correction=2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(L, name)(L.tensor([1.0, 2.0]))
            getattr(L, name)(L.tensor([1.0]), correction=0)


def test_var_mean_std_mean():
    check_op(lambda L, a: L.var_mean(a, 1), (3, 4))
    check_op(lambda L, a: L.var_mean(a, (0, 2), keepdim=True, correction=0), (3, 4, 2))
    check_op(lambda L, a: L.std_mean(a), (3, 4))
    check_op(lambda L, a: L.std_mean(a, -1, unbiased=False), (3, 4))


def test_named_comparisons_and_bitwise():
    a, b = np.round(np.random.default_rng(0).uniform(-2, 2, (3, 4))), np.round(np.random.default_rng(1).uniform(-2, 2, (4,)))
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
        check_op(lambda L, a, b: getattr(L, name)(a, b), a, b, grad=False)
    i, j = np.array([5, 3, 12, -7], dtype=np.int32), np.array([3, 6, 10, 2], dtype=np.int32)
    check_op(lambda L, a, b: (L.bitwise_and(a, b), L.bitwise_or(a, b), L.bitwise_xor(a, b), L.bitwise_not(a)), i, j)
    p, q = np.array([True, False, True]), np.array([True, True, False])
    check_op(lambda L, a, b: (L.bitwise_and(a, b), L.bitwise_xor(a, b), L.bitwise_not(a)), p, q)


# ------------------------------------------------------------------ linear algebra
MATMUL = [
    ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
    ((2, 3, 4), (2, 4, 5)),
]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matmul(shapes):
    check_op(lambda L, a, b: L.matmul(a, b), *shapes)
    check_op(lambda L, a, b: a @ b, *shapes)
    check_op(lambda L, a, b: a.matmul(b), *shapes)


def test_rmatmul_numpy_left_is_not_supported_but_tensor_is():
    check_op(lambda L, a, b: a.__rmatmul__(b), (4, 5), (3, 4))


def test_mm_bmm_mv_dot_outer():
    check_op(lambda L, a, b: L.mm(a, b), (3, 4), (4, 2))
    check_op(lambda L, a, b: a.mm(b), (3, 4), (4, 2))
    check_op(lambda L, a, b: L.bmm(a, b), (2, 3, 4), (2, 4, 5))
    check_op(lambda L, a, b: a.bmm(b), (2, 3, 4), (2, 4, 5))
    check_op(lambda L, a, b: L.mv(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: L.dot(a, b), (4,), (4,))
    check_op(lambda L, a, b: a.dot(b), (4,), (4,))
    check_op(lambda L, a, b: L.outer(a, b), (3,), (4,))
    check_op(lambda L, a, b: a.outer(b), (3,), (4,))
    check_op(lambda L, a, b, c: L.addmm(a, b, c, beta=0.5, alpha=2), (4,), (3, 5), (5, 4))


def test_dist_vdot_ger():
    check_op(lambda L, a, b: L.dist(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: L.dist(a, b, p=1), (3, 4), (3, 4))
    check_op(lambda L, a, b: L.dist(a, b, p=float("inf")), (5,), (5,))
    check_op(lambda L, a, b: L.vdot(a, b), (6,), (6,))
    check_op(lambda L, a, b: L.ger(a, b), (3,), (5,))


@pytest.mark.parametrize("p", [float("inf"), float("-inf"), 1, 0, 3, 0.5, "fro"])
def test_norm_orders(p):
    x = np.random.default_rng(6).uniform(0.2, 2, (3, 4)) * np.array([1, -1, 1, -1])   # no zeros: |x| is smooth
    check_op(lambda L, a: L.norm(a, p), x, grad=p != 0)
    check_op(lambda L, a: a.norm(p, dim=1, keepdim=True), x, grad=p != 0)
    check_op(lambda L, a: L.norm(a, p, dim=(0, 1), dtype=L.float64), x, dtypes=("float32",), grad=p != 0)


def test_einsum_and_tensordot_errors_name_the_problem():
    a, b = ember.ones(2, 3), ember.ones(4, 5)
    with pytest.raises(RuntimeError, match="einsum: equation 'ij,jk' names 2 operands, got 1"):
        ember.einsum("ij,jk", a)
    with pytest.raises(RuntimeError, match="einsum: subscripts 'ijk' do not match operand of shape \\(2, 3\\)"):
        ember.einsum("ijk,jk", a, b)
    with pytest.raises(RuntimeError, match="einsum: .*operand shapes \\[\\(2, 3\\), \\(4, 5\\)\\]"):
        ember.einsum("ij,jk->ik", a, b)
    check_op(lambda L, a, b: L.einsum("ij,jk", [a, b]), (2, 3), (3, 4))      # operands as one list
    check_op(lambda L, a, b: L.tensordot(a, b, dims=([1, 0], [0, 2])), (3, 2, 4), (2, 5, 3))
    check_op(lambda L, a, b: L.tensordot(a, b, dims=1), (3, 4), (4, 2))


def test_matmul_half():
    check_op(lambda L, a, b: a @ b, (3, 4), (4, 5), dtypes=("float16", "bfloat16"), atol=2e-2, rtol=2e-2,
             grad_atol=5e-2, grad_rtol=5e-2)


def test_matmul_int():
    check_op(lambda L, a, b: a @ b, np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4))


EINSUM = [
    ("ij,jk->ik", (3, 4), (4, 5)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("ij->ji", (3, 4)),
    ("ij->", (3, 4)), ("ij->j", (3, 4)), ("i,j->ij", (3,), (4,)), ("i,i->", (4,), (4,)),
    ("ij,ij->i", (3, 4), (3, 4)), ("ij,jk", (3, 4), (4, 2)), ("bhqd,bhkd->bhqk", (2, 2, 3, 4), (2, 2, 5, 4)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)), ("ijk->kj", (2, 3, 4)),
]


@pytest.mark.parametrize("case", EINSUM, ids=lambda c: c[0])
def test_einsum(case):
    eq, *shapes = case
    check_op(lambda L, *xs: L.einsum(eq, *xs), *shapes)


def test_einsum_list_operands():
    check_op(lambda L, a, b: L.einsum("ij,jk->ik", [a, b]), (3, 4), (4, 5))


EINSUM_ELLIPSIS = [
    ("...ij,jk->...ik", (2, 3, 4), (4, 5)), ("b...d,b...d->b...", (2, 3, 4), (2, 3, 4)),
    ("...i,...i", (2, 3, 4), (2, 3, 4)), ("i...j->j...i", (2, 3, 4)), ("...ij->ij", (2, 3, 4)),
    ("...,...", (2, 1, 3), (4, 1)), ("...i,...Ai->...A", (2, 1, 3), (5, 3)), ("i...", (2, 3)),
    ("b...,b", (2, 3, 4), (2,)), ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)), ("bh...,...->bh", (2, 3), ()),
]


@pytest.mark.parametrize("case", EINSUM_ELLIPSIS, ids=lambda c: c[0])
def test_einsum_ellipsis(case):
    eq, *shapes = case
    check_op(lambda L, *xs: L.einsum(eq, *xs), *shapes)


def test_einsum_ellipsis_errors_as_torch():
    a = np.zeros((2, 3, 4), np.float32)
    for eq, ops, msg in [("....i", [a], "found '.' for operand 0 for which an ellipsis was already found"),
                         ("...i...", [a], "found '.' for operand 0 for which an ellipsis was already found"),
                         ("i...jkl", [a], r"the number of subscripts in the equation \(4\) is more than the "
                                          r"number of dimensions \(3\) for operand 0"),
                         ("...ij,...ij", [a, np.zeros((3, 3, 4), np.float32)],
                          "dimension 0 covered by ellipsis in operand 1 ?has size 3 which does not broadcast")]:
        for L in (torch, ember):
            with pytest.raises(RuntimeError, match=msg):
                L.einsum(eq, *[L.tensor(x) for x in ops])


def test_tensordot_mismatched_dims_raise_as_torch():
    for L in (torch, ember):
        a, b = L.ones(2, 3, 4), L.ones(4, 3)
        with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 4 in dim -1"):
            L.tensordot(a, b.t(), dims=1)
        with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 3 in dim 1"):
            L.tensordot(a, b, dims=([1], [0]))


def test_tensordot():
    check_op(lambda L, a, b: L.tensordot(a, b, dims=2), (2, 3, 4), (3, 4, 5))
    check_op(lambda L, a, b: L.tensordot(a, b, dims=([0], [1])), (3, 4), (2, 3))


# ------------------------------------------------------------------ property tests
_shape = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def _broadcastable(draw):
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple))
    a = tuple(s if draw(st.booleans()) else 1 for s in out)
    b = tuple(s if draw(st.booleans()) else 1 for s in out)
    return a[draw(st.integers(0, len(a))):], b[draw(st.integers(0, len(b))):]


@settings(max_examples=25, deadline=None)
@given(_broadcastable(), st.sampled_from(["add", "sub", "mul", "maximum", "op*", "op-"]))
def test_property_broadcast_binary(shapes, name):
    check_op(BINARY[name], *shapes, dtypes=("float64",))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.data())
def test_property_reductions(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keep = data.draw(st.booleans())
    op = data.draw(st.sampled_from(["sum", "mean", "amax", "logsumexp", "cumsum", "softmax"]))
    if op in ("cumsum", "softmax"):
        fn = lambda L, a: getattr(a, op)(dim)   # noqa: E731
    else:
        fn = lambda L, a: getattr(a, op)(dim, keepdim=keep)   # noqa: E731
    check_op(fn, shape, dtypes=("float64",))


def test_einsum_bfloat16():
    check_op(lambda L, a, b: L.einsum("ij,jk->ik", a, b), (3, 4), (4, 2), dtypes=("bfloat16",),
             atol=2e-2, rtol=2e-2, grad_atol=5e-2, grad_rtol=5e-2)


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((2, 4), (3, 4)), ((4,), (2, 3, 4)), ((2, 1, 3), (5, 3)), ((), (2, 3))],
                         ids=str)
def test_inner(shapes):
    check_op(lambda L, a, b: L.inner(a, b), *shapes)
    with pytest.raises(RuntimeError, match=r"inner: last dimensions differ: \(2, 3\) and \(4,\)"):
        ember.inner(ember.ones(2, 3), ember.ones(4))


def test_erfinv_matches_torch_values_and_gradients():
    check_op(lambda L, a: L.erfinv(a), (3, 4), low=-0.99, high=0.99)
    check_op(lambda L, a: a.erfinv(), (5,), low=-0.9, high=0.9)


def test_erfinv_edges_and_integers_as_torch():
    for lib in (torch, ember):
        out = lib.tensor([-1.0, 1.0, 1.5, 0.0]).erfinv()
        assert [str(v) for v in out.tolist()] == ["-inf", "inf", "nan", "0.0"]
    assert ember.erfinv(ember.tensor([0, 0])).dtype == ember.float32
    x = ember.tensor([0.1, 0.2])
    assert x.erfinv_() is x and abs(x.tolist()[0] - 0.0888559905) < 1e-6


@pytest.mark.parametrize("p", [2, 3, 1.5, "fro"])
def test_norm_of_a_zero_vector_has_gradient_zero(p):
    """torch's norm backward gives 0 at a zero vector; sqrt's own gradient there made 0 * inf = NaN
    (e.g. F.normalize of an all-zero row)."""
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    check_op(lambda L, a: L.norm(a, p, dim=1), x)
    check_op(lambda L, a: L.norm(a, p), np.zeros((2, 3)))


# ------------------------------------------------------------------ found by mutation testing (docs/testing.md, "ops")
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "sign"])
def test_rounding_of_infinities_with_grad_as_torch(name):
    # the zero-gradient graph must not turn +-inf into NaN (inf * 0), with or without grad
    x = np.array([np.inf, -np.inf, 1.5, -2.5, np.nan])
    check_op(lambda L, a: getattr(L, name)(a), x)
    check_op(lambda L, a: getattr(L, name)(a), NoGrad(x), grad=False)


def _raises(match, fn, exc=RuntimeError):
    with pytest.raises(exc, match=match):
        fn()


def test_error_messages_name_the_op_and_operands():
    i2, i3 = ember.tensor([1, 2]), ember.tensor([1, 2, 3])
    f2, f3 = ember.ones(2), ember.ones(3)
    _raises(r"^minimum: shapes \(2,\) and \(3,\) cannot be broadcast together", lambda: ember.minimum(i2, i3))
    _raises(r"^minimum: shapes \(2,\) and \(3,\) cannot be broadcast together", lambda: ember.minimum(f2, f3))
    _raises(r"^maximum: shapes \(2,\) and \(3,\) cannot be broadcast", lambda: ember.maximum(f2, f3))
    _raises(r"^where: shapes \(4,\), \(2,\) and \(3,\) cannot be broadcast together",
            lambda: ember.where(ember.ones(4) > 0, f2, f3))
    _raises(r"^where: .*300", lambda: ember.where(i2 > 0, ember.tensor([1, 2], dtype=ember.uint8), 300))
    for op in ("eq", "lt", "logical_and", "bitwise_and"):
        _raises(rf"^{op}: shapes \(2,\) and \(3,\) cannot be broadcast together", lambda: getattr(ember, op)(i2, i3))
    _raises(r"^isclose: shapes \(2,\) and \(3,\)", lambda: ember.isclose(f2, f3))
    _raises(r"^floor_divide: ZeroDivisionError: integer division by zero \(divisor \(2,\) int64 cpu\)",
            lambda: ember.floor_divide(i2, ember.tensor([1, 0])))
    _raises(r"^remainder: ZeroDivisionError", lambda: ember.remainder(i2, ember.tensor([0, 1])))
    _raises(r"^fmod: ZeroDivisionError", lambda: ember.fmod(i2, 0))
    _raises(r"^remainder: shapes \(2,\) and \(3,\) cannot be broadcast", lambda: ember.remainder(i2, i3))
    _raises(r"^argmax: does not support bool input; convert it with .int\(\) first", lambda: ember.argmax(i2 > 0))
    _raises(r"^argmin: does not support bool input", lambda: ember.argmin(i2 > 0, 0))
    _raises(r"^add: for integral input tensors, argument alpha must not be a floating point number, got "
            r"alpha=1.5 for \(2,\) int64 cpu and \(2,\) int64 cpu", lambda: ember.add(i2, i2, alpha=1.5))
    for alpha in (True, False):   # True == 1, but torch refuses it all the same
        _raises(r"^sub: boolean alpha only supported for boolean results, got \(2,\) float32 cpu",
                lambda: ember.sub(f2, f2, alpha=alpha))
        _raises(r"^add: boolean alpha only supported for boolean results, got \(2,\) int64 cpu",
                lambda: ember.add(i2, i2, alpha=alpha))
    _raises(r"^softmax: expected a floating point input, got int64", lambda: ember.softmax(i2, 0))
    _raises(r"^log_softmax: expected a floating point input", lambda: ember.log_softmax(i2, 0))


def test_empty_reductions_raise_as_torch():
    e = ember.ones(0, 3)
    for op in ("amax", "amin", "argmax", "argmin"):
        _raises(rf"^{op}: Expected reduction dim to be specified for input.numel\(\) == 0 \(the input has shape "
                r"\(0, 3\)\); specify", lambda: getattr(ember, op)(e))
        _raises(rf"^{op}: Expected reduction dim 0 to have non-zero size \(input shape \(0, 3\)\)",
                lambda: getattr(ember, op)(e, 0), IndexError)
        assert tuple(getattr(ember, op)(e, 1).shape) == tuple(getattr(torch, op)(torch.ones(0, 3), 1).shape)
    _raises(r"^max: operation does not have an identity: the input is empty", lambda: ember.max(e))
    _raises(r"^min: Expected reduction dim 0 to have non-zero size", lambda: ember.min(e, 0), IndexError)
    _raises(r"^argmax: Expected reduction dim 1 to have non-zero size", lambda: ember.argmax(ember.ones(2, 0), 1),
            IndexError)


def test_matmul_errors_name_op_and_operands(fake_cuda):
    a, b = ember.ones(2, 3), ember.ones(4, 2)
    _raises(r"^matmul: expected Tensors, got list and Tensor", lambda: ember.matmul([1.0], a), TypeError)
    _raises(r"^mm: expected Tensors, got Tensor and float", lambda: ember.mm(a, 1.0), TypeError)
    _raises(r"^matmul: expected both operands on the same device, got \(2, 3\) float32 cpu and \(3, 2\) float32 cuda",
            lambda: ember.matmul(a, ember.ones(3, 2, device="cuda")))
    _raises(r"^matmul: expected both operands to have the same dtype, got \(2, 3\) float32 cpu and \(3, 2\) "
            r"float64 cpu; convert", lambda: ember.matmul(a, ember.ones(3, 2, dtype=ember.float64)))
    _raises(r"^matmul: both arguments need at least 1 dimension, got shapes \(\) and \(2, 3\)",
            lambda: ember.matmul(ember.tensor(1.0), a))
    _raises(r"^matmul: both arguments need at least 1 dimension, got shapes \(2, 3\) and \(\)",
            lambda: ember.matmul(a, ember.tensor(1.0)))
    _raises(r"^matmul: shapes \(2, 3\) and \(4, 2\) cannot be multiplied \(3 != 4\)", lambda: ember.matmul(a, b))
    _raises(r"^matmul: shapes \(2, 3\) and \(4,\) cannot be multiplied \(3 != 4\)", lambda: a @ ember.ones(4))
    _raises(r"^mm: expected 2-D tensors, got shapes \(2, 2, 3\) and \(3, 2\)",
            lambda: ember.mm(ember.ones(2, 2, 3), ember.ones(3, 2)))
    _raises(r"^bmm: expected 3-D tensors with the same batch size, got shapes \(2, 2, 3\) and \(3, 3, 2\)",
            lambda: ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 3, 2)))
    _raises(r"^bmm: shapes \(2, 2, 3\) and \(2, 4, 2\) cannot be multiplied",
            lambda: ember.bmm(ember.ones(2, 2, 3), ember.ones(2, 4, 2)))
    _raises(r"^dot: 1D tensors expected, but got 2D and 1D tensors", lambda: ember.dot(a, ember.ones(3)))
    _raises(r"^dot: inconsistent tensor size, expected tensor \(2,\) and src \(3,\)",
            lambda: ember.dot(ember.ones(2), ember.ones(3)))
    _raises(r"^where: .*device", lambda: ember.where(ember.ones(2) > 0, ember.ones(2, device="cuda"), 0.0))
    # a CPU 0-d condition joins the operands' device (as torch)
    out = ember.where(ember.tensor(True), ember.ones(2, device="cuda"), 0.0)
    assert out.device.type == "cuda" and out.tolist() == [1.0, 1.0]


def test_default_scalars_as_torch():
    check_op(lambda L, a, b, c: L.addcmul(a, b, c), (2, 3), (2, 3), (3,))
    check_op(lambda L, a, b, c: L.addcdiv(a, b, c), (2, 3), (2, 3), (3,), positive=True)
    check_op(lambda L, a, b, c: L.addmm(a, b, c), (2, 4), (2, 3), (3, 4))
    check_op(lambda L, a, b, c: L.addmm(a, b, c, beta=0.5), (2, 4), (2, 3), (3, 4))
    check_op(lambda L, a, b, c: L.addmm(a, b, c, alpha=-2), (4,), (2, 3), (3, 4))
    for a, b in (([0.0], [0.5]), ([1.0], [1.000001]), ([float("nan")], [float("nan")]), ([0.0], [1e-9])):
        assert ember.allclose(ember.tensor(a), ember.tensor(b)) == torch.allclose(torch.tensor(a), torch.tensor(b))
    a, b = [1.0, float("nan")], [1.05, float("nan")]
    for kw in ({"atol": 0.1}, {"atol": 0.1, "equal_nan": True}, {"rtol": 0.1, "atol": 0.0}):
        assert ember.allclose(ember.tensor(a), ember.tensor(b), **kw) == torch.allclose(torch.tensor(a),
                                                                                       torch.tensor(b), **kw)


def test_alpha_forms_as_torch():
    check_op(lambda L, a, b: L.add(a, b, alpha=True), np.array([True, False]), np.array([True, True]), grad=False)
    check_op(lambda L, a, b: L.add(a, b, alpha=3), np.array([1, 2], dtype=np.uint8), np.array([200, 1], dtype=np.uint8),
             grad=False)
    x, y = ember.ones(3), ember.ones(3)
    assert ember.add(x, y, alpha=ember.tensor(2.0)).tolist() == [3.0] * 3


def test_max_min_forms_as_torch():
    check_op(lambda L, a: L.max(a), (1,))
    check_op(lambda L, a: L.min(a), (1, 1))
    check_op(lambda L, a: L.max(a, 1), (1, 3))
    check_op(lambda L, a: L.min(a, 0), (1, 3))
    check_op(lambda L, a: L.max(a, 0), np.array(7, dtype=np.int64), grad=False)
    check_op(lambda L, a: L.max(a, 0, keepdim=True), np.array(2.5))


def test_softmax_dtype_0d_and_empty_as_torch():
    for fn in (lambda L, a: L.softmax(a, 0, dtype=L.float64), lambda L, a: L.log_softmax(a, -1, dtype=L.float64),
               lambda L, a: L.softmax(a, 0), lambda L, a: L.log_softmax(a, 0)):
        check_op(fn, (3,))
        check_op(fn, ())
        check_op(fn, (0,))
    check_op(lambda L, a: L.softmax(a, -1), (2, 0))


def test_scan_dtypes_as_torch():
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    for fn in (lambda L, a: L.cumsum(a, 1, dtype=L.float64), lambda L, a: L.cumprod(a, 0, dtype=L.float32),
               lambda L, a: L.cumsum(a, 0), lambda L, a: L.cumsum(a > 2, 1)):
        check_op(fn, x, grad=False)
    check_op(lambda L, a: L.cumsum(a, 0, dtype=L.float64), (3,))
    check_op(lambda L, a: L.cumprod(a, 0), ())


# zeros: one, several, first and last in the slice, a whole slice; NaN and inf after a zero
CUMPROD_ZEROS = np.array([[[1.5, 0.0, 2.0, -3.0], [0.0, 2.0, 0.5, 1.5], [2.0, -1.5, 0.5, 0.0]],
                          [[0.0, 0.0, 2.0, 1.5], [2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumprod_gradient_with_zeros_as_torch(dim):
    # torch's cumprod_backward is exact around zeros; y_k / x_i gave NaN/inf for every x_i == 0
    check_op(lambda L, a: L.cumprod(a, dim), CUMPROD_ZEROS)
    check_op(lambda L, a: a.cumprod(dim), np.where(CUMPROD_ZEROS == 2.0, np.nan, CUMPROD_ZEROS))
    check_op(lambda L, a: a.cumprod(dim), np.where(CUMPROD_ZEROS == 2.0, np.inf, CUMPROD_ZEROS))


def test_cumprod_double_backward_with_zeros():
    # with create_graph the backward is torch's grad-mode one (explicit products), exact at zeros
    x = ember.tensor(CUMPROD_ZEROS, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: a.cumprod(2), (x,))
    for dim in (0, 1, 2):
        assert ember.autograd.gradgradcheck(lambda a: a.cumprod(dim), (x,))
        g = np.random.default_rng(dim).standard_normal(CUMPROD_ZEROS.shape)
        tx = torch.tensor(CUMPROD_ZEROS, requires_grad=True)
        want, = torch.autograd.grad(tx.cumprod(dim), tx, torch.tensor(g), create_graph=True)
        got, = ember.autograd.grad(x.cumprod(dim), x, ember.tensor(g), create_graph=True)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_division_by_a_float_zero_is_no_error():
    # only integer divisors are checked: floats give inf/nan (as torch)
    check_op(lambda L, a, b: L.floor_divide(a, b), np.array([1.0, -1.0, 2.0]), np.array([0.0, 0.0, 1.0]), grad=False)
    check_op(lambda L, a, b: L.remainder(a, b), np.array([1.0, 2.0]), np.array([0.0, 1.5]), grad=False)



def test_reductions_on_empty_integer_and_infinite_inputs_as_torch():
    ints = np.array([[1, 2, 3], [0, -1, 4]], dtype=np.int64)
    check_op(lambda L, a: L.logsumexp(a, 1), ints, grad=False)
    for dim in (0, 1, (0, 1)):
        check_op(lambda L, a: L.logsumexp(a, dim), (0, 3))
        check_op(lambda L, a: L.logsumexp(a, dim, keepdim=True), (0, 3))
        check_op(lambda L, a: L.mean(a, dim), (0, 3))
        check_op(lambda L, a: L.mean(a, dim, keepdim=True), (0, 3))
    check_op(lambda L, a: L.logsumexp(a, 1), np.array([[-np.inf, -np.inf], [np.inf, 1.0], [0.5, 2.0]]), grad=False)
    check_op(lambda L, a: L.mean(a, dtype=L.float64), (2, 3))
    check_op(lambda L, a: L.mean(a, 1, dtype=L.float64), ints, grad=False)
    _raises(r"^mean: could not infer output dtype: input dtype must be floating point, got int64",
            lambda: ember.mean(ember.tensor(ints)))


@pytest.mark.parametrize("p", [0, 1, 2, 3, float("inf"), float("-inf"), "fro"])
def test_norm_orders_with_and_without_dim_as_torch(p):
    x = np.array([[1.0, -3.0, 0.0], [0.0, 2.0, 0.5]])
    check_op(lambda L, a: L.norm(a, p), x, grad=p not in (0, float("inf"), float("-inf")))
    check_op(lambda L, a: L.norm(a, p, dim=1), x, grad=p not in (0, float("inf"), float("-inf")))
    check_op(lambda L, a: L.norm(a, p, dim=0, keepdim=True), x, grad=False)


def test_norm_of_integers_names_the_op():
    _raises(r"^norm: expected a floating point input, got \(2,\) int64 cpu", lambda: ember.norm(ember.tensor([1, 2])))


def test_operands_on_other_devices(fake_cuda):
    c = ember.ones(2, device="cuda")
    # a CPU 0-d tensor joins the other operand's device, from either side (as torch)
    for out in (c + ember.tensor(2.0), ember.tensor(2.0) + c, ember.maximum(c, ember.tensor(3.0))):
        assert out.device.type == "cuda"
    assert (c + ember.tensor(2.0)).tolist() == [3.0, 3.0]
    _raises(r"^add: expected all tensors to be on the same device, but found at least two devices",
            lambda: c + ember.ones(2))
    _raises(r"^mul: expected all tensors to be on the same device", lambda: ember.ones(2) * c)
    assert (c + [1.0, 2.0]).device.type == "cuda" and (c + [1.0, 2.0]).tolist() == [2.0, 3.0]


# ------------------------------------------------------------------ corners the mutation run found untested
def test_where_of_two_numbers_as_torch(fake_cuda):
    cond = np.array([True, False, True])
    for x, y in ((1.0, 0.0), (1, 0.5), (2, -3), (True, False), (0.5, True)):
        check_op(lambda L, c: L.where(c, x, y), cond, grad=False)
    out = ember.where(ember.tensor([True, False], device="cuda"), 1.0, 2.0)
    assert out.device.type == "cuda" and out.tolist() == [1.0, 2.0]
    assert ember.where([True, False], 1, 2).tolist() == [1, 2]


def test_float_power_is_float64_from_either_side():
    check_op(lambda L, b: L.float_power(2, b), (3,))
    check_op(lambda L, b: L.float_power(2.5, b), np.array([1, 2, 3], dtype=np.int32), grad=False)
    check_op(lambda L, a, b: L.float_power(a, b), np.array([1, 2, 3], dtype=np.int64), (3,), positive=True)
    check_op(lambda L, a: L.float_power(a, 2), (3,))
    check_op(lambda L, a: L.float_power(a, 0.5), (3,), positive=True)


def test_pow_forms_as_torch():
    ints = np.array([1, 5, -2], dtype=np.int64)
    for e in (1, 2, 3, 2.0, 0.5, -1.0):
        check_op(lambda L, a: L.pow(a, e), np.array([1, 5, 2], dtype=np.int32), grad=False)
        check_op(lambda L, a: L.pow(a, e), (2, 3), positive=True)
    check_op(lambda L, a: L.pow(a, 2), np.array([True, False]), grad=False)
    check_op(lambda L, a: L.pow(a, 1), ints, grad=False)
    check_op(lambda L, a: L.pow(a, True), (3,))
    check_op(lambda L, b: L.pow(2, b), np.array([1, 5, 0], dtype=np.int64), grad=False)
    check_op(lambda L, b: L.pow(2.5, b), (3,))
    # pow(x, 1) is a new tensor, not x itself
    x = ember.ones(2)
    y = ember.pow(x, 1)
    y.add_(1.0)
    assert x.tolist() == [1.0, 1.0]


def test_unary_ops_of_integers_and_bools_as_torch():
    ints = np.array([1, 4, 9], dtype=np.int32)
    for name in ("reciprocal", "rsqrt", "exp2", "log2", "log10", "sqrt", "exp", "sigmoid", "square", "abs",
                 "neg", "relu", "floor", "sign"):   # torch has no integer frac
        check_op(lambda L, a: getattr(L, name)(a), ints, grad=False)
    check_op(lambda L, a: L.square(a), np.array([True, False]), grad=False)
    for name in ("reciprocal", "rsqrt", "exp2", "log2", "log10", "frac"):
        check_op(lambda L, a: getattr(L, name)(a), (2, 3), positive=True)


def test_integer_arithmetic_wraps_like_torch():
    u8 = np.array([1, 2, 200], dtype=np.uint8)
    check_op(lambda L, a: a + (-1), u8, grad=False)
    check_op(lambda L, a: a * -1, u8, grad=False)
    check_op(lambda L, a: L.sub(a, 3, alpha=-1), u8, grad=False)
    check_op(lambda L, a: L.add(a, a, alpha=-2), u8, grad=False)
    check_op(lambda L, a: L.clamp(a, -1), u8, grad=False)
    check_op(lambda L, a: L.clamp(a, 3, -56), u8, grad=False)
    check_op(lambda L, a: L.clamp(a, 0.5, 3.2), np.array([1, 5, -3], dtype=np.int64), grad=False)
    check_op(lambda L, a: L.clamp(a, max=2.5), np.array([1, 5, -3], dtype=np.int16), grad=False)


def test_division_forms_as_torch():
    a, b = np.array([5, -7, 7, -8], dtype=np.int64), np.array([2, 2, -3, -3], dtype=np.int64)
    for mode in ("trunc", "floor"):
        check_op(lambda L, x, y: L.div(x, y, rounding_mode=mode), a, b, grad=False)
        check_op(lambda L, x: L.div(x, 2.5, rounding_mode=mode), a, grad=False)
        check_op(lambda L, y: L.div(9, y, rounding_mode=mode), b, grad=False)
        check_op(lambda L, x, y: L.div(x, y, rounding_mode=mode), (2, 3), (3,), positive=True)
        check_op(lambda L, x, y: L.div(x, y, rounding_mode=mode), np.array([5.5, -7.5]), np.array([2.0, 2.0]))
    check_op(lambda L, x, y: L.div(x, y), a, b, grad=False)
    check_op(lambda L, x, y: L.div(x, y), np.array([1, 2], dtype=np.uint8), np.array([True, True]), grad=False)
    check_op(lambda L, x: L.true_divide(x, 4), a, grad=False)
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        check_op(lambda L, x, y: L.div(x, y), a, b, grad=False)
        check_op(lambda L, x: L.div(x, 3), a, grad=False)
        check_op(lambda L, x: L.exp(x), a, grad=False)
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_modulo_gradients_as_torch():
    a, b = np.array([5.5, -7.5, 7.0, -8.25]), np.array([2.0, 2.5, -3.0, -3.0])
    for name in ("remainder", "fmod"):
        check_op(lambda L, x, y: getattr(L, name)(x, y), a, b)
        check_op(lambda L, x, y: getattr(L, name)(x, y), NoGrad(a), b)
        check_op(lambda L, x, y: getattr(L, name)(x, y), a, NoGrad(b))
        check_op(lambda L, x: getattr(L, name)(x, 2.5), a)
        if name == "remainder":   # torch: no fmod(number, tensor), no derivative for remainder's number
            check_op(lambda L, y: L.remainder(7.5, y), b, grad=False)
        check_op(lambda L, x, y: getattr(L, name)(x, y), np.array([5, -7], dtype=np.int32),
                 np.array([3, 3], dtype=np.int64), grad=False)
    x = ember.tensor(a, requires_grad=True)
    with ember.no_grad():
        assert not ember.remainder(x, 2.0).requires_grad and not ember.fmod(x, 2.0).requires_grad


def test_clamp_with_tensor_bounds_more_forms():
    x = np.array([[-2.0, 0.5, 3.0], [1.0, -1.0, 2.5]])
    check_op(lambda L, a, hi: L.clamp(a, max=hi), x, np.array([0.0, 1.0, 2.0]))
    # a number beside a Tensor bound (torch wants both as tensors then)
    check_op(lambda L, a, lo: L.clamp(a, lo, 1.0 if L is ember else L.tensor(1.0, dtype=a.dtype)), x,
             np.array([0.0, 1.0, 2.0]))
    check_op(lambda L, a, hi: L.clamp(a, -0.5 if L is ember else L.tensor(-0.5, dtype=a.dtype), hi), x,
             np.array([[0.0], [3.0]]))
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), NoGrad(x), np.array([0.0, 1.0, 2.0]), np.array([[0.0], [3.0]]))
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), x, NoGrad(np.array([0.0, 1.0, 2.0])), np.array([[0.0], [3.0]]))
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), x, np.array([0.0, 1.0, 2.0]), NoGrad(np.array([[0.0], [3.0]])))
    check_op(lambda L, a, lo: L.clamp(a, lo), x, np.array([np.nan, 1.0, -np.inf]))
    check_op(lambda L, a, hi: L.clamp(a, max=hi), x, np.array([np.nan, 1.0, np.inf]))
    ints = np.array([[-2, 0, 3], [1, -1, 2]], dtype=np.int64)
    check_op(lambda L, a, lo: L.clamp(a, lo), ints, np.array([0, 1, 2], dtype=np.int64), grad=False)
    check_op(lambda L, a, hi: L.clamp(a, max=hi), ints, np.array([0, 1, 2], dtype=np.int32), grad=False)
    check_op(lambda L, a, lo, hi: L.clamp(a, lo, hi), ints, np.array([0, 1, 2], dtype=np.int64),
             np.array([[1], [0]], dtype=np.int64), grad=False)
    check_op(lambda L, a, lo: L.clamp(a, lo), ints, np.array([0.5, 1.5, 2.5]), grad=False)
    check_op(lambda L, a, lo: L.clamp(a, lo), np.array([[1, 200]], dtype=np.uint8), np.array([3, 4], dtype=np.uint8),
             grad=False)
    x = ember.tensor([1.0, 5.0], requires_grad=True)
    with ember.no_grad():
        assert not ember.clamp(x, ember.tensor([2.0, 2.0]), ember.tensor(4.0)).requires_grad


def test_max_min_more_forms_as_torch():
    x = np.array([[1.0, 3.0, 2.0], [4.0, 0.0, 4.5]])
    for name in ("max", "min"):
        check_op(lambda L, a: getattr(L, name)(a, 1, keepdim=True), x)
        check_op(lambda L, a: getattr(L, name)(a, -2), x)
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array(2.5))
        check_op(lambda L, a: getattr(L, name)(a, -1, True), np.array(2.5))
        check_op(lambda L, a, b: getattr(L, name)(a, b), x, np.array([2.0, 2.0, 2.0]))
        check_op(lambda L, a: getattr(L, name)(a), np.array([[1, 7], [-3, 2]], dtype=np.int32), grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 1), np.array([[1, 7], [-3, 2]], dtype=np.int32), grad=False)
        check_op(lambda L, a, b: getattr(L, name)(a, b), np.array([1, 7], dtype=np.uint8),
                 np.array([3, 2], dtype=np.uint8), grad=False)
        assert getattr(ember, name)(ember.tensor(x), other=ember.tensor(2.0)).tolist() == \
            getattr(torch, name)(torch.tensor(x), torch.tensor(2.0)).tolist()
    for name in ("argmax", "argmin"):
        check_op(lambda L, a: getattr(L, name)(a, 1, keepdim=True), x, grad=False)
        check_op(lambda L, a: getattr(L, name)(a, keepdim=True), x, grad=False)
        check_op(lambda L, a: getattr(L, name)(a), x, grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array(2.5), grad=False)
        check_op(lambda L, a: getattr(L, name)(a, -1, True), np.array([[3, 1, 2]], dtype=np.uint8), grad=False)
    for name in ("amax", "amin"):
        check_op(lambda L, a: getattr(L, name)(a), x)
        check_op(lambda L, a: getattr(L, name)(a, (0, 1), keepdim=True), x)
        check_op(lambda L, a: getattr(L, name)(a, -1), x)
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array(1.5))


def test_var_std_corrections_as_torch():
    x = np.array([[1.0, 3.0, 4.0, 0.5], [2.0, -1.0, 0.0, 2.5], [1.5, 1.5, -2.0, 3.0]])
    for name in ("var", "std"):
        f = lambda L, *a, **k: getattr(L, name)(*a, **k)
        check_op(lambda L, a: f(L, a), x)
        check_op(lambda L, a: f(L, a, 1), x)
        check_op(lambda L, a: f(L, a, 0, True), x)
        check_op(lambda L, a: f(L, a, 1, False), x)
        check_op(lambda L, a: f(L, a, (0, 1), correction=2), x)
        check_op(lambda L, a: f(L, a, 0, correction=0, keepdim=True), x)
        check_op(lambda L, a: f(L, a, -1, correction=3), x)
        check_op(lambda L, a: f(L, a, [], correction=0), x, grad=False)   # torch's gradient for dim=[] is n times too big
        check_op(lambda L, a: f(L, a, 0, correction=1), np.array(2.0), grad=False)
        check_op(lambda L, a: f(L, a, correction=0), np.array(2.0))
    for name in ("var_mean", "std_mean"):
        check_op(lambda L, a: getattr(L, name)(a, 0, True), x)
        check_op(lambda L, a: getattr(L, name)(a, 1, correction=2), x)
        check_op(lambda L, a: getattr(L, name)(a, (0, 1), keepdim=True), x)


def test_reductions_more_forms_as_torch():
    x = np.array([[1.0, -3.0, 0.0], [0.0, 2.0, 0.5]])
    ints = np.array([[1, 0, 3], [0, 0, 4]], dtype=np.int32)
    for name in ("sum", "mean", "prod"):
        f = lambda L, *a, **k: getattr(L, name)(*a, **k)
        if name != "prod":   # torch's prod takes one dim
            check_op(lambda L, a: f(L, a, (0, 1)), x)
            check_op(lambda L, a: f(L, a, [0, 1], keepdim=True), x)
        check_op(lambda L, a: f(L, a, 1, True), x)
        check_op(lambda L, a: f(L, a, 0, dtype=L.float64), x)
        check_op(lambda L, a: f(L, a, -1, dtype=L.float64), ints, grad=False)
        check_op(lambda L, a: f(L, a, 0), np.array(1.5))
        check_op(lambda L, a: f(L, a), np.array(1.5))
    check_op(lambda L, a: L.sum(a, []), x)
    check_op(lambda L, a: L.mean(a, []), x)
    for dims in ((0,), 1, (0, 1), None):
        check_op(lambda L, a: L.sum(a, dims), ints, grad=False)
        check_op(lambda L, a: L.sum(a > 0, dims), ints, grad=False)
        check_op(lambda L, a: L.count_nonzero(a, dims), ints, grad=False)
        check_op(lambda L, a: L.count_nonzero(a, dims), x, grad=False)
    check_op(lambda L, a: L.prod(a, 1), ints, grad=False)
    check_op(lambda L, a: L.prod(a > 0), ints, grad=False)
    check_op(lambda L, a: L.sum(a, 1, dtype=L.int32), ints, grad=False)
    for name in ("all", "any"):
        for dims in (None, 0, (0, 1), -1):
            check_op(lambda L, a: getattr(L, name)(a, dims) if dims is not None else getattr(L, name)(a), ints,
                     grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 1, keepdim=True), ints.astype(np.uint8), grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 1, True), x, grad=False)


def test_logsumexp_softmax_scans_more_forms_as_torch():
    x = np.array([[1.0, -3.0, 0.0], [-np.inf, -np.inf, -np.inf]])
    check_op(lambda L, a: L.logsumexp(a, (0, 1)), (2, 3))
    check_op(lambda L, a: L.logsumexp(a, (0, 1), keepdim=True), (2, 3))
    check_op(lambda L, a: L.logsumexp(a, -1, True), (2, 3))
    check_op(lambda L, a: L.logsumexp(a, 1), x, grad=False)
    check_op(lambda L, a: L.logsumexp(a, 0), np.array(1.5))
    check_op(lambda L, a: L.logsumexp(a, (0, 1)), (0, 2))
    check_op(lambda L, a: L.logsumexp(a, 0), np.array([[1, 2], [3, 4]], dtype=np.uint8), grad=False)
    for name in ("softmax", "log_softmax"):
        check_op(lambda L, a: getattr(L, name)(a, 0), (2, 3, 4))
        check_op(lambda L, a: getattr(L, name)(a, -2), (2, 3, 4))
        check_op(lambda L, a: getattr(L, name)(a, 1, dtype=L.float64), np.array([[1, 2], [3, 4]], dtype=np.int64),
                 grad=False)
        check_op(lambda L, a: getattr(L, name)(a, -1), np.array(0.5))
    for name in ("cumsum", "cumprod"):
        check_op(lambda L, a: getattr(L, name)(a, -1), (2, 3))
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array(1.5))
        check_op(lambda L, a: getattr(L, name)(a, -1), np.array(3, dtype=np.int32), grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 1, dtype=L.int32), np.array([[1, 2, 3]], dtype=np.int64),
                 grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 0, dtype=L.float64), (3,))
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array([True, True, False]), grad=False)
        check_op(lambda L, a: getattr(L, name)(a, 0), np.array([200, 100], dtype=np.uint8), grad=False)


def test_norm_and_dist_more_forms_as_torch():
    x = np.array([[1.0, -3.0, 0.5], [0.25, 2.0, 0.5]])
    for p in (0.5, -1, -2.0, 3, 1, 2, "fro"):
        check_op(lambda L, a: L.norm(a, p, dim=(0, 1)), x)
        check_op(lambda L, a: L.norm(a, p, 1, True), x)
    for p in (float("inf"), float("-inf"), 0):
        check_op(lambda L, a: L.norm(a, p, dim=(0, 1), keepdim=True), x, grad=False)
        check_op(lambda L, a: L.norm(a, p, -1), x, grad=False)
    check_op(lambda L, a: L.norm(a, dtype=L.float64), x)
    check_op(lambda L, a: L.norm(a, 2, 0, False, dtype=L.float64), x)
    for p in (1, 2, 3, 0.5, float("inf")):
        check_op(lambda L, a, b: L.dist(a, b, p), x, np.array([1.0, -2.0, 0.0]), grad=p != float("inf"))
    check_op(lambda L, a, b: L.dist(a, b), (2, 3), (3,))


def test_linear_algebra_more_forms_as_torch():
    for sa, sb in (((3,), (2, 3, 4)), ((2, 3, 4), (4,)), ((3,), (3, 2)), ((2, 3), (3,)), ((4,), (4,)),
                   ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5))):
        check_op(lambda L, a, b: L.matmul(a, b), sa, sb)
    check_op(lambda L, a, b: L.mv(a, b), (2, 3), (3,))
    for sa, sb in (((), (2, 3)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (4, 3)), ((3,), (2, 3)), ((2, 2, 3), (3,))):
        check_op(lambda L, a, b: L.inner(a, b), sa, sb)
    check_op(lambda L, a, b: L.outer(a, b), (3,), (4,))
    check_op(lambda L, a, b: L.ger(a, b), (2,), (1,))
    check_op(lambda L, a, b: L.vdot(a, b), (3,), (3,))
    check_op(lambda L, a, b, c: L.addmm(a, b, c, beta=0, alpha=1), (2, 4), (2, 3), (3, 4))
    check_op(lambda L, a, b, c: L.addmm(a, b, c, beta=2, alpha=0.5), (1, 4), (2, 3), (3, 4))
    check_op(lambda L, a, b: L.tensordot(a, b, 0), (2,), (3,))
    check_op(lambda L, a, b: L.tensordot(a, b, 1), (2, 3), (3, 4))
    check_op(lambda L, a, b: L.tensordot(a, b, ([1, 0], [0, 1])), (3, 4), (4, 3))
    check_op(lambda L, a, b: L.tensordot(a, b, ((2, 0), (1, 0))), (2, 3, 4), (2, 4, 5))
    check_op(lambda L, a, b: L.tensordot(a, b, ([1], [2])), (3, 4), (2, 3, 4))
    check_op(lambda L, a, b: L.einsum("ij ,jk -> ik", a, b), (2, 3), (3, 4))
    check_op(lambda L, a, b: L.einsum("ij,kj", a, b), (2, 3), (4, 3))
    check_op(lambda L, a, b: L.einsum("ji,kj", a, b), (2, 3), (4, 2))
    # a letter twice in one operand: values only (Einsum.backward spreads the gradient over the whole
    # matrix, torch's goes to the diagonal: a known difference of ember/ops/primitives.py)
    check_op(lambda L, a: L.einsum("ii", a), (3, 3), grad=False)
    check_op(lambda L, a: L.einsum("ii->i", a), (3, 3), grad=False)
    check_op(lambda L, a: L.einsum("ba", a), (2, 3))
    check_op(lambda L, a, b: L.einsum("i,i", a, b), (3,), (3,))
    check_op(lambda L, a, b: L.einsum("ij,j->i", a, b), (2, 3), (3,), dtypes=("float64",), check_dtype=False)
    assert ember.einsum("ij,j->i", ember.ones(2, 3, dtype=ember.float64), ember.ones(3)).dtype == ember.float64
    check_op(lambda L, a, b: L.einsum("ij,j->i", a, b), np.array([[1, 2], [3, 4]], dtype=np.int64),
             np.array([1, -1], dtype=np.int64), grad=False)


def test_sums_and_products_keep_the_dtype_asked_for():
    ints = np.array([[100, 200, 3], [0, -7, 4]], dtype=np.int64)
    for dt in ("int32", "uint8", "int8", "int16"):
        for name in ("sum", "prod"):
            check_op(lambda L, a: getattr(L, name)(a, dtype=getattr(L, dt)), ints, grad=False)
            check_op(lambda L, a: getattr(L, name)(a, 1, dtype=getattr(L, dt)), ints, grad=False)
        for name in ("cumsum", "cumprod"):
            check_op(lambda L, a: getattr(L, name)(a, 1, dtype=getattr(L, dt)), ints, grad=False)


@pytest.mark.parametrize("p", [0.5, 1.5, -1.0, -0.5, 3])
def test_norm_at_zero_entries_has_torch_gradients(p):
    x = np.array([[0.0, -3.0, 0.5], [0.25, 0.0, 0.5]])
    check_op(lambda L, a: L.norm(a, p), x)
    check_op(lambda L, a: L.norm(a, p, dim=1), x)
    check_op(lambda L, a, b: L.dist(a, b, p), x, np.array([0.0, -3.0, 1.0]))
    check_op(lambda L, a: L.norm(a, p), np.zeros((2, 2)))


def test_std_of_constant_values_has_gradient_zero_as_torch():
    check_op(lambda L, a: L.std(a, correction=0), np.array(2.0))
    check_op(lambda L, a: L.std(a, 1), np.array([[1.0, 1.0, 1.0], [0.5, 2.0, 1.0]]))
    check_op(lambda L, a: L.std_mean(a, 0, correction=0), np.array([[1.0, 3.0], [1.0, 2.0]]))


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_half_var_and_std_in_float32_as_torch(name):
    # a constant 3.3 in float16: its float16 mean is not 3.3, and the variance was 5.7e-06, std 0.0024
    x = np.full((3, 4), 3.3)
    check_op(lambda L, a: getattr(L, name)(a.expand(3, 3, 4), 0), x[:1], dtypes=("float16", "bfloat16"),
             atol=0, rtol=0)
    check_op(lambda L, a: getattr(L, name)(a, 1), np.array([[1.0, 2.0, 4.0], [0.1, 0.2, 0.3]]),
             dtypes=("float16", "bfloat16"))


def test_reductions_over_one_element_and_past_the_correction_as_torch():
    x = np.array([[1.5], [-2.0], [0.25]])
    check_op(lambda L, a: L.mean(a, 1), x)
    check_op(lambda L, a: L.mean(a, (0, 1)), np.array([[2.5]]))
    for name in ("var", "std"):
        check_op(lambda L, a: getattr(L, name)(a, 1, correction=0), x)
        check_op(lambda L, a: getattr(L, name)(a, 0, correction=1), x)
        check_op(lambda L, a: getattr(L, name)(a, 1, correction=1), x, grad=False)     # 0 / 0
        check_op(lambda L, a: getattr(L, name)(a, 0, correction=5), x, grad=False)     # dof < 0: inf
        check_op(lambda L, a: getattr(L, name)(a, 0, correction=3), x, grad=False)     # dof == 0: inf
        check_op(lambda L, a: getattr(L, name)(a, 0), np.zeros((0, 2)), grad=False)    # nan


def test_where_and_clamp_scalars_of_float_dtypes_as_torch():
    cond = np.array([True, False, True])
    check_op(lambda L, c, a: L.where(c, a, 1e5), cond, (3,), dtypes=("float16", "float32"))
    check_op(lambda L, c, a: L.where(c, a, 3), cond, np.array([1, 2, 3], dtype=np.uint8), grad=False)
    check_op(lambda L, c, a: L.where(c, 255, a), cond, np.array([1, 2, 3], dtype=np.uint8), grad=False)
    check_op(lambda L, c, a: L.where(c, -1, a), cond, np.array([1, 2, 3], dtype=np.uint8), grad=False)
    check_op(lambda L, a: L.clamp(a, -1e4, 6e4), (3,), dtypes=("float16",))
    check_op(lambda L, a: L.clamp(a, float("-inf"), float("inf")), (3,), dtypes=("float16",))
    # a non-bool condition is read as a mask (torch refuses it)
    assert ember.where(ember.tensor([2, 0], dtype=ember.uint8), 1.0, -1.0).tolist() == [1.0, -1.0]
    assert ember.where(ember.tensor([0.5, 0.0]), ember.ones(2), 0.0).tolist() == [1.0, 0.0]


def test_isclose_lerp_and_tensordot_forms_as_torch():
    a, b = np.array([1.0, 2.0, np.nan, 100.0]), np.array([1.05, 2.5, np.nan, 101.0])
    for kw in ({}, {"rtol": 0.1}, {"atol": 0.06}, {"equal_nan": True}, {"rtol": 0, "atol": 1}):
        check_op(lambda L, x, y: L.isclose(x, y, **kw), a, b, grad=False, dtypes=("float64",))
    check_op(lambda L, x, y: L.isclose(x, y, 1, 0), np.array([1, 2], dtype=np.int64), np.array([2, 5], dtype=np.int64),
             grad=False)
    check_op(lambda L, x, y, w: L.lerp(x, y, w), (2, 3), (2, 3), (3,))
    check_op(lambda L, x, y: L.lerp(x, y, 0.25), (2, 3), (3,))
    check_op(lambda L, x, y, z: L.addcmul(x, y, z, value=-0.5), (2, 3), (2, 3), (3,))
    check_op(lambda L, x, y, z: L.addcdiv(x, y, z, value=2), (2, 3), (2, 3), (3,), positive=True)
    # integer tensors: torch truncates a float value to the integer dtype (2.5 multiplies by 2)
    i = np.array([1, 2, -3], dtype=np.int64)
    for v in (2.5, 0.5, -1.7):
        check_op(lambda L, x, y, z: L.addcmul(x, y, z, value=v), i, i, i.astype(np.int32), dtypes=(None,), grad=False)
        check_op(lambda L, x, y, z: x.addcmul_(y, z, value=v), i.astype(np.int8), i, i, dtypes=(None,), grad=False)
    x, y = np.random.default_rng(3).standard_normal((3, 4)), np.random.default_rng(4).standard_normal((4, 3))
    # a pair of ints for `dims` (torch wants lists)
    got = ember.tensordot(ember.tensor(x), ember.tensor(y), (1, 0)).numpy()
    np.testing.assert_allclose(got, torch.tensordot(torch.tensor(x), torch.tensor(y), ([1], [0])).numpy())
    got = ember.tensordot(ember.tensor(x), ember.tensor(y), ([0], 1)).numpy()
    np.testing.assert_allclose(got, torch.tensordot(torch.tensor(x), torch.tensor(y), ([0], [1])).numpy())


def test_clamp_with_tensor_bounds_of_infinite_inputs_as_torch():
    x = np.array([np.inf, -np.inf, np.nan, 1.0, 3.0, -1.0])
    lo, hi = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), np.array([2.0, 2.0, 2.0, 2.0, np.inf, -np.inf])
    check_op(lambda L, a, b: L.clamp(a, b), x, lo)
    check_op(lambda L, a, c: L.clamp(a, None, c), x, hi)
    check_op(lambda L, a, b, c: L.clamp(a, b, c), x, lo, hi)
    check_op(lambda L, a, b, c: L.clamp(a, b, c), x, NoGrad(lo), NoGrad(hi))


def test_logical_and_bitwise_not_of_integers_as_torch():
    ints = np.array([2, 0, -1], dtype=np.int64)
    for name in ("logical_not", "bitwise_not"):
        check_op(lambda L, a: getattr(L, name)(a), ints, grad=False)
        check_op(lambda L, a: getattr(L, name)(a), np.array([True, False]), grad=False)
        check_op(lambda L, a: getattr(L, name)(a), np.array([7, 0], dtype=np.uint8), grad=False)


def test_einsum_and_tensordot_defaults_and_capital_letters_as_torch():
    check_op(lambda L, a, b: L.einsum("X,Y", a, b), (2,), (3,))
    check_op(lambda L, a, b: L.einsum("iX,Xj", a, b), (2, 3), (3, 4))
    check_op(lambda L, a, b: L.tensordot(a, b), (2, 3, 4), (3, 4, 5))
    check_op(lambda L, a, b: L.var_mean(a, 1, unbiased=False), (3, 4), (1,))


def test_size_one_dims_survive_matmul_and_logsumexp_as_torch():
    for sa, sb in (((3,), (2, 3, 1)), ((3,), (1, 3, 1)), ((1, 3), (3,)), ((2, 1, 3), (3,)), ((1, 3), (3, 1))):
        check_op(lambda L, a, b: L.matmul(a, b), sa, sb)
    for shape, dim in (((3, 1), 0), ((1, 3), 1), ((1, 1), (0, 1)), ((0, 1), 0), ((1, 0), 1), ((2, 1, 1), 1)):
        check_op(lambda L, a: L.logsumexp(a, dim), shape)
    # far-apart rows: each row is shifted by its own max (a shared one would underflow a row to -inf)
    x = np.array([[1000.0, 999.0], [-1000.0, -1001.0], [0.0, 700.0], [-500.0, 300.0]])   # exp(800) overflows
    check_op(lambda L, a: L.logsumexp(a, 1), x, dtypes=("float64",))
    check_op(lambda L, a: L.logsumexp(a, 0), x.T.copy(), dtypes=("float64",))
    # a list condition is read as a mask (torch wants a tensor)
    assert ember.where([True, False], ember.ones(2), ember.zeros(2)).tolist() == [1.0, 0.0]


def test_trunc_division_by_a_number_keeps_the_graph_as_torch():
    x = np.array([5.5, -7.5, 7.0, -8.25])
    for mode in ("trunc", "floor"):
        check_op(lambda L, a: L.div(a, 2, rounding_mode=mode), x)
        check_op(lambda L, b: L.div(9, b, rounding_mode=mode), x)
        check_op(lambda L, b: L.div(np.float64(9.0).item(), b, rounding_mode=mode), x)


def test_add_and_sub_with_alpha_two_as_torch():
    for name in ("add", "sub"):
        check_op(lambda L, a, b: getattr(L, name)(a, b, alpha=2), (2, 3), (3,))
        check_op(lambda L, a, b: getattr(L, name)(a, b, alpha=2), np.array([1, 5], dtype=np.int64),
                 np.array([3, -2], dtype=np.int64), grad=False)


def test_minimum_of_the_smallest_integer_as_torch():
    # -(-128) wraps around in int8: the minimum must not go through negation for integers
    check_op(lambda L, a, b: L.minimum(a, b), np.array([-128, 5, 0], dtype=np.int8), np.array([5, -128, 0], dtype=np.int8),
             grad=False)
    check_op(lambda L, a, b: L.min(a, b), np.array([-2**63, 1], dtype=np.int64), np.array([3, -2**63], dtype=np.int64),
             grad=False)


def test_logsumexp_of_nothing_over_all_dims():
    # dim=[] reduces every dim (torch's logsumexp refuses an empty dim list, so Ember's rule alone)
    out = ember.logsumexp(ember.ones(0, 2), [])
    assert out.shape == () and out.item() == float("-inf")
    assert ember.logsumexp(ember.ones(0, 2), [], keepdim=True).shape == (1, 1)
    assert ember.logsumexp(ember.tensor([[0.0, 0.0]]), []).item() == pytest.approx(np.log(2))


@pytest.mark.parametrize("eq, shapes", [
    ("ii", [(3, 3)]), ("ii->i", [(4, 4)]), ("iij->j", [(3, 3, 2)]), ("bii->bi", [(2, 3, 3)]),
    ("ij,jj->i", [(2, 3), (3, 3)]), ("iii->i", [(2, 2, 2)]), ("jii,i->j", [(2, 3, 3), (3,)]),
])
def test_einsum_with_a_letter_repeated_in_one_operand_takes_its_diagonal(eq, shapes):
    # the gradient goes to the diagonal only (it had been spread over the whole matrix)
    check_op(lambda lib, *xs: lib.einsum(eq, *xs), *shapes)


def test_einsum_repeated_letter_of_different_sizes_is_refused():
    raises_exactly(lambda: ember.einsum("ii", ember.ones(3, 4)), RuntimeError,
                   "einsum: subscript 'i' is repeated for operand 0 but the sizes don't match, 3 != 4")


@pytest.mark.parametrize("call", [lambda x: ember.add(None, x), lambda x: ember.add(x, None), lambda x: x * None,
                                  lambda x: ember.sub(x, "1"), lambda x: ember.maximum(x, None)])
def test_a_non_number_operand_is_a_type_error_not_nan(call):
    # NumPy turned None into NaN (and a string into an object array); torch raises TypeError
    with pytest.raises(TypeError, match="expected a Tensor or a number as operand, got (NoneType|str)"):
        call(ember.ones(2))


def test_relu_gradient_at_nan_and_infinite_upstream_as_torch():
    # torch's threshold_backward: 0 where relu(x) <= 0 whatever the upstream gradient is, and a NaN input
    # passes its gradient; g * (y > 0) gave NaN for an inf/NaN upstream gradient at x <= 0, and 0 at NaN x
    x = np.array([np.nan, -1.0, 0.0, 2.0, -np.inf, np.inf])
    g = np.array([1.0, np.inf, np.nan, 3.0, np.nan, 2.0])
    for dt in (torch.float32, torch.float64):
        tx = torch.tensor(x, dtype=dt, requires_grad=True)
        torch.relu(tx).backward(torch.tensor(g, dtype=dt))
        ex = ember.tensor(x, dtype=getattr(ember, str(dt).split(".")[1]), requires_grad=True)
        ember.relu(ex).backward(ember.tensor(g, dtype=ex.dtype))
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
        assert ex.grad.tolist()[:3] == [1.0, 0.0, 0.0]
