"""ember/nn/rnn.py against torch: outputs, final states and gradients of inputs, states and weights."""
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
    with pytest.raises(RuntimeError, match="hidden size"):
        m(ember.randn(2, 5, 3), (ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)))
