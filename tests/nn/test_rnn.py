"""ember/nn/rnn.py against torch: outputs, final states and gradients of inputs, states and weights."""
import numpy as np
import pytest
import torch

import ember
from .nn_helpers import check_module

CASES = [
    ("rnn", lambda lib: lib.nn.RNN(3, 4), [(5, 2, 3)]),
    ("rnn_relu_2layer", lambda lib: lib.nn.RNN(3, 4, 2, nonlinearity="relu"), [(5, 2, 3)]),
    ("rnn_h0", lambda lib: lib.nn.RNN(3, 4, 2), [(5, 2, 3), (2, 2, 4)]),
    ("rnn_bidir_batch_first", lambda lib: lib.nn.RNN(3, 4, 2, batch_first=True, bidirectional=True), [(2, 5, 3)]),
    ("rnn_nobias_unbatched", lambda lib: lib.nn.RNN(3, 4, bias=False), [(5, 3)]),
    ("lstm", lambda lib: lib.nn.LSTM(3, 4), [(5, 2, 3)]),
    ("lstm_2layer_bidir", lambda lib: lib.nn.LSTM(3, 4, 2, bidirectional=True), [(4, 2, 3)]),
    ("lstm_states_batch_first", lambda lib: lib.nn.LSTM(3, 4, 2, batch_first=True), [(2, 4, 3), (2, 2, 4), (2, 2, 4)]),
    ("lstm_unbatched_states", lambda lib: lib.nn.LSTM(3, 4), [(4, 3), (1, 4), (1, 4)]),
    ("lstm_proj", lambda lib: lib.nn.LSTM(3, 5, proj_size=2), [(4, 2, 3)]),
    ("lstm_proj_2layer_bidir", lambda lib: lib.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=3), [(4, 2, 3)]),
    ("lstm_proj_states_batch_first", lambda lib: lib.nn.LSTM(3, 5, 2, batch_first=True, proj_size=2),
     [(2, 4, 3), (2, 2, 2), (2, 2, 5)]),
    ("lstm_proj_nobias_unbatched_states", lambda lib: lib.nn.LSTM(3, 4, bias=False, proj_size=1),
     [(4, 3), (1, 1), (1, 4)]),
    ("lstm_proj_bidir_states", lambda lib: lib.nn.LSTM(2, 4, bidirectional=True, proj_size=3),
     [(3, 2, 2), (2, 2, 3), (2, 2, 4)]),
    ("gru", lambda lib: lib.nn.GRU(3, 4), [(5, 2, 3)]),
    ("gru_2layer_bidir_h0", lambda lib: lib.nn.GRU(3, 4, 2, bidirectional=True), [(4, 2, 3), (4, 2, 4)]),
    ("gru_batch_first_nobias", lambda lib: lib.nn.GRU(3, 4, batch_first=True, bias=False), [(2, 4, 3)]),
    ("rnn_cell", lambda lib: lib.nn.RNNCell(3, 4), [(2, 3)]),
    ("rnn_cell_relu_h", lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="relu"), [(2, 3), (2, 4)]),
    ("rnn_cell_unbatched", lambda lib: lib.nn.RNNCell(3, 4), [(3,)]),
    ("lstm_cell", lambda lib: lib.nn.LSTMCell(3, 4), [(2, 3)]),
    ("gru_cell", lambda lib: lib.nn.GRUCell(3, 4), [(2, 3), (2, 4)]),
]


def _call(m, x, *states):
    if not states:
        return m(x)
    if len(states) == 2:
        return m(x, tuple(states))
    return m(x, states[0])


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_recurrent_layers(build, inputs):
    check_module(build, *inputs, call=_call, modes=("train",))


def test_dropout_between_layers_eval_matches_torch():
    check_module(lambda lib: lib.nn.LSTM(3, 4, 3, dropout=0.5), (4, 2, 3), modes=("eval",))


def test_dropout_between_layers_train_is_random():
    ember.manual_seed(0)
    m = ember.nn.GRU(3, 4, 2, dropout=0.9)
    x = ember.randn(4, 2, 3)
    a, b = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    assert a.shape == (4, 2, 4) and not (a == b).all()


def test_class_hierarchy_as_torch():
    for name in ("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"):
        base = "RNNBase" if "Cell" not in name else "RNNCellBase"
        assert issubclass(getattr(torch.nn, name), getattr(torch.nn, base))       # the hierarchy we copy
        assert issubclass(getattr(ember.nn, name), getattr(ember.nn, base))
        assert issubclass(getattr(ember.nn, base), ember.nn.Module)
    assert isinstance(ember.nn.GRU(2, 3), ember.nn.RNNBase) and not isinstance(ember.nn.GRUCell(2, 3), ember.nn.RNNBase)


def test_rnn_errors_and_repr():
    m = ember.nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    assert repr(m) == "LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)"
    with pytest.raises(RuntimeError, match="input_size"):
        m(ember.randn(2, 5, 7))
    with pytest.raises(RuntimeError, match=r"hidden\[0\] size"):
        m(ember.randn(2, 5, 3), (ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)))


BAD_RNN_ARGS = {   # the same bad argument must raise the same exception type (and message) as torch
    "dropout": (lambda L: L.nn.LSTM(2, 3, dropout=1.5), "dropout should be a number in range"),
    "hidden_size": (lambda L: L.nn.GRU(2, 0), "hidden_size must be"),
    "num_layers": (lambda L: L.nn.RNN(2, 3, num_layers=0), "num_layers must be"),
    "nonlinearity": (lambda L: L.nn.RNN(2, 3, nonlinearity="gelu"), "Unknown nonlinearity"),
    "input_4d": (lambda L: L.nn.GRU(2, 3)(L.ones(1, 1, 1, 2)), "expected input to be 2D or 3D"),
    "cell_input_3d": (lambda L: L.nn.LSTMCell(2, 3)(L.ones(1, 1, 2)), "(?i)expected input to be 1D or 2D"),
    "proj_size_negative": (lambda L: L.nn.LSTM(2, 3, proj_size=-1),
                           "^proj_size should be a positive integer or zero to disable projections$"),
    "proj_size_too_big": (lambda L: L.nn.LSTM(2, 3, proj_size=3), "^proj_size has to be smaller than hidden_size$"),
    "proj_h0_size": (lambda L: L.nn.LSTM(2, 4, proj_size=3)(L.ones(5, 2, 2), (L.zeros(1, 2, 4), L.zeros(1, 2, 4))),
                     r"(?i)expected hidden\[0\] size \(1, 2, 3\), got [\[(]1, 2, 4[\])]"),
    "proj_c0_size": (lambda L: L.nn.LSTM(2, 4, proj_size=3)(L.ones(5, 2, 2), (L.zeros(1, 2, 3), L.zeros(1, 2, 3))),
                     r"(?i)expected hidden\[1\] size \(1, 2, 4\), got [\[(]1, 2, 3[\])]"),
}


@pytest.mark.parametrize("name", list(BAD_RNN_ARGS))
def test_bad_rnn_arguments_raise_like_torch(name):
    build, msg = BAD_RNN_ARGS[name]
    with pytest.raises(Exception) as theirs:
        build(torch)
    with pytest.raises(type(theirs.value), match=msg):
        build(ember)


def test_rnn_reprs_and_all_weights_like_torch():
    # (torch checks a cell's nonlinearity only at the first forward; Ember at construction)
    with pytest.raises(ValueError, match="Unknown nonlinearity: gelu"):
        ember.nn.RNNCell(2, 3, nonlinearity="gelu")
    # torch's RNN repr leaves out nonlinearity='relu'; Ember shows it
    assert repr(ember.nn.RNN(2, 3, nonlinearity="relu")) == "RNN(2, 3, nonlinearity='relu')"
    builds = [lambda L: L.nn.RNN(2, 3, 2, bias=False, dropout=0.5),
              lambda L: L.nn.GRU(2, 3, batch_first=True),
              lambda L: L.nn.LSTM(2, 5, 2, bidirectional=True, proj_size=3),
              lambda L: L.nn.LSTM(2, 5, bias=False, proj_size=1),
              lambda L: L.nn.RNNCell(2, 3, bias=False, nonlinearity="relu"), lambda L: L.nn.LSTMCell(4, 2)]
    for build in builds:
        assert repr(build(ember)) == repr(build(torch))
    for build in builds[:4]:
        ours, theirs = build(ember).all_weights, build(torch).all_weights
        assert [[tuple(w.shape) for w in layer] for layer in ours] == [[tuple(w.shape) for w in layer] for layer in theirs]
    cell = ember.nn.GRUCell(2, 3, bias=False)
    assert cell.bias_ih is None and [k for k, _ in cell.named_parameters()] == ["weight_ih", "weight_hh"]


def test_lstm_proj_state_dict_and_init_like_torch():
    """torch's parameter names and shapes in torch's order, so a state dict moves across; each weight
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (hidden_size, not proj_size)."""
    ours, theirs = ember.nn.LSTM(3, 16, 2, bidirectional=True, proj_size=4), \
        torch.nn.LSTM(3, 16, 2, bidirectional=True, proj_size=4)
    sd = theirs.state_dict()
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [(k, tuple(v.shape)) for k, v in sd.items()]
    assert "weight_hr_l1_reverse" in sd and tuple(sd["weight_hr_l1_reverse"].shape) == (4, 16)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in sd.items()})
    x = torch.randn(5, 2, 3)
    out_t, (h_t, c_t) = theirs(x)
    out_e, (h_e, c_e) = ours(ember.tensor(x.numpy()))
    for a, b in ((out_e, out_t), (h_e, h_t), (c_e, c_t)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)
    w = ember.nn.LSTM(3, 16, proj_size=4).weight_hr_l0.detach().numpy()
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.2     # bound 1/sqrt(16), not 1/sqrt(4)


def _flat(out):
    if hasattr(out, "batch_sizes"):     # a PackedSequence: its data
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


AUTOCAST_CASES = [c for c in CASES if not c[0].endswith("unbatched_states")] + [
    ("lstm_packed", lambda lib: lib.nn.LSTM(3, 4), "packed")]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in AUTOCAST_CASES], ids=[c[0] for c in AUTOCAST_CASES])
def test_recurrent_layers_under_autocast_as_torch(build, inputs):
    """Output and state dtypes under CPU autocast as torch's (an LSTM without projection runs whole in
    bfloat16, as torch's oneDNN LSTM; the packed and projected LSTM, GRU and the cells are composites
    whose linear maps are cast one by one), values at bfloat16's tolerance, float32 weight gradients."""
    torch.manual_seed(0)
    tm, em = build(torch), build(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    if inputs == "packed":
        x = rng.standard_normal((5, 2, 3)).astype(np.float32)
        args = {lib: (lib.nn.utils.rnn.pack_padded_sequence(lib.tensor(x), [5, 3]),) for lib in (torch, ember)}
    else:
        arrays = [rng.standard_normal(s).astype(np.float32) for s in inputs]
        args = {lib: [lib.tensor(a) for a in arrays] for lib in (torch, ember)}
    outs = {}
    for lib, m in ((torch, tm), (ember, em)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = _call(m, *args[lib])
        out = _flat(out)
        sum(o.float().sum() for o in out).backward()
        outs[lib] = out
    assert [str(o.dtype).split(".")[-1] for o in outs[ember]] == [str(o.dtype).split(".")[-1] for o in outs[torch]]
    for e, t in zip(outs[ember], outs[torch]):
        np.testing.assert_allclose(e.float().detach().numpy(), t.float().detach().numpy(), atol=3e-2, rtol=3e-2)
    t_params = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        tg = t_params[name].grad
        assert p.grad.dtype is ember.float32, name
        np.testing.assert_allclose(p.grad.numpy(), tg.numpy(), atol=0.1 * max(float(tg.abs().max()), 1e-2), err_msg=name)


def test_lstm_under_autocast_is_the_lstm_in_bfloat16():
    """The whole LSTM in the autocast dtype: bit for bit the module converted to bfloat16 without autocast."""
    m = ember.nn.LSTM(3, 4, 2, bidirectional=True)
    x = ember.randn(5, 2, 3)
    with ember.autocast("cpu"):
        y, (h, c) = m(x)
    low = ember.nn.LSTM(3, 4, 2, bidirectional=True)
    low.load_state_dict(m.state_dict())
    low = low.to(ember.bfloat16)
    y2, (h2, c2) = low(x.to(ember.bfloat16))
    for a, b in ((y, y2), (h, h2), (c, c2)):
        assert a.dtype is ember.bfloat16
        assert np.array_equal(a.float().detach().numpy(), b.float().detach().numpy())


def test_flatten_parameters_is_a_no_op_as_torch_on_the_cpu():
    # word_language_model calls model.rnn.flatten_parameters() after loading; torch's CPU RNNs do nothing
    for L in (ember, torch):
        for rnn in (L.nn.LSTM(2, 3, 2), L.nn.GRU(2, 3), L.nn.RNN(2, 3, bidirectional=True)):
            before = [p.clone() for p in rnn.parameters()]
            assert rnn.flatten_parameters() is None
            assert all((a == b).all() for a, b in zip(before, rnn.parameters()))
