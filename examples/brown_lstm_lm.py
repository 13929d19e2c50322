"""A word-level LSTM language model on the Brown corpus, reporting perplexity.

The model reads a stream of words and predicts the next one; its quality is the *perplexity*
exp(mean negative log-likelihood per word): the number of words it is, on average, as unsure between as
if it picked uniformly among them. A uniform guess over the 10,000-word vocabulary has perplexity 10,000;
the unigram frequencies alone give about 700 here.

As in PyTorch's word_language_model example: the training text is cut into `batch_size` parallel streams,
read `bptt` words at a time; the LSTM's state is carried from one chunk to the next but detached, so
backward stops at the chunk's start (truncated backpropagation through time). Embedding and output
weights are tied (one matrix), 2 LSTM layers, dropout, gradient clipping, SGD with the learning rate
divided by 4 when validation stops improving.

Run: python examples/brown_lstm_lm.py              (one epoch: several minutes on 2 CPU cores)
     python examples/brown_lstm_lm.py --steps 200  (a quick look)
"""
import argparse
import math
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.datasets import BrownCorpus


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab, dim=200, layers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, layers, dropout=dropout)
        self.out = nn.Linear(dim, vocab)
        self.out.weight = self.embed.weight                 # weight tying
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def forward(self, x, state=None):                      # x (T, N) word ids
        h, state = self.lstm(self.drop(self.embed(x)), state)
        return self.out(self.drop(h)), state               # (T, N, vocab)


def streams(ids, batch_size):
    """The id sequence cut into batch_size equal columns: (T, batch_size)."""
    n = ids.shape[0] // batch_size
    return ids[:n * batch_size].reshape(batch_size, n).t().contiguous()


def detach(state):
    return tuple(s.detach() for s in state)


def evaluate(model, data, bptt=35, batch_size=10, max_chunks=None):
    """Perplexity of `data` (a BrownCorpus split), state carried across chunks."""
    model.eval()
    cols = streams(data.data, batch_size)
    total, count, state = 0.0, 0, None
    with ember.no_grad():
        for k, i in enumerate(range(0, cols.shape[0] - 1, bptt)):
            if max_chunks is not None and k >= max_chunks:
                break
            x, y = cols[i:i + bptt], cols[i + 1:i + 1 + bptt]
            x = x[:y.shape[0]]
            logits, state = model(x, state)
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"))
            count += y.numel()
    model.train()
    return math.exp(total / count)


def main(steps=None, batch_size=20, bptt=35, lr=20.0, clip=0.25, dim=200, seed=0, log=print, eval_chunks=None):
    ember.manual_seed(seed)
    train, val, test = (BrownCorpus(split=s) for s in ("train", "val", "test"))
    model = LSTMLanguageModel(train.vocab_size, dim)
    opt = ember.optim.SGD(model.parameters(), lr=lr)
    cols = streams(train.data, batch_size)
    per_epoch = (cols.shape[0] - 1) // bptt
    steps = per_epoch if steps is None else steps
    if log:
        log(f"{train.vocab_size:,} words in the vocabulary; {len(train.data):,} training words "
            f"({train.unk_fraction:.1%} <unk>); {per_epoch} chunks of {bptt} x {batch_size} per epoch")
    losses, state, best, start = [], None, math.inf, time.perf_counter()
    for step in range(steps):
        i = (step % per_epoch) * bptt
        if i == 0:
            state = None
        x, y = cols[i:i + bptt], cols[i + 1:i + 1 + bptt]
        logits, state = model(x, state)
        state = detach(state)
        loss = F.cross_entropy(logits.reshape(-1, train.vocab_size), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(float(loss))
        if log and (step + 1) % 200 == 0:
            log(f"step {step + 1:5d}/{steps}  train perplexity {math.exp(sum(losses[-200:]) / 200):7.1f}  "
                f"({time.perf_counter() - start:.0f} s)")
        if (step + 1) % per_epoch == 0 or step + 1 == steps:
            ppl = evaluate(model, val, bptt, max_chunks=eval_chunks)
            if ppl > best:
                for g in opt.param_groups:
                    g["lr"] /= 4
            best = min(best, ppl)
            if log:
                log(f"validation perplexity {ppl:.1f}")
    test_ppl = evaluate(model, test, bptt, max_chunks=eval_chunks)
    if log:
        log(f"test perplexity {test_ppl:.1f} after {steps} steps ({time.perf_counter() - start:.0f} s)")
    return model, losses, test_ppl


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=None, help="training chunks (default: one epoch)")
    a = p.parse_args()
    main(steps=a.steps)
