"""ember/nn/pooling.py against torch."""
import numpy as np
import pytest

from helpers import check_op, raises_exactly
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
