"""ember/keras/layers/conv.py's Conv1DTranspose / Conv2DTranspose / Conv3DTranspose against torch's
conv_transpose1d/2d/3d (the oracle) with the kernel moved from Keras's (*k, filters, in) layout. The output
window follows TensorFlow's definition, written here independently of conv.py: the transposed convolution
is the gradient of the forward convolution from an output of Keras's size L ('valid': (n - 1) * s + max(K, s),
'same': n * s, or with output_padding p: (n - 1) * s + K + p / (n - 1) * s + K % 2 + p), whose 'same' /
'valid' padding puts `before` = max((n - 1) * s + K - L, 0) // 2 positions ahead of the input; so the output
is torch's full result (padding 0) from position `before` on, L long, zero beyond its end, plus the bias.
Values and gradients, shapes, a hand-worked example, configs and errors."""
import numpy as np
import pytest
import torch

from ember import keras
from ember.keras import layers

from .test_layers_conv_rnn import n, run_both

RNG = np.random.default_rng(61)
TF = torch.nn.functional


def keras_len(size, k, s, d, padding, op):
    k = (k - 1) * d + 1
    if padding == "valid":
        return (size - 1) * s + k + (max(k, s) - k if op is None else op)
    return size * s if op is None else (size - 1) * s + k % 2 + op


def window(full, sizes, k, s, d, padding, op):
    """TensorFlow's output window of torch's full transposed convolution (channels-first)."""
    for i, size in enumerate(sizes):
        kk = (k[i] - 1) * d[i] + 1
        length = keras_len(size, k[i], s[i], d[i], padding, None if op is None else op[i])
        before = max((size - 1) * s[i] + kk - length, 0) // 2
        axis = 2 + i
        have = full.shape[axis]
        full = full.narrow(axis, before, min(length, have - before))
        if full.shape[axis] < length:                                   # zeros past the full output's end
            pad_shape = list(full.shape)
            pad_shape[axis] = length - full.shape[axis]
            full = torch.cat([full, torch.zeros(pad_shape)], dim=axis)
    return full


CASES = [
    # rank, kernel, strides, dilation, padding, output_padding, data_format
    (1, 3, 1, 1, "valid", None, "channels_last"),
    (1, 3, 2, 1, "same", None, "channels_last"),
    (1, 4, 2, 1, "same", None, "channels_first"),
    (1, 2, 3, 1, "valid", None, "channels_last"),                       # K < s: zeros (plus bias) at the end
    (1, 2, 3, 1, "same", None, "channels_last"),
    (1, 3, 1, 2, "same", None, "channels_last"),
    (1, 3, 2, 1, "valid", 1, "channels_last"),
    (1, 5, 3, 1, "same", 2, "channels_last"),
    (2, (3, 2), (2, 1), 1, "same", None, "channels_last"),
    (2, 3, 2, 1, "valid", None, "channels_first"),
    (2, (2, 3), (3, 2), 1, "valid", (1, 0), "channels_last"),
    (2, 3, 1, (1, 2), "valid", None, "channels_last"),
    (3, (2, 3, 2), (2, 1, 2), 1, "same", None, "channels_last"),
]


@pytest.mark.parametrize("rank, kernel, strides, dilation, padding, output_padding, data_format", CASES)
def test_conv_transpose_values_and_gradients_against_torch(rank, kernel, strides, dilation, padding,
                                                           output_padding, data_format):
    sizes, c, f = (5, 4, 3)[:rank], 3, 2
    shape = (2,) + sizes + (c,) if data_format == "channels_last" else (2, c) + sizes
    x = RNG.standard_normal(shape).astype(np.float32)
    cls = {1: layers.Conv1DTranspose, 2: layers.Conv2DTranspose, 3: layers.Conv3DTranspose}[rank]
    conv = cls(f, kernel, strides=strides, padding=padding, output_padding=output_padding,
               dilation_rate=dilation, data_format=data_format, activation="tanh", bias_initializer="random_normal")
    conv.build(shape)
    k, s, d = ((v,) * rank if isinstance(v, int) else v for v in (kernel, strides, dilation))
    op = (output_padding,) * rank if isinstance(output_padding, int) else output_padding
    assert tuple(conv.kernel.shape) == k + (f, c)                        # Keras: (*k, filters, in)
    to_cf = (0, rank + 1) + tuple(range(1, rank + 1))
    to_cl = (0,) + tuple(range(2, rank + 2)) + (1,)

    def ref(xt, kernel_t, bias):
        xc = xt.permute(*to_cf) if data_format == "channels_last" else xt
        w = kernel_t.permute(rank + 1, rank, *range(rank))               # torch: (in, out, *k)
        full = getattr(TF, f"conv_transpose{rank}d")(xc, w, stride=s, dilation=d)
        y = torch.tanh(window(full, sizes, k, s, d, padding, op) + bias.reshape((1, -1) + (1,) * rank))
        return y.permute(*to_cl) if data_format == "channels_last" else y
    (y,) = run_both(conv, x, ref, conv.weights, rtol=1e-4, atol=1e-5)
    lengths = tuple(keras_len(sizes[i], k[i], s[i], d[i], padding, None if op is None else op[i])
                    for i in range(rank))
    expect = (2,) + lengths + (f,) if data_format == "channels_last" else (2, f) + lengths
    assert tuple(y.shape) == expect
    assert conv.compute_output_shape(shape) == expect
    assert conv(keras.Input(shape[1:])).shape == (None,) + expect[1:]


def test_conv1d_transpose_by_hand():
    # inputs [1, 2], kernel [1, 2, 3], stride 2: the full transposed output is [1, 2, 3 + 2, 4, 6]; 'same'
    # keeps 2 * 2 positions from the start (TensorFlow), 'valid' all 5 (max(3, 2) = 3 > stride)
    x = np.array([1, 2], np.float32).reshape(1, 2, 1)
    for padding, want in (("same", [1, 2, 5, 4]), ("valid", [1, 2, 5, 4, 6])):
        conv = layers.Conv1DTranspose(1, 3, strides=2, padding=padding, use_bias=False)
        conv.build((1, 2, 1))
        conv.kernel.assign(np.array([1, 2, 3], np.float32).reshape(3, 1, 1))
        assert n(conv(x)).ravel().tolist() == want
    # kernel 2, stride 3 'valid': (2 - 1) * 3 + 3 = 6 positions, the last one past the kernel's reach is the bias
    conv = layers.Conv1DTranspose(1, 2, strides=3, bias_initializer="ones")
    conv.build((1, 2, 1))
    conv.kernel.assign(np.array([1, 2], np.float32).reshape(2, 1, 1))
    assert n(conv(x)).ravel().tolist() == [2, 3, 1, 3, 5, 1]


def test_conv_transpose_names_config_and_errors():
    assert [layers.Conv1DTranspose(1, 2).name, layers.Conv2DTranspose(1, 2).name,
            layers.Conv3DTranspose(1, 2).name] == ["conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]
    assert layers.Convolution2DTranspose is layers.Conv2DTranspose
    conv = layers.Conv2DTranspose(3, (2, 3), strides=2, padding="same", output_padding=1, name="t")
    cfg = conv.get_config()
    assert (cfg["kernel_size"], cfg["strides"], cfg["output_padding"], cfg["padding"]) == ([2, 3], [2, 2], [1, 1],
                                                                                           "same")
    assert layers.Conv2DTranspose.from_config(cfg).get_config() == cfg
    assert layers.Conv1DTranspose(2, 3).get_config()["output_padding"] is None
    conv.build((None, 4, 4, 5))
    assert conv.count_params() == 2 * 3 * 3 * 5 + 3
    with pytest.raises(ValueError, match=r"^The `output_padding` argument must be a tuple of 2 integers >= 0. "
                                         r"Received output_padding=-1$"):
        layers.Conv2DTranspose(2, 2, output_padding=-1)
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got 'causal'$"):
        layers.Conv1DTranspose(2, 2, padding="causal")
    with pytest.raises(ValueError, match=r"^Invalid value for argument `filters`"):
        layers.Conv1DTranspose(0, 2)
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=4. Full shape received: \(1, 2, 3, 4\) "
                                         r"\(Conv1DTranspose takes \(batch, steps, channels\) sequences\)$"):
        layers.Conv1DTranspose(2, 2)(np.ones((1, 2, 3, 4), np.float32))
    # an autoencoder's decoder: Conv1D down by 2, Conv1DTranspose back up by 2
    model = keras.Sequential([keras.Input((8, 3)), layers.Conv1D(4, 3, strides=2, padding="same"),
                              layers.Conv1DTranspose(3, 3, strides=2, padding="same")])
    assert model(np.zeros((2, 8, 3), np.float32)).shape == (2, 8, 3)
