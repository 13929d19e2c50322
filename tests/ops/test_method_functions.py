"""ember/ops/method_functions.py: `ember.abs_(t)` and the other torch.* function forms of Tensor methods,
each compared with torch's `torch.<name>` (values, the gradient through the in-place op, the returned object)."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op

IDX = np.array([0, 2, 2], dtype=np.int64)

# (name, fn(L, *inputs), inputs, check_op keywords); in-place ones run on `x * 1` (a non-leaf) so the
# gradient flows through them to x (torch has no derivative for acosh_, asinh_, atanh_ in place: values only)
UNARY_INPLACE = {
    "abs_": {}, "acos_": {"low": -0.9, "high": 0.9}, "acosh_": {"low": 1.2, "high": 3.0, "grad": False},
    "arccos_": {"low": -0.9, "high": 0.9}, "arccosh_": {"low": 1.2, "high": 3.0, "grad": False}, "arcsin_": {"low": -0.9, "high": 0.9},
    "arcsinh_": {"grad": False}, "arctan_": {}, "arctanh_": {"low": -0.9, "high": 0.9, "grad": False}, "asin_": {"low": -0.9, "high": 0.9},
    "asinh_": {"grad": False}, "atan_": {}, "atanh_": {"low": -0.9, "high": 0.9, "grad": False}, "ceil_": {}, "cos_": {}, "cosh_": {},
    "deg2rad_": {}, "erf_": {}, "erfc_": {}, "exp2_": {}, "exp_": {}, "expm1_": {}, "floor_": {}, "frac_": {},
    "i0_": {}, "log10_": {"positive": True}, "log1p_": {"positive": True}, "log2_": {"positive": True},
    "log_": {"positive": True}, "neg_": {}, "rad2deg_": {}, "reciprocal_": {"positive": True}, "round_": {},
    "rsqrt_": {"positive": True}, "sin_": {}, "sinc_": {}, "sinh_": {}, "sqrt_": {"positive": True}, "square_": {},
    "tan_": {"low": -1.0, "high": 1.0}, "trunc_": {}, "fix_": {}, "negative_": {},
}
CASES = [(name, (lambda n: lambda L, x: getattr(L, n)(x * 1))(name), [(3, 4)], kw)
         for name, kw in UNARY_INPLACE.items()]
CASES += [
    ("addmv_", lambda L, x, m, v: L.addmv_(x * 1, m, v, beta=0.5, alpha=2.0), [(3,), (3, 4), (4,)], {}),
    ("clamp_", lambda L, x: L.clamp_(x * 1, -0.5, 0.7), [(3, 4)], {}),
    ("clamp_", lambda L, x, lo: L.clamp_(x * 1, min=lo), [(3, 4), (4,)], {}),
    ("clip_", lambda L, x: L.clip_(x * 1, max=0.3), [(3, 4)], {}),
    ("clamp_max_", lambda L, x: L.clamp_max_(x * 1, 0.3), [(3, 4)], {}),
    ("clamp_min_", lambda L, x: L.clamp_min_(x * 1, -0.3), [(3, 4)], {}),
    ("detach_", lambda L, x: L.detach_(x * 1), [(3, 4)], {"grad": False}),
    ("fill_", lambda L, x: L.fill_(x * 1, 2.5), [(3, 4)], {"grad": False}),
    ("zero_", lambda L, x: L.zero_(x * 1), [(3, 4)], {"grad": False}),
    ("gcd_", lambda L, a, b: L.gcd_(a * 1, b), [np.array([12, 18, 7]), np.array([8, 12, 5])], {}),
    ("lcm_", lambda L, a, b: L.lcm_(a * 1, b), [np.array([4, 6, 7]), np.array([6, 4, 5])], {}),
    ("ldexp_", lambda L, x, e: L.ldexp_(x * 1, e), [(3,), np.array([1, 0, 3])], {}),
    ("xlogy_", lambda L, x, y: L.xlogy_(x * 1, y), [(3, 4), (3, 4)], {"positive": True}),
    ("logit_", lambda L, x: L.logit_(x * 1, 0.1), [(3, 4)], {"low": 0.05, "high": 0.95}),
    ("nan_to_num_", lambda L, x: L.nan_to_num_(x * 1, 0.0, 1.5, -1.5),
     [np.array([1.0, np.nan, np.inf, -np.inf, -2.0])], {}),
    ("index_put_", lambda L, x, i, v: L.index_put_(x * 1, (i,), v, True), [(4, 3), IDX, (3, 3)], {}),
    ("index_put_", lambda L, x, i, v: L.index_put_(x * 1, (i,), v), [(4, 3), np.array([0, 3]), (3,)], {}),
    ("is_complex", lambda L, x: L.is_complex(x), [(3,)], {}),
    ("is_conj", lambda L, x: L.is_conj(x), [(3,)], {}),
    ("is_neg", lambda L, x: L.is_neg(x), [(3,)], {}),
    ("is_distributed", lambda L, x: L.is_distributed(x), [(3,)], {}),
    ("is_nonzero", lambda L, x: L.is_nonzero(x), [np.array([0.5])], {}),
    ("is_nonzero", lambda L, x: L.is_nonzero(x), [np.array([0], dtype=np.int64)], {}),
    ("is_same_size", lambda L, a, b: (L.is_same_size(a, b), L.is_same_size(a, b.T)), [(3, 4), (3, 4)], {}),
    ("is_signed", lambda L, x: (L.is_signed(x), L.is_signed(x > 0), L.is_signed(x.to(L.uint8)),
                                L.is_signed(x.to(L.int16))), [(3,)], {}),
]


def test_every_function_form_has_a_case():
    assert sorted({c[0] for c in CASES} | {"get_device"}) == sorted(ember.ops.method_functions.__all__)   # get_device: test_aliases.py (its answer depends on the device)


@pytest.mark.parametrize("name,fn,inputs,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_function_form_matches_torch(name, fn, inputs, kw):
    check_op(fn, *inputs, **kw)


@pytest.mark.parametrize("name,args", [("abs_", ()), ("fill_", (3.0,)), ("zero_", ()), ("clamp_", (0.0, 1.0)),
                                       ("detach_", ()), ("negative_", ())])
def test_in_place_forms_return_their_input(name, args):
    t, e = torch.tensor([-1.5, 0.5, 2.5]), ember.tensor([-1.5, 0.5, 2.5])
    assert getattr(ember, name)(e, *args) is e
    assert getattr(torch, name)(t, *args) is t
    assert e.tolist() == t.tolist()


def test_errors_as_torch():
    with pytest.raises(TypeError, match=r"abs_\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        ember.abs_(1.5)
    with pytest.raises(RuntimeError, match="is_nonzero.*more than one value"):
        ember.is_nonzero(ember.ones(2))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ember.exp_(ember.ones(2, requires_grad=True))


@pytest.mark.parametrize("module", ["ember.ops.method_functions", "ember.ops.functional_aliases", "ember.ops.aliases"])
def test_docstring_examples(module):
    import doctest
    import importlib
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # ember.range's deprecation warning
        result = doctest.testmod(importlib.import_module(module), extraglobs={"ember": ember})
    assert result.attempted > 0 and result.failed == 0
