"""ember/keras/layers/conv.py's 3-D layers (Conv3D, Max/AveragePooling3D, GlobalAverage/MaxPooling3D) against
torch's conv3d / max_pool3d / avg_pool3d (the oracle) with the kernel moved from Keras's (k1, k2, k3, in, out)
layout, TensorFlow's 'same' padding (odd pad after; average pooling leaves the pad out of the mean),
channels_last and channels_first, values and gradients, shapes, names and configs."""
import numpy as np
import pytest
import torch

from ember import keras
from ember.keras import layers

from .test_layers_conv_rnn import run_both, same_pads

RNG = np.random.default_rng(53)
TF = torch.nn.functional


def pad3(xc, sizes, k, s, d=(1, 1, 1), value=0.0):
    """TensorFlow's 'same' pads of a channels-first (N, C, D1, D2, D3) tensor."""
    pads = [same_pads(sizes[i], k[i], s[i], d[i]) for i in range(3)]
    return TF.pad(xc, tuple(p for pair in reversed(pads) for p in pair), value=value)


CONV_CASES = [
    # padding, strides, dilation, groups, data_format, use_bias, activation
    ("valid", 1, 1, 1, "channels_last", True, None),
    ("same", 1, (2, 1, 1), 1, "channels_last", True, "relu"),
    ("same", (2, 1, 3), 1, 1, "channels_first", True, "tanh"),
    ("valid", 2, 1, 2, "channels_last", False, None),
    ("same", 2, 1, 1, "channels_last", True, None),
]


@pytest.mark.parametrize("padding, strides, dilation, groups, data_format, use_bias, activation", CONV_CASES)
def test_conv3d_values_and_gradients_against_torch(padding, strides, dilation, groups, data_format, use_bias,
                                                   activation):
    sizes, c, f, k = (6, 5, 7), 4, 4, (3, 2, 3)
    shape = (2,) + sizes + (c,) if data_format == "channels_last" else (2, c) + sizes
    x = RNG.standard_normal(shape).astype(np.float32)
    conv = layers.Conv3D(f, k, strides=strides, padding=padding, dilation_rate=dilation, groups=groups,
                         data_format=data_format, use_bias=use_bias, activation=activation,
                         bias_initializer="random_normal")
    conv.build(shape)
    assert tuple(conv.kernel.shape) == k + (c // groups, f)                  # Keras: (k1, k2, k3, in, out)
    s = (strides,) * 3 if isinstance(strides, int) else strides
    d = (dilation,) * 3 if isinstance(dilation, int) else dilation
    act = {None: lambda y: y, "relu": torch.relu, "tanh": torch.tanh}[activation]

    def ref(xt, kernel, bias=None):
        xc = xt.permute(0, 4, 1, 2, 3) if data_format == "channels_last" else xt
        if padding == "same":
            xc = pad3(xc, sizes, k, s, d)
        y = act(TF.conv3d(xc, kernel.permute(4, 3, 0, 1, 2), bias, stride=s, dilation=d, groups=groups))
        return y.permute(0, 2, 3, 4, 1) if data_format == "channels_last" else y
    (y,) = run_both(conv, x, ref, conv.weights, rtol=1e-4, atol=1e-5)
    assert tuple(y.shape)[1:] == conv.compute_output_shape((None,) + shape[1:])[1:]
    assert conv(keras.Input(shape[1:])).shape == (None,) + tuple(y.shape)[1:]


POOL_CASES = [
    # layer, pool_size, strides, padding, data_format
    ("MaxPooling3D", 2, None, "valid", "channels_last"),
    ("MaxPooling3D", (2, 3, 2), 1, "same", "channels_last"),
    ("MaxPooling3D", 3, 2, "same", "channels_first"),
    ("AveragePooling3D", 2, None, "valid", "channels_last"),
    ("AveragePooling3D", (3, 2, 2), (2, 1, 2), "same", "channels_last"),
    ("AveragePooling3D", 2, 1, "same", "channels_first"),
]


@pytest.mark.parametrize("cls, pool, strides, padding, data_format", POOL_CASES)
def test_pooling3d_values_and_gradients_against_torch(cls, pool, strides, padding, data_format):
    sizes, c = (5, 6, 4), 3
    shape = (2,) + sizes + (c,) if data_format == "channels_last" else (2, c) + sizes
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32) / 10   # distinct: one max each
    layer = getattr(layers, cls)(pool, strides=strides, padding=padding, data_format=data_format)
    k = (pool,) * 3 if isinstance(pool, int) else pool
    s = k if strides is None else ((strides,) * 3 if isinstance(strides, int) else strides)

    def ref(xt):
        xc = xt.permute(0, 4, 1, 2, 3) if data_format == "channels_last" else xt
        if cls == "MaxPooling3D":
            if padding == "same":
                xc = pad3(xc, sizes, k, s, value=-np.inf)
            y = TF.max_pool3d(xc, k, s)
        elif padding == "same":                         # the mean over the window's positions inside the input
            y = TF.avg_pool3d(pad3(xc, sizes, k, s), k, s) / TF.avg_pool3d(pad3(torch.ones_like(xc), sizes, k, s),
                                                                           k, s)
        else:
            y = TF.avg_pool3d(xc, k, s)
        return y.permute(0, 2, 3, 4, 1) if data_format == "channels_last" else y
    (y,) = run_both(layer, x, ref)
    assert tuple(y.shape) == layer.compute_output_shape(shape)
    assert layer(keras.Input(shape[1:])).shape == (None,) + tuple(y.shape)[1:]


@pytest.mark.parametrize("cls, op", [("GlobalAveragePooling3D", "mean"), ("GlobalMaxPooling3D", "amax")])
@pytest.mark.parametrize("data_format, keepdims", [("channels_last", False), ("channels_first", True)])
def test_global_pooling3d(cls, op, data_format, keepdims):
    x = RNG.standard_normal((2, 4, 5, 3, 6)).astype(np.float32)
    axes = (1, 2, 3) if data_format == "channels_last" else (2, 3, 4)
    layer = getattr(layers, cls)(data_format=data_format, keepdims=keepdims)
    (y,) = run_both(layer, x, lambda xt: getattr(xt, op)(dim=axes, keepdim=keepdims))
    assert tuple(y.shape) == layer.compute_output_shape(x.shape)
    with pytest.raises(ValueError, match="expected ndim=5, found ndim=4"):
        layer(np.ones((2, 4, 3, 6), np.float32))


def test_3d_names_aliases_configs_and_errors():
    assert [layers.Conv3D(2, 2).name, layers.MaxPooling3D().name, layers.AveragePooling3D().name,
            layers.GlobalAveragePooling3D().name, layers.GlobalMaxPooling3D().name] == \
        ["conv3d", "max_pooling3d", "average_pooling3d", "global_average_pooling3d", "global_max_pooling3d"]
    assert layers.Convolution3D is layers.Conv3D and layers.MaxPool3D is layers.MaxPooling3D
    assert layers.AvgPool3D is layers.AveragePooling3D and layers.GlobalAvgPool3D is layers.GlobalAveragePooling3D
    assert layers.GlobalMaxPool3D is layers.GlobalMaxPooling3D
    conv = layers.Conv3D(3, (1, 2, 3), strides=(1, 1, 2), padding="same", name="c")
    cfg = conv.get_config()
    assert (cfg["kernel_size"], cfg["strides"], cfg["dilation_rate"]) == ([1, 2, 3], [1, 1, 2], [1, 1, 1])
    assert layers.Conv3D.from_config(cfg).get_config() == cfg
    conv.build((None, 4, 4, 4, 2))
    assert conv.count_params() == 1 * 2 * 3 * 2 * 3 + 3
    p = layers.MaxPooling3D()
    assert (p.pool_size, p.strides) == ((2, 2, 2), (2, 2, 2))
    with pytest.raises(ValueError, match=r"^The `kernel_size` argument must be a tuple of 3 integers. Received "
                                         r"kernel_size=\(2, 2\)$"):
        layers.Conv3D(2, (2, 2))
    with pytest.raises(ValueError, match=r'^Input 0 of layer "conv3d\w*" is incompatible with the layer: expected '
                                         r"ndim=5, found ndim=4. Full shape received: \(2, 4, 4, 1\) \(Conv3D takes "
                                         r"\(batch, d1, d2, d3, channels\) volumes\)$"):
        layers.Conv3D(2, 2)(np.ones((2, 4, 4, 1), np.float32))
    model = keras.Sequential([keras.Input((8, 8, 8, 1)), layers.Conv3D(2, 3, padding="same"), layers.MaxPooling3D(),
                              layers.GlobalAveragePooling3D(), layers.Dense(1)])
    assert model(np.zeros((2, 8, 8, 8, 1), np.float32)).shape == (2, 1)
    assert model.count_params() == 27 * 2 + 2 + 2 + 1
