"""ember/_tensor_methods.py: the ops bound as Tensor methods and their generated in-place `_` forms,
against torch's methods of the same name (values, dtypes and gradients through `check_op`)."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, NoGrad

RNG = np.random.default_rng(7)
IDX = np.array([2, 0])
MASK = RNG.random((3, 4)) < 0.5
POS = RNG.uniform(0.5, 2, (3, 4))          # a divisor / second operand away from 0


def _inplace(name, *args):
    """fn(lib, a, ...): the in-place method on a non-leaf copy of `a`; it must return that very tensor."""
    def fn(lib, a, *tensors):
        c = a * 1
        out = getattr(c, name)(*tensors, *args)
        assert out is c
        return c
    return fn


# name: (extra tensor inputs, extra constant args, positive inputs)
INPLACE = {
    "abs_": ((), (), False), "ceil_": ((), (), False), "cos_": ((), (), False), "erf_": ((), (), False),
    "expm1_": ((), (), False), "floor_": ((), (), False), "log_": ((), (), True), "log1p_": ((), (), True),
    "reciprocal_": ((), (), True), "relu_": ((), (), False), "round_": ((), (), False),
    "rsqrt_": ((), (), True), "sign_": ((), (), False), "sin_": ((), (), False), "sqrt_": ((), (), True),
    "square_": ((), (), False), "tan_": ((), (), False), "trunc_": ((), (), False),
    "tril_": ((), (), False), "triu_": ((), (1,), False), "clip_": ((), (-0.5, 0.5), False),
    "lerp_": ((POS,), (0.3,), False),
    "addcmul_": ((POS, POS[::-1].copy()), (), False), "addcdiv_": ((POS, POS[::-1].copy()), (), False),
    # the divisor's gradient and fmod of negative numbers are tested in tests/ops/test_math.py
    "remainder_": ((NoGrad(POS),), (), False), "fmod_": ((NoGrad(POS),), (), True),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_unary_and_binary(name):
    tensors, args, positive = INPLACE[name]
    check_op(_inplace(name, *args), (3, 4), *tensors, positive=positive)


def test_minimum_inplace():
    # torch has no minimum_: compare with its out-of-place minimum
    check_op(lambda L, a, b: _inplace("minimum_")(L, a, b) if L is ember else torch.minimum(a, b), (3, 4), POS)


def test_floor_divide_inplace():
    # torch defines no gradient for floor_divide: compare values only
    check_op(_inplace("floor_divide_"), (3, 4), POS, grad=False)


def test_logical_not_inplace_on_bool():
    def fn(lib, a):
        out = a.logical_not_()
        assert out is a
        return a
    check_op(fn, MASK.copy())


def test_indexing_inplace_forms():
    idx = ember.tensor(IDX), torch.tensor(IDX)
    check_op(lambda L, a, v: _inplace("index_put_", v)(L, a, (idx[L is torch],)), (3, 4), (2, 4))
    check_op(lambda L, a: _inplace("index_fill_")(L, a, 0, idx[L is torch], 1.5), (3, 4))
    check_op(lambda L, a, m, s: _inplace("masked_scatter_")(L, a, m, s), (3, 4), MASK, (12,))


def test_out_of_place_method_forms():
    check_op(lambda L, a: a.absolute(), (3, 4))
    check_op(lambda L, a, b: a.float_power(b), (3, 4), (4,), positive=True)
    check_op(lambda L, a, b: a.fmod(b), (3, 4), NoGrad(POS), positive=True)
    check_op(lambda L, a, b: a.dist(b, 3), (3, 4), (4,))
    check_op(lambda L, a, b: a.ger(b), (3,), (4,))
    check_op(lambda L, a, b: a.vdot(b), (5,), (5,))
    check_op(lambda L, a: a.flipud(), (3, 4))
    check_op(lambda L, a: a.moveaxis(0, -1), (2, 3, 4))
    check_op(lambda L, a: a.swapdims(0, 2), (2, 3, 4))
    check_op(lambda L, a, b: a.reshape_as(b), (3, 4), (6, 2))
    check_op(lambda L, a, b: a.view_as(b), (3, 4), (2, 6))
    check_op(lambda L, a, m, s: a.masked_scatter(m, s), (3, 4), MASK, (12,))
    check_op(lambda L, a: a.mH, (2, 3, 4))
    a, b = np.round(RNG.uniform(-2, 2, (3, 4))), np.round(RNG.uniform(-2, 2, (4,)))
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
        check_op(lambda L, a, b: getattr(a, name)(b), a, b, grad=False)
    i, j = np.array([5, 3, 12, -7]), np.array([3, 6, 10, 2])
    check_op(lambda L, a, b: (a.bitwise_and(b), a.bitwise_or(b), a.bitwise_xor(b), a.bitwise_not()), i, j)


def test_nelement_data_ptr_pin_memory():
    x = ember.arange(12.0).reshape(3, 4)
    assert x.nelement() == 12 == x.numel()
    assert x[1].data_ptr() == x.data_ptr() + 4 * 4          # a view starts inside its base's memory
    assert x.clone().data_ptr() != x.data_ptr()
    p = x.pin_memory()
    assert p.tolist() == x.tolist() and p.device == x.device
    assert p.is_pinned() == ember.cuda.is_available()     # page-locked only when a GPU can use it


def test_geometric_and_log_normal_fill_in_place():
    g = ember.Generator().manual_seed(0)
    x = ember.empty(20000, dtype=ember.float64)
    assert x.geometric_(0.25, generator=g) is x
    assert float(x.min()) >= 1 and bool((x == x.round()).all())    # counts of trials, from 1
    assert abs(float(x.mean()) - 4.0) < 0.1                          # mean 1/p
    assert x.log_normal_(0.5, 0.25, generator=g) is x
    assert float(x.min()) > 0
    assert abs(float(x.log().mean()) - 0.5) < 0.01 and abs(float(x.log().std()) - 0.25) < 0.01
