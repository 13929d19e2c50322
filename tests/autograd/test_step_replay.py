"""Nothing bypasses the dispatcher: a whole training step, logged by PrimitiveLog, replays bit for bit.

The log sees only primitive calls. Replaying them on copies of the arrays the step started from must give
every parameter (and every optimizer state tensor) exactly the eager step's bytes. Any computation on
tensor data done outside a primitive (a raw-array optimizer update, a host-drawn dropout mask, `.grad`
accumulated with `+=` on arrays) makes the replayed value differ or go missing, and these tests fail.
"""
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd.dispatch import attrs_key
from ember.utils.dispatch import PrimitiveLog


class TinyGPT(nn.Module):
    """A two-block decoder-only transformer (nanoGPT's shape) small enough for a unit test."""

    def __init__(self, vocab=11, block=8, dim=16, heads=2, layers=2, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=p, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(ember.arange(T)))
        mask = nn.Transformer.generate_square_subsequent_mask(T) if hasattr(nn, "Transformer") \
            else ember.triu(ember.full((T, T), float("-inf")), diagonal=1)
        for b in self.blocks:
            x = b(x, src_mask=mask, is_causal=True)
        return self.head(self.ln(x))


def case(kind):
    """(model, opt, sched, x, y) of a test step, seeded, in training mode: an MLP on 6 features or a tiny
    GPT on 3 sequences of 8 tokens, with AdamW (weight decay 0.1) and StepLR halving the rate each step."""
    ember.manual_seed(0)
    if kind == "mlp":
        model, x, y = _mlp(), ember.randn(8, 6), ember.randint(0, 4, (8,))
    else:
        model, x, y = TinyGPT(), ember.randint(0, 11, (3, 8)), ember.randint(0, 11, (3, 8))
    model.train()
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    return model, opt, sched, x, y


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 4))


def _step(model, opt, sched, x, y):
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    sched.step()
    return loss


def _state_tensors(opt):
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, ember.Tensor):
                yield v


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_training_step_replays_bit_for_bit(kind):
    model, opt, sched, x, y = case(kind)
    _step(model, opt, sched, x, y)                  # the state exists before the logged steps
    log = PrimitiveLog()
    with log:
        for _ in range(2):                          # the second step runs at the scheduler's new rate
            _step(model, opt, sched, x, y)
    names = log.counts()
    assert any("Random" in n or "Philox" in n or "Bernoulli" in n for n in names), names   # dropout
    values = log.replay()
    for name, p in model.named_parameters():
        assert p in values, f"{name}: changed outside a primitive call"
        assert values[p].tobytes() == p._data.tobytes(), f"{name}: replay differs from the eager step"
    for t in _state_tensors(opt):
        assert values[t].tobytes() == t._data.tobytes()


def _leaves(v):
    if isinstance(v, (tuple, list)):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_every_attribute_of_a_training_step_is_static_and_hashable(kind):
    """Attributes are the trace key of a call (the compiler caches on them): hashable Python values;
    anything data-valued (index arrays, masks, targets, RNG state, lr, step) must be an input."""
    import numpy as np
    model, opt, sched, x, y = case(kind)
    with PrimitiveLog() as log:
        for _ in range(2):
            _step(model, opt, sched, x, y)
    assert len(log) > 20
    for c in log.calls:
        hash(attrs_key(c.attrs))
        for v in _leaves(list(c.attrs.values())):
            assert not isinstance(v, (np.ndarray, ember.Tensor)), (c.name, c.attrs)
