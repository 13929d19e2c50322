"""ember/keras/layers/conv.py and rnn.py against Keras 3's semantics: values and gradients against torch
(the oracle) with the weights mapped from Keras's layouts, TensorFlow's 'same' padding, channels_last and
channels_first, go_backwards / return_sequences / return_state, configs, symbolic shapes and errors."""
import numpy as np
import pytest
import torch

import ember
from ember import keras
from ember.keras import layers

RNG = np.random.default_rng(11)


def n(x):
    return x.detach().numpy()


def t(a):
    return torch.tensor(np.asarray(a))


def run_both(layer, x, ref_fn, weights=(), rtol=1e-5, atol=1e-5):
    """Run `layer` on x and `ref_fn` (torch, on x and the torch copies of `weights`) and compare the outputs
    and the gradients of sum(out * r) for a random r, for the input and each weight."""
    xe = ember.tensor(x, requires_grad=True)
    out = layer(xe)
    outs = out if isinstance(out, (list, tuple)) else [out]
    xt = t(x).requires_grad_()
    wt = [t(w.numpy()).requires_grad_() for w in weights]
    ref = ref_fn(xt, *wt)
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    assert len(outs) == len(refs)
    loss_e, loss_t = 0, 0
    for o, r in zip(outs, refs):
        assert tuple(o.shape) == tuple(r.shape)
        np.testing.assert_allclose(n(o), r.detach().numpy(), rtol=rtol, atol=atol)
        m = RNG.standard_normal(tuple(r.shape)).astype(np.float32)
        loss_e = loss_e + (o * ember.tensor(m)).sum()
        loss_t = loss_t + (r * t(m)).sum()
    loss_e.backward()
    loss_t.backward()
    np.testing.assert_allclose(n(xe.grad), xt.grad.numpy(), rtol=rtol, atol=atol)
    for w, w_t in zip(weights, wt):
        np.testing.assert_allclose(n(w.grad), w_t.grad.numpy(), rtol=rtol, atol=atol)
    return outs


def same_pads(size, k, s, d=1):   # TensorFlow's rule, written out independently of conv.py
    out = (size + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


# --- Conv2D ---------------------------------------------------------------------------------------------

CONV_CASES = [
    # padding, strides, dilation, groups, data_format, use_bias, activation
    ("valid", 1, 1, 1, "channels_last", True, None),
    ("same", 1, 2, 1, "channels_last", True, None),
    ("same", 1, (2, 1), 1, "channels_last", True, None),
    ("same", 2, 1, 1, "channels_last", True, "relu"),
    ("same", (2, 3), 1, 1, "channels_first", True, "tanh"),
    ("valid", (3, 2), 1, 2, "channels_first", False, None),
    ("same", 1, 1, 3, "channels_last", True, "sigmoid"),
    ("valid", 1, (1, 2), 1, "channels_first", True, None),
]


@pytest.mark.parametrize("padding, strides, dilation, groups, data_format, use_bias, activation", CONV_CASES)
def test_conv2d_values_and_gradients_against_torch(padding, strides, dilation, groups, data_format, use_bias,
                                                   activation):
    h, w, c, f, k = 9, 8, 6, 6, (3, 2)
    shape = (2, h, w, c) if data_format == "channels_last" else (2, c, h, w)
    x = RNG.standard_normal(shape).astype(np.float32)
    conv = layers.Conv2D(f, k, strides=strides, padding=padding, dilation_rate=dilation, groups=groups,
                         data_format=data_format, use_bias=use_bias, activation=activation,
                         bias_initializer="random_normal")
    conv.build(shape)
    assert tuple(conv.kernel.shape) == k + (c // groups, f)                       # Keras: (kh, kw, in, out)
    assert [wt.name for wt in conv.weights] == (["kernel", "bias"] if use_bias else ["kernel"])
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    act = {None: lambda y: y, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[activation]

    def ref(xt, kernel, bias=None):
        xc = xt.permute(0, 3, 1, 2) if data_format == "channels_last" else xt
        if padding == "same":
            (t_, b_), (l_, r_) = same_pads(h, k[0], sh, dh), same_pads(w, k[1], sw, dw)
            xc = torch.nn.functional.pad(xc, (l_, r_, t_, b_))
        y = torch.nn.functional.conv2d(xc, kernel.permute(3, 2, 0, 1), bias, stride=(sh, sw), dilation=(dh, dw),
                                       groups=groups)
        y = act(y)
        return y.permute(0, 2, 3, 1) if data_format == "channels_last" else y
    (y,) = run_both(conv, x, ref, conv.weights)
    assert tuple(y.shape)[1:] == conv.compute_output_shape((None,) + shape[1:])[1:]
    sym = conv(keras.Input(shape[1:]))
    assert sym.shape == (None,) + tuple(y.shape)[1:]


def test_conv2d_same_padding_puts_the_odd_pad_after():
    # a 1x1 image of ones, kernel 2x2 with distinct entries: 'same' pads one row and column AFTER, so the
    # output is kernel[0, 0] (TensorFlow/Keras), not kernel[1, 1] (the pad before)
    conv = layers.Conv2D(1, 2, padding="same", use_bias=False)
    conv.build((1, 1, 1, 1))
    conv.kernel.assign(np.arange(1, 5, dtype=np.float32).reshape(2, 2, 1, 1))
    assert n(conv(np.ones((1, 1, 1, 1), np.float32))).ravel().tolist() == [1.0]
    y = n(conv(np.ones((1, 2, 3, 1), np.float32)))[0, :, :, 0]
    np.testing.assert_array_equal(y, [[10, 10, 4], [3, 3, 1]])


def test_conv2d_defaults_config_and_names():
    conv = layers.Conv2D(3, 2)
    assert conv.name == "conv2d" and layers.Conv2D(3, 2).name == "conv2d_1"       # Keras's auto names
    assert (conv.strides, conv.padding, conv.data_format, conv.dilation_rate, conv.groups, conv.use_bias) == \
        ((1, 1), "valid", "channels_last", (1, 1), 1, True)
    x = np.ones((2, 4, 4, 2), np.float32)
    y = conv(x)
    assert y.shape == (2, 3, 3, 3) and np.all(conv.bias.numpy() == 0)
    limit = np.sqrt(6 / (2 * 2 * 2 + 2 * 2 * 3))                              # glorot_uniform, receptive field
    assert 0 < np.abs(conv.kernel.numpy()).max() <= limit
    assert np.abs(conv.kernel.numpy()).max() > limit / 2
    np.testing.assert_allclose(n(y), n(y) * 0 + conv.kernel.numpy().sum((0, 1, 2)), rtol=1e-6)   # linear
    assert conv.count_params() == 2 * 2 * 2 * 3 + 3
    cfg = layers.Conv2D(4, (3, 1), strides=(1, 2), padding="SAME", data_format="channels_first",
                        dilation_rate=1, groups=2, activation="relu", use_bias=False,
                        kernel_initializer="he_normal", bias_initializer="ones", name="c").get_config()
    assert cfg == {"name": "c", "trainable": True, "dtype": "float32", "filters": 4, "kernel_size": [3, 1],
                   "strides": [1, 2], "padding": "same", "data_format": "channels_first", "dilation_rate": [1, 1],
                   "groups": 2, "activation": "relu", "use_bias": False,
                   "kernel_initializer": {"class_name": "he_normal", "config": {"seed": None}},
                   "bias_initializer": {"class_name": "ones", "config": {}}}
    again = layers.Conv2D.from_config(cfg)
    assert again.get_config() == cfg
    assert layers.Convolution2D is layers.Conv2D


def test_conv2d_symbolic_and_compute_output_shape():
    conv = layers.Conv2D(5, 3, strides=2, padding="valid", data_format="channels_first")
    assert conv.compute_output_shape((None, 2, 9, 8)) == (None, 5, 4, 3)
    assert conv.compute_output_shape((None, 2, None, 8)) == (None, 5, None, 3)
    same = layers.Conv2D(5, 3, strides=3, padding="same")
    assert same.compute_output_shape((7, 10, 9, 1)) == (7, 4, 3, 5)
    assert layers.Conv2D(2, 3, dilation_rate=2).compute_output_shape((1, 5, 6, 1)) == (1, 1, 2, 2)
    out = layers.Conv2D(2, 3)(keras.Input((None, 7, 1)))
    assert out.shape == (None, None, 5, 2)


def test_conv2d_errors():
    with pytest.raises(ValueError, match=r"^Invalid value for argument `filters`. Expected a strictly positive "
                                         r"value. Received filters=0.$"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match=r"Received filters=2.0"):
        layers.Conv2D(2.0, 3)
    with pytest.raises(ValueError, match=r"^The `kernel_size` argument must be a tuple of 2 integers. Received "
                                         r"kernel_size=0, including values \{0\} that do not satisfy `value > 0`$"):
        layers.Conv2D(2, 0)
    with pytest.raises(ValueError, match=r"^The `strides` argument must be a tuple of 2 integers. Received "
                                         r"strides=\(1, -1\), including values \{-1\}"):
        layers.Conv2D(2, 3, strides=(1, -1))
    with pytest.raises(ValueError, match=r"^The `kernel_size` argument must be a tuple of 2 integers. Received "
                                         r"kernel_size=\(3, 3, 3\)$"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match=r"Received dilation_rate=\(1, 1.5\)$"):
        layers.Conv2D(2, 3, dilation_rate=(1, 1.5))
    with pytest.raises(ValueError, match=r"^`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                                         r"Received: strides=\(2, 1\) and dilation_rate=\(1, 2\)$"):
        layers.Conv2D(2, 3, strides=(2, 1), dilation_rate=(1, 2))
    layers.Conv2D(2, 3, strides=(1, 1), dilation_rate=(1, 2))
    layers.Conv2D(2, 3, strides=(2, 1), dilation_rate=1)
    with pytest.raises(ValueError, match=r"^The number of groups must be a positive integer. Received: groups=0.$"):
        layers.Conv2D(2, 3, groups=0)
    with pytest.raises(ValueError, match=r"^The number of filters must be evenly divisible by the number of "
                                         r"groups. Received: groups=2, filters=3.$"):
        layers.Conv2D(3, 3, groups=2)
    with pytest.raises(ValueError, match=r"^The number of input channels must be evenly divisible by the number "
                                         r"of groups. Received groups=2, but the input has 3 channels \(full input "
                                         r"shape is \(1, 5, 5, 3\)\).$"):
        layers.Conv2D(4, 3, groups=2)(np.ones((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"^The number of input channels .* input has 5 channels"):
        layers.Conv2D(4, 3, groups=2, data_format="channels_first")(np.ones((1, 5, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got 'causal'$"):
        layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match=r"^data_format must be 'channels_last' or 'channels_first', got 'NHWC'$"):
        layers.Conv2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match=r"^Computed output size would be negative. Received `inputs shape="
                                         r"\(None, 1, 6, 2\)`, `kernel shape=\(3, 3\)`, `dilation_rate=\(1, 1\)`.$"):
        layers.Conv2D(2, 3)(keras.Input((1, 6, 2)))
    with pytest.raises(ValueError, match=r"Computed output size would be negative.*\(1, 6, 5, 1\)"):
        layers.Conv2D(2, 3, dilation_rate=3)(np.ones((1, 6, 5, 1), np.float32))
    assert layers.Conv2D(2, 3)(keras.Input((2, 6, 2))).shape == (None, 0, 4, 2)   # 0 is not negative (Keras)
    with pytest.raises(ValueError, match=r'^Input 0 of layer "conv2d\w*" is incompatible with the layer: expected '
                                         r"ndim=4, found ndim=3. Full shape received: \(5, 5, 3\)"):
        layers.Conv2D(2, 3)(np.ones((5, 5, 3), np.float32))
    conv = layers.Conv2D(2, 3)
    conv(np.ones((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 3, but received input "
                                         r"with shape \(1, 5, 5, 4\)"):
        conv(np.ones((1, 5, 5, 4), np.float32))


# --- pooling ----------------------------------------------------------------------------------------------

def pool_ref(xt, k, s, padding, op, data_format):
    """Pooling by explicit windows: each output is the max or mean of the input values in its window that
    lie inside the image (TensorFlow's 'same': the padding is never part of a max or a mean)."""
    xc = xt.permute(0, 3, 1, 2) if data_format == "channels_last" else xt
    hh, ww = xc.shape[2], xc.shape[3]
    if padding == "same":
        (top, _), (left, _) = same_pads(hh, k[0], s[0]), same_pads(ww, k[1], s[1])
        oh, ow = -(-hh // s[0]), -(-ww // s[1])
    else:
        top = left = 0
        oh, ow = (hh - k[0]) // s[0] + 1, (ww - k[1]) // s[1] + 1
    rows = []
    for i in range(oh):
        cols = []
        for j in range(ow):
            r0, c0 = i * s[0] - top, j * s[1] - left
            win = xc[:, :, max(r0, 0):min(r0 + k[0], hh), max(c0, 0):min(c0 + k[1], ww)]
            cols.append(win.amax(dim=(2, 3)) if op == "max" else win.mean(dim=(2, 3)))
        rows.append(torch.stack(cols, -1))
    y = torch.stack(rows, -2)
    return y.permute(0, 2, 3, 1) if data_format == "channels_last" else y


@pytest.mark.parametrize("cls, op", [(layers.MaxPooling2D, "max"), (layers.AveragePooling2D, "mean")])
@pytest.mark.parametrize("pool, strides, padding, data_format", [
    ((2, 2), None, "valid", "channels_last"),
    ((3, 2), (2, 1), "same", "channels_last"),
    ((3, 3), (2, 2), "same", "channels_first"),
    (2, 3, "same", "channels_last"),
    ((2, 3), (1, 2), "valid", "channels_first"),
    (3, 1, "same", "channels_first"),
])
def test_pooling_values_and_gradients(cls, op, pool, strides, padding, data_format):
    shape = (2, 7, 6, 3) if data_format == "channels_last" else (2, 3, 7, 6)
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32) / 10   # distinct: one max each
    layer = cls(pool, strides=strides, padding=padding, data_format=data_format)
    k = (pool, pool) if isinstance(pool, int) else pool
    s = k if strides is None else ((strides, strides) if isinstance(strides, int) else strides)
    assert layer.pool_size == k and layer.strides == s
    (y,) = run_both(layer, x, lambda xt: pool_ref(xt, k, s, padding, op, data_format))
    assert tuple(y.shape) == layer.compute_output_shape(shape)
    assert layer(keras.Input(shape[1:])).shape == (None,) + tuple(y.shape)[1:]


def test_pooling_defaults_config_and_errors():
    p = layers.MaxPooling2D()
    assert (p.name, p.pool_size, p.strides, p.padding, p.data_format) == \
        ("max_pooling2d", (2, 2), (2, 2), "valid", "channels_last")
    assert layers.AveragePooling2D().name == "average_pooling2d" and layers.MaxPool2D().name == "max_pooling2d_1"
    assert layers.MaxPool2D is layers.MaxPooling2D and layers.AvgPool2D is layers.AveragePooling2D
    cfg = layers.AveragePooling2D((3, 2), strides=1, padding="Same", data_format="channels_first",
                                  name="p").get_config()
    assert cfg == {"name": "p", "trainable": True, "dtype": "float32", "pool_size": [3, 2], "strides": [1, 1],
                   "padding": "same", "data_format": "channels_first"}
    assert layers.AveragePooling2D.from_config(cfg).get_config() == cfg
    assert layers.MaxPooling2D(2).compute_output_shape((None, None, 5, 3)) == (None, None, 2, 3)
    assert layers.MaxPooling2D(2, data_format="channels_first").compute_output_shape((4, 3, 5, 7)) == (4, 3, 2, 3)
    assert not layers.MaxPooling2D().weights
    with pytest.raises(ValueError, match=r"^The `pool_size` argument must be a tuple of 2 integers. Received "
                                         r"pool_size=-1, including values \{-1\}"):
        layers.MaxPooling2D(-1)
    with pytest.raises(ValueError, match=r"Received strides=\(0, 1\), including values \{0\}"):
        layers.AveragePooling2D(2, strides=(0, 1))
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got 'full'$"):
        layers.MaxPooling2D(padding="full")
    with pytest.raises(ValueError, match=r"^Computed output size would be negative. Received `inputs shape="
                                         r"\(None, 2, 8, 1\)`, `pool_size=\(4, 4\)`.$"):
        layers.MaxPooling2D(4, strides=1)(keras.Input((2, 8, 1)))
    with pytest.raises(ValueError, match=r"expected ndim=4, found ndim=3"):
        layers.AveragePooling2D()(np.ones((2, 4, 4), np.float32))


@pytest.mark.parametrize("cls, op", [(layers.GlobalAveragePooling2D, "mean"), (layers.GlobalMaxPooling2D, "amax")])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling(cls, op, data_format, keepdims):
    x = RNG.standard_normal((2, 4, 5, 3)).astype(np.float32)
    axes = (1, 2) if data_format == "channels_last" else (2, 3)
    layer = cls(data_format=data_format, keepdims=keepdims)
    (y,) = run_both(layer, x, lambda xt: getattr(xt, op)(dim=axes, keepdim=keepdims))
    assert tuple(y.shape) == layer.compute_output_shape((2, 4, 5, 3))
    expect = {(False, "channels_last"): (None, 3), (False, "channels_first"): (None, 4),
              (True, "channels_last"): (None, 1, 1, 3), (True, "channels_first"): (None, 4, 1, 1)}
    assert layer(keras.Input((4, 5, 3))).shape == expect[keepdims, data_format]
    assert layer.get_config()["keepdims"] is keepdims and layer.get_config()["data_format"] == data_format
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        cls()(np.ones((2, 4, 3), np.float32))


def test_global_pooling_names_and_defaults():
    g = layers.GlobalAveragePooling2D()
    assert (g.name, g.data_format, g.keepdims) == ("global_average_pooling2d", "channels_last", False)
    assert layers.GlobalMaxPooling2D().name == "global_max_pooling2d"
    assert layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D
    assert layers.GlobalMaxPool2D is layers.GlobalMaxPooling2D


# --- LSTM and GRU -----------------------------------------------------------------------------------------

def lstm_ref(xt, kernel, rec, bias, *, go_backwards, return_sequences, state=None, act=torch.tanh,
             rec_act=torch.sigmoid):
    """Keras's LSTMCell written out: z = x W + h U + b, gates i, f, c, o."""
    n_, t_, _ = xt.shape
    u = rec.shape[0]
    h = torch.zeros(n_, u) if state is None else state[0]
    c = torch.zeros(n_, u) if state is None else state[1]
    outs = []
    for step in (range(t_ - 1, -1, -1) if go_backwards else range(t_)):
        z = xt[:, step] @ kernel + h @ rec + (0 if bias is None else bias)
        i, f, g, o = z.split(u, dim=-1)
        c = rec_act(f) * c + rec_act(i) * act(g)
        h = rec_act(o) * act(c)
        outs.append(h)
    return (torch.stack(outs, 1) if return_sequences else h), h, c


def gru_ref(xt, kernel, rec, bias, *, reset_after, go_backwards, return_sequences, state=None):
    """Keras's GRUCell written out: gates z, r, h; reset_after applies r after the recurrent matmul."""
    n_, t_, _ = xt.shape
    u = rec.shape[0]
    h = torch.zeros(n_, u) if state is None else state
    if bias is None:
        b_in, b_rec = 0, 0
    elif reset_after:
        b_in, b_rec = bias[0], bias[1]
    else:
        b_in, b_rec = bias, 0
    outs = []
    for step in (range(t_ - 1, -1, -1) if go_backwards else range(t_)):
        xz, xr, xh = (xt[:, step] @ kernel + b_in).split(u, dim=-1)
        if reset_after:
            hz, hr, hh = (h @ rec + b_rec).split(u, dim=-1)
            z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
            cand = torch.tanh(xh + r * hh)
        else:
            hz, hr = (h @ rec[:, :2 * u]).split(u, dim=-1)
            z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
            cand = torch.tanh(xh + (r * h) @ rec[:, 2 * u:])
        h = z * h + (1 - z) * cand
        outs.append(h)
    return (torch.stack(outs, 1) if return_sequences else h), h


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("return_state", [False, True])
@pytest.mark.parametrize("use_bias", [True, False])
def test_lstm_values_and_gradients(go_backwards, return_sequences, return_state, use_bias):
    x = RNG.standard_normal((3, 5, 2)).astype(np.float32)
    lstm = layers.LSTM(4, go_backwards=go_backwards, return_sequences=return_sequences,
                       return_state=return_state, use_bias=use_bias, bias_initializer="random_normal")
    lstm.build((3, 5, 2))
    assert [w.name for w in lstm.weights] == ["kernel", "recurrent_kernel", "bias"][:3 if use_bias else 2]

    def ref(xt, kernel, rec, bias=None):
        out, h, c = lstm_ref(xt, kernel, rec, bias, go_backwards=go_backwards, return_sequences=return_sequences)
        return [out, h, c] if return_state else out
    outs = run_both(lstm, x, ref, lstm.weights)
    expect = (3, 5, 4) if return_sequences else (3, 4)
    assert tuple(outs[0].shape) == expect
    shapes = lstm.compute_output_shape((None, 5, 2))
    assert shapes == ([(None,) + expect[1:], (None, 4), (None, 4)] if return_state else (None,) + expect[1:])


def test_lstm_matches_torch_lstm_with_go_backwards_and_initial_state():
    x = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    h0, c0 = (RNG.standard_normal((2, 4)).astype(np.float32) for _ in range(2))
    lstm = layers.LSTM(4, go_backwards=True, return_sequences=True, return_state=True)
    seq, h, c = lstm(x, initial_state=[h0, c0])
    ref = torch.nn.LSTM(3, 4, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(t(lstm.kernel.numpy()).T)
        ref.weight_hh_l0.copy_(t(lstm.recurrent_kernel.numpy()).T)
        ref.bias_ih_l0.copy_(t(lstm.bias.numpy()))
        ref.bias_hh_l0.zero_()
    # go_backwards reads the sequence from its end, and returns the outputs in that (reversed) order
    out, (hr, cr) = ref(t(x).flip(1), (t(h0)[None], t(c0)[None]))
    np.testing.assert_allclose(n(seq), out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(h), hr[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(c), cr[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(n(seq)[:, -1], n(h))


def test_lstm_activations_initial_state_and_bias_init():
    x = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    h0, c0 = (RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    lstm = layers.LSTM(3, activation="relu", recurrent_activation="hard_sigmoid", unit_forget_bias=False,
                       bias_initializer="ones", return_state=True)
    out, h, c = lstm(x, initial_state=[ember.tensor(h0), ember.tensor(c0)])
    np.testing.assert_array_equal(lstm.bias.numpy(), 1.0)            # no extra forget bias: ones everywhere
    hard = lambda v: torch.clamp(v / 6 + 0.5, 0, 1)                    # Keras 3's hard_sigmoid
    ref = lstm_ref(t(x), *(t(w.numpy()) for w in lstm.weights), go_backwards=False, return_sequences=False,
                   state=(t(h0), t(c0)), act=torch.relu, rec_act=hard)
    for got, want in zip((out, h, c), ref):
        np.testing.assert_allclose(n(got), want.numpy(), rtol=1e-5, atol=1e-6)
    fresh = layers.LSTM(2, bias_initializer="random_normal")
    fresh.build((None, 4, 3))
    b = fresh.bias.numpy()
    np.testing.assert_array_equal(b[2:4], 1.0)                       # unit_forget_bias: the f block is 1
    assert np.all(b[:2] != 0) and np.all(b[4:] != 0) and np.all(b[4:] != 1)   # the rest from bias_initializer
    rk = fresh.recurrent_kernel.numpy()                              # orthogonal (2, 8): orthonormal rows
    np.testing.assert_allclose(rk @ rk.T, np.eye(2), atol=1e-5)
    assert tuple(fresh.kernel.shape) == (3, 8)
    assert fresh.count_params() == 3 * 8 + 2 * 8 + 8


@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("use_bias", [True, False])
def test_gru_values_and_gradients(reset_after, go_backwards, use_bias):
    x = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    gru = layers.GRU(3, reset_after=reset_after, go_backwards=go_backwards, use_bias=use_bias,
                     return_sequences=True, return_state=True, bias_initializer="random_normal")
    gru.build((3, 4, 2))
    if use_bias:
        assert tuple(gru.bias.shape) == ((2, 9) if reset_after else (9,))

    def ref(xt, kernel, rec, bias=None):
        return list(gru_ref(xt, kernel, rec, bias, reset_after=reset_after, go_backwards=go_backwards,
                            return_sequences=True))
    seq, h = run_both(gru, x, ref, gru.weights)
    np.testing.assert_array_equal(n(seq)[:, -1], n(h))
    assert gru.compute_output_shape((None, 4, 2)) == [(None, 4, 3), (None, 3)]
    assert gru.count_params() == 2 * 9 + 3 * 9 + (0 if not use_bias else (18 if reset_after else 9))


def test_gru_matches_torch_gru_with_initial_state_and_last_output():
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    h0 = RNG.standard_normal((2, 4)).astype(np.float32)
    gru = layers.GRU(4, bias_initializer="random_normal")
    y = gru(x, initial_state=h0)
    assert y.shape == (2, 4)

    def reorder(a):   # Keras's gates z, r, h -> torch's r, z, n
        z, r, h = np.split(a, 3, axis=-1)
        return np.concatenate([r, z, h], axis=-1)
    ref = torch.nn.GRU(3, 4, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(t(reorder(gru.kernel.numpy())).T)
        ref.weight_hh_l0.copy_(t(reorder(gru.recurrent_kernel.numpy())).T)
        ref.bias_ih_l0.copy_(t(reorder(gru.bias.numpy()[0])))
        ref.bias_hh_l0.copy_(t(reorder(gru.bias.numpy()[1])))
    out, _ = ref(t(x), t(h0)[None])
    np.testing.assert_allclose(n(y), out[:, -1].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_rnn_defaults_configs_and_names():
    lstm, gru = layers.LSTM(2), layers.GRU(3)
    assert (lstm.name, gru.name, layers.LSTM(1).name) == ("lstm", "gru", "lstm_1")
    assert (lstm.return_sequences, lstm.return_state, lstm.go_backwards, lstm.use_bias, lstm.unit_forget_bias) \
        == (False, False, False, True, True)
    assert gru.reset_after is True
    cfg = layers.LSTM(2, activation="relu", recurrent_activation="tanh", use_bias=False, return_sequences=True,
                      return_state=True, go_backwards=True, unit_forget_bias=False,
                      kernel_initializer="zeros", recurrent_initializer="ones", bias_initializer="ones",
                      name="l").get_config()
    assert cfg == {"name": "l", "trainable": True, "dtype": "float32", "units": 2, "activation": "relu",
                   "recurrent_activation": "tanh", "use_bias": False, "return_sequences": True,
                   "return_state": True, "go_backwards": True, "dropout": 0.0, "recurrent_dropout": 0.0,
                   "seed": None, "kernel_initializer": {"class_name": "zeros", "config": {}},
                   "recurrent_initializer": {"class_name": "ones", "config": {}},
                   "bias_initializer": {"class_name": "ones", "config": {}}, "unit_forget_bias": False}
    assert layers.LSTM.from_config(cfg).get_config() == cfg
    gcfg = layers.GRU(3, reset_after=False, name="g").get_config()
    assert gcfg["reset_after"] is False and gcfg["units"] == 3 and gcfg["activation"] == "tanh"
    assert gcfg["recurrent_activation"] == "sigmoid"
    assert gcfg["recurrent_initializer"]["class_name"] == "orthogonal"
    assert gcfg["kernel_initializer"]["class_name"] == "glorot_uniform"
    assert layers.GRU.from_config(gcfg).get_config() == gcfg


def test_rnn_symbolic_shapes():
    seq = keras.Input((None, 3))
    a, h, c = layers.LSTM(4, return_state=True)(seq)
    assert (a.shape, h.shape, c.shape) == ((None, 4), (None, 4), (None, 4))
    s, hg = layers.GRU(2, return_sequences=True, return_state=True)(keras.Input((7, 3)))
    assert (s.shape, hg.shape) == ((None, 7, 2), (None, 2))
    assert layers.GRU(2)(seq).shape == (None, 2)
    assert layers.LSTM(5).compute_output_shape((8, 3, 1)) == (8, 5)
    model = keras.Model(seq, layers.LSTM(2, return_sequences=True, go_backwards=True)(seq))
    assert model(np.zeros((2, 6, 3), np.float32)).shape == (2, 6, 2)


def test_rnn_errors():
    for cls in (layers.LSTM, layers.GRU):
        with pytest.raises(ValueError, match=r"^Received an invalid value for argument `units`, expected a "
                                             r"positive integer, got 0.$"):
            cls(0)
        with pytest.raises(ValueError, match=r"got 2.5.$"):
            cls(2.5)
        with pytest.raises(ValueError, match=rf"^{cls.__name__}: `recurrent_dropout` must be a float between 0 "
                                             r"and 1, got None$"):
            cls(2, recurrent_dropout=None)
        with pytest.raises(NotImplementedError, match=rf"^{cls.__name__}\(stateful=True\) is not supported"):
            cls(2, stateful=True)
        cls(2, unroll=True, dropout=0.0)
        with pytest.raises(ValueError, match=rf'^Input 0 of layer "{cls.__name__.lower()}\w*" is incompatible '
                                             rf"with the layer: expected ndim=3, found ndim=2. Full shape received: "
                                             rf"\(2, 3\) \({cls.__name__} takes \(batch, time, features\)\)$"):
            cls(2)(np.ones((2, 3), np.float32))
        layer = cls(2)
        layer(np.ones((2, 3, 4), np.float32))
        with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 4, but received input "
                                             r"with shape \(2, 3, 5\)"):
            layer(np.ones((2, 3, 5), np.float32))
        with pytest.raises(ValueError, match=rf"^{cls.__name__} {cls.__name__.lower()}\w*: the input has no time "
                                             r"steps \(shape \(2, 0, 4\)\); it needs at least one$"):
            layer(np.ones((2, 0, 4), np.float32))


def test_initializers_reach_the_weights():
    conv = layers.Conv2D(2, 2, kernel_initializer="ones", bias_initializer="ones")
    conv.build((None, 3, 3, 1))
    assert np.all(conv.kernel.numpy() == 1) and np.all(conv.bias.numpy() == 1)
    for cls in (layers.LSTM, layers.GRU):
        rnn = cls(2, kernel_initializer="ones", recurrent_initializer="zeros")
        rnn.build((None, 3, 2))
        assert np.all(rnn.kernel.numpy() == 1) and np.all(rnn.recurrent_kernel.numpy() == 0)
    gru = layers.GRU(2)
    gru.build((None, 3, 2))
    assert [w.name for w in gru.weights] == ["kernel", "recurrent_kernel", "bias"]
    assert [w.path for w in gru.weights] == ["gru_1/kernel", "gru_1/recurrent_kernel", "gru_1/bias"]
    assert np.all(gru.bias.numpy() == 0)                                  # Keras: zeros bias
    gru2 = layers.GRU(2, reset_after=False)
    gru2.build((None, 3, 2))
    assert tuple(gru2.bias.shape) == (6,) and gru2.weights[2].name == "bias"


def test_built_layers_check_the_rank():
    conv = layers.Conv2D(2, 1)
    conv(np.ones((1, 3, 3, 2), np.float32))
    with pytest.raises(ValueError, match=r'^Input 0 of layer "conv2d" is incompatible with the layer: expected '
                                         r"ndim=4, found ndim=3"):
        conv(np.ones((3, 3, 2), np.float32))
    lstm = layers.LSTM(2)
    lstm(np.ones((1, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r'^Input 0 of layer "lstm" is incompatible with the layer: expected '
                                         r"ndim=3, found ndim=2"):
        lstm(np.ones((3, 4), np.float32))


def test_same_padding_edge_cases():
    x = RNG.standard_normal((1, 7, 5, 2)).astype(np.float32)
    one = layers.Conv2D(3, 1, padding="same")                             # no padding needed at all
    assert one(x).shape == (1, 7, 5, 3)
    assert layers.Conv2D(3, 1, strides=3, padding="same")(x).shape == (1, 3, 2, 3)
    assert layers.MaxPooling2D(1, strides=1, padding="same")(x).shape == (1, 7, 5, 2)
    # only the width needs padding, and only after: (1, 2) windows
    neg = -np.abs(x) - 1                                                  # all negative: a zero pad would win
    y = n(layers.MaxPooling2D((1, 2), strides=1, padding="same")(neg))
    np.testing.assert_array_equal(y[:, :, -1], neg[:, :, -1])
    np.testing.assert_array_equal(y[:, :, 0], np.maximum(neg[:, :, 0], neg[:, :, 1]))
    z = n(layers.MaxPooling2D(3, strides=2, padding="same")(neg))
    np.testing.assert_array_equal(z, n(pool_ref(t(neg), (3, 3), (2, 2), "same", "max", "channels_last")))
    assert z.max() < 0


@pytest.mark.parametrize("batch", [1, 3])
def test_average_pooling_same_any_batch_and_float64(batch):
    x = RNG.standard_normal((batch, 5, 4, 2))
    y = layers.AveragePooling2D(3, strides=2, padding="same")(ember.tensor(x))
    assert y.dtype == ember.float32 and y.shape == (batch, 3, 2, 2)       # Keras: float inputs become float32
    np.testing.assert_allclose(n(y), pool_ref(t(x), (3, 3), (2, 2), "same", "mean", "channels_last").numpy(),
                               rtol=1e-6, atol=1e-6)


def test_padding_must_be_a_string():
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got 1$"):
        layers.Conv2D(2, 3, padding=1)
    with pytest.raises(ValueError, match=r"^padding must be 'valid' or 'same', got None$"):
        layers.MaxPooling2D(padding=None)
