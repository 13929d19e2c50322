"""`make demo`: the seeds' opening examples, by hand and by autograd.

1. c = sum(x * y + z): gradients by hand in NumPy and by Ember's autograd (must agree).
2. f = (x + y)(x + z) at x=-2, y=5, z=-4: df/dx = -3, df/dy = -6, df/dz = 3.
3. The two-layer ReLU net (N=64, D_in=1000, H=100, D_out=10) trained with manual gradients,
   then with autograd, from the same start: the losses match.
4. A real model on real data: an MLP trained on scikit-learn's handwritten digits (1,437 train /
   360 test 8x8 images) with nn, optim.Adam and a DataLoader; reports test accuracy.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import ember
from ember.datasets import DatasetNotFoundError


def graph_example() -> None:
    rng = np.random.default_rng(0)
    N, D = 3, 4
    x, y, z = (rng.standard_normal((N, D)) for _ in range(3))
    # by hand: c = sum(a), a = x*y + z  =>  dc/dx = y, dc/dy = x, dc/dz = 1
    grad_x, grad_y, grad_z = y, x, np.ones((N, D))
    X, Y, Z = (ember.tensor(v, requires_grad=True) for v in (x, y, z))
    c = (X * Y + Z).sum()
    c.backward()
    ok = all(np.allclose(a.grad.numpy(), b) for a, b in ((X, grad_x), (Y, grad_y), (Z, grad_z)))
    print(f"1. c = sum(x*y + z) = {c.item():.4f}; autograd grads equal NumPy's by hand: {ok}")
    assert ok


def backprop_example() -> None:
    x, y, z = (ember.tensor(v, requires_grad=True) for v in (-2.0, 5.0, -4.0))
    f = (x + y) * (x + z)
    f.backward()
    print(f"2. f = (x+y)(x+z) = {f.item():.0f}; df/dx = {x.grad.item():.0f}, df/dy = {y.grad.item():.0f}, "
          f"df/dz = {z.grad.item():.0f}")
    assert (x.grad.item(), y.grad.item(), z.grad.item()) == (-3.0, -6.0, 3.0)


def two_layer_net(steps: int = 500, lr: float = 1e-6) -> None:
    N, D_in, H, D_out = 64, 1000, 100, 10
    rng = np.random.default_rng(0)
    x0, y0 = rng.standard_normal((N, D_in)), rng.standard_normal((N, D_out))
    w10, w20 = rng.standard_normal((D_in, H)), rng.standard_normal((H, D_out))

    # manual gradients, Ember tensors
    x, y = ember.tensor(x0), ember.tensor(y0)
    w1, w2 = ember.tensor(w10), ember.tensor(w20)
    t0 = time.perf_counter()
    for _ in range(steps):
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)
        loss_manual = (y_pred - y).pow(2).sum().item()
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h = grad_y_pred.mm(w2.t())
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)
        w1 -= lr * grad_w1
        w2 -= lr * grad_w2
    t_manual = time.perf_counter() - t0

    # autograd, same start
    w1 = ember.tensor(w10, requires_grad=True)
    w2 = ember.tensor(w20, requires_grad=True)
    t0 = time.perf_counter()
    for _ in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with ember.no_grad():
            w1 -= lr * w1.grad
            w2 -= lr * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    t_auto = time.perf_counter() - t0
    print(f"3. two-layer net, {steps} steps (float64): final loss manual {loss_manual:.3e} "
          f"({t_manual:.2f}s), autograd {loss.item():.3e} ({t_auto:.2f}s)")
    assert np.isclose(loss_manual, loss.item(), rtol=1e-6), "manual and autograd training disagree"


def train_digits(epochs: int = 15) -> float:
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.datasets import Digits
    from ember.utils.data import DataLoader

    ember.manual_seed(0)
    scale = lambda img: ember.from_numpy(img.reshape(-1) / 16.0)  # noqa: E731  levels 0..16 -> [0, 1]
    train = DataLoader(Digits(train=True, transform=scale), batch_size=64, shuffle=True)
    test = DataLoader(Digits(train=False, transform=scale), batch_size=360)
    model = nn.Sequential(nn.Linear(64, 100), nn.ReLU(), nn.Linear(100, 10))
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    t0 = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        for x, y in train:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with ember.no_grad():
        x, y = next(iter(test))
        acc = (model(x).argmax(1) == y).float().mean().item()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"4. MLP 64-100-10 ({n_params:,} parameters) on Digits, {epochs} epochs with Adam "
          f"({time.perf_counter() - t0:.1f}s): final train loss {loss.item():.3f}, test accuracy {acc:.1%}")
    return acc


def main() -> int:
    print(f"ember {ember.__version__}: the seeds' opening examples")
    graph_example()
    backprop_example()
    two_layer_net()
    try:
        acc = train_digits()
    except (ImportError, DatasetNotFoundError) as e:   # scikit-learn missing (make demo installs it)
        print(f"4. skipped: {e}")
    else:
        assert acc > 0.9, f"test accuracy {acc:.1%} is too low"
    print("demo OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
