"""ember/ops/pointwise.py against torch: fmax/fmin, gcd/lcm, the shifts, heaviside, ldexp/frexp, nextafter,
logit, xlogy, sinc, erfc, their `_` in-place forms and the in-place exp2_/log2_/log10_/frac_/float_power_."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, Const, NoGrad, raises_exactly

NAN, INF = float("nan"), float("inf")
SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, INF, -INF, NAN])


def _ints(*values, dtype=np.int64):
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_match_torch_with_nans_broadcasting_and_gradients(name):
    check_op(lambda L, a, b: getattr(L, name)(a, b), (3, 4), (4,))
    check_op(lambda L, a, b: getattr(a, name)(b), (2, 1, 3), (4, 1))
    a = np.array([1.0, NAN, NAN, 2.0, 2.0, -INF, INF])
    b = np.array([NAN, 1.0, NAN, 2.0, 3.0, 0.0, 1.0])
    check_op(lambda L, a, b: getattr(L, name)(a, b), a, b)            # NaN rules and ties: all of it to input
    check_op(lambda L, a, b: getattr(L, name)(a, b), (0, 3), (3,))      # empty
    check_op(lambda L, a, b: getattr(L, name)(a, b), _ints(1, 5, -2), np.array([1.5, 0.0, NAN]))   # promotion
    check_op(lambda L, a, b: getattr(L, name)(a, b), _ints(1, 5, -2, dtype=np.int32), _ints(3, 1, -2))
    check_op(lambda L, a, b: getattr(L, name)(a, b), np.array([True, False]), np.array([False, False]))
    assert ember.maximum(ember.tensor([NAN]), ember.tensor([1.0])).isnan().item()   # unlike maximum


def test_fmax_takes_tensors_only_as_torch():
    with pytest.raises(TypeError, match="fmax\\(\\): argument 'other' must be Tensor, not float"):
        ember.fmax(ember.tensor([1.0]), 2.5)
    with pytest.raises(TypeError):
        torch.fmax(torch.tensor([1.0]), 2.5)


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_match_torch(name):
    a, b = _ints(-4, 0, 0, 12, 7, -9), _ints(6, 0, -3, 18, 5, -6)
    check_op(lambda L, a, b: getattr(L, name)(a, b), a, b)
    check_op(lambda L, a, b: getattr(a, name)(b), a.reshape(2, 3), _ints(4, 6, 8))    # broadcasting
    check_op(lambda L, a, b: getattr(L, name)(a, b), a.astype(np.int32), b.astype(np.int16))
    check_op(lambda L, a, b: getattr(L, name)(a, b), _ints(), _ints())


@pytest.mark.parametrize("name", ["gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"])
def test_integer_ops_refuse_floats_and_bools_as_torch(name):
    for x in ([1.0], [True]):
        with pytest.raises(NotImplementedError):
            getattr(torch, name)(torch.tensor(x), torch.tensor(x))
        with pytest.raises(NotImplementedError, match=f"{name}: .* not implemented for "):
            getattr(ember, name)(ember.tensor(x), ember.tensor(x))


def test_shifts_match_torch_past_the_width_and_for_negative_amounts():
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8):
        a = np.array([1, 3, 100, 127, 0, 5, 2, 9], dtype=dtype)
        if dtype != np.uint8:
            a[1::3] *= -1
        s = np.array([0, 1, 7, 8, 63, 64, 100, -1 if dtype != np.uint8 else 255]).astype(dtype)
        for name in ("bitwise_left_shift", "bitwise_right_shift"):
            check_op(lambda L, a, s: getattr(L, name)(a, s), a, s)
    check_op(lambda L, a: (a << 2, a >> 1, 3 << a, 64 >> a), _ints(1, 2, -5))
    check_op(lambda L, a, b: L.bitwise_left_shift(a, b), _ints(1, 2, 3).reshape(3, 1), _ints(0, 1))


def test_shift_in_place_forms_and_operators():
    for name, op in (("bitwise_left_shift_", "__ilshift__"), ("bitwise_right_shift_", "__irshift__")):
        t, e = torch.tensor([1, -8, 64]), ember.tensor([1, -8, 64])
        assert getattr(e, name)(ember.tensor([3, 1, 2])) is e
        getattr(t, name)(torch.tensor([3, 1, 2]))
        assert e.tolist() == t.tolist()
        e2, t2 = getattr(e, op)(1), getattr(t, op)(1)
        assert e2 is e and e.tolist() == t2.tolist()


def test_heaviside_matches_torch():
    check_op(lambda L, x, v: L.heaviside(x, v), SPECIAL, np.array([0.5]), grad=False)
    check_op(lambda L, x, v: x.heaviside(v), np.array([[0.0], [-1.0], [3.0]]), np.array([0.25, 7.0]), grad=False)
    check_op(lambda L, x, v: L.heaviside(x, v), _ints(0, -3, 4), _ints(5), grad=False)
    check_op(lambda L, x, v: L.heaviside(x, v), (0,), (1,), grad=False)
    raises_exactly(lambda: ember.heaviside(ember.tensor([0, 1]), ember.tensor([0.5])), RuntimeError,
                   "heaviside: heaviside is not yet implemented for tensors with different dtypes ((2,) int64 cpu "
                   "and values (1,) float32 cpu)")
    with pytest.raises(TypeError):
        ember.heaviside(ember.tensor([0.0]), 0.5)


def test_ldexp_matches_torch():
    check_op(lambda L, x, e: L.ldexp(x, e), (3, 4), _ints(0, 3, 2, 10))
    check_op(lambda L, x, e: x.ldexp(e), (2, 3), (3,))                     # a float exponent, its gradient too
    check_op(lambda L, x, e: L.ldexp(x, e), _ints(1, 2, -3), _ints(3, 4, 1))   # integers: float32, as torch
    check_op(lambda L, x, e: L.ldexp(x, e), SPECIAL, _ints(1, 2, 3, 4, 5, 6, 7))
    check_op(lambda L, x, e: L.ldexp(x, e), (0,), _ints())
    check_op(lambda L, x, e: L.ldexp(x, e), (3,), _ints(-1, -2, 0), grad=False)


def test_ldexp_gradient_for_a_negative_integer_exponent_is_2_to_the_exponent():
    # torch's is 0 there (its backward takes 2 ** other in the integer dtype); Ember's is the true one
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    ember.ldexp(x, ember.tensor([-2, 3])).sum().backward()
    assert x.grad.tolist() == [0.25, 8.0]


def test_frexp_matches_torch_values_exponents_and_gradient():
    check_op(lambda L, x: tuple(L.frexp(x)), (3, 4), low=-100, high=100)
    check_op(lambda L, x: tuple(x.frexp()), SPECIAL)
    check_op(lambda L, x: tuple(L.frexp(x)), np.array([1e-40, -3e-39, 6e4, 1e30, 0.5, 1.0]), dtypes=["float32"])
    check_op(lambda L, x: tuple(L.frexp(x)), np.array([5e-324, 1e-310, 1.7e308, 2.0 ** -1022]), dtypes=["float64"],
             grad=False)   # torch's gradient g / 2 ** e overflows there (0 at 1.7e308); Ember's is g * 2 ** -e
    for dt in ("float16", "bfloat16"):
        x = np.array([6e4, 1e-7, -3.0, 0.0]) if dt == "float16" else np.array([1e-40, 3e38, -3.0])
        t = torch.frexp(torch.tensor(x).to(getattr(torch, dt)))
        e = ember.frexp(ember.tensor(t.mantissa.float().numpy() * 2.0 ** t.exponent.numpy()).to(getattr(ember, dt)))
        assert e.mantissa.float().tolist() == t.mantissa.float().tolist() and e.exponent.tolist() == t.exponent.tolist()
    check_op(lambda L, x: tuple(L.frexp(x)), (0, 2))
    raises_exactly(lambda: ember.frexp(ember.tensor([1, 2])), RuntimeError,
                   "frexp: torch.frexp() only supports floating-point dtypes, got (2,) int64 cpu")


def test_nextafter_matches_torch():
    a = np.array([1.0, 0.0, -0.0, -1.0, 0.0, INF, NAN, 1.0, 3.0])
    b = np.array([2.0, -1.0, 1.0, -2.0, 0.0, 0.0, 1.0, NAN, 3.0])
    for dt in ("float16", "bfloat16", "float32", "float64"):
        check_op(lambda L, a, b: L.nextafter(a, b), a, b, dtypes=[dt], grad=False, atol=0, rtol=0)
    check_op(lambda L, a, b: a.nextafter(b), (2, 3), (3,), grad=False)
    check_op(lambda L, a, b: L.nextafter(a, b), (2,), NoGrad(np.array([1.0, 2.0])), grad=False)   # promoted
    with pytest.raises(NotImplementedError, match="nextafter: \"nextafter_cpu\" not implemented for 'int64'"):
        ember.nextafter(ember.tensor([1]), ember.tensor([2]))


def test_nextafter_steps_one_ulp():
    x = ember.tensor([1.0], dtype=ember.float64)
    assert ember.nextafter(x, ember.tensor([2.0], dtype=ember.float64)).item() == np.nextafter(1.0, 2.0)


def test_logit_matches_torch_with_and_without_eps():
    check_op(lambda L, x: L.logit(x), (3, 4), low=0.05, high=0.95)
    check_op(lambda L, x: x.logit(eps=0.1), (3, 4), low=-0.5, high=1.5)    # clamped: gradient 0 outside
    check_op(lambda L, x: L.logit(x, 1e-6), np.array([0.0, 1.0, 0.5]))
    check_op(lambda L, x: L.logit(x), np.array([0.0, 1.0, NAN]), grad=False)
    # torch's gradient g / (x (1 - x)): +-inf at 0 and 1 (was NaN), NaN outside [0, 1] and at NaN (also
    # with eps: was 0 through clamp), 0 outside [eps, 1 - eps]
    edges = np.array([0.0, 1.0, 0.5, -0.5, 1.5, NAN, 0.2, 0.95])
    for eps in (None, 0.0, 1e-6, 0.1):
        check_op(lambda L, x: L.logit(x, eps), edges)
    check_op(lambda L, x: L.logit(x), _ints(0, 1, 2))
    check_op(lambda L, x: L.logit(x), (0,))


def test_xlogy_matches_torch_with_zero_times_log_zero_and_its_gradient():
    x = np.array([0.0, 0.0, 1.0, 0.0, 2.0, 0.0, -1.5])
    y = np.array([0.0, NAN, 0.0, -1.0, 3.0, 2.0, 0.5])
    check_op(lambda L, x, y: L.xlogy(x, y), x, NoGrad(y))   # x's gradient at x == 0 is log(y), 0 where y <= 0
    check_op(lambda L, x, y: L.xlogy(x, y), (3, 4), (4,), positive=True)
    check_op(lambda L, x, y: x.xlogy(y), np.array([0.0, 2.0, 3.0]), np.array([4.0, 0.5, 2.0]))
    check_op(lambda L, y: L.xlogy(2, y), (3,), positive=True)
    check_op(lambda L, x: L.xlogy(x, 3), (3,))
    check_op(lambda L, x, y: L.xlogy(x, y), _ints(0, 2, 3), _ints(0, 1, 5))
    check_op(lambda L, x, y: L.xlogy(x, y), (0,), (1,))


def test_xlogy_gradients_at_zero_nan_and_inf_as_torch():
    # torch: other's gradient is g * x / y, NaN at x == y == 0; the value is 0 at x == 0, y == inf, and
    # x's gradient there g * log(y) = inf (was 0)
    x = np.array([0.0, 0.0, 1.0, 0.0, NAN, 1.0, 0.0, INF, 2.0, 0.0])
    y = np.array([0.0, 1.0, 0.0, NAN, 0.0, INF, -INF, 1.0, -1.0, -2.0])
    check_op(lambda L, x, y: L.xlogy(x, y), x, y)
    check_op(lambda L, x, y: L.xlogy(x, y), NoGrad(np.array([0.0, 0.0])), np.array([INF, 3.0]))
    check_op(lambda L, x, y: L.special.xlog1py(x, y), x, y)
    check_op(lambda L, x, y: L.xlogy(x, y), np.array([0.0, 0.0, 1.0]), np.array([INF, 3.0, INF]))
    check_op(lambda L, x, y: L.special.xlog1py(x, y), np.array([0.0, 0.0]), np.array([INF, -1.0]))


def test_sinc_matches_torch_with_its_gradient_at_zero():
    check_op(lambda L, x: L.sinc(x), (3, 4), low=-3, high=3)
    check_op(lambda L, x: x.sinc(), np.array([0.0, -0.0, 1.0, 0.5, -2.5]))
    check_op(lambda L, x: L.sinc(x), np.array([INF, -INF, NAN]), grad=False)
    check_op(lambda L, x: L.sinc(x), _ints(0, 1, 2))
    check_op(lambda L, x: L.sinc(x), (0, 3))


def test_erfc_matches_torch():
    check_op(lambda L, x: L.erfc(x), (3, 4), low=-3, high=3)
    check_op(lambda L, x: x.erfc(), SPECIAL)
    check_op(lambda L, x: L.erfc(x), _ints(0, 1, -2))
    # the tail: 1 - erf(x) was 0 in float32 from x = 4 on (erfc(5) = 1.5e-12), and lost its digits in
    # float64; the relative error is what counts there
    tail = np.array([3.0, 4.0, 5.0, 6.0, 9.0, 12.0])
    for dt in ("float32", "float64"):
        t_out, e_out = check_op(lambda L, x: L.erfc(x), tail, dtypes=(dt,), rtol=1e-6)
        np.testing.assert_allclose(e_out.detach().cpu().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=0)


IN_PLACE = {   # name -> (input, extra args)
    "gcd_": (_ints(4, -6, 9), (_ints(6, 4, 3),)), "lcm_": (_ints(4, -6, 9), (_ints(6, 4, 3),)),
    "bitwise_left_shift_": (_ints(1, 2, 3), (2,)), "bitwise_right_shift_": (_ints(-8, 2, 9), (1,)),
    "heaviside_": (np.array([0.0, -1.0, 2.0]), (np.array([0.5]),)), "ldexp_": (np.array([1.0, -2.0, 3.0]), (_ints(2),)),
    "nextafter_": (np.array([1.0, -2.0, 0.0]), (np.array([2.0, 0.0, -1.0]),)),
    "logit_": (np.array([0.2, 0.5, 0.9]), ()), "xlogy_": (np.array([0.0, 2.0, 3.0]), (np.array([0.0, 0.5, 2.0]),)),
    "sinc_": (np.array([0.0, 0.5, 3.0]), ()), "erfc_": (np.array([0.0, 0.5, 3.0]), ()),
    "exp2_": (np.array([0.0, 0.5, 3.0]), ()), "log2_": (np.array([1.0, 0.5, 3.0]), ()),
    "log10_": (np.array([1.0, 0.5, 30.0]), ()), "frac_": (np.array([1.25, -0.5, 3.0]), ()),
}


def _conv(lib, v):
    return lib.tensor(v) if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_match_torch(name):
    x, args = IN_PLACE[name]
    t, e = torch.tensor(x), ember.tensor(x)
    t_out = getattr(t, name)(*[_conv(torch, a) for a in args])
    e_out = getattr(e, name)(*[_conv(ember, a) for a in args])
    assert e_out is e and e.dtype.name == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(e.numpy(), t_out.numpy(), rtol=1e-6)


def test_in_place_forms_keep_the_graph():
    check_op(lambda L, x: (x * 1).xlogy_(x * 2), (3,), positive=True)
    check_op(lambda L, x: ((x * 1).exp2_(), (x * 1).log2_(), (x * 1).log10_()), (3,), positive=True)
    check_op(lambda L, x: (x * 1).frac_(), (3,))
    check_op(lambda L, x: (x * 1).sinc_(), (3,))


def test_float_power_in_place_needs_float64():
    x = ember.tensor([2.0, 3.0], dtype=ember.float64)
    assert x.float_power_(2) is x and x.tolist() == [4.0, 9.0]
    check_op(lambda L, x: (x * 1).float_power_(1.5), (3,), positive=True, dtypes=["float64"], check_dtype=False)
    for dt in ("float32", "int64"):
        with pytest.raises(RuntimeError):
            torch.ones(2, dtype=getattr(torch, dt)).float_power_(2)
        raises_exactly(lambda: ember.ones(2, dtype=getattr(ember, dt)).float_power_(2), RuntimeError,
                       f"float_power_: the base given to float_power_ has dtype {dt} but the operation's result "
                       f"requires dtype float64")


def test_in_place_forms_refuse_a_wider_result_as_torch():
    with pytest.raises(RuntimeError):
        torch.tensor([2]).exp2_()
    with pytest.raises(RuntimeError, match="exp2_: result type float32 can't be cast to the desired output type int64"):
        ember.tensor([2]).exp2_()
