"""Core workloads W1, W2, W6 of shared/WORKLOADS.md: Ember beside torch, ratio table.

    .venv/bin/python bench/run.py            # all
    .venv/bin/python bench/run.py W2 W6      # some
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGETS = {"W1 add": 2.0, "W1 mul-sum-backward": 1.0, "W2 two-layer net": 1.1, "W6 GEMM 1024": 1.05}


def w1():
    a_np, b_np = np.random.rand(10).astype(np.float32), np.random.rand(10).astype(np.float32)
    ea, eb = ember.from_numpy(a_np), ember.from_numpy(b_np)
    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)

    def e_add():
        with ember.no_grad():
            ea + eb

    def t_add():
        with torch.no_grad():
            ta + tb
    rows = [compare("W1 add", e_add, t_add, iters=20000)]
    ega = ember.tensor(a_np, requires_grad=True)
    tga = torch.tensor(a_np, requires_grad=True)

    def e_bw():
        (ega * eb).sum().backward()

    def t_bw():
        (tga * tb).sum().backward()
    rows.append(compare("W1 mul-sum-backward", e_bw, t_bw, iters=5000))
    return rows


def w2():
    N, D_in, H, D_out = 64, 1000, 100, 10
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((N, D_in), dtype=np.float32), rng.standard_normal((N, D_out), dtype=np.float32)
    w1, w2 = rng.standard_normal((D_in, H), dtype=np.float32), rng.standard_normal((H, D_out), dtype=np.float32)
    lr = 1e-6

    def make(lib, from_np):
        X, Y = from_np(x.copy()), from_np(y.copy())
        W1, W2 = from_np(w1.copy()).requires_grad_(), from_np(w2.copy()).requires_grad_()

        def step():
            nonlocal W1, W2
            y_pred = X.mm(W1).clamp(min=0).mm(W2)
            loss = (y_pred - Y).pow(2).sum()
            loss.backward()
            with lib.no_grad():
                W1 -= lr * W1.grad
                W2 -= lr * W2.grad
                W1.grad.zero_()
                W2.grad.zero_()
        return step
    return [compare("W2 two-layer net", make(ember, ember.from_numpy), make(torch, torch.from_numpy), iters=200)]


def w6():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1024, 1024), dtype=np.float32), rng.standard_normal((1024, 1024), dtype=np.float32)
    ea, eb, ta, tb = ember.from_numpy(a), ember.from_numpy(b), torch.from_numpy(a), torch.from_numpy(b)
    r = compare("W6 GEMM 1024", lambda: ea @ eb, lambda: ta @ tb, iters=10, repeats=9)
    flops = 2 * 1024 ** 3
    r["note"] = f"ember {flops / r['ember'] / 1e9:.1f} GFLOP/s, torch {flops / r['torch'] / 1e9:.1f} GFLOP/s"
    return [r]


def main(argv):
    which = [a.upper() for a in argv] or ["W1", "W2", "W6"]
    torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    for name, fn in (("W1", w1), ("W2", w2), ("W6", w6)):
        if name in which:
            rows += fn()
    print(machine())
    print(table(rows, TARGETS))
    for r in rows:
        if "note" in r:
            print(f"{r['name']}: {r['note']}")


if __name__ == "__main__":
    main(sys.argv[1:])
