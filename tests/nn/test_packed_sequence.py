"""ember.nn.utils.rnn (pad/pack/unpack) and RNN/LSTM/GRU on packed input, against torch: values of the
padded outputs, final states, and gradients of the input and of every weight (check_module)."""
import numpy as np
import pytest
import torch

import ember
from .nn_helpers import check_module

LENGTHS = [3, 5, 1, 4]          # unsorted: enforce_sorted=False sorts, the states come back in this order


def _packed_call(lengths, batch_first=False, with_h0=False):
    def call(m, x, *states):
        lib = torch if isinstance(x, torch.Tensor) else ember
        rnn = lib.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
        h = None
        if states:
            h = tuple(states) if len(states) == 2 else states[0]
        out, hidden = m(packed, h)
        padded, out_lengths = rnn.pad_packed_sequence(out, batch_first=batch_first, padding_value=-1.0)
        assert out_lengths.tolist() == list(lengths)
        return padded, hidden
    return call


CASES = [
    ("rnn", lambda lib: lib.nn.RNN(3, 4), [(5, 4, 3)], {}),
    ("lstm_2layer_bidir", lambda lib: lib.nn.LSTM(3, 4, 2, bidirectional=True), [(5, 4, 3)], {}),
    ("lstm_h0", lambda lib: lib.nn.LSTM(3, 4), [(5, 4, 3), (1, 4, 4), (1, 4, 4)], {"with_h0": True}),
    ("gru_bidir_batch_first", lambda lib: lib.nn.GRU(3, 4, batch_first=True, bidirectional=True), [(4, 5, 3)],
     {"batch_first": True}),
    ("gru_h0_2layer", lambda lib: lib.nn.GRU(3, 4, 2), [(5, 4, 3), (2, 4, 4)], {"with_h0": True}),
    ("lstm_proj_2layer_bidir", lambda lib: lib.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2), [(5, 4, 3)], {}),
    ("lstm_proj_h0_batch_first", lambda lib: lib.nn.LSTM(3, 5, batch_first=True, proj_size=3),
     [(4, 5, 3), (1, 4, 3), (1, 4, 5)], {"with_h0": True, "batch_first": True}),
]


@pytest.mark.parametrize("build,inputs,kw", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_recurrent_layers_on_packed_input_match_torch(build, inputs, kw):
    check_module(build, *inputs, call=_packed_call(LENGTHS, **kw), modes=("train",), dtypes=("float64",))


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return torch.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    ts, es = zip(*(_pair((n, 2), n) for n in (3, 1, 4)))
    t = torch.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=7.0, padding_side=padding_side)
    e = ember.nn.utils.rnn.pad_sequence(es, batch_first=batch_first, padding_value=7.0, padding_side=padding_side)
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    w = np.random.default_rng(1).standard_normal(tuple(t.shape))
    (t * torch.tensor(w)).sum().backward()
    (e * ember.tensor(w)).sum().backward()
    for a, b in zip(ts, es):
        np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())


@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [4, 3, 3, 1]), (False, [2, 4, 1, 3])])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_unpack_match_torch(enforce_sorted, lengths, batch_first):
    shape = (4, 4, 2) if batch_first else (4, 4, 2)
    t, e = _pair(shape, 3)
    tp = torch.nn.utils.rnn.pack_padded_sequence(t, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    ep = ember.nn.utils.rnn.pack_padded_sequence(e, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(ep.data.detach().numpy(), tp.data.detach().numpy())
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert ep.batch_sizes.dtype == ember.int64
    for name in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(tp, name), getattr(ep, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert b.tolist() == a.tolist()
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=batch_first, total_length=6)
    epad, elen = ember.nn.utils.rnn.pad_packed_sequence(ep, batch_first=batch_first, total_length=6)
    np.testing.assert_array_equal(epad.detach().numpy(), tpad.detach().numpy())
    assert elen.tolist() == tlen.tolist()
    w = np.random.default_rng(2).standard_normal(tuple(tpad.shape))
    (tpad * torch.tensor(w)).sum().backward()
    (epad * ember.tensor(w)).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
    t_seqs = torch.nn.utils.rnn.unpack_sequence(tp)
    e_seqs = ember.nn.utils.rnn.unpack_sequence(ep)
    for a, b in zip(t_seqs, e_seqs):
        np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())


def test_pack_sequence_and_unpad_match_torch():
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) + n for n in (2, 5, 3)]
    tp = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    ep = ember.nn.utils.rnn.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(ep.data.numpy(), tp.data.numpy())
    padded = ember.nn.utils.rnn.pad_sequence([ember.tensor(s) for s in seqs], batch_first=True)
    back = ember.nn.utils.rnn.unpad_sequence(padded, [2, 5, 3], batch_first=True)
    for s, b in zip(seqs, back):
        np.testing.assert_array_equal(b.numpy(), s)


def test_packed_final_state_is_after_each_sequence_own_last_step():
    # a GRU over a short sequence padded with garbage gives the same final state as over the short
    # sequence alone: the padding never runs
    ember.manual_seed(0)
    gru = ember.nn.GRU(2, 3)
    x = ember.randn(5, 2, 2)
    x[2:, 1] = 100.0                    # sequence 1 has length 2; its padding is garbage
    packed = ember.nn.utils.rnn.pack_padded_sequence(x, [5, 2])
    _, h = gru(packed)
    _, h_alone = gru(x[:2, 1:2])
    np.testing.assert_allclose(h[:, 1].detach().numpy(), h_alone[:, 0].detach().numpy(), rtol=1e-6)


def test_packing_errors_name_the_op_and_the_lengths():
    rnn = ember.nn.utils.rnn
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match=r"pack_padded_sequence.*sorted in decreasing order.*\[1, 3, 2\]"):
        rnn.pack_padded_sequence(x, [1, 3, 2])
    with pytest.raises(RuntimeError, match=r"pack_padded_sequence.*greater than 0"):
        rnn.pack_padded_sequence(x, [3, 0, 2], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"pack_padded_sequence.*longer than the input's 4 time steps"):
        rnn.pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(RuntimeError, match=r"pack_padded_sequence: expected 3 lengths"):
        rnn.pack_padded_sequence(x, [3, 2])
    packed = rnn.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match=r"total_length to be at least.*\(4\).*total_length=3"):
        rnn.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(RuntimeError, match=r"LSTM: expected packed data of shape \(steps, 5\)"):
        ember.nn.LSTM(5, 2)(packed)


def test_packed_sequence_type_to_and_invert_permutation():
    rnn = ember.nn.utils.rnn
    p = rnn.pack_sequence([ember.ones(2, 3), ember.ones(3, 3)], enforce_sorted=False)
    assert isinstance(p, rnn.PackedSequence) and not p.is_cuda
    q = p.to(ember.float64)
    assert q.data.dtype == ember.float64 and q.batch_sizes is p.batch_sizes and p.to(ember.float32) is p
    perm = ember.tensor([2, 0, 3, 1])
    assert rnn.invert_permutation(perm).tolist() == [1, 3, 0, 2]
    assert rnn.invert_permutation(None) is None
