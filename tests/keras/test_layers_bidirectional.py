"""ember/keras/layers/rnn.py's SimpleRNN and Bidirectional against Keras 3's semantics: values and
gradients against torch's RNN(nonlinearity=...) and bidirectional RNN / LSTM / GRU modules (the oracle),
with torch's weights made from Keras's layouts (kernel transposed, GRU gates z, r, h -> r, z, n, one bias),
merge modes, return_state, initial states, backward_layer, configs, errors, and a model saved, loaded and
summarised."""
import numpy as np
import pytest
import torch
from torch.func import functional_call

from ember import keras
from ember.keras import layers, models

from .test_layers_conv_rnn import n, run_both, t

RNG = np.random.default_rng(23)


def gates_to_torch(kind, a):
    """Keras's gate blocks on the last axis -> torch's (GRU z, r, h -> r, z, n; LSTM and RNN unchanged)."""
    if kind != "GRU":
        return a
    z, r, h = a.chunk(3, dim=-1)
    return torch.cat([r, z, h], dim=-1)


def torch_params(kind, weights, suffix=""):
    """torch's parameters for one direction from Keras's weights [kernel, recurrent_kernel, (bias)]."""
    kernel, rec = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else None
    p = {f"weight_ih_l0{suffix}": gates_to_torch(kind, kernel).T, f"weight_hh_l0{suffix}": gates_to_torch(kind, rec).T}
    zeros = torch.zeros(kernel.shape[1], dtype=kernel.dtype)
    if bias is None:
        p[f"bias_ih_l0{suffix}"], p[f"bias_hh_l0{suffix}"] = zeros, zeros
    elif kind == "GRU":                                                   # reset_after: input and recurrent bias
        p[f"bias_ih_l0{suffix}"], p[f"bias_hh_l0{suffix}"] = gates_to_torch(kind, bias[0]), gates_to_torch(kind, bias[1])
    else:
        p[f"bias_ih_l0{suffix}"], p[f"bias_hh_l0{suffix}"] = bias, zeros
    return p


def torch_module(kind, features, units, bidirectional=False, nonlinearity="tanh"):
    if kind == "SimpleRNN":
        return torch.nn.RNN(features, units, batch_first=True, bidirectional=bidirectional, nonlinearity=nonlinearity)
    return getattr(torch.nn, kind)(features, units, batch_first=True, bidirectional=bidirectional)


# --- SimpleRNN ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("return_state", [False, True])
@pytest.mark.parametrize("use_bias, activation", [(True, "tanh"), (False, "tanh"), (True, "relu")])
def test_simple_rnn_against_torch_rnn(go_backwards, return_sequences, return_state, use_bias, activation):
    x = RNG.standard_normal((3, 5, 2)).astype(np.float32)
    rnn = layers.SimpleRNN(4, activation=activation, go_backwards=go_backwards, return_sequences=return_sequences,
                           return_state=return_state, use_bias=use_bias, bias_initializer="random_normal")
    rnn.build((3, 5, 2))
    assert [w.name for w in rnn.weights] == ["kernel", "recurrent_kernel", "bias"][:3 if use_bias else 2]
    assert [tuple(w.shape) for w in rnn.weights] == [(2, 4), (4, 4), (4,)][:3 if use_bias else 2]
    module = torch_module("SimpleRNN", 2, 4, nonlinearity=activation)

    def ref(xt, *weights):
        # go_backwards reads the sequence from its end and returns the outputs in that (reversed) order
        seq, h = functional_call(module, torch_params("SimpleRNN", weights), (xt.flip(1) if go_backwards else xt,))
        out = seq if return_sequences else seq[:, -1]
        return [out, h[0]] if return_state else out
    outs = run_both(rnn, x, ref, rnn.weights)
    expect = (3, 5, 4) if return_sequences else (3, 4)
    assert tuple(outs[0].shape) == expect
    shapes = rnn.compute_output_shape((None, 5, 2))
    assert shapes == ([(None,) + expect[1:], (None, 4)] if return_state else (None,) + expect[1:])


def test_simple_rnn_initial_state_and_defaults():
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    h0 = RNG.standard_normal((2, 5)).astype(np.float32)
    rnn = layers.SimpleRNN(5, bias_initializer="random_normal", return_sequences=True)
    seq = rnn(x, initial_state=h0)
    module = torch_module("SimpleRNN", 3, 5)
    want, _ = functional_call(module, torch_params("SimpleRNN", [t(w.numpy()) for w in rnn.weights]),
                              (t(x), t(h0)[None]))
    np.testing.assert_allclose(n(seq), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert rnn.name == "simple_rnn" and layers.SimpleRNN(1).name == "simple_rnn_1"
    assert (rnn.go_backwards, rnn.return_state, rnn.use_bias) == (False, False, True)
    assert not hasattr(layers.SimpleRNN(2), "recurrent_activation")
    rk = rnn.recurrent_kernel.numpy()                                         # orthogonal
    np.testing.assert_allclose(rk @ rk.T, np.eye(5), atol=1e-5)
    assert rnn.count_params() == 3 * 5 + 5 * 5 + 5
    cfg = layers.SimpleRNN(3, activation="relu", use_bias=False, return_sequences=True, return_state=True,
                           go_backwards=True, kernel_initializer="ones", recurrent_initializer="zeros",
                           name="s").get_config()
    assert cfg == {"name": "s", "trainable": True, "dtype": "float32", "units": 3, "activation": "relu",
                   "use_bias": False, "return_sequences": True, "return_state": True, "go_backwards": True,
                   "dropout": 0.0, "recurrent_dropout": 0.0, "seed": None,
                   "kernel_initializer": {"class_name": "ones", "config": {}},
                   "recurrent_initializer": {"class_name": "zeros", "config": {}},
                   "bias_initializer": {"class_name": "zeros", "config": {}}}
    assert layers.SimpleRNN.from_config(cfg).get_config() == cfg


def test_simple_rnn_errors():
    with pytest.raises(ValueError, match=r"^Received an invalid value for argument `units`, expected a positive "
                                         r"integer, got 0.$"):
        layers.SimpleRNN(0)
    with pytest.raises(TypeError, match=r"^SimpleRNN: unrecognized keyword argument\(s\) \['recurrent_activation'\]"):
        layers.SimpleRNN(2, recurrent_activation="sigmoid")                  # Keras's SimpleRNN has none
    with pytest.raises(ValueError, match=r'^Input 0 of layer "simple_rnn\w*" is incompatible with the layer: '
                                         r"expected ndim=3, found ndim=2. Full shape received: \(2, 3\) \(SimpleRNN "
                                         r"takes \(batch, time, features\)\)$"):
        layers.SimpleRNN(2)(np.ones((2, 3), np.float32))
    assert layers.SimpleRNN(2, seed=3).seed == 3                              # Keras's seed is kept (in the config)


# --- Bidirectional ----------------------------------------------------------------------------------------

KINDS = ["SimpleRNN", "LSTM", "GRU"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("return_state", [False, True])
def test_bidirectional_concat_against_torch_bidirectional(kind, return_sequences, return_state):
    x = RNG.standard_normal((3, 6, 2)).astype(np.float32)
    units = 3
    bi = layers.Bidirectional(getattr(layers, kind)(units, return_sequences=return_sequences,
                                                    return_state=return_state, bias_initializer="random_normal"))
    bi.build((3, 6, 2))
    fwd, bwd = bi.forward_layer, bi.backward_layer
    assert (fwd.go_backwards, bwd.go_backwards) == (False, True)
    assert bi.weights == fwd.weights + bwd.weights and len(bi.weights) == 6
    assert not np.array_equal(fwd.kernel.numpy(), bwd.kernel.numpy())      # two sets of weights
    module = torch_module(kind, 2, units, bidirectional=True)
    n_states = 2 if kind == "LSTM" else 1

    def ref(xt, *weights):
        params = {**torch_params(kind, weights[:len(weights) // 2]),
                  **torch_params(kind, weights[len(weights) // 2:], "_reverse")}
        seq, hidden = functional_call(module, params, (xt,))
        if return_sequences:
            out = seq                                                        # both directions in forward time order
        else:                                                                # each direction's last step
            out = torch.cat([seq[:, -1, :units], seq[:, 0, units:]], dim=-1)
        if not return_state:
            return out
        hidden = hidden if kind == "LSTM" else (hidden,)
        return [out] + [s[0] for s in hidden] + [s[1] for s in hidden]     # forward states, then backward
    outs = run_both(bi, x, ref, bi.weights)
    assert len(outs) == (1 + 2 * n_states if return_state else 1)
    expect = (None, 6, 2 * units) if return_sequences else (None, 2 * units)
    shapes = bi.compute_output_shape((None, 6, 2))
    assert shapes == ([expect] + [(None, units)] * 2 * n_states if return_state else expect)
    sym = bi(keras.Input((6, 2)))
    assert [s.shape for s in sym] == shapes if return_state else sym.shape == expect


@pytest.mark.parametrize("merge_mode", ["sum", "mul", "ave", None])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_bidirectional_merge_modes(merge_mode, return_sequences):
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    bi = layers.Bidirectional(layers.LSTM(4, return_sequences=return_sequences), merge_mode=merge_mode)
    bi.build((2, 5, 3))
    module = torch_module("LSTM", 3, 4, bidirectional=True)

    def ref(xt, *w):
        seq, _ = functional_call(module, {**torch_params("LSTM", w[:3]), **torch_params("LSTM", w[3:], "_reverse")},
                                 (xt,))
        y, y_rev = (seq[..., :4], seq[..., 4:]) if return_sequences else (seq[:, -1, :4], seq[:, 0, 4:])
        return {"sum": lambda: y + y_rev, "mul": lambda: y * y_rev, "ave": lambda: (y + y_rev) / 2,
                None: lambda: [y, y_rev]}[merge_mode]()
    outs = run_both(bi, x, ref, bi.weights)
    shape = (None, 5, 4) if return_sequences else (None, 4)
    assert bi.compute_output_shape((None, 5, 3)) == ([shape, shape] if merge_mode is None else shape)
    assert len(outs) == (2 if merge_mode is None else 1)


def test_bidirectional_merge_none_with_states_and_initial_state():
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    states = [RNG.standard_normal((2, 2)).astype(np.float32) for _ in range(4)]
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, return_state=True), merge_mode=None)
    y, y_rev, hf, cf, hb, cb = bi(x, initial_state=states)
    # the first half of the states starts the forward layer, the second half the backward one
    f_seq, f_h, f_c = bi.forward_layer(x, initial_state=states[:2])
    b_seq, b_h, b_c = bi.backward_layer(x, initial_state=states[2:])
    for got, want in ((y, f_seq), (hf, f_h), (cf, f_c), (hb, b_h), (cb, b_c)):
        np.testing.assert_array_equal(n(got), n(want))
    np.testing.assert_array_equal(n(y_rev), n(b_seq)[:, ::-1])               # flipped to forward time order
    assert bi.compute_output_shape((None, 4, 3)) == [(None, 4, 2)] * 2 + [(None, 2)] * 4
    module = torch_module("LSTM", 3, 2, bidirectional=True)
    w = [t(v.numpy()) for v in bi.weights]
    h0 = torch.stack([t(states[0]), t(states[2])])
    c0 = torch.stack([t(states[1]), t(states[3])])
    seq, _ = functional_call(module, {**torch_params("LSTM", w[:3]), **torch_params("LSTM", w[3:], "_reverse")},
                             (t(x), (h0, c0)))
    np.testing.assert_allclose(n(y), seq[..., :2].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(y_rev), seq[..., 2:].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_bidirectional_with_a_backward_layer_of_its_own():
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    back = layers.GRU(2, activation="relu", go_backwards=True, return_sequences=True, name="mine")
    bi = layers.Bidirectional(layers.GRU(2, return_sequences=True), backward_layer=back, merge_mode="concat")
    assert bi.backward_layer is back and bi.forward_layer.name == "forward_gru"
    y = n(bi(x))
    np.testing.assert_array_equal(y[..., :2], n(bi.forward_layer(x)))
    np.testing.assert_array_equal(y[..., 2:], n(back(x))[:, ::-1])
    cfg = bi.get_config()
    assert cfg["backward_layer"]["config"]["activation"] == "relu"
    again = layers.Bidirectional.from_config(cfg)
    assert again.backward_layer.name == "mine" and again.backward_layer.activation is back.activation
    assert again.forward_layer.name == "forward_gru"                          # no second "forward_" prefix


def test_bidirectional_names_config_and_weights():
    lstm = layers.LSTM(3, return_sequences=True, name="enc")
    bi = layers.Bidirectional(lstm)
    assert (bi.name, bi.forward_layer.name, bi.backward_layer.name) == ("bidirectional", "forward_enc", "backward_enc")
    assert bi.forward_layer is not lstm and not lstm.built                   # a fresh copy, as Keras
    assert (bi.merge_mode, bi.return_sequences, bi.return_state) == ("concat", True, False)
    bi.build((None, 4, 2))
    assert [w.path for w in bi.weights] == ["forward_enc/kernel", "forward_enc/recurrent_kernel", "forward_enc/bias",
                                            "backward_enc/kernel", "backward_enc/recurrent_kernel",
                                            "backward_enc/bias"]
    assert bi.count_params() == 2 * (2 * 12 + 3 * 12 + 12)
    cfg = bi.get_config()
    assert set(cfg) == {"name", "trainable", "dtype", "merge_mode", "layer", "backward_layer"}
    assert cfg["layer"]["class_name"] == "LSTM" and cfg["layer"]["config"]["go_backwards"] is False
    assert cfg["backward_layer"]["config"]["go_backwards"] is True
    again = layers.Bidirectional.from_config(cfg)
    assert again.get_config() == cfg
    assert layers.Bidirectional(layers.LSTM(2), name="b", merge_mode="mul").get_config()["merge_mode"] == "mul"
    frozen = layers.Bidirectional(layers.GRU(2))
    frozen.build((None, 3, 2))
    frozen.trainable = False
    assert frozen.trainable_weights == [] and all(not w.requires_grad for w in frozen.weights)
    # weights=: the forward layer's, then the backward layer's
    given = [np.full(tuple(w.shape), i, np.float32) for i, w in enumerate(bi.weights)]
    preset = layers.Bidirectional(layers.LSTM(3, return_sequences=True), weights=given)
    preset.build((None, 4, 2))
    assert [float(w.numpy().flat[0]) for w in preset.weights] == [0, 1, 2, 3, 4, 5]


def test_bidirectional_errors():
    with pytest.raises(ValueError, match=r"^Please initialize `Bidirectional` layer with a `keras.layers.Layer` "
                                         r"instance. Received: 3$"):
        layers.Bidirectional(3)
    with pytest.raises(ValueError, match=r"^`backward_layer` need to be a `keras.layers.Layer` instance. "
                                         r"Received: 'gru'$"):
        layers.Bidirectional(layers.GRU(2), backward_layer="gru")
    with pytest.raises(ValueError, match=r'^Invalid merge mode. Received: avg. Merge mode should be one of '
                                         r'\{"sum", "mul", "ave", "concat", None\}$'):
        layers.Bidirectional(layers.GRU(2), merge_mode="avg")
    with pytest.raises(ValueError, match=r"^Forward layer and backward layer should have different `go_backwards` "
                                         r"value. Received: forward_layer.go_backwards False, "
                                         r"backward_layer.go_backwards=False$"):
        layers.Bidirectional(layers.GRU(2), backward_layer=layers.GRU(2))
    with pytest.raises(ValueError, match=r"^Forward layer and backward layer should have different `go_backwards`"):
        layers.Bidirectional(layers.GRU(2, go_backwards=True))              # Keras: the copy goes backwards too
    with pytest.raises(ValueError, match=r'^Forward layer and backward layer are expected to have the same value '
                                         r'for attribute "return_sequences", got "True" for forward layer and '
                                         r'"False" for backward layer$'):
        layers.Bidirectional(layers.GRU(2, return_sequences=True), backward_layer=layers.GRU(2, go_backwards=True))
    with pytest.raises(ValueError, match=r'same value for attribute "return_state", got "False"'):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2, go_backwards=True, return_state=True))


# --- in models: fit, save / load_model, summary -------------------------------------------------------------

def test_bidirectional_models_fit_save_load_and_summary(tmp_path, capsys):
    inp = keras.Input((7, 3))
    seq = layers.Bidirectional(layers.LSTM(4, return_sequences=True))(inp)
    seq = layers.Bidirectional(layers.SimpleRNN(3, return_sequences=True), merge_mode="ave")(seq)
    last = layers.Bidirectional(layers.GRU(2), merge_mode="sum")(seq)
    out = layers.Dense(1)(layers.Concatenate()([last, layers.SimpleRNN(2)(inp)]))
    model = keras.Model(inp, out)
    model.compile(optimizer="sgd", loss="mse")
    x = RNG.standard_normal((12, 7, 3)).astype(np.float32)
    y = RNG.standard_normal((12, 1)).astype(np.float32)
    before = model.get_weights()
    model.fit(x, y, epochs=1, batch_size=6, verbose=0)
    after = model.get_weights()
    assert len(after) == 6 + 6 + 6 + 3 + 2 and all(not np.array_equal(a, b) for a, b in zip(before, after))
    path = tmp_path / "bi.keras"
    model.save(path)
    again = models.load_model(path)
    names = [type(la).__name__ for la in again.layers]
    assert names.count("Bidirectional") == 3 and names.count("SimpleRNN") == 1
    bis = [la for la in again.layers if type(la).__name__ == "Bidirectional"]
    assert [b.merge_mode for b in bis] == ["concat", "ave", "sum"]
    assert [type(b.forward_layer).__name__ for b in bis] == ["LSTM", "SimpleRNN", "GRU"]
    # the wrapped SimpleRNN(3) took the name simple_rnn, as in Keras; the model's own one is simple_rnn_1
    assert [b.backward_layer.name for b in bis] == ["backward_lstm", "backward_simple_rnn", "backward_gru"]
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    again.summary()
    text = capsys.readouterr().out
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]
    first = [r[:3] for r in rows if r[0].startswith(("bidirectional", "simple_rnn"))]
    # per direction: LSTM(4) on 3 features 3*16 + 4*16 + 16, SimpleRNN(3) on 8: 8*3 + 3*3 + 3, GRU(2) on 3:
    # 3*6 + 2*6 + 2*6 (two biases)
    assert first == [["bidirectional", "(None, 7, 8)", "256"], ["bidirectional_1", "(None, 7, 3)", "72"],
                     ["bidirectional_2", "(None, 2)", "84"], ["simple_rnn_1", "(None, 2)", "12"]]
    assert " Trainable params: 429 (1.68 KB)" in text                      # 256 + 12 + 72 + 84 + Dense's 5


def test_sequential_bidirectional_as_in_keras_docs():
    model = models.Sequential([keras.Input((5, 10)), layers.Bidirectional(layers.LSTM(10, return_sequences=True)),
                               layers.Bidirectional(layers.LSTM(10)), layers.Dense(5, activation="softmax")])
    assert model(np.zeros((2, 5, 10), np.float32)).shape == (2, 5)
    assert model.count_params() == 2 * 4 * (10 * 10 + 10 * 10 + 10) + 2 * 4 * (20 * 10 + 10 * 10 + 10) + 21 * 5
