"""ember/nn/pooling.py against torch."""
import numpy as np
import pytest

from helpers import check_op
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
