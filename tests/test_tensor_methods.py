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
    check_op(lambda L, a: _inplace("index_fill_")(L, a, 0, L.tensor(IDX, device=a.device), 1.5), (3, 4))
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
    # page-locked only when a GPU can use it (the fake CUDA device has none to lock for)
    assert p.is_pinned() == (ember.cuda.is_available() and not ember.backends.get("cuda").FAKE)


def test_geometric_and_log_normal_fill_in_place():
    g = ember.Generator().manual_seed(0)
    x = ember.empty(20000, dtype=ember.float64)
    assert x.geometric_(0.25, generator=g) is x
    assert float(x.min()) >= 1 and bool((x == x.round()).all())    # counts of trials, from 1
    assert abs(float(x.mean()) - 4.0) < 0.1                          # mean 1/p
    assert x.log_normal_(0.5, 0.25, generator=g) is x
    assert float(x.min()) > 0
    assert abs(float(x.log().mean()) - 0.5) < 0.01 and abs(float(x.log().std()) - 0.25) < 0.01


ROUNDED = np.round(RNG.uniform(-2, 2, (3, 4)))
METHOD_FORMS = {   # each called as a method, on both sides
    "addcdiv": (lambda L, a, b, c: a.addcdiv(b, c, value=0.5), [(3, 4), (4,), POS]),
    "addcmul": (lambda L, a, b, c: a.addcmul(b, c, value=2), [(3, 4), (3, 1), (4,)]),
    "addmm": (lambda L, a, b, c: a.addmm(b, c, beta=0.5), [(3, 2), (3, 4), (4, 2)]),
    "amin": (lambda L, a: a.amin(1), [ROUNDED + RNG.uniform(0, 0.1, (3, 4))]),
    "broadcast_to": (lambda L, a: a.broadcast_to((2, 3, 4)), [(3, 1)]),
    "diag": (lambda L, a: (a.diag(), a.diag(1)), [(4, 4)]),
    "inner": (lambda L, a, b: a.inner(b), [(2, 4), (3, 4)]),
    "lerp": (lambda L, a, b: a.lerp(b, 0.25), [(3, 4), (4,)]),
    "log_softmax": (lambda L, a: a.log_softmax(-1), [(3, 4)]),
    "movedim": (lambda L, a: a.movedim(2, 0), [(2, 3, 4)]),
    "mv": (lambda L, a, b: a.mv(b), [(3, 4), (4,)]),
    "negative": (lambda L, a: a.negative(), [(3, 4)]),
    "remainder": (lambda L, a, b: a.remainder(b), [(3, 4), NoGrad(POS)]),
    "take": (lambda L, a, i: a.take(i), [(3, 4), np.array([[0, 11], [5, -1]])]),
    "triu": (lambda L, a: a.triu(-1), [(3, 4)]),
    "true_divide": (lambda L, a, b: a.true_divide(b), [(3, 4), POS]),
    "floor_divide": (lambda L, a, b: a.floor_divide(b), [(3, 4), NoGrad(POS)]),
    "H": (lambda L, a: a.H, [(3, 4)]),
}


@pytest.mark.parametrize("name", list(METHOD_FORMS))
def test_method_forms(name):
    fn, inputs = METHOD_FORMS[name]
    check_op(fn, *inputs, grad=name != "floor_divide")


def test_comparison_and_logical_method_forms():
    b = np.round(RNG.uniform(-2, 2, (4,)))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        check_op(lambda L, a, b: getattr(a, name)(b), ROUNDED, b, grad=False)
    p, q = MASK, RNG.random((4,)) < 0.5
    check_op(lambda L, a, b: (a.logical_or(b), a.logical_xor(b), a.logical_not()), p, q)
    check_op(lambda L, a: (a.argwhere(), a.count_nonzero(), a.count_nonzero(0)), p)
    x = ember.tensor([1.0, 2.0])
    assert x.equal(ember.tensor([1.0, 2.0])) and not x.equal(ember.tensor([1.0, 2.5]))
    assert x.allclose(x + 1e-9) and not x.allclose(x + 1e-3)
    assert x.isclose(ember.tensor([1.0, 2.1])).tolist() == [True, False]


def test_dtype_queries_and_device_methods():
    assert ember.zeros(2).is_floating_point() and not ember.zeros(2, dtype=ember.int64).is_floating_point()
    for dt, size in ((ember.float16, 2), (ember.float32, 4), (ember.int64, 8), (ember.bool, 1)):
        assert ember.zeros(3, dtype=dt).itemsize == size == torch.zeros(3, dtype=getattr(torch, dt.name)).itemsize
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            ember.ones(2).cuda()


def test_bernoulli_and_multinomial_methods():
    g = ember.Generator().manual_seed(4)
    p = ember.tensor([0.0, 1.0, 0.3]).expand(20000, 3)
    draws = p.bernoulli(generator=g)
    assert draws.shape == (20000, 3) and draws[:, 0].sum().item() == 0 and draws[:, 1].sum().item() == 20000
    assert abs(draws[:, 2].mean().item() - 0.3) < 0.02
    idx = ember.tensor([[0.0, 1.0, 3.0], [5.0, 0.0, 0.0]]).multinomial(2000, replacement=True, generator=g)
    assert idx.shape == (2, 2000) and set(idx[1].tolist()) == {0}
    assert 0 not in idx[0].tolist() and abs((idx[0] == 2).float().mean().item() - 0.75) < 0.03


def test_inplace_errors_and_casts_like_torch():
    for L in (torch, ember):
        a = L.zeros(3, requires_grad=True) * 1                       # recorded: the generic in-place path
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            a.mul_(L.ones(2, 3))
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            L.arange(3).sqrt_()
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            L.arange(3).add_(0.5)                                    # the direct (no graph) path
    h_t, h_e = torch.ones(3, dtype=torch.float16), ember.ones(3, dtype=ember.float16)
    assert h_e.exp_().dtype == ember.float16                          # a float32 result is cast back
    h_e.add_(ember.tensor([0.1, 0.2, 0.3]), alpha=2)
    h_t.exp_().add_(torch.tensor([0.1, 0.2, 0.3]), alpha=2)
    np.testing.assert_allclose(h_e.numpy(), h_t.numpy(), rtol=1e-3)


@pytest.mark.parametrize("dtype,args,low,high", [("int8", (), 0, 127), ("bool", (), 0, 1), ("float16", (), 0, 2048),
                                                 ("float32", (5,), 0, 4), ("int64", (-3, 3), -3, 2)])
def test_random_fills_torch_ranges(dtype, args, low, high):
    x = ember.empty(4000, dtype=getattr(ember, dtype)).random_(*args, generator=ember.Generator().manual_seed(0))
    t = torch.empty(4000, dtype=getattr(torch, dtype)).random_(*args)
    v, w = x.numpy().astype(np.float64), t.numpy().astype(np.float64)
    assert v.min() >= low and v.max() <= high and w.min() >= low and w.max() <= high
    assert bool((v == np.round(v)).all()) and len(np.unique(v)) > min(high - low, 50)   # whole numbers, spread out
