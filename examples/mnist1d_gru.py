"""A GRU classifier on MNIST-1D, the paper's recurrent baseline (Greydanus & Kobak, ICML 2024: 91% test).

MNIST-1D turns the ten digits into 1-D signals of 40 samples, shifted, scaled and noised so that the
position of a feature says little: a model must look at the shape. A recurrent network reads the 40
samples one by one; this one is the paper's: a bidirectional GRU with 6 hidden units per direction, its
outputs at every step concatenated (40 x 12 = 480 values) and a linear layer to the 10 classes;
Adam at learning rate 0.01, batches of 100, 6000 steps.

Run: python examples/mnist1d_gru.py     (about 5 minutes on 2 CPU cores; --steps for a shorter run)
"""
import argparse
import time

import ember
import ember.nn as nn
import ember.nn.functional as F


class GRUClassifier(nn.Module):
    def __init__(self, hidden=6, steps=40, classes=10):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True, bidirectional=True)
        self.linear = nn.Linear(2 * hidden * steps, classes)

    def forward(self, x):                          # x (N, 40): one value per time step
        h, _ = self.rnn(x.unsqueeze(-1))           # (N, 40, 12)
        return self.linear(h.flatten(1))           # (N, 10)


def load(seed=42):
    """MNIST-1D from the mnist1d package, made offline (4000 train, 1000 test)."""
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise SystemExit("this example needs the mnist1d package: pip install ember[data]") from None
    args = get_dataset_args()
    args.seed = seed
    d = make_dataset(args)
    as_tensor = (lambda a, dt: ember.tensor(a, dtype=dt))
    return (as_tensor(d["x"], ember.float32), as_tensor(d["y"], ember.int64),
            as_tensor(d["x_test"], ember.float32), as_tensor(d["y_test"], ember.int64))


def accuracy(model, x, y):
    with ember.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main(steps=6000, batch_size=100, lr=1e-2, seed=0, log=print):
    ember.manual_seed(seed)
    x, y, x_test, y_test = load()
    model = GRUClassifier()
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    losses, start = [], time.perf_counter()
    for step in range(steps):
        idx = ember.randint(0, x.shape[0], (batch_size,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if log and ((step + 1) % 500 == 0 or step + 1 == steps):
            log(f"step {step + 1:5d}/{steps}  loss {sum(losses[-500:]) / len(losses[-500:]):.3f}  "
                f"test accuracy {accuracy(model, x_test, y_test):.1%}  ({time.perf_counter() - start:.0f} s)")
    acc = accuracy(model, x_test, y_test)
    if log:
        log(f"test accuracy {acc:.1%} (the paper's GRU: 91%, its MLP: 68%)")
    return model, losses, acc


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(steps=a.steps, seed=a.seed)
