"""ember/keras/layers/conv.py's 1-D layers (Conv1D, Max/AveragePooling1D, GlobalAverage/MaxPooling1D,
UpSampling1D) against Keras 3's semantics: values and gradients against torch (the oracle) with the kernel
mapped from Keras's (k, in, out) layout, 'same' and 'causal' padding, channels_first, configs, shapes,
errors, and a model of them saved, loaded and summarised."""
import numpy as np
import pytest
import torch

from ember import keras
from ember.keras import layers, models

from .test_layers_conv_rnn import n, run_both, same_pads, t

RNG = np.random.default_rng(5)

CONV1D_CASES = [
    # padding, strides, dilation, groups, data_format, use_bias, activation
    ("valid", 1, 1, 1, "channels_last", True, None),
    ("same", 1, 2, 1, "channels_last", True, "relu"),
    ("same", 3, 1, 1, "channels_last", True, None),
    ("same", 2, 1, 2, "channels_first", False, "tanh"),
    ("causal", 1, 1, 1, "channels_last", True, None),
    ("causal", 1, 3, 3, "channels_last", True, "sigmoid"),
    ("causal", 2, 1, 1, "channels_first", True, None),
    ("valid", 2, 1, 3, "channels_first", True, None),
    ("valid", 1, 2, 1, "channels_last", False, None),
]


@pytest.mark.parametrize("padding, strides, dilation, groups, data_format, use_bias, activation", CONV1D_CASES)
def test_conv1d_values_and_gradients_against_torch(padding, strides, dilation, groups, data_format, use_bias,
                                                   activation):
    steps, c, f, k = 11, 6, 6, 3
    shape = (2, steps, c) if data_format == "channels_last" else (2, c, steps)
    x = RNG.standard_normal(shape).astype(np.float32)
    conv = layers.Conv1D(f, k, strides=strides, padding=padding, dilation_rate=dilation, groups=groups,
                         data_format=data_format, use_bias=use_bias, activation=activation,
                         bias_initializer="random_normal")
    conv.build(shape)
    assert tuple(conv.kernel.shape) == (k, c // groups, f)                      # Keras: (k, in, out)
    assert [w.name for w in conv.weights] == (["kernel", "bias"] if use_bias else ["kernel"])
    act = {None: lambda y: y, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[activation]

    def ref(xt, kernel, bias=None):
        xc = xt.transpose(1, 2) if data_format == "channels_last" else xt
        if padding == "same":
            xc = torch.nn.functional.pad(xc, same_pads(steps, k, strides, dilation))
        elif padding == "causal":
            xc = torch.nn.functional.pad(xc, (dilation * (k - 1), 0))
        y = act(torch.nn.functional.conv1d(xc, kernel.permute(2, 1, 0), bias, stride=strides, dilation=dilation,
                                           groups=groups))
        return y.transpose(1, 2) if data_format == "channels_last" else y
    (y,) = run_both(conv, x, ref, conv.weights)
    assert tuple(y.shape) == conv.compute_output_shape(shape)
    assert conv(keras.Input(shape[1:])).shape == (None,) + tuple(y.shape)[1:]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_conv1d_same_matches_torch_conv1d_module():
    # torch's own padding='same' (stride 1) as a second oracle for the pads, the even kernel included
    x = RNG.standard_normal((2, 9, 3)).astype(np.float32)
    for k, d in ((4, 1), (2, 3), (5, 2)):
        conv = layers.Conv1D(2, k, padding="same", dilation_rate=d, bias_initializer="random_normal")
        y = conv(x)
        ref = torch.nn.Conv1d(3, 2, k, padding="same", dilation=d)
        with torch.no_grad():
            ref.weight.copy_(t(conv.kernel.numpy()).permute(2, 1, 0))
            ref.bias.copy_(t(conv.bias.numpy()))
        np.testing.assert_allclose(n(y), ref(t(x).transpose(1, 2)).transpose(1, 2).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_conv1d_causal_output_reads_no_later_step():
    conv = layers.Conv1D(3, 3, padding="causal", dilation_rate=2)
    x = RNG.standard_normal((1, 10, 2)).astype(np.float32)
    y = n(conv(x))
    assert y.shape == (1, 10, 3)
    for step in range(10):
        changed = x.copy()
        changed[:, step + 1:] = 100.0
        np.testing.assert_array_equal(n(conv(changed))[:, :step + 1], y[:, :step + 1])
    # and the first output reads x[0] through the kernel's last tap only (the rest is padding)
    np.testing.assert_allclose(y[0, 0], x[0, 0] @ conv.kernel.numpy()[2], rtol=1e-6, atol=1e-6)


def test_conv1d_defaults_config_and_names():
    conv = layers.Conv1D(4, 3)
    assert conv.name == "conv1d" and layers.Conv1D(2, 2).name == "conv1d_1"
    assert (conv.strides, conv.padding, conv.data_format, conv.dilation_rate, conv.groups, conv.use_bias) == \
        ((1,), "valid", "channels_last", (1,), 1, True)
    y = conv(np.ones((2, 7, 5), np.float32))
    assert y.shape == (2, 5, 4) and np.all(conv.bias.numpy() == 0)
    limit = np.sqrt(6 / (3 * 5 + 3 * 4))                                       # glorot_uniform with the receptive field
    assert limit / 2 < np.abs(conv.kernel.numpy()).max() <= limit
    assert conv.count_params() == 3 * 5 * 4 + 4
    cfg = layers.Conv1D(4, [5], strides=(2,), padding="Causal", data_format="channels_first", groups=2,
                        activation="relu", use_bias=False, kernel_initializer="he_uniform", name="c").get_config()
    assert cfg == {"name": "c", "trainable": True, "dtype": "float32", "filters": 4, "kernel_size": [5],
                   "strides": [2], "padding": "causal", "data_format": "channels_first", "dilation_rate": [1],
                   "groups": 2, "activation": "relu", "use_bias": False,
                   "kernel_initializer": {"class_name": "he_uniform", "config": {"seed": None}},
                   "bias_initializer": {"class_name": "zeros", "config": {}}}
    assert layers.Conv1D.from_config(cfg).get_config() == cfg
    assert layers.Convolution1D is layers.Conv1D


def test_conv1d_output_shapes():
    assert layers.Conv1D(5, 3, strides=2).compute_output_shape((None, 9, 2)) == (None, 4, 5)
    assert layers.Conv1D(5, 3, strides=2, padding="same").compute_output_shape((None, 9, 2)) == (None, 5, 5)
    assert layers.Conv1D(5, 4, strides=3, padding="causal").compute_output_shape((1, 10, 2)) == (1, 4, 5)
    assert layers.Conv1D(5, 3, dilation_rate=3).compute_output_shape((1, 10, 2)) == (1, 4, 5)
    assert layers.Conv1D(5, 3, data_format="channels_first").compute_output_shape((7, 2, None)) == (7, 5, None)
    assert layers.Conv1D(2, 3)(keras.Input((None, 4))).shape == (None, None, 2)
    y = layers.Conv1D(2, 4, strides=3, padding="causal")(np.ones((1, 10, 1), np.float32))
    assert y.shape == (1, 4, 2)


def test_conv1d_errors():
    with pytest.raises(ValueError, match=r"^Invalid value for argument `filters`. Expected a strictly positive "
                                         r"value. Received filters=-1.$"):
        layers.Conv1D(-1, 3)
    with pytest.raises(ValueError, match=r"^The `kernel_size` argument must be a tuple of 1 integers. Received "
                                         r"kernel_size=\(3, 3\)$"):
        layers.Conv1D(2, (3, 3))
    with pytest.raises(ValueError, match=r"^The `strides` argument must be a tuple of 1 integers. Received "
                                         r"strides=0, including values \{0\}"):
        layers.Conv1D(2, 3, strides=0)
    with pytest.raises(ValueError, match=r"^`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                                         r"Received: strides=\(2,\) and dilation_rate=\(2,\)$"):
        layers.Conv1D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"^padding must be 'valid', 'same' or 'causal', got 'full'$"):
        layers.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got 'causal'$"):
        layers.MaxPooling1D(padding="causal")                                  # causal is Conv1D's only
    with pytest.raises(ValueError, match=r"^The number of filters must be evenly divisible by the number of "
                                         r"groups. Received: groups=2, filters=3.$"):
        layers.Conv1D(3, 3, groups=2)
    with pytest.raises(ValueError, match=r"^The number of input channels must be evenly divisible by the number "
                                         r"of groups. Received groups=2, but the input has 3 channels"):
        layers.Conv1D(4, 3, groups=2)(np.ones((1, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r'^Input 0 of layer "conv1d\w*" is incompatible with the layer: expected '
                                         r"ndim=3, found ndim=4. Full shape received: \(1, 5, 5, 3\) \(Conv1D takes "
                                         r"\(batch, steps, channels\) sequences\)$"):
        layers.Conv1D(2, 3)(np.ones((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"^Computed output size would be negative. Received `inputs shape="
                                         r"\(None, 2, 2\)`, `kernel shape=\(4,\)`, `dilation_rate=\(1,\)`.$"):
        layers.Conv1D(2, 4)(keras.Input((2, 2)))
    assert layers.Conv1D(2, 4, padding="causal")(keras.Input((2, 2))).shape == (None, 2, 2)   # never too short
    conv = layers.Conv1D(2, 3)
    conv(np.ones((1, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 3, but received input "
                                         r"with shape \(1, 5, 4\)"):
        conv(np.ones((1, 5, 4), np.float32))


# --- 1-D pooling and up-sampling -------------------------------------------------------------------------

def pool1d_ref(xt, k, s, padding, op, data_format):
    """Pooling by explicit windows over the steps; 'same' windows use only the steps inside."""
    xc = xt.transpose(1, 2) if data_format == "channels_last" else xt
    steps = xc.shape[2]
    if padding == "same":
        before, _ = same_pads(steps, k, s)
        out = -(-steps // s)
    else:
        before, out = 0, (steps - k) // s + 1
    cols = []
    for j in range(out):
        lo = j * s - before
        win = xc[:, :, max(lo, 0):min(lo + k, steps)]
        cols.append(win.amax(dim=2) if op == "max" else win.mean(dim=2))
    y = torch.stack(cols, -1)
    return y.transpose(1, 2) if data_format == "channels_last" else y


@pytest.mark.parametrize("cls, op", [(layers.MaxPooling1D, "max"), (layers.AveragePooling1D, "mean")])
@pytest.mark.parametrize("pool, strides, padding, data_format", [
    (2, None, "valid", "channels_last"),
    (3, 2, "same", "channels_last"),
    ((3,), 1, "same", "channels_first"),
    (4, 3, "same", "channels_last"),
    (2, 3, "valid", "channels_first"),
])
def test_pooling1d_values_and_gradients(cls, op, pool, strides, padding, data_format):
    shape = (2, 9, 3) if data_format == "channels_last" else (2, 3, 9)
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32) / 10 - 2   # distinct, some negative
    layer = cls(pool, strides=strides, padding=padding, data_format=data_format)
    k = pool if isinstance(pool, int) else pool[0]
    s = k if strides is None else strides
    assert layer.pool_size == (k,) and layer.strides == (s,)
    (y,) = run_both(layer, x, lambda xt: pool1d_ref(xt, k, s, padding, op, data_format))
    assert tuple(y.shape) == layer.compute_output_shape(shape)
    assert layer(keras.Input(shape[1:])).shape == (None,) + tuple(y.shape)[1:]


def test_max_pooling1d_same_pads_with_minus_infinity():
    x = -np.abs(RNG.standard_normal((1, 5, 2))).astype(np.float32) - 1       # all negative: a 0 pad would win
    y = n(layers.MaxPooling1D(2, padding="same")(x))
    np.testing.assert_array_equal(y[:, -1], x[:, -1])


def test_pooling1d_defaults_config_and_errors():
    p = layers.MaxPooling1D()
    assert (p.name, p.pool_size, p.strides, p.padding, p.data_format) == \
        ("max_pooling1d", (2,), (2,), "valid", "channels_last")
    assert layers.AveragePooling1D().name == "average_pooling1d" and layers.MaxPool1D().name == "max_pooling1d_1"
    assert layers.MaxPool1D is layers.MaxPooling1D and layers.AvgPool1D is layers.AveragePooling1D
    cfg = layers.AveragePooling1D(3, strides=1, padding="SAME", data_format="channels_first", name="p").get_config()
    assert cfg == {"name": "p", "trainable": True, "dtype": "float32", "pool_size": [3], "strides": [1],
                   "padding": "same", "data_format": "channels_first"}
    assert layers.AveragePooling1D.from_config(cfg).get_config() == cfg
    assert not layers.MaxPooling1D().weights
    with pytest.raises(ValueError, match=r"^The `pool_size` argument must be a tuple of 1 integers. Received "
                                         r"pool_size=\(2, 2\)$"):
        layers.MaxPooling1D((2, 2))
    with pytest.raises(ValueError, match=r"^Computed output size would be negative. Received `inputs shape="
                                         r"\(None, 2, 1\)`, `pool_size=\(4,\)`.$"):
        layers.MaxPooling1D(4, strides=1)(keras.Input((2, 1)))
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=4"):
        layers.AveragePooling1D()(np.ones((2, 4, 4, 1), np.float32))


@pytest.mark.parametrize("cls, op", [(layers.GlobalAveragePooling1D, "mean"), (layers.GlobalMaxPooling1D, "amax")])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling1d(cls, op, data_format, keepdims):
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    axis = 1 if data_format == "channels_last" else 2
    layer = cls(data_format=data_format, keepdims=keepdims)
    (y,) = run_both(layer, x, lambda xt: getattr(xt, op)(dim=axis, keepdim=keepdims))
    assert tuple(y.shape) == layer.compute_output_shape((2, 5, 3))
    expect = {(False, "channels_last"): (None, 3), (False, "channels_first"): (None, 5),
              (True, "channels_last"): (None, 1, 3), (True, "channels_first"): (None, 5, 1)}
    assert layer(keras.Input((5, 3))).shape == expect[keepdims, data_format]
    assert layer.get_config()["keepdims"] is keepdims and layer.get_config()["data_format"] == data_format
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=4"):
        cls()(np.ones((2, 4, 3, 1), np.float32))


def test_global_pooling1d_names():
    assert layers.GlobalAveragePooling1D().name == "global_average_pooling1d"
    assert layers.GlobalMaxPooling1D().name == "global_max_pooling1d"
    assert layers.GlobalAvgPool1D is layers.GlobalAveragePooling1D
    assert layers.GlobalMaxPool1D is layers.GlobalMaxPooling1D


def test_up_sampling1d():
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    up = layers.UpSampling1D(3)
    (y,) = run_both(up, x, lambda xt: xt.repeat_interleave(3, dim=1))
    assert up.name == "up_sampling1d" and layers.UpSampling1D().size == 2
    np.testing.assert_array_equal(n(y)[:, 3:6], np.repeat(x[:, 1:2], 3, axis=1))
    assert up.compute_output_shape((None, 4, 3)) == (None, 12, 3)
    assert up(keras.Input((None, 3))).shape == (None, None, 3)
    assert up.get_config() == {"name": "up_sampling1d", "trainable": True, "dtype": "float32", "size": 3}
    with pytest.raises(ValueError, match=r"^UpSampling1D: size must be a positive integer, got size=0$"):
        layers.UpSampling1D(0)
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=2"):
        up(np.ones((2, 3), np.float32))


# --- in a model: fit, save / load_model, summary -------------------------------------------------------------

def conv1d_model():
    return models.Sequential([
        keras.Input((16, 2)),
        layers.Conv1D(4, 3, padding="causal", activation="relu"),
        layers.MaxPooling1D(2),
        layers.Conv1D(6, 3, padding="same", dilation_rate=2),
        layers.UpSampling1D(2),
        layers.AveragePooling1D(4, padding="same"),
        layers.GlobalMaxPooling1D(),
        layers.Dense(3, activation="softmax"),
    ])


def test_conv1d_model_fits_saves_loads_and_summarises(tmp_path, capsys):
    model = conv1d_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = RNG.standard_normal((20, 16, 2)).astype(np.float32)
    y = RNG.integers(0, 3, 20)
    before = model.get_weights()
    model.fit(x, y, epochs=1, batch_size=10, verbose=0)
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    path = tmp_path / "m.keras"
    model.save(path)
    again = models.load_model(path)
    assert [type(la).__name__ for la in again.layers] == ["Conv1D", "MaxPooling1D", "Conv1D", "UpSampling1D",
                                                          "AveragePooling1D", "GlobalMaxPooling1D", "Dense"]
    assert again.layers[0].padding == "causal" and again.layers[2].dilation_rate == (2,)
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    again.summary()
    out = capsys.readouterr().out
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert [r for r in rows if r[2]] == [
        ["conv1d (Conv1D)", "(None, 16, 4)", "28"], ["max_pooling1d (MaxPooling1D)", "(None, 8, 4)", "0"],
        ["conv1d_1 (Conv1D)", "(None, 8, 6)", "78"], ["up_sampling1d (UpSampling1D)", "(None, 16, 6)", "0"],
        ["average_pooling1d", "(None, 4, 6)", "0"], ["global_max_pooling1d", "(None, 6)", "0"],
        ["dense (Dense)", "(None, 3)", "21"]]
    assert " Total params: 383 (1.50 KB)" in out          # 127 weights + the restored Adam state, 2 x 127 + 2
    assert " Optimizer params: 256 (1.00 KB)" in out
    assert " Trainable params: 127 (508.00 B)" in out
