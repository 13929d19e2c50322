"""SimpleRNN / LSTM / GRU `dropout` and `recurrent_dropout` (ember/keras/layers/rnn.py) against Keras 3's
semantics. torch's RNNs have no recurrent dropout, so the oracle is a torch loop written here from Keras's
cell equations, run with the masks Ember drew (captured from the layer): one input mask and one recurrent
mask per call, reused at every step (GRU with recurrent dropout: one of each per gate z, r, h), the input
mask on x_t before the kernel, the recurrent mask on h_{t-1} before the recurrent kernel (never on the LSTM
carry nor on the h that GRU's update gate carries over). Values and gradients (input and every weight)
are compared; inference ignores both rates."""
import numpy as np
import pytest
import torch

import ember
from ember.keras import layers

from .test_layers_conv_rnn import n, run_both, t

RNG = np.random.default_rng(41)


def capture_masks(rnn):
    """Record the (input masks, recurrent masks) of each call of `rnn` as torch tensors."""
    seen = []
    draw = rnn._dropout_masks

    def spy(inputs, training):
        masks = draw(inputs, training)
        seen.append([None if m is None else [t(n(v)) for v in m] for m in masks])
        return masks
    rnn._dropout_masks = spy
    return seen


def ref_rnn(kind, x, weights, in_masks, rec_masks, reset_after=True):
    """Keras 3's cells, step by step, in torch (x: (N, T, F); weights in Keras's layouts)."""
    kernel, rec = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else None
    units = rec.shape[0]
    h = torch.zeros(x.shape[0], units)
    c = torch.zeros(x.shape[0], units)
    gates = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}[kind]
    k_blocks, r_blocks = kernel.chunk(gates, dim=-1), rec.chunk(gates, dim=-1)
    in_bias = None if bias is None else (bias[0] if kind == "GRU" and reset_after else bias)
    outs = []
    for i in range(x.shape[1]):
        xt = x[:, i]
        if in_masks is not None and len(in_masks) == 3:                 # GRU: a mask per gate
            xw = torch.cat([(xt * m) @ k for m, k in zip(in_masks, k_blocks)], dim=-1)
        else:
            xw = (xt * in_masks[0] if in_masks is not None else xt) @ kernel
        if in_bias is not None:
            xw = xw + in_bias
        if kind == "SimpleRNN":
            hd = h * rec_masks[0] if rec_masks is not None else h
            h = torch.tanh(xw + hd @ rec)
        elif kind == "LSTM":
            hd = h * rec_masks[0] if rec_masks is not None else h
            zi, zf, zc, zo = (xw + hd @ rec).chunk(4, dim=-1)
            c = torch.sigmoid(zf) * c + torch.sigmoid(zi) * torch.tanh(zc)
            h = torch.sigmoid(zo) * torch.tanh(c)
        else:
            hs = [h * m for m in rec_masks] if rec_masks is not None else [h, h, h]
            xz, xr, xh = xw.chunk(3, dim=-1)
            hz, hr = hs[0] @ r_blocks[0], hs[1] @ r_blocks[1]
            if reset_after:
                hh = hs[2] @ r_blocks[2]
                if bias is not None:
                    bz, br, bh = bias[1].chunk(3)
                    hz, hr, hh = hz + bz, hr + br, hh + bh
                z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
                cand = torch.tanh(xh + r * hh)
            else:
                z, r = torch.sigmoid(xz + hz), torch.sigmoid(xr + hr)
                cand = torch.tanh(xh + (r * hs[2]) @ r_blocks[2])
            h = z * h + (1 - z) * cand
        outs.append(h)
    return torch.stack(outs, dim=1)


CASES = [
    # kind, dropout, recurrent_dropout, extra layer arguments
    ("SimpleRNN", 0.4, 0.0, {}),
    ("SimpleRNN", 0.0, 0.5, {}),
    ("SimpleRNN", 0.3, 0.3, {}),
    ("LSTM", 0.4, 0.0, {}),
    ("LSTM", 0.0, 0.5, {}),
    ("LSTM", 0.3, 0.4, {}),
    ("GRU", 0.4, 0.0, {}),
    ("GRU", 0.0, 0.5, {}),
    ("GRU", 0.3, 0.4, {}),
    ("GRU", 0.3, 0.4, {"reset_after": False}),
    ("GRU", 0.3, 0.4, {"use_bias": False}),
]


@pytest.mark.parametrize("kind, dropout, recurrent_dropout, extra", CASES)
def test_rnn_dropout_in_training_against_a_reference_with_the_same_masks(kind, dropout, recurrent_dropout, extra):
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    rnn = getattr(layers, kind)(6, dropout=dropout, recurrent_dropout=recurrent_dropout, return_sequences=True,
                                bias_initializer="random_normal", **extra)
    rnn.build(x.shape)
    seen = capture_masks(rnn)

    def ref(xt, *weights):
        in_masks, rec_masks = seen[-1]
        return ref_rnn(kind, xt, weights, in_masks, rec_masks, reset_after=extra.get("reset_after", True))
    run_both(lambda xe: rnn(xe, training=True), x, ref, rnn.weights)
    in_masks, rec_masks = seen[-1]
    per_gate = 3 if kind == "GRU" and recurrent_dropout else 1
    for masks, rate, size in ((in_masks, dropout, 3), (rec_masks, recurrent_dropout, 6)):
        if not rate:
            assert masks is None
            continue
        assert len(masks) == per_gate
        for m in masks:                                  # one draw per sample and unit, 0 or 1 / (1 - rate)
            assert tuple(m.shape) == (4, size)
            assert set(np.unique(m.numpy())) <= {0.0, np.float32(1 / (1 - rate))}
    # the masks are drawn for each call (each batch), not once per layer
    ember.manual_seed(5)
    a = n(rnn(x, training=True))
    b = n(rnn(x, training=True))
    assert not np.array_equal(a, b) and len(seen) == 3


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_rnn_dropout_is_off_in_inference_and_masks_are_reused_at_every_step(kind):
    x = RNG.standard_normal((64, 6, 3)).astype(np.float32)
    rnn = getattr(layers, kind)(5, dropout=0.5, recurrent_dropout=0.5, return_sequences=True)
    plain = getattr(layers, kind)(5, return_sequences=True)
    rnn.build(x.shape)
    plain.build(x.shape)
    plain.set_weights(rnn.get_weights())
    want = n(plain(x))
    np.testing.assert_array_equal(n(rnn(x)), want)                        # a plain call is inference
    np.testing.assert_array_equal(n(rnn(x, training=False)), want)
    assert not np.allclose(n(rnn(x, training=True)), want)
    # a sample whose input mask drops feature 0 reads nothing of feature 0 at ANY step: change that feature
    # at every step and its outputs do not move (a mask drawn per step would let some steps see it)
    seen = capture_masks(rnn)
    ember.manual_seed(11)
    out = n(rnn(x, training=True))
    x2 = x.copy()
    x2[:, :, 0] += 10.0
    ember.manual_seed(11)
    out2 = n(rnn(x2, training=True))
    dropped = np.all([m[:, 0].numpy() == 0 for m in seen[0][0]], axis=0)   # GRU: dropped for all 3 gates
    assert 0 < dropped.sum() < 60
    np.testing.assert_array_equal(out2[dropped], out[dropped])
    assert not np.allclose(out2[~dropped], out[~dropped])


def test_rnn_dropout_config_and_bidirectional():
    cfg = layers.LSTM(3, dropout=0.25, recurrent_dropout=0.5, seed=7).get_config()
    assert (cfg["dropout"], cfg["recurrent_dropout"], cfg["seed"]) == (0.25, 0.5, 7)
    assert layers.LSTM.from_config(cfg).get_config() == cfg
    assert layers.GRU(2, dropout=1.5, recurrent_dropout=-1).get_config()["dropout"] == 1.0   # Keras clips
    assert layers.GRU(2, recurrent_dropout=-1).recurrent_dropout == 0.0
    with pytest.raises(ValueError, match=r"^SimpleRNN: `dropout` must be a float between 0 and 1, got 'a'$"):
        layers.SimpleRNN(2, dropout="a")
    # rate 1.0: Keras applies a mask only for 0 < rate < 1, so nothing is dropped
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    full = layers.SimpleRNN(2, dropout=1.0, recurrent_dropout=1.0)
    np.testing.assert_array_equal(n(full(x, training=True)), n(full(x)))
    # Bidirectional copies the rates into both directions, and the training flag reaches them
    bi = layers.Bidirectional(layers.GRU(3, dropout=0.5, recurrent_dropout=0.5))
    assert (bi.forward_layer.dropout, bi.backward_layer.recurrent_dropout) == (0.5, 0.5)
    x = RNG.standard_normal((8, 4, 3)).astype(np.float32)
    np.testing.assert_array_equal(n(bi(x)), n(bi(x, training=False)))
    assert not np.allclose(n(bi(x, training=True)), n(bi(x)))
