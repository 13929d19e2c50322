"""ember/nn/pooling.py against torch."""
import numpy as np
import pytest

from helpers import check_op, raises_exactly, with_specials
from .nn_helpers import check_module

RNG = np.random.default_rng(1)
# distinct values: max pooling has no ties, so gradients are unambiguous
X4 = RNG.permutation(2 * 3 * 9 * 8).reshape(2, 3, 9, 8) / 50.0
X3 = RNG.permutation(2 * 3 * 11).reshape(2, 3, 11) / 20.0

CASES = [
    ("maxpool1d", lambda lib: lib.nn.MaxPool1d(3), [X3]),
    ("maxpool1d_stride_pad_dil", lambda lib: lib.nn.MaxPool1d(3, 2, padding=1, dilation=2), [X3]),
    ("maxpool1d_ceil", lambda lib: lib.nn.MaxPool1d(2, ceil_mode=True), [X3]),
    ("maxpool2d", lambda lib: lib.nn.MaxPool2d(2), [X4]),
    ("maxpool2d_stride_pad", lambda lib: lib.nn.MaxPool2d(3, stride=2, padding=1), [X4]),
    ("maxpool2d_rect_dil", lambda lib: lib.nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1)), [X4]),
    ("maxpool2d_ceil", lambda lib: lib.nn.MaxPool2d(2, ceil_mode=True), [X4]),
    ("maxpool2d_indices", lambda lib: lib.nn.MaxPool2d(3, 2, padding=1, return_indices=True), [X4]),
    ("maxpool2d_unbatched", lambda lib: lib.nn.MaxPool2d(2), [X4[0]]),
    ("avgpool1d", lambda lib: lib.nn.AvgPool1d(3, 2, padding=1), [(2, 3, 10)]),
    ("avgpool1d_nopad_count", lambda lib: lib.nn.AvgPool1d(3, 2, padding=1, count_include_pad=False), [(2, 3, 10)]),
    ("avgpool2d", lambda lib: lib.nn.AvgPool2d(2), [(2, 3, 8, 8)]),
    ("avgpool2d_stride_pad", lambda lib: lib.nn.AvgPool2d(3, stride=2, padding=1), [(2, 3, 7, 8)]),
    ("avgpool2d_exclude_pad", lambda lib: lib.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [(2, 3, 7, 8)]),
    ("avgpool2d_ceil", lambda lib: lib.nn.AvgPool2d(2, ceil_mode=True), [(1, 2, 5, 7)]),
    ("avgpool2d_ceil_pad", lambda lib: lib.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True), [(1, 2, 6, 6)]),
    ("avgpool2d_divisor", lambda lib: lib.nn.AvgPool2d(2, divisor_override=3), [(1, 2, 6, 6)]),
    ("adaptive_avg1d", lambda lib: lib.nn.AdaptiveAvgPool1d(4), [(2, 3, 10)]),
    ("adaptive_avg2d", lambda lib: lib.nn.AdaptiveAvgPool2d((3, 5)), [(2, 3, 7, 9)]),
    ("adaptive_avg2d_1", lambda lib: lib.nn.AdaptiveAvgPool2d(1), [(2, 3, 7, 9)]),
    ("adaptive_avg2d_none", lambda lib: lib.nn.AdaptiveAvgPool2d((None, 2)), [(2, 3, 4, 6)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pooling_layers(build, inputs):
    check_module(build, *inputs, modes=("train",))


def test_maxpool_double_backward():
    def fn(lib, x):
        y = lib.nn.functional.max_pool2d(x * x, 2)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        return (g * x).sum()
    check_op(fn, X4, dtypes=("float64",))


def test_functional_pooling_forms():
    check_op(lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 2, padding=1), X3)
    check_op(lambda lib, x: lib.nn.functional.max_pool1d(x, 2, return_indices=True), X3)
    check_op(lambda lib, x: lib.nn.functional.avg_pool1d(x, 3, 2, padding=1, count_include_pad=False), (2, 3, 10))
    check_op(lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (3, 2)), (2, 3, 7, 5))


# many equal values: each window's gradient goes to its first maximum, as torch's (MaxPoolGrad)
TIES = np.round(RNG.standard_normal((2, 3, 9, 8)), 0)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=1, dilation=(2, 1)), dict(kernel_size=3, ceil_mode=True)],
                         ids=["2x2", "3x3_s2_p1_overlap", "dilated_overlap", "ceil"])
def test_maxpool_ties_go_to_the_first_maximum(kw):
    check_op(lambda lib, x: lib.nn.functional.max_pool2d(x, **kw), TIES)


def test_maxpool_double_backward_padded():
    def fn(lib, x):
        y = lib.nn.functional.max_pool2d(x * x, 3, stride=2, padding=1)
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        return (g * x).sum()
    check_op(fn, X4, dtypes=("float64",))


def test_maxpool_keeps_channels_last_layout():
    import ember
    x = ember.from_numpy(np.ascontiguousarray(RNG.standard_normal((2, 5, 6, 4)).astype(np.float32)).transpose(0, 3, 1, 2))
    y = ember.nn.functional.max_pool2d(x, 2)
    assert y.dtype == ember.float32 and y.numpy().transpose(0, 2, 3, 1).flags.c_contiguous


# ------------------------------------------------------------------ geometry sweep, unbatched, defaults, errors
import itertools

import torch

import ember


def _both(fn, x, **kw):
    """fn(lib, tensor) on torch and Ember: outputs and the gradient of a weighted sum, as NumPy arrays."""
    res = []
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        out = fn(lib, t, **kw)
        outs = out if isinstance(out, tuple) else (out,)
        w = np.random.default_rng(1).standard_normal(tuple(outs[0].shape))
        (outs[0] * lib.tensor(w)).sum().backward()
        res.append(([o.detach().numpy() for o in outs], t.grad.numpy()))
    return res


def test_pool_geometry_sweep_as_torch():
    """Every 1-D window geometry with n in 4..8: ceil_mode (the last window must start inside the input
    or its left padding), padding, stride, dilation; max and average pooling, values and gradients."""
    x = np.random.default_rng(0).standard_normal((1, 2, 8))
    for n, k, s, d, ceil in itertools.product(range(4, 9), (2, 3), (1, 2, 3), (1, 2), (False, True)):
        for p in range(k // 2 + 1):
            if (n + 2 * p - d * (k - 1) - 1) < 0:
                continue
            kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil)
            what = f"n={n} {kw} dilation={d}"
            (t_out, t_g), (e_out, e_g) = _both(lambda lib, a, **kw: lib.nn.functional.max_pool1d(
                a, dilation=d, return_indices=True, **kw), x[..., :n], **kw)
            assert [o.shape for o in e_out] == [o.shape for o in t_out], what
            np.testing.assert_allclose(e_out[0], t_out[0], rtol=1e-12, err_msg=what)
            np.testing.assert_array_equal(e_out[1], t_out[1], err_msg=what)
            np.testing.assert_allclose(e_g, t_g, rtol=1e-12, err_msg=what)
            if d == 1:
                for cip in (False, True):
                    (t_out, t_g), (e_out, e_g) = _both(lambda lib, a, **kw: lib.nn.functional.avg_pool1d(
                        a, count_include_pad=cip, **kw), x[..., :n], **kw)
                    np.testing.assert_allclose(e_out[0], t_out[0], rtol=1e-12, err_msg=f"{what} cip={cip}")
                    np.testing.assert_allclose(e_g, t_g, rtol=1e-12, err_msg=f"{what} cip={cip}")


POOL_FORMS = [
    ("max_pool2d_unbatched_indices", lambda lib, x: lib.nn.functional.max_pool2d(x, 2, 1, return_indices=True)[0], [(2, 5, 4)]),
    ("max_pool2d_unbatched_indices_only", lambda lib, x: lib.nn.functional.max_pool2d(x, (2, 3), return_indices=True)[1], [(2, 5, 7)]),
    ("max_pool1d_unbatched", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(3, 8)]),
    ("max_pool1d_defaults", lambda lib, x: lib.nn.functional.max_pool1d(x, 2), [(2, 3, 7)]),
    ("avg_pool1d_defaults", lambda lib, x: lib.nn.functional.avg_pool1d(x, 3), [(2, 3, 7)]),
    ("avg_pool1d_padded_default_cip", lambda lib, x: lib.nn.functional.avg_pool1d(x, 3, 2, 1), [(2, 3, 7)]),
    ("avg_pool2d_defaults", lambda lib, x: lib.nn.functional.avg_pool2d(x, 2), [(2, 3, 5, 5)]),
    ("avg_pool2d_padded_default_cip", lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 2, 1), [(1, 2, 5, 6)]),
    ("avg_pool2d_unbatched_ceil_nocip", lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 2, (1, 0), ceil_mode=True, count_include_pad=False), [(2, 6, 5)]),
    ("avg_pool2d_unbatched_ceil_cip", lambda lib, x: lib.nn.functional.avg_pool2d(x, (3, 2), 2, (1, 1), ceil_mode=True), [(2, 6, 5)]),
    ("avg_pool2d_divisor", lambda lib, x: lib.nn.functional.avg_pool2d(x, 2, 1, divisor_override=3), [(1, 2, 4, 4)]),
    ("avg_pool2d_unbatched_divisor", lambda lib, x: lib.nn.functional.avg_pool2d(x, 2, 1, divisor_override=3), [(3, 4, 4)]),
    ("avg_pool2d_ceil_cip_three_planes", lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 3, 6, 5)]),
    ("avg_pool1d_unbatched_one_channel", lambda lib, x: lib.nn.functional.avg_pool1d(x, 3, 3), [(1, 3)]),
    ("max_pool1d_unbatched_one_channel", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 3, return_indices=True), [(1, 3)]),
    ("avg_pool1d_unbatched", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, 1, 1, True, False), [(3, 6)]),
    ("adaptive_avg_pool2d_none", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (None, 3)), [(1, 2, 5, 7)]),
    ("adaptive_avg_pool2d_unbatched", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 3), [(2, 5, 7)]),
    ("adaptive_avg_pool1d_unbatched", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, [4]), [(2, 7)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in POOL_FORMS], ids=[c[0] for c in POOL_FORMS])
def test_pooling_forms_as_torch(fn, inputs):
    check_op(fn, *inputs)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_avg_and_adaptive_pooling_keep_the_dtype(dtype):
    dt = getattr(ember, dtype)
    x = ember.randn(1, 2, 6, 6).to(dt)
    F = ember.nn.functional
    for out in (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                F.adaptive_avg_pool2d(x, 4)):
        assert out.dtype == dt


def test_pooling_on_the_inputs_device(fake_cuda):
    F = ember.nn.functional
    x = ember.randn(1, 2, 6, 6)
    xc = x.to("cuda")
    for fn in (lambda a: F.avg_pool2d(a, 2), lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
               lambda a: F.adaptive_avg_pool2d(a, 4), lambda a: F.max_pool2d(a, 2, return_indices=True)[0]):
        out = fn(xc)
        assert out.device.type == "cuda"
        np.testing.assert_allclose(out.to("cpu").numpy(), fn(x).numpy(), rtol=1e-6)


POOL_ERRORS = [
    (lambda F: F.max_pool1d(ember.zeros(1, 1, 8), 2, padding=2), ValueError,
     "max_pool1d: pad should be at most half of effective kernel size, got padding=(2,), kernel_size=(2,)"),
    (lambda F: F.max_pool1d(ember.zeros(1, 1, 8), 3, padding=2), ValueError,
     "max_pool1d: pad should be at most half of effective kernel size, got padding=(2,), kernel_size=(3,)"),
    (lambda F: F.avg_pool1d(ember.zeros(1, 1, 2), 3), RuntimeError,
     "avg_pool1d: input (1, 1, 2) is too small for kernel (3,), padding (0,)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 2, 8), 3), RuntimeError,
     "max_pool2d: input (1, 1, 2, 8) is too small for kernel (3, 3), padding (0, 0)"),
    (lambda F: F.avg_pool2d(ember.zeros(1, 1, 4, 4), 2, (1, 1, 1)), ValueError,
     "stride must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 4, 4), 2, padding=(1, 1, 1)), ValueError,
     "padding must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 4, 4), 2, dilation=(1, 1, 1)), ValueError,
     "dilation must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 4, 4), (2, 2, 2)), ValueError,
     "kernel_size must be an int or a tuple of 2 ints, got (2, 2, 2)"),
    (lambda F: F.max_pool1d(ember.zeros(8), 2), ValueError, "max_pool1d: expected a 3-D input, got shape (8,)"),
    (lambda F: F.avg_pool2d(ember.zeros(1, 1, 1), 3), RuntimeError,
     "avg_pool2d: input (1, 1, 1, 1) is too small for kernel (3, 3), padding (0, 0)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 1), 3), RuntimeError,
     "max_pool2d: input (1, 1, 1, 1) is too small for kernel (3, 3), padding (0, 0)"),
    (lambda F: F.avg_pool1d(ember.zeros(8), 2), ValueError, "avg_pool1d: expected a 3-D input, got shape (8,)"),
    (lambda F: F.adaptive_avg_pool1d(ember.zeros(8), 2), ValueError,
     "adaptive_avg_pool1d: expected a 2-D or 3-D input, got shape (8,)"),
    (lambda F: F.adaptive_avg_pool2d(ember.zeros(8), 2), ValueError,
     "adaptive_avg_pool2d: expected a 3-D or 4-D input, got shape (8,)"),
    (lambda F: F.adaptive_avg_pool2d(ember.zeros(1, 8), 2), ValueError,
     "adaptive_avg_pool2d: expected a 3-D or 4-D input, got shape (1, 8)"),
    (lambda F: F.adaptive_avg_pool2d(ember.zeros(1, 1, 1, 1, 8), 2), ValueError,
     "adaptive_avg_pool2d: expected a 3-D or 4-D input, got shape (1, 1, 1, 1, 8)"),
]


@pytest.mark.parametrize("k", range(len(POOL_ERRORS)))
def test_pooling_errors_exactly(k):
    call, exc, message = POOL_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message)


@pytest.mark.parametrize("pool", ["max_pool1d", "max_pool2d"])
def test_maxpool_double_backward_unpadded_through_the_upstream_gradient(pool):
    # MaxPoolGrad's gradient in g (a Gather at the first maxima) without padding, g depending on x
    def fn(lib, x):
        y = getattr(lib.nn.functional, pool)(x * x, 2)
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        return (g * x).sum()
    check_op(fn, X3 if pool == "max_pool1d" else X4, dtypes=("float64",))


@pytest.mark.parametrize("pool,x", [("max_pool1d", X3), ("max_pool2d", X4)],
                         ids=["1d", "2d"])
def test_maxpool_one_element_window_as_torch_and_keeps_the_layout(pool, x):
    # a 1-wide window has one tap: the pooled values are a strided copy of it, in x's memory layout
    check_op(lambda lib, t: getattr(lib.nn.functional, pool)(t, 1, stride=2), x)
    cl = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1).astype(np.float32)  # channels-last
    y = getattr(ember.nn.functional, pool)(ember.from_numpy(cl), 1, stride=2)
    np.testing.assert_array_equal(y.numpy(), x.astype(np.float32)[(slice(None),) * 2 + (slice(None, None, 2),) * (x.ndim - 2)])
    assert np.moveaxis(y.numpy(), 1, -1).flags.c_contiguous


def test_a_max_pool_window_wholly_in_the_padding():
    # dilation 2 > padding 1 on a length-1 input: the window holds only padding. return_indices failed
    # ("invalid entry in coordinates array"); torch returns -inf and an index out of range
    x = ember.randn(2, 2, 1, requires_grad=True)
    out, idx = ember.nn.functional.max_pool1d(x, 2, padding=1, dilation=2, return_indices=True)
    assert out.shape == (2, 2, 1) and bool((out == float("-inf")).all())
    assert idx.tolist() == [[[0], [0]], [[0], [0]]]          # in range: the nearest input position
    out.sum().backward()
    assert x.grad.tolist() == [[[0.0], [0.0]], [[0.0], [0.0]]]


# ------------------------------------------------------------------ 3-D pooling, adaptive max, LP, unpooling
X5 = RNG.permutation(2 * 2 * 5 * 6 * 7).reshape(2, 2, 5, 6, 7) / 100.0   # distinct values

CASES_ND = [
    ("maxpool3d", lambda lib: lib.nn.MaxPool3d(2), [X5]),
    ("maxpool3d_stride_pad_dil", lambda lib: lib.nn.MaxPool3d(3, 2, padding=1, dilation=(1, 2, 1)), [X5]),
    ("maxpool3d_rect_ceil", lambda lib: lib.nn.MaxPool3d((2, 3, 2), stride=(2, 2, 3), ceil_mode=True), [X5]),
    ("maxpool3d_indices", lambda lib: lib.nn.MaxPool3d(3, 2, padding=1, return_indices=True), [X5]),
    ("maxpool3d_unbatched", lambda lib: lib.nn.MaxPool3d(2, 1), [X5[0]]),
    ("avgpool3d", lambda lib: lib.nn.AvgPool3d(2), [(2, 3, 4, 5, 6)]),
    ("avgpool3d_stride_pad", lambda lib: lib.nn.AvgPool3d(3, stride=2, padding=1), [(1, 2, 5, 6, 7)]),
    ("avgpool3d_exclude_pad_ceil", lambda lib: lib.nn.AvgPool3d(3, 2, padding=(1, 0, 1), ceil_mode=True,
                                                              count_include_pad=False), [(1, 2, 5, 6, 7)]),
    ("avgpool3d_ceil_cip", lambda lib: lib.nn.AvgPool3d((3, 2, 3), 2, 1, ceil_mode=True), [(1, 2, 6, 5, 4)]),
    ("avgpool3d_divisor", lambda lib: lib.nn.AvgPool3d(2, 1, divisor_override=5), [(1, 2, 3, 4, 3)]),
    ("avgpool3d_unbatched", lambda lib: lib.nn.AvgPool3d((1, 2, 2)), [(3, 2, 4, 5)]),
    ("adaptive_avg3d", lambda lib: lib.nn.AdaptiveAvgPool3d((2, 3, 4)), [(2, 3, 5, 7, 9)]),
    ("adaptive_avg3d_none_unbatched", lambda lib: lib.nn.AdaptiveAvgPool3d((None, 1, 5)), [(2, 3, 4, 3)]),
    ("adaptive_max1d", lambda lib: lib.nn.AdaptiveMaxPool1d(4), [X3]),
    ("adaptive_max1d_larger_indices", lambda lib: lib.nn.AdaptiveMaxPool1d(15, return_indices=True), [X3]),
    ("adaptive_max2d", lambda lib: lib.nn.AdaptiveMaxPool2d((4, 3)), [X4]),
    ("adaptive_max2d_indices_none", lambda lib: lib.nn.AdaptiveMaxPool2d((None, 5), True), [X4]),
    ("adaptive_max2d_unbatched", lambda lib: lib.nn.AdaptiveMaxPool2d(5, True), [X4[0]]),
    ("adaptive_max3d", lambda lib: lib.nn.AdaptiveMaxPool3d((3, 4, 2), True), [X5]),
    ("adaptive_max3d_global", lambda lib: lib.nn.AdaptiveMaxPool3d(1), [X5]),
    ("adaptive_max3d_unbatched", lambda lib: lib.nn.AdaptiveMaxPool3d((4, None, 5)), [X5[1]]),
    ("lppool1d", lambda lib: lib.nn.LPPool1d(2, 3), [(2, 3, 10)]),
    ("lppool1d_stride_ceil", lambda lib: lib.nn.LPPool1d(3, 3, stride=2, ceil_mode=True), [(2, 3, 10)]),
    ("lppool2d", lambda lib: lib.nn.LPPool2d(2, 3, stride=2), [(2, 3, 7, 8)]),
    ("lppool2d_rect_p1", lambda lib: lib.nn.LPPool2d(1, (3, 2), stride=(2, 1)), [(1, 2, 7, 5)]),
    ("lppool2d_ceil_unbatched", lambda lib: lib.nn.LPPool2d(2, 2, ceil_mode=True), [(3, 5, 7)]),
    ("lppool2d_inf", lambda lib: lib.nn.LPPool2d(float("inf"), 2), [X4]),
    ("lppool3d", lambda lib: lib.nn.LPPool3d(2, 2), [(2, 2, 4, 5, 6)]),
    ("lppool3d_ceil", lambda lib: lib.nn.LPPool3d(2, (2, 3, 2), ceil_mode=True), [(1, 2, 5, 5, 5)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES_ND], ids=[c[0] for c in CASES_ND])
def test_nd_pooling_layers(build, inputs):
    check_module(build, *inputs, modes=("train",))


def _unpool(nd, pool_kw, unpool_kw, output_size=None):
    """max_pool{nd}d with indices, then MaxUnpool{nd}d (doubled values, so the unpooled are new numbers)."""
    def fn(lib, x):
        out, idx = getattr(lib.nn.functional, f"max_pool{nd}d")(x, return_indices=True, **pool_kw)
        size = x.shape if output_size == "input" else output_size
        return getattr(lib.nn, f"MaxUnpool{nd}d")(**unpool_kw)(out * 2, idx, output_size=size)
    return fn


UNPOOL = [
    ("1d", _unpool(1, dict(kernel_size=2), dict(kernel_size=2)), X3),
    ("1d_output_size", _unpool(1, dict(kernel_size=3, stride=2), dict(kernel_size=3, stride=2), "input"), X3),
    ("1d_pad_overlap", _unpool(1, dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=3, stride=1, padding=1)), X3),
    ("1d_unbatched", _unpool(1, dict(kernel_size=2), dict(kernel_size=2), [10]), X3[0]),
    ("2d", _unpool(2, dict(kernel_size=2), dict(kernel_size=2), "input"), X4),
    ("2d_stride_pad", _unpool(2, dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, padding=1), "input"), X4),
    ("2d_rect_spatial_size", _unpool(2, dict(kernel_size=(2, 3)), dict(kernel_size=(2, 3)), [9, 8]), X4),
    ("2d_unbatched", _unpool(2, dict(kernel_size=2), dict(kernel_size=2), [9, 8]), X4[1]),
    ("3d", _unpool(3, dict(kernel_size=2), dict(kernel_size=2), "input"), X5),
    ("3d_stride_pad", _unpool(3, dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, padding=1), "input"), X5),
    ("3d_unbatched", _unpool(3, dict(kernel_size=(1, 2, 3)), dict(kernel_size=(1, 2, 3)), [5, 6, 7]), X5[0]),
    ("3d_default_size", _unpool(3, dict(kernel_size=(1, 2, 3), stride=1), dict(kernel_size=(1, 2, 3), stride=1)), X5),
]


@pytest.mark.parametrize("fn,x", [c[1:] for c in UNPOOL], ids=[c[0] for c in UNPOOL])
def test_max_unpool_as_torch(fn, x):
    check_op(fn, x)


def test_max_unpool_of_given_indices_as_torch():
    # indices not from a max pool: any positions in the output plane, values and gradient to them
    idx = np.array([[[0, 7, 3], [8, 1, 2]]], dtype=np.int64)
    check_op(lambda lib, x, i: lib.nn.functional.max_unpool1d(x, i, 3), (1, 2, 3), idx)
    i2 = np.array([[[[15, 0], [5, 10]]]], dtype=np.int64)
    check_op(lambda lib, x, i: lib.nn.functional.max_unpool2d(x, i, 2, output_size=(1, 1, 4, 4)), (1, 1, 2, 2), i2)
    i3 = np.array([[[[[0, 26]], [[13, 7]]]]], dtype=np.int64)
    check_op(lambda lib, x, i: lib.nn.functional.max_unpool3d(x, i, (2, 3, 2), (1, 2, 2), 0, (3, 3, 3)),
             (1, 1, 2, 1, 2), i3)


FUNCTIONAL_ND = [
    ("max_pool1d_with_indices", lambda lib, x: lib.nn.functional.max_pool1d_with_indices(x, 3, 2, 1, ceil_mode=True), [X3]),
    ("max_pool2d_with_indices", lambda lib, x: lib.nn.functional.max_pool2d_with_indices(x, (2, 3), dilation=(2, 1)), [X4]),
    ("max_pool3d_with_indices", lambda lib, x: lib.nn.functional.max_pool3d_with_indices(x, 2, (1, 2, 3), 1), [X5]),
    ("max_pool3d_with_indices_unbatched", lambda lib, x: lib.nn.functional.max_pool3d_with_indices(x, 2), [X5[0]]),
    ("max_pool3d_ceil_pad", lambda lib, x: lib.nn.functional.max_pool3d(x, 3, 2, 1, ceil_mode=True), [X5]),
    ("avg_pool3d_defaults", lambda lib, x: lib.nn.functional.avg_pool3d(x, 2), [(2, 3, 5, 4, 3)]),
    ("avg_pool3d_padded_default_cip", lambda lib, x: lib.nn.functional.avg_pool3d(x, 3, 2, 1), [(1, 2, 5, 4, 6)]),
    ("adaptive_max_pool1d_with_indices", lambda lib, x: lib.nn.functional.adaptive_max_pool1d_with_indices(x, 4), [X3]),
    ("adaptive_max_pool2d_with_indices", lambda lib, x: lib.nn.functional.adaptive_max_pool2d_with_indices(x, (3, 7)), [X4]),
    ("adaptive_max_pool3d_with_indices", lambda lib, x: lib.nn.functional.adaptive_max_pool3d_with_indices(x, (2, 5, 3)), [X5]),
    ("adaptive_max_pool1d_values", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 5), [X3]),
    ("adaptive_max_pool1d_unbatched", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 3, True), [X3[0]]),
    ("adaptive_max_pool2d_larger_than_input", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (11, 13), True), [X4]),
    ("max_pool2d_empty_batch_indices", lambda lib, x: lib.nn.functional.max_pool2d(x, 2, return_indices=True), [(0, 2, 4, 4)]),
    ("adaptive_max_pool3d_empty_batch", lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2, True), [(0, 2, 3, 3, 3)]),
    ("adaptive_max_pool3d_values", lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (1, 6, 4)), [X5]),
    ("adaptive_avg_pool3d", lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, (4, None, 2)), [(2, 3, 5, 6, 7)]),
    ("adaptive_avg_pool3d_unbatched", lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, 3), [(2, 5, 4, 7)]),
    ("lp_pool1d", lambda lib, x: lib.nn.functional.lp_pool1d(x, 2, 3), [(2, 3, 8)]),
    ("lp_pool1d_p3_stride", lambda lib, x: lib.nn.functional.lp_pool1d(x, 3, 2, 1), [(2, 3, 8)]),
    ("lp_pool2d_neg_inf", lambda lib, x: lib.nn.functional.lp_pool2d(x, -float("inf"), 2), [X4]),
    ("lp_pool2d_p1_5_positive", lambda lib, x: lib.nn.functional.lp_pool2d(x.abs() + 0.1, 1.5, 2, 1), [(1, 2, 5, 6)]),
    ("lp_pool3d_inf", lambda lib, x: lib.nn.functional.lp_pool3d(x, float("inf"), (2, 2, 3)), [X5]),
    ("lp_pool3d_stride_ceil", lambda lib, x: lib.nn.functional.lp_pool3d(x, 2, 2, (1, 2, 2), True), [(1, 2, 3, 5, 5)]),
    ("interpolate_area_3d", lambda lib, x: lib.nn.functional.interpolate(x, size=(2, 3, 4), mode="area"), [(1, 2, 5, 6, 7)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in FUNCTIONAL_ND], ids=[c[0] for c in FUNCTIONAL_ND])
def test_nd_pooling_functions_as_torch(fn, inputs):
    check_op(fn, *inputs)


def test_adaptive_pooling_to_size_zero():
    # torch returns an empty output (its backward then fails: no gradients to compare)
    for pool in ("adaptive_max_pool2d", "adaptive_max_pool3d"):
        check_op(lambda lib, x: getattr(lib.nn.functional, pool)(x, (0, 2, 3)[:x.ndim - 2], True),
                 X4 if pool.endswith("2d") else X5, grad=False)
    check_op(lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, (2, 0, 1)), X5, grad=False)


# many equal values: the index (and the gradient) goes to the first maximum of each window, row-major
TIES5 = np.round(RNG.standard_normal((2, 2, 5, 6, 7)), 0)


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.nn.functional.max_pool3d(x, 3, 2, 1, return_indices=True),
    lambda lib, x: lib.nn.functional.max_pool3d(x, 2, 1),
    lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (3, 4, 5), True),
    lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (4, 4, 4), True),
    lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[0, 0], (2, 3), True),
    lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[0, 0, 0], 3, True),
], ids=["max3d_overlap", "max3d_stride1", "adaptive3d", "adaptive3d_overlap", "adaptive2d", "adaptive1d"])
def test_nd_max_pool_ties_go_to_the_first_maximum(fn):
    check_op(fn, TIES5)


def test_adaptive_max_pool_window_bounds_are_torchs():
    # window i of n positions into m: [floor(i*n/m), ceil((i+1)*n/m)); a value at one position picks it out
    for n, m in itertools.product(range(1, 12), range(1, 12)):
        x = np.arange(n, dtype=np.float64)[::-1].copy().reshape(1, 1, n)   # the first position of each window wins
        t_out, t_idx = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x), m, return_indices=True)
        e_out, e_idx = ember.nn.functional.adaptive_max_pool1d(ember.tensor(x), m, return_indices=True)
        assert e_idx.tolist() == t_idx.tolist(), (n, m)
        x = np.arange(n, dtype=np.float64).reshape(1, 1, n)                # the last position wins
        t_idx = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x), m, return_indices=True)[1]
        e_idx = ember.nn.functional.adaptive_max_pool1d(ember.tensor(x), m, return_indices=True)[1]
        assert e_idx.tolist() == t_idx.tolist(), (n, m)


@pytest.mark.parametrize("fn,x", [
    (lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x * x, (4, 3)), X4),
    (lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x * x, (3, 2, 4)), X5),
    (lambda lib, x: lib.nn.functional.max_unpool2d(*lib.nn.functional.max_pool2d(x * x, 2, return_indices=True), 2), X4),
    (lambda lib, x: lib.nn.functional.max_pool3d(x * x, 3, 2, 1), X5),
    (lambda lib, x: lib.nn.functional.lp_pool2d(x, 3, 2), X4),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (4, 3)), X4),
], ids=["adaptive_max2d", "adaptive_max3d", "unpool2d", "max3d", "lp2d", "adaptive_avg2d"])
def test_nd_pooling_double_backward(fn, x):
    def grad_of_grad(lib, t):
        y = fn(lib, t)
        g, = lib.autograd.grad((y * y).sum(), t, create_graph=True)
        return (g * t).sum()
    check_op(grad_of_grad, x, dtypes=("float64",))


def test_lp_pool_of_a_zero_window_has_zero_gradient():
    # torch: sign(s) * relu(|s|) before the root, so the gradient at a zero sum is 0, not inf or NaN
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 2:, 2:] = [[1.0, -2.0], [0.5, 3.0]]
    t_out, e_out = check_op(lambda lib, a: lib.nn.functional.lp_pool2d(a, 2, 2), x)
    assert t_out[0, 0, 0, 0].item() == 0.0
    for p in (1, 3):   # a negative sum (odd p) is clamped to 0 too
        check_op(lambda lib, a: lib.nn.functional.lp_pool2d(a, p, 2), x)



@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_lp_pool_at_nan_and_inf_as_torch(p, ceil_mode):
    # a NaN window sum (a NaN, or inf + -inf) passes torch's sign(s) * relu(|s|) with gradient
    # g * sign(NaN)**2 = g * 0: 0 at p = 1 (the root's g is finite), NaN at p = 2, 3 (the root's g is NaN)
    x = RNG.standard_normal((1, 2, 5, 5))
    x[0, 0, 0, 1], x[0, 0, 2, 2], x[0, 0, 2, 3] = np.nan, np.inf, -np.inf
    x[0, 1, 4, 4], x[0, 1, 1, 0] = np.inf, np.nan
    check_op(lambda lib, a: lib.nn.functional.lp_pool2d(a, p, 2, None, ceil_mode), x)
    check_op(lambda lib, a: lib.nn.functional.lp_pool1d(a, p, 3, 2, ceil_mode), x[0])

def test_nd_pooling_on_the_inputs_device(fake_cuda):
    F = ember.nn.functional
    x = ember.randn(1, 2, 4, 5, 6)
    xc = x.to("cuda")
    for fn in (lambda a: F.max_pool3d(a, 2, return_indices=True)[1], lambda a: F.avg_pool3d(a, 3, 2, 1),
               lambda a: F.adaptive_max_pool3d(a, (3, 2, 4), True)[0], lambda a: F.adaptive_avg_pool3d(a, 3),
               lambda a: F.lp_pool3d(a, 2, 2), lambda a: F.max_unpool3d(*F.max_pool3d(a, 2, return_indices=True), 2, output_size=a.shape)):
        out = fn(xc)
        assert out.device.type == "cuda"
        np.testing.assert_allclose(out.to("cpu").numpy(), fn(x).numpy(), rtol=1e-6)


def test_pooling_module_attributes_and_repr_as_torch():
    for name, args in [("MaxPool3d", (3,)), ("AvgPool3d", ((1, 2, 2), None, 0, True)), ("LPPool1d", (2, 3)),
                       ("LPPool3d", (1.5, 2, 1, True)), ("AdaptiveMaxPool2d", ((3, None), True)),
                       ("AdaptiveAvgPool3d", (2,)), ("MaxUnpool1d", (3,)), ("MaxUnpool2d", (2, 1)),
                       ("MaxUnpool3d", ((1, 2, 3), None, 1)), ("BatchNorm3d", (4,))]:
        t, e = getattr(torch.nn, name)(*args), getattr(ember.nn, name)(*args)
        assert e.extra_repr() == t.extra_repr(), name
        for attr in ("kernel_size", "stride", "padding", "output_size", "return_indices", "norm_type", "ceil_mode"):
            assert getattr(e, attr, None) == getattr(t, attr, None), (name, attr)


POOL_ND_ERRORS = [
    (lambda F: F.max_pool3d(ember.zeros(1, 5, 6), 2), ValueError, "max_pool3d: expected a 5-D input, got shape (1, 5, 6)"),
    (lambda F: F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), (2, 2)), ValueError,
     "kernel_size must be an int or a tuple of 3 ints, got (2, 2)"),
    (lambda F: F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), 2, padding=2), ValueError,
     "max_pool3d: pad should be at most half of effective kernel size, got padding=(2, 2, 2), kernel_size=(2, 2, 2)"),
    (lambda F: F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), 5), RuntimeError,
     "max_pool3d: input (1, 1, 4, 4, 4) is too small for kernel (5, 5, 5), padding (0, 0, 0)"),
    (lambda F: F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), 0, 1), RuntimeError,
     "max_pool3d: kernel size should be greater than zero, got kernel_size=(0, 0, 0)"),
    (lambda F: F.max_pool2d(ember.zeros(1, 1, 4, 4), 2, stride=0), RuntimeError,
     "max_pool2d: stride should be greater than zero, got stride=(0, 0)"),
    (lambda F: F.max_pool1d(ember.zeros(1, 1, 4), 2, dilation=0), RuntimeError,
     "max_pool1d: dilation should be greater than zero, got dilation=(0,)"),
    (lambda F: F.avg_pool3d(ember.zeros(1, 1, 4, 4, 4), 2, padding=-1), RuntimeError,
     "avg_pool3d: pad must be non-negative, got padding=(-1, -1, -1)"),
    (lambda F: F.avg_pool2d(ember.zeros(1, 1, 4, 4), 2, divisor_override=0), RuntimeError,
     "avg_pool2d: divisor must be not zero, got divisor_override=0"),
    (lambda F: F.avg_pool3d(ember.zeros(1, 1, 4, 4), 2), RuntimeError,
     "avg_pool3d: input image (1, 4, 4) is smaller than kernel size (2, 2, 2)"),
    (lambda F: F.avg_pool3d(ember.zeros(1, 1, 2, 4, 4), 3, padding=1), RuntimeError,   # padding does not count
     "avg_pool3d: input image (2, 4, 4) is smaller than kernel size (3, 3, 3)"),
    (lambda F: F.avg_pool3d(ember.zeros(4, 4, 4), 2), ValueError, "avg_pool3d: expected a 5-D input, got shape (4, 4, 4)"),
    (lambda F: F.adaptive_avg_pool3d(ember.zeros(4, 4, 4), 2), ValueError,
     "adaptive_avg_pool3d: expected a 4-D or 5-D input, got shape (4, 4, 4)"),
    (lambda F: F.adaptive_avg_pool3d(ember.zeros(1, 2, 4, 4, 4), (2, 2)), RuntimeError,
     "adaptive_avg_pool3d: output_size must be an int or a tuple of 3 ints (None: the input's size), got (2, 2)"),
    (lambda F: F.adaptive_avg_pool2d(ember.zeros(1, 2, 4, 4), (-1, 2)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be non-negative, got (-1, 2)"),
    (lambda F: F.adaptive_max_pool2d(ember.zeros(2, 3, 0, 4), 2), RuntimeError,
     "adaptive_max_pool2d: expected input to have non-zero size for non-batch dimensions, got shape (2, 3, 0, 4)"),
    (lambda F: F.adaptive_avg_pool1d(ember.zeros(2, 3, 0), 2), RuntimeError,
     "adaptive_avg_pool1d: expected input to have non-zero size for non-batch dimensions, got shape (2, 3, 0)"),
    (lambda F: F.adaptive_max_pool1d(ember.zeros(7), 2), ValueError,
     "adaptive_max_pool1d: expected a 2-D or 3-D input, got shape (7,)"),
    (lambda F: F.adaptive_max_pool1d(ember.zeros(1, 7), None), TypeError,
     "adaptive_max_pool1d: output_size must be an int or a tuple of one int, got None"),
    (lambda F: F.adaptive_max_pool1d(ember.zeros(1, 7), (3, 2)), RuntimeError,
     "adaptive_max_pool1d: output_size must be an int or a tuple of 1 ints (None: the input's size), got (3, 2)"),
    (lambda F: F.adaptive_max_pool2d(ember.zeros(7, 5), 2), ValueError,
     "adaptive_max_pool2d: expected a 3-D or 4-D input, got shape (7, 5)"),
    (lambda F: F.adaptive_max_pool3d(ember.zeros(1, 2, 4, 5, 6), (2, 2)), RuntimeError,
     "adaptive_max_pool3d: output_size must be an int or a tuple of 3 ints (None: the input's size), got (2, 2)"),
    (lambda F: F.adaptive_max_pool3d(ember.zeros(1, 2, 4, 5, 6), -1), RuntimeError,
     "adaptive_max_pool3d: output_size must be non-negative, got (-1, -1, -1)"),
    (lambda F: F.lp_pool3d(ember.zeros(2, 5, 5, 5), 2, 6), RuntimeError,
     "lp_pool3d: input image (5, 5, 5) is smaller than kernel size (6, 6, 6)"),
    (lambda F: F.lp_pool2d(ember.zeros(2, 5, 5), 2, 2, stride=0), RuntimeError,
     "lp_pool2d: stride should be greater than zero, got stride=(0, 0)"),
    (lambda F: F.max_unpool2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 2).long() + 16, 2), RuntimeError,
     "max_unpool2d: found an invalid max index: 16 (output volumes are of size 4x4)"),
    (lambda F: F.max_unpool3d(ember.zeros(1, 2, 2, 2), ember.zeros(1, 2, 2, 2).long() - 2, 2), RuntimeError,
     "max_unpool3d: found an invalid max index: -2 (output volumes are of size 4x4x4)"),
    (lambda F: F.max_unpool1d(ember.zeros(1, 1, 2), ember.zeros(1, 1, 2), 2), RuntimeError,
     "max_unpool1d: elements in indices should be type int64, got float32"),
    (lambda F: F.max_unpool2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 1).long(), 2), RuntimeError,
     "max_unpool2d: expected shape of indices to be same as that of the input tensor ((1, 1, 2, 2)) but got "
     "indices tensor with shape: (1, 1, 2, 1)"),
    (lambda F: F.max_unpool2d(ember.zeros(2, 2), ember.zeros(2, 2).long(), 2), ValueError,
     "max_unpool2d: expected a 3-D or 4-D input, got shape (2, 2)"),
    (lambda F: F.max_unpool2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 2).long(), 2, output_size=(6, 5)), ValueError,
     'max_unpool2d: invalid output_size "(6, 5)" (dim 0 must be between 2 and 6)'),
    (lambda F: F.max_unpool2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 2).long(), 2, output_size=(5,)), ValueError,
     "max_unpool2d: output_size should be a sequence containing 2 or 4 elements, but it has a length of '1'"),
    (lambda F: F.max_unpool2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 2, 2).long(), 2, padding=3), ValueError,
     "max_unpool2d: output_size must contain non-negative spatial dimensions, but got output_size[0]=-2"),
    (lambda F: F.max_pool1d(ember.zeros(2, 2, 0), 2, 2, 1, return_indices=True), RuntimeError,
     "max_pool1d: expected the input's non-batch dimensions to have positive length, got shape (2, 2, 0)"),
    (lambda F: F.max_pool1d(ember.zeros(2, 2, 0), 2, 2, 1), RuntimeError,
     "max_pool1d: expected the input's non-batch dimensions to have positive length, got shape (2, 2, 0)"),
    (lambda F: F.max_pool3d(ember.zeros(2, 2, 0, 3, 0), 2, 3, 1, return_indices=True), RuntimeError,
     "max_pool3d: expected the input's non-batch dimensions to have positive length, got shape (2, 2, 0, 3, 0)"),
    (lambda F: F.max_pool2d(ember.zeros(2, 0, 3, 3), 2), RuntimeError,
     "max_pool2d: expected the input's non-batch dimensions to have positive length, got shape (2, 0, 3, 3)"),
]


@pytest.mark.parametrize("k", range(len(POOL_ND_ERRORS)))
def test_nd_pooling_errors_exactly(k):
    call, exc, message = POOL_ND_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message)


@pytest.mark.parametrize("k", range(len(POOL_ND_ERRORS)))
def test_torch_rejects_the_same_pooling_calls(k, monkeypatch):
    # each case above is a call torch rejects too (torch raises RuntimeError for padding > kernel / 2 and
    # for a wrong-rank input where Ember raises ValueError, as its max_pool1d/2d always did)
    call = POOL_ND_ERRORS[k][0]
    monkeypatch.setitem(call.__globals__, "ember", torch)   # ember.zeros(...).long() as torch's
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        call(torch.nn.functional)


# ------------------------------------------------------------------ NaN and infinities
@pytest.mark.parametrize("fn,shape", [
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 3), (2, 2, 8)),        # overlapping windows
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 5), (2, 2, 7)),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 4), (2, 2, 8)),        # equal windows
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 11), (2, 2, 4)),       # upsampling
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 8), (2, 2, 4)),        # each value twice
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (2, 3)), (2, 2, 8, 12)),   # equal windows of 4
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (3, 4)), (2, 2, 5, 7)),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 1), (2, 2, 5, 7)),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, (3, 2, 4)), (1, 2, 7, 4, 6)),
    (lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, (2, None, 5)), (2, 5, 3, 8)),
], ids=["1d_overlap", "1d_7to5", "1d_equal", "1d_up", "1d_repeat", "2d_equal_wide", "2d", "2d_global", "3d", "3d_none_unbatched"])
def test_adaptive_avg_pool_nan_and_inf_stay_in_their_windows(fn, shape):
    # an output is NaN or infinite only when its own window holds one (an averaging matrix's zeros
    # times a NaN elsewhere would spread it over the whole row)
    t_out, _ = check_op(fn, with_specials(shape))
    assert np.isfinite(t_out.detach().numpy()).any()


def test_max_unpool_to_an_empty_default_size_returns_it_as_torch():
    # kernel 2, padding 1 over one position: the default output size is (1 - 1) * s + 2 - 2 = 0; torch
    # returns the empty result without reading the indices (Ember raised "invalid max index")
    for nd, shape in ((1, (2, 2, 1)), (2, (2, 2, 6, 1)), (3, (1, 2, 1, 4, 4))):
        x = np.random.default_rng(0).standard_normal(shape)
        outs = []
        for lib in (torch, ember):
            F = lib.nn.functional
            o, i = getattr(F, f"max_pool{nd}d")(lib.tensor(x), 2, stride=3, padding=1, return_indices=True)
            outs.append(tuple(getattr(F, f"max_unpool{nd}d")(o, i, 2, stride=3, padding=1).shape))
        assert outs[0] == outs[1] and 0 in outs[1]


# ties, NaN and infinities (small integers, so ties are many): a window holding NaN gives NaN with its
# index and gradient at its LAST NaN (torch's CPU kernels: `val > max || isnan(val)`); a window of -infs
# its first -inf inside the input, never a padding position before it
_SPECIAL = np.round(np.random.default_rng(5).standard_normal((2, 3, 5, 6, 7)) * 1.5)
_u = np.random.default_rng(6).random(_SPECIAL.shape)
_SPECIAL[_u < 0.1] = np.nan
_SPECIAL[(_u >= 0.1) & (_u < 0.13)] = np.inf
_SPECIAL[(_u >= 0.13) & (_u < 0.25)] = -np.inf


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2, stride=2, padding=1,
                                                                               dilation=2, ceil_mode=True),
                                dict(kernel_size=3)], ids=["overlap", "dilated_ceil", "disjoint"])
def test_max_pool_nan_and_infinities_as_torch(nd, kw):
    x = _SPECIAL.reshape(2, 3, -1)[:, :, :30].reshape((2, 3) + ((30,), (5, 6), (5, 6, 7))[nd - 1][:nd]) \
        if nd < 3 else _SPECIAL
    check_op(lambda lib, t: getattr(lib.nn.functional, f"max_pool{nd}d")(t, **kw), x)
    check_op(lambda lib, t: getattr(lib.nn.functional, f"max_pool{nd}d")(t, return_indices=True, **kw), x)


@pytest.mark.parametrize("nd,size", [(1, 4), (2, (3, 4)), (3, (2, 4, 3))])
def test_adaptive_max_pool_nan_and_infinities_as_torch(nd, size):
    x = _SPECIAL[:, :, 0, 0] if nd == 1 else _SPECIAL[:, :, 0] if nd == 2 else _SPECIAL
    check_op(lambda lib, t: getattr(lib.nn.functional, f"adaptive_max_pool{nd}d")(t, size, return_indices=True), x)
# ------------------------------------------------------------------ fractional max pooling
from helpers import NoGrad   # noqa: E402

S2 = RNG.random((2, 3, 2))            # one sample per plane and axis, torch's (W, H) order
S3 = RNG.random((2, 3, 3))            # (T, H, W)
X5 = RNG.permutation(2 * 3 * 6 * 7 * 8).reshape(2, 3, 6, 7, 8) / 100.0

FRACTIONAL_CASES = [
    ("2d_size", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, 2, output_size=(5, 4), _random_samples=s),
     [X4, NoGrad(S2)]),
    ("2d_overlapping", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, 3, output_size=(7, 6),
                                                                             _random_samples=s), [X4, NoGrad(S2)]),
    ("2d_rect_ratio", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, (3, 2), output_ratio=(0.5, 0.7),
                                                                            _random_samples=s), [X4, NoGrad(S2)]),
    ("2d_indices", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, 2, output_size=4, return_indices=True,
                                                                         _random_samples=s), [X4, NoGrad(S2)]),
    ("2d_with_indices", lambda L, x, s: L.nn.functional.fractional_max_pool2d_with_indices(
        x, 2, output_size=(8, 7), _random_samples=s), [X4, NoGrad(S2)]),     # the largest output: starts 0, 1, ...
    ("2d_output_one", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, 2, output_size=1, _random_samples=s),
     [X4, NoGrad(S2)]),
    ("2d_unbatched", lambda L, x, s: L.nn.functional.fractional_max_pool2d(x, 2, output_size=(4, 3), return_indices=True,
                                                                           _random_samples=s), [X4[0], NoGrad(S2[:1])]),
    ("2d_more_samples_than_batch", lambda L, x, s: L.nn.functional.fractional_max_pool2d(
        x, 2, output_size=3, _random_samples=s), [X4[:1], NoGrad(S2)]),
    ("3d_size", lambda L, x, s: L.nn.functional.fractional_max_pool3d(x, 2, output_size=(3, 4, 5), return_indices=True,
                                                                      _random_samples=s), [X5, NoGrad(S3)]),
    ("3d_ratio_rect", lambda L, x, s: L.nn.functional.fractional_max_pool3d_with_indices(
        x, (2, 3, 1), output_ratio=0.5, _random_samples=s), [X5, NoGrad(S3)]),
    ("3d_unbatched", lambda L, x, s: L.nn.functional.fractional_max_pool3d(x, 2, output_size=(2, 3, 4),
                                                                           _random_samples=s), [X5[0], NoGrad(S3[:1])]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in FRACTIONAL_CASES], ids=[c[0] for c in FRACTIONAL_CASES])
def test_fractional_max_pool_matches_torch_with_the_same_samples(fn, inputs):
    check_op(fn, *inputs)


def test_fractional_max_pool_modules_match_torch():
    check_module(lambda lib: lib.nn.FractionalMaxPool2d(3, output_size=(5, 4), return_indices=True,
                                                        _random_samples=lib.tensor(S2, dtype=lib.float64)),
                 X4, dtypes=("float64",))
    check_module(lambda lib: lib.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.6),
                                                        _random_samples=lib.tensor(S3, dtype=lib.float64)),
                 X5, dtypes=("float64",))


def test_fractional_max_pool_draws_from_embers_generator():
    x = ember.tensor(X4, dtype=ember.float32)
    pool = ember.nn.FractionalMaxPool2d(2, output_ratio=0.5)
    ember.manual_seed(3)
    a = pool(x)
    ember.manual_seed(3)
    samples = ember.rand(2, 3, 2)
    ember.manual_seed(3)
    b, idx = ember.nn.functional.fractional_max_pool2d(x, 2, output_ratio=0.5, return_indices=True)
    assert a.shape == (2, 3, 4, 4) and idx.shape == (2, 3, 4, 4) and idx.dtype is ember.int64
    assert (a == b).all().item()
    fixed = ember.nn.functional.fractional_max_pool2d(x, 2, output_ratio=0.5, _random_samples=samples)
    assert (a == fixed).all().item()      # the draw is ember.rand(N, C, 2) of the input's dtype, as torch's
    draws = {tuple(ember.nn.functional.fractional_max_pool2d(x, 2, output_size=(6, 5), return_indices=True)[1]
                   .flatten().tolist()) for _ in range(6)}
    assert len(draws) > 1                 # unseeded calls differ
    t = torch.nn.FractionalMaxPool2d(2, output_ratio=0.5)(torch.tensor(X4, dtype=torch.float32))
    assert tuple(t.shape) == a.shape
    assert ember.nn.functional.fractional_max_pool3d(ember.tensor(X5), 2, output_size=(3, 3, 3)).shape == (2, 3, 3, 3, 3)


def test_fractional_max_pool_rejects_bad_arguments():
    x = ember.tensor(X4)
    F = ember.nn.functional
    s = ember.tensor(S2)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        torch.nn.functional.fractional_max_pool2d(torch.tensor(X4), 2)
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2), ValueError,
                   "fractional_max_pool2d: requires specifying either an output_size or an output_ratio")
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 9"):
        torch.nn.functional.fractional_max_pool2d(torch.tensor(X4), 2, output_size=(9, 4))
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2, output_size=(9, 4)), RuntimeError,
                   "fractional_max_pool2d: pool height 2 too large relative to input height 9 (output height 9)")
    raises_exactly(lambda: F.fractional_max_pool3d(ember.tensor(X5), 2, output_size=(5, 3, 3)), RuntimeError,
                   "fractional_max_pool3d: pool time 2 too large relative to input time 6 (output time 5)")
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=ember.rand(2, 3, 3,
                                                                                                     dtype=ember.float64)),
                   RuntimeError, "fractional_max_pool2d: _random_samples must have shape (N, C, 2), got (2, 3, 3)")
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[:1]), RuntimeError,
                   "fractional_max_pool2d: _random_samples has 1 rows, fewer than the input's batch 2")
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[:, :2]), RuntimeError,
                   "fractional_max_pool2d: _random_samples has 2 channels, the input 3")
    raises_exactly(lambda: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s.float()), RuntimeError,
                   "fractional_max_pool2d: expected _random_samples of the input's dtype float64, got float32")
    raises_exactly(lambda: F.fractional_max_pool2d(x.long(), 2, output_size=3), TypeError,
                   "fractional_max_pool2d: expected a floating point input, got int64")
    raises_exactly(lambda: F.fractional_max_pool2d(x[0, 0], 2, output_size=3), ValueError,
                   "fractional_max_pool2d: expected a 3-D or 4-D input, got shape (9, 8)")
    raises_exactly(lambda: F.fractional_max_pool2d(ember.zeros(2, 0, 5, 5), 2, output_size=3), RuntimeError,
                   "fractional_max_pool2d: expected input to have non-zero size for non-batch dimensions, got shape "
                   "(2, 0, 5, 5)")
    raises_exactly(lambda: F.fractional_max_pool2d(x, 0, output_size=3), RuntimeError,
                   "fractional_max_pool2d: kernel_size must be greater than zero, got kernel_size=(0, 0)")
    for kwargs, message in [({}, "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio"),
                            (dict(output_size=3, output_ratio=0.5), "only one of output_size and output_ratio"),
                            (dict(output_ratio=1.0), r"output_ratio must be between 0 and 1 \(got 1.0\)")]:
        with pytest.raises(ValueError, match=message):
            torch.nn.FractionalMaxPool2d(2, **kwargs)
        with pytest.raises(ValueError, match=message):
            ember.nn.FractionalMaxPool2d(2, **kwargs)
    assert F.fractional_max_pool2d(x[:0], 2, output_size=3).shape == (0, 3, 3, 3)   # an empty batch, as torch
