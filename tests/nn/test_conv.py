"""ember/nn/conv.py (and ember/ops/layers.py) against torch, one line per configuration."""
import numpy as np
import pytest

import torch

import ember
from helpers import check_op, raises_exactly, with_specials
from .nn_helpers import check_module

CASES = [
    ("conv1d", lambda lib: lib.nn.Conv1d(3, 4, 3), [(2, 3, 9)]),
    ("conv1d_stride_pad_dil", lambda lib: lib.nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2), [(2, 4, 11)]),
    ("conv1d_same_even", lambda lib: lib.nn.Conv1d(2, 3, 4, padding="same"), [(2, 2, 7)]),
    ("conv1d_unbatched", lambda lib: lib.nn.Conv1d(2, 3, 3), [(2, 7)]),
    ("conv2d", lambda lib: lib.nn.Conv2d(3, 4, 3), [(2, 3, 7, 6)]),
    ("conv2d_pad", lambda lib: lib.nn.Conv2d(3, 4, 3, padding=1), [(2, 3, 6, 6)]),
    ("conv2d_stride", lambda lib: lib.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0)), [(2, 3, 8, 7)]),
    ("conv2d_dilation", lambda lib: lib.nn.Conv2d(2, 3, 3, dilation=2, padding=1), [(1, 2, 9, 9)]),
    ("conv2d_groups", lambda lib: lib.nn.Conv2d(4, 6, 3, groups=2, bias=False), [(2, 4, 6, 6)]),
    ("conv2d_depthwise", lambda lib: lib.nn.Conv2d(3, 3, 3, groups=3, padding=1), [(2, 3, 5, 5)]),
    ("conv2d_same", lambda lib: lib.nn.Conv2d(2, 3, (3, 4), padding="same", dilation=(1, 2)), [(2, 2, 6, 9)]),
    ("conv2d_valid", lambda lib: lib.nn.Conv2d(2, 3, 2, padding="valid"), [(2, 2, 5, 5)]),
    ("conv2d_reflect", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [(2, 2, 5, 5)]),
    ("conv2d_replicate", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=2, padding_mode="replicate"), [(1, 2, 5, 5)]),
    ("conv2d_circular", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), [(1, 2, 5, 5)]),
    ("conv2d_unbatched", lambda lib: lib.nn.Conv2d(2, 3, 3), [(2, 5, 5)]),
    ("convT1d", lambda lib: lib.nn.ConvTranspose1d(3, 2, 3, stride=2), [(2, 3, 5)]),
    ("convT2d", lambda lib: lib.nn.ConvTranspose2d(3, 4, 3), [(2, 3, 5, 5)]),
    ("convT2d_stride_pad_outpad", lambda lib: lib.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), [(2, 3, 4, 5)]),
    ("convT2d_groups_dil", lambda lib: lib.nn.ConvTranspose2d(4, 6, (2, 3), groups=2, dilation=2, bias=False), [(1, 4, 4, 4)]),
    ("convT3d", lambda lib: lib.nn.ConvTranspose3d(3, 2, 2, stride=2, padding=1, output_padding=1), [(1, 3, 3, 3, 3)]),
    ("convT3d_groups_unbatched", lambda lib: lib.nn.ConvTranspose3d(4, 2, (1, 2, 2), groups=2), [(4, 2, 3, 3)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_conv_layers(build, inputs):
    check_module(build, *inputs, modes=("train",))


def test_conv_transpose_output_size():
    check_module(lambda lib: lib.nn.ConvTranspose2d(2, 3, 3, stride=2), (1, 2, 4, 4), modes=("train",),
                 call=lambda m, x: m(x, output_size=[10, 10]))


def test_conv_double_backward():
    # second derivative through Conv, ConvInputGrad and ConvWeightGrad
    def fn(lib, x, w):
        y = lib.nn.functional.conv2d(x, w, stride=2, padding=1)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum()
    check_op(fn, (1, 2, 5, 5), (3, 2, 3, 3), dtypes=("float64",))


def test_conv_gradcheck():
    x = ember.randn(1, 2, 5, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 1, 2, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: ember.nn.functional.conv2d(a, b, groups=2, dilation=(2, 1)),
                                    (x, w))


def test_conv_errors():
    m = ember.nn.Conv2d(3, 4, 3)
    with pytest.raises(RuntimeError, match="channels"):
        m(ember.randn(1, 2, 5, 5))
    with pytest.raises(ValueError, match="divisible"):
        ember.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        ember.nn.Conv2d(3, 4, 3, stride=2, padding="same")


def test_conv_repr_and_init():
    m = ember.nn.Conv2d(16, 33, (3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))
    assert repr(m) == "Conv2d(16, 33, kernel_size=(3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))"
    bound = 1 / np.sqrt(16 * 15)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound


def test_bfloat16_conv2d_returns_bfloat16():
    # issue 8 (2b): F.conv2d gave float32 for bfloat16 (its im2col matmul); output and grads are bfloat16
    check_op(lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, padding=1), (2, 3, 5, 5), (4, 3, 3, 3), (4,),
             dtypes=("bfloat16",), atol=3e-2, rtol=3e-2, grad_atol=1e-1, grad_rtol=5e-2)


CONV3D = [
    ("conv3d", lambda lib: lib.nn.Conv3d(2, 3, 2), [(2, 2, 4, 3, 5)]),
    ("conv3d_stride_pad_groups", lambda lib: lib.nn.Conv3d(4, 2, (3, 1, 2), stride=(2, 1, 1), padding=(1, 0, 1), groups=2), [(1, 4, 5, 3, 4)]),
    ("conv3d_dilation_same_nobias", lambda lib: lib.nn.Conv3d(2, 2, 3, padding="same", dilation=(1, 2, 1), bias=False), [(1, 2, 3, 6, 4)]),
    ("conv3d_unbatched", lambda lib: lib.nn.Conv3d(2, 3, 2), [(2, 3, 3, 3)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CONV3D], ids=[c[0] for c in CONV3D])
def test_conv3d(build, inputs):
    check_module(build, *inputs, modes=("train",))


def test_functional_conv3d_and_conv_transpose1d():
    check_op(lambda lib, x, w, b: lib.nn.functional.conv3d(x, w, b, stride=2, padding=1), (2, 3, 5, 4, 4), (2, 3, 2, 2, 3), (2,))
    check_op(lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1), (2, 3, 5), (3, 4, 3))
    check_op(lambda lib, x, w, b: lib.nn.functional.conv_transpose1d(x, w, b, groups=2, dilation=2), (1, 4, 6), (4, 1, 2), (2,))
    # output_padding >= stride (allowed below the dilation): a reshape error, or a gradient of the wrong shape
    check_op(lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, padding=2, output_padding=1, groups=2,
                                                                  dilation=2), (2, 2, 3), (2, 2, 2))
    check_op(lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, output_padding=1, groups=2, dilation=2),
             (2, 2, 1, 1), (2, 1, 3, 3), (2,))
    check_op(lambda lib, x, w, b: lib.nn.functional.conv_transpose3d(x, w, b, stride=(1, 2, 2), padding=1, groups=2,
                                                                      dilation=(2, 1, 1), output_padding=(0, 1, 1)),
             (2, 4, 3, 3, 2), (4, 1, 3, 2, 2), (2,))


BAD_CONV_ARGS = {   # the same bad argument must raise the same exception type as torch
    "groups_zero": lambda L: L.nn.Conv2d(2, 2, 3, groups=0),
    "out_not_divisible": lambda L: L.nn.Conv1d(2, 3, 3, groups=2),
    "padding_mode": lambda L: L.nn.Conv2d(2, 2, 3, padding_mode="mirror"),
    "padding_string": lambda L: L.nn.Conv3d(2, 2, 3, padding="full"),
    "transpose_padding_mode": lambda L: L.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
    "transpose_output_size": lambda L: L.nn.ConvTranspose1d(2, 2, 3, stride=2)(L.ones(1, 2, 4), output_size=[20]),
}


@pytest.mark.parametrize("name", list(BAD_CONV_ARGS))
def test_bad_conv_arguments_raise_like_torch(name):
    import torch
    with pytest.raises(Exception) as theirs:
        BAD_CONV_ARGS[name](torch)
    with pytest.raises(type(theirs.value)):
        BAD_CONV_ARGS[name](ember)


def test_conv_reprs_match_torch():
    import torch
    for build in (lambda L: L.nn.Conv1d(2, 4, 3, padding="same", groups=2, bias=False, padding_mode="circular"),
                  lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1, dilation=2),
                  lambda L: L.nn.Conv3d(1, 2, (1, 2, 3), padding=(0, 1, 1))):
        assert repr(build(ember)) == repr(build(torch))


def test_functional_conv_errors_name_the_op_and_shapes():
    F = ember.nn.functional
    x = ember.randn(1, 4, 5, 5)
    cases = [
        (ValueError, r"conv2d: expected a 4-D input, got shape \(5, 5\)", lambda: F.conv2d(ember.randn(5, 5), ember.randn(2, 4, 3, 3))),
        (ValueError, r"conv2d: expected a 4-D weight, got shape \(2, 4, 3\)", lambda: F.conv2d(x, ember.randn(2, 4, 3))),
        (RuntimeError, r"conv2d: input \(1, 4, 5, 5\) has 4 channels but weight \(2, 3, 3, 3\) with groups=1 expects 3",
         lambda: F.conv2d(x, ember.randn(2, 3, 3, 3))),
        (ValueError, "conv2d: padding='same' is not supported for strided", lambda: F.conv2d(x, ember.randn(2, 4, 3, 3), stride=2, padding="same")),
        (ValueError, "padding must be 'valid', 'same', an int or a tuple, got 'full'", lambda: F.conv2d(x, ember.randn(2, 4, 3, 3), padding="full")),
        (ValueError, r"stride must be an int or a tuple of 2 ints, got \(1, 1, 1\)", lambda: F.conv2d(x, ember.randn(2, 4, 3, 3), stride=(1, 1, 1))),
        (RuntimeError, r"conv2d: padded input size \(5, 5\) is smaller than the kernel size \(7, 7\) \(dilated: \(7, 7\)\)",
         lambda: F.conv2d(x, ember.randn(2, 4, 7, 7))),
        (RuntimeError, r"conv_transpose2d: input \(1, 4, 5, 5\) has 4 channels but weight \(3, 2, 3, 3\) expects 3",
         lambda: F.conv_transpose2d(x, ember.randn(3, 2, 3, 3))),
        (ValueError, "conv_transpose2d: output_padding must be smaller than either stride or dilation",
         lambda: F.conv_transpose2d(x, ember.randn(4, 2, 3, 3), output_padding=1)),
        (RuntimeError, r"fold: input.shape\[1\]=5 is not divisible by the kernel size 4", lambda: F.fold(ember.randn(1, 5, 4), (3, 3), 2)),
        (RuntimeError, r"fold: expected 4 blocks for output_size \(3, 3\), got 5", lambda: F.fold(ember.randn(1, 8, 5), (3, 3), 2)),
    ]
    for exc, msg, call in cases:
        with pytest.raises(exc, match=msg):
            call()


# The channels-last im2col paths (ember/ops/layers.py): one GEMM per group, depthwise without a col
# matrix, zero padding and bias inside the primitive. Odd sizes, strides, dilation, groups, every padding
# mode, 1x1 and depthwise (MobileNetV2's) convolutions, batch 1.
FAST_PATH_CASES = [
    ("odd_sizes_stride", lambda lib: lib.nn.Conv2d(3, 5, (3, 5), stride=(2, 3), padding=(1, 2)), [(2, 3, 13, 11)]),
    ("dilation_groups_pad", lambda lib: lib.nn.Conv2d(6, 9, 3, dilation=(2, 3), groups=3, padding=(2, 1)), [(1, 6, 10, 9)]),
    ("pointwise_1x1", lambda lib: lib.nn.Conv2d(8, 5, 1), [(2, 8, 5, 7)]),
    ("pointwise_1x1_stride2", lambda lib: lib.nn.Conv2d(4, 6, 1, stride=2, bias=False), [(2, 4, 7, 6)]),
    ("depthwise_stride2", lambda lib: lib.nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6, bias=False), [(2, 6, 9, 8)]),
    ("depthwise_multiplier", lambda lib: lib.nn.Conv2d(3, 6, 3, padding=1, groups=3), [(2, 3, 6, 5)]),
    ("depthwise_dilated", lambda lib: lib.nn.Conv2d(4, 4, (3, 2), dilation=2, padding=(2, 1), groups=4), [(1, 4, 8, 7)]),
    ("batch1_7x7_stride2", lambda lib: lib.nn.Conv2d(3, 4, 7, stride=2, padding=3, bias=False), [(1, 3, 15, 16)]),
    ("reflect_stride", lambda lib: lib.nn.Conv2d(2, 3, 3, stride=2, padding=(1, 2), padding_mode="reflect"), [(2, 2, 7, 8)]),
    ("replicate_groups", lambda lib: lib.nn.Conv2d(4, 4, 3, padding=1, groups=2, padding_mode="replicate"), [(1, 4, 5, 6)]),
    ("circular_dilation", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=2, dilation=2, padding_mode="circular"), [(2, 2, 6, 7)]),
    ("same_asymmetric_groups", lambda lib: lib.nn.Conv2d(4, 6, (2, 4), padding="same", groups=2), [(2, 4, 5, 7)]),
    ("conv1d_depthwise", lambda lib: lib.nn.Conv1d(4, 8, 3, stride=2, padding=1, groups=4), [(2, 4, 9)]),
    ("conv3d_depthwise", lambda lib: lib.nn.Conv3d(3, 3, 2, padding=1, groups=3), [(1, 3, 3, 4, 3)]),
    # channels-last activations between layers: the second conv reads the first's output in place
    ("stack_conv_bn_relu_pool", lambda lib: lib.nn.Sequential(
        lib.nn.Conv2d(3, 8, 3, padding=1, bias=False), lib.nn.BatchNorm2d(8), lib.nn.ReLU(),
        lib.nn.MaxPool2d(3, 2, 1), lib.nn.Conv2d(8, 8, 3, padding=1, groups=8), lib.nn.Conv2d(8, 4, 1)),
     [(2, 3, 9, 10)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in FAST_PATH_CASES], ids=[c[0] for c in FAST_PATH_CASES])
def test_conv_fast_paths(build, inputs):
    check_module(build, *inputs, modes=("train",))


@pytest.mark.parametrize("groups,cin,cout", [(1, 2, 3), (2, 4, 2), (3, 3, 6)], ids=["dense", "groups", "depthwise"])
def test_conv_double_backward_padded_grouped(groups, cin, cout):
    # second derivatives through the padded, grouped and depthwise paths (padding is inside Conv now)
    def fn(lib, x, w, b):
        y = lib.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=(2, 1), dilation=(1, 2), groups=groups)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum()
    check_op(fn, (2, cin, 5, 6), (cout, cin // groups, 3, 2), (cout,), dtypes=("float64",))


def test_conv_output_is_float32_and_channels_last():
    # float32 in, float32 out (no silent float64); the output is a channels-last view as torch's
    # channels_last memory format, and the next conv reads it as it is
    x = ember.randn(2, 3, 8, 8)
    w = ember.randn(4, 3, 3, 3)
    y = ember.nn.functional.conv2d(x, w, ember.randn(4), padding=1)
    assert y.dtype == ember.float32
    assert y.numpy().transpose(0, 2, 3, 1).flags.c_contiguous
    z = ember.nn.functional.conv2d(y, ember.randn(5, 4, 1, 1))
    assert z.dtype == ember.float32 and tuple(z.shape) == (2, 5, 8, 8)


WINOGRAD_CASES = [   # 3x3 stride-1 convs with enough channels and tiles take the Winograd F(2x2, 3x3) path
    ("pad1_odd", dict(padding=1), (2, 128, 15, 17)),
    ("valid_even", dict(padding=0), (2, 128, 18, 18)),
    ("pad2_nobias", dict(padding=2, bias=False), (1, 128, 20, 21)),
    ("asym", dict(padding=(0, 1)), (2, 128, 20, 15)),
]


@pytest.mark.parametrize("kw,shape", [c[1:] for c in WINOGRAD_CASES], ids=[c[0] for c in WINOGRAD_CASES])
def test_conv_winograd_path(kw, shape):
    from ember.ops import layers
    p = kw.get("padding", 0)
    p = (p, p) if isinstance(p, int) else p
    x = ember.randn(*shape)
    w = ember.randn(128, 128, 3, 3)
    assert layers._winograd_ok(x.numpy(), w.numpy(), (1, 1), (1, 1), 1, ((p[0], p[0]), (p[1], p[1])))
    check_module(lambda lib: lib.nn.Conv2d(128, 128, 3, **kw), shape, modes=("train",), dtypes=("float64", "float32"))


def test_conv_winograd_matches_im2col(monkeypatch):
    # the same conv through Winograd and through im2col, float32: equal to float32 rounding
    from ember.ops import layers
    x = ember.randn(2, 128, 16, 17)
    w = ember.randn(160, 128, 3, 3) * 0.05
    b = ember.randn(160)
    assert layers._winograd_ok(x.numpy(), w.numpy(), (1, 1), (1, 1), 1, ((1, 1), (1, 1)))
    fast = ember.nn.functional.conv2d(x, w, b, padding=1).numpy()
    monkeypatch.setattr(layers, "WINOGRAD", False)
    slow = ember.nn.functional.conv2d(x, w, b, padding=1).numpy()
    np.testing.assert_allclose(fast, slow, rtol=1e-4, atol=1e-4)


def test_conv_transpose_winograd_path():
    # conv_transpose2d is ConvInputGrad: 3x3 stride 1 with enough channels goes through Winograd too
    check_module(lambda lib: lib.nn.ConvTranspose2d(128, 128, 3, padding=1), (2, 128, 16, 16), modes=("train",))


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=(2, 1), dilation=(1, 2), padding=(0, 2))],
                         ids=["w4_first_layer", "strided_dilated"])
def test_conv_one_input_channel(kw):
    # one input channel: im2col copies one kernel offset at a time
    check_module(lambda lib: lib.nn.Conv2d(1, 4, 3, **kw), (3, 1, 9, 8), modes=("train",))


@pytest.mark.parametrize("kw,shapes", [
    (dict(stride=2, padding=1, groups=2), ((2, 8, 5, 5), (128, 4, 3, 3))),   # 64 outputs per group
    (dict(stride=2), ((2, 16, 6, 6), (64, 16, 1, 1))),                         # a ResNet downsample
    (dict(padding=(1, 0), dilation=(1, 2)), ((1, 3, 6, 7), (96, 3, 3, 2))),
])
def test_conv_weight_grad_with_many_output_channels(kw, shapes):
    """ConvWeightGrad computes g.T @ cols, laid out per filter, from 64 output channels per group on
    (fewer: cols.T @ g); Conv's weights are a transposed GEMM operand."""
    check_op(lambda L, x, w: L.nn.functional.conv2d(x, w, **kw), *shapes, grad_atol=1e-4)


@pytest.mark.parametrize("shapes,pad", [(((2, 3, 7, 9), (4, 3, 3, 3)), 0), (((2, 3, 7, 9), (4, 3, 3, 3)), 1),
                                        (((1, 5, 6, 5), (2, 5, 3, 3)), (1, 0)), (((3, 2, 4, 4), (3, 2, 3, 3)), 2)])
def test_conv_weight_grad_winograd(monkeypatch, shapes, pad):
    """ConvWeightGrad's Winograd F(3x3, 2x2) (layers._winograd_weight_grad), forced on small convs with odd
    output sizes (g padded to whole tiles) and asymmetric padding, float32 and float64, against torch."""
    from ember.ops import layers
    calls = []
    orig = layers._winograd_weight_grad
    monkeypatch.setattr(layers, "_winograd_weight_grad", lambda *a: (calls.append(1), orig(*a))[1])
    monkeypatch.setattr(layers, "_winograd_ok", lambda *a: True)
    monkeypatch.setattr(layers, "WGRAD_TILES", 1)
    check_op(lambda L, x, w: L.nn.functional.conv2d(x, w, padding=pad), *shapes, grad_atol=1e-4)
    assert len(calls) >= 2   # float32 and float64 (and check_op's dtype pass)


# ------------------------------------------------------------------ defaults, unfold/fold edges, op names
CONV_EDGES = [
    ("conv3d_defaults", lambda lib, x, w: lib.nn.functional.conv3d(x, w), [(1, 2, 4, 4, 3), (3, 2, 2, 2, 2)]),
    ("conv1d_defaults", lambda lib, x, w: lib.nn.functional.conv1d(x, w), [(2, 2, 7), (4, 2, 3)]),
    ("conv_transpose1d_defaults", lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w), [(2, 3, 5), (3, 2, 3)]),
    ("unfold_defaults", lambda lib, x: lib.nn.functional.unfold(x, (2, 3)), [(1, 2, 4, 5)]),
    ("fold_uneven_padding", lambda lib, x: lib.nn.functional.fold(x, (4, 5), (2, 3), padding=(2, 1)), [(2, 12, 35)]),
    ("fold_uneven_padding_stride", lambda lib, x: lib.nn.functional.fold(x, (5, 4), 2, padding=(1, 0), stride=(2, 1)), [(1, 8, 9)]),
    ("fold_tall_output", lambda lib, x: lib.nn.functional.fold(x, (6, 3), 3), [(1, 9, 4)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in CONV_EDGES], ids=[c[0] for c in CONV_EDGES])
def test_conv_edges(fn, inputs):
    check_op(fn, *inputs)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_unfold_and_fold_keep_the_dtype(dtype):
    dt = getattr(ember, dtype)
    x = ember.randn(1, 2, 4, 4).to(dt)
    cols = ember.nn.functional.unfold(x, 2)
    assert cols.dtype == dt and cols.shape == (1, 8, 9)
    back = ember.nn.functional.fold(cols, (4, 4), 2)
    assert back.dtype == dt and back.shape == (1, 2, 4, 4)


def test_unfold_and_fold_on_the_inputs_device(fake_cuda):
    x = ember.randn(1, 2, 4, 4)
    cols = ember.nn.functional.unfold(x.to("cuda"), 2, padding=1)
    back = ember.nn.functional.fold(cols, (4, 4), 2, padding=1)
    assert cols.device.type == "cuda" and back.device.type == "cuda"
    np.testing.assert_allclose(back.to("cpu").numpy(),
                               ember.nn.functional.fold(ember.nn.functional.unfold(x, 2, padding=1), (4, 4), 2,
                                                        padding=1).numpy(), rtol=1e-6)


CONV_ERRORS = [
    (lambda F: F.conv3d(ember.zeros(1, 2, 4, 4, 4), ember.zeros(3, 3, 2, 2, 2)), RuntimeError,
     "conv3d: input (1, 2, 4, 4, 4) has 2 channels but weight (3, 3, 2, 2, 2) with groups=1 expects 3"),
    (lambda F: F.conv_transpose1d(ember.zeros(1, 4, 5), ember.zeros(3, 2, 3)), RuntimeError,
     "conv_transpose1d: input (1, 4, 5) has 4 channels but weight (3, 2, 3) expects 3"),
    (lambda F: F.unfold(ember.zeros(1, 2, 4), 2), ValueError, "unfold: expected a 4-D input, got shape (1, 2, 4)"),
    (lambda F: F.unfold(ember.zeros(1, 2, 4, 4), (2, 2, 2)), ValueError,
     "kernel_size must be an int or a tuple of 2 ints, got (2, 2, 2)"),
    (lambda F: F.fold(ember.zeros(1, 4), (4, 4), 2), ValueError, "fold: expected a 3-D input, got shape (1, 4)"),
    (lambda F: F.fold(ember.zeros(1, 4, 5), (4, 4), (2, 2, 2)), ValueError,
     "kernel_size must be an int or a tuple of 2 ints, got (2, 2, 2)"),
    (lambda F: F.fold(ember.zeros(1, 4, 5), (4, 4, 4), 2), ValueError,
     "output_size must be an int or a tuple of 2 ints, got (4, 4, 4)"),
    (lambda F: F.fold(ember.zeros(1, 4, 5), (3, 4), 2), RuntimeError,
     "fold: expected 6 blocks for output_size (3, 4), got 5"),
]


@pytest.mark.parametrize("k", range(len(CONV_ERRORS)))
def test_conv_unfold_fold_errors_exactly(k):
    call, exc, message = CONV_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message)


CONV_T_EDGES = [
    ("conv_transpose1d_unbatched", lambda lib, x, w, b: lib.nn.functional.conv_transpose1d(x, w, b, 2, 1, 1, 1, 2), [(4, 5), (4, 3, 3), (3,)]),
    ("conv_transpose2d_unbatched_groups", lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, None, (2, 1), (1, 0), (1, 0), 2), [(4, 3, 3), (4, 1, 2, 3)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in CONV_T_EDGES], ids=[c[0] for c in CONV_T_EDGES])
def test_conv_transpose_unbatched(fn, inputs):
    check_op(fn, *inputs)


CONV_T_ERRORS = [
    (lambda F: F.conv_transpose2d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2, 2), stride=(1, 1, 1)), ValueError,
     "stride must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.conv_transpose2d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2, 2), padding=(1, 1, 1)), ValueError,
     "padding must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.conv_transpose2d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2, 2), output_padding=(0, 0, 0)),
     ValueError, "output_padding must be an int or a tuple of 2 ints, got (0, 0, 0)"),
    (lambda F: F.conv_transpose2d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2, 2), dilation=(1, 1, 1)), ValueError,
     "dilation must be an int or a tuple of 2 ints, got (1, 1, 1)"),
    (lambda F: F.conv_transpose2d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2, 2), groups=0), RuntimeError,
     "conv_transpose2d: groups must be a positive int, got 0"),
    (lambda F: F.conv_transpose2d(ember.zeros(3, 3, 3), ember.zeros(2, 1, 2, 2)), RuntimeError,
     "conv_transpose2d: input (1, 3, 3, 3) has 3 channels but weight (2, 1, 2, 2) expects 2"),
    (lambda F: F.conv_transpose1d(ember.zeros(1, 2, 3, 3), ember.zeros(2, 1, 2)), ValueError,
     "conv_transpose1d: expected a 3-D input, got shape (1, 2, 3, 3)"),
]


@pytest.mark.parametrize("k", range(len(CONV_T_ERRORS)))
def test_conv_transpose_errors_exactly(k):
    call, exc, message = CONV_T_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message)


@pytest.mark.parametrize("wrt", ["weight", "input"])
def test_conv_gradient_differentiated_in_the_other_operand_only(wrt):
    # ConvWeightGrad(x, v) and ConvInputGrad(v, w) with a constant upstream v: their own gradient goes
    # to x (resp. w) alone
    from helpers import NoGrad

    def fn(lib, x, w, v):
        y = lib.nn.functional.conv2d(x, w, stride=2, padding=1, groups=2)
        g, = lib.autograd.grad(y, w if wrt == "weight" else x, v, create_graph=True)
        return g
    check_op(fn, (2, 4, 5, 5), (6, 2, 3, 3), NoGrad((2, 6, 3, 3)), dtypes=("float64",))


@pytest.mark.parametrize("shapes", [((2, 3, 11, 8), (4, 3, 3, 3)), ((1, 2, 8, 5), (3, 2, 3, 3))],
                         ids=["odd_rows_even_columns", "even_rows_odd_columns"])
def test_conv_weight_grad_winograd_one_odd_output_dim(monkeypatch, shapes):
    """Winograd's weight gradient pads g to whole 2x2 tiles when either output dim is odd (here 9 rows and
    6 columns, or 6 rows and 3 columns), not only when both are."""
    from ember.ops import layers
    monkeypatch.setattr(layers, "_winograd_ok", lambda *a: True)
    monkeypatch.setattr(layers, "WGRAD_TILES", 1)
    check_op(lambda L, x, w: L.nn.functional.conv2d(x, w), *shapes, grad_atol=1e-4)


@pytest.mark.parametrize("n,h,w,taken", [(2, 15, 16, True), (2, 16, 15, True), (1, 31, 16, True), (1, 16, 16, False)],
                         ids=["128_tiles_odd_rows", "128_tiles_odd_columns", "128_tiles_tall", "64_tiles"])
def test_conv_weight_grad_takes_winograd_from_128_tiles(monkeypatch, n, h, w, taken):
    """The weight gradient of a Winograd-shaped conv (3x3, stride 1, 64 -> 64 channels) goes through
    Winograd from WGRAD_TILES (128) 2x2 tiles of the output (ceil of each dim over 2, times the batch) on,
    through im2col below; the same values either way."""
    from ember.ops import layers
    calls = []
    orig = layers._winograd_weight_grad
    monkeypatch.setattr(layers, "_winograd_weight_grad", lambda *a: (calls.append(1), orig(*a))[1])
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((n, 64, h, w)), dtype=ember.float32)
    wt = ember.tensor(rng.standard_normal((64, 64, 3, 3)) * 0.05, dtype=ember.float32, requires_grad=True)
    g = rng.standard_normal((n, 64, h, w))
    ember.nn.functional.conv2d(x, wt, padding=1).backward(ember.tensor(g, dtype=ember.float32))
    assert bool(calls) is taken
    import torch
    tw = torch.tensor(wt.detach().numpy(), requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(x.numpy()), tw, padding=1).backward(torch.tensor(g, dtype=torch.float32))
    np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kernel", [(1, 3), (3, 1)], ids=["one_row", "one_column"])
def test_grouped_conv_with_a_kernel_dim_of_one(kernel):
    # two input channels per group and a kernel one wide in some dim: the general grouped path, not the
    # depthwise one (which needs one input channel per group)
    check_op(lambda lib, x, w: lib.nn.functional.conv2d(x, w, groups=2, padding=(0, 1)), (2, 4, 5, 6), (4, 2) + kernel)


@pytest.mark.parametrize("k,kw", [(3, dict(stride=2, padding=1)), (5, dict(padding=2)), (3, dict(dilation=2, padding=2))],
                         ids=["3x3_stride2", "5x5", "3x3_dilated"])
def test_conv_with_winograd_sized_channels_but_another_geometry(k, kw):
    # 64 -> 64 channels and many tiles, but not a 3x3 stride-1 undilated conv: never Winograd F(2x2, 3x3)
    check_op(lambda lib, x, w: lib.nn.functional.conv2d(x, w, **kw), (1, 64, 18, 18), (64, 64, k, k),
             dtypes=("float32",), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)


def test_conv_input_gradient_in_bfloat16_accumulates_in_float32():
    # torch's CPU kernels sum a 2-byte float conv's products in float32; so does ConvInputGrad (here over
    # 256 output channels x 9 taps per input element), then rounds once
    check_op(lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1), (2, 4, 6, 6), (256, 4, 3, 3),
             dtypes=("bfloat16",))


# ------------------------------------------------------------------ NaN and infinities
@pytest.mark.parametrize("fn,shape", [
    (lambda lib, x: lib.nn.functional.unfold(x, (2, 3), dilation=2, stride=2), (1, 2, 4, 6)),
    (lambda lib, x: lib.nn.functional.unfold(x, (2, 3), padding=1, stride=2), (2, 2, 4, 6)),
    (lambda lib, x: lib.nn.functional.unfold(x, 1, dilation=2, padding=1), (1, 2, 5, 2)),
    (lambda lib, x: lib.nn.functional.unfold(x, 3, padding=1), (2, 3, 5, 5)),
    (lambda lib, x: lib.nn.functional.fold(x, (4, 5), (2, 3), padding=(2, 1)), (2, 12, 35)),
    (lambda lib, x: lib.nn.functional.fold(x, (5, 4), 2, padding=(1, 0), stride=(2, 1), dilation=(1, 2)), (1, 8, 6)),
    (lambda lib, x: lib.nn.functional.fold(x, (6, 3), 3), (1, 9, 4)),
], ids=["unfold_dilated", "unfold_padded", "unfold_1x1", "unfold_3x3", "fold_padded", "fold_strided", "fold_tall"])
def test_unfold_and_fold_keep_nan_and_inf_where_they_land(fn, shape):
    # unfold only copies and fold only adds the values that land on a position: a NaN elsewhere must not
    # reach it (an identity-kernel convolution would multiply it by 0)
    t_out, _ = check_op(fn, with_specials(shape))
    assert np.isfinite(t_out.detach().numpy()).any()


@pytest.mark.parametrize("call,message", [
    (lambda L: L.nn.functional.unfold(L.zeros(1, 2, 4, 4), 2, stride=0),
     "unfold: stride should be greater than zero, got stride=(0, 0)"),
    (lambda L: L.nn.functional.unfold(L.zeros(1, 2, 4, 4), 2, dilation=(1, 0)),
     "unfold: dilation should be greater than zero, got dilation=(1, 0)"),
    (lambda L: L.nn.functional.unfold(L.zeros(1, 2, 4, 4), 0),
     "unfold: kernel size should be greater than zero, got kernel_size=(0, 0)"),
    (lambda L: L.nn.functional.unfold(L.zeros(1, 2, 4, 4), 2, padding=-1),
     "unfold: padding should be non-negative, got padding=(-1, -1)"),
    (lambda L: L.nn.functional.unfold(L.zeros(1, 2, 4, 4), 7),
     "unfold: padded input size (4, 4) is smaller than the kernel size (7, 7) (dilated: (7, 7))"),
    (lambda L: L.nn.functional.fold(L.zeros(1, 4, 4), (3, 3), 2, stride=0),
     "fold: stride should be greater than zero, got stride=(0, 0)"),
])
def test_unfold_fold_argument_errors(call, message):
    raises_exactly(lambda: call(ember), RuntimeError, message)
    with pytest.raises(RuntimeError):   # torch rejects them too
        call(torch)
