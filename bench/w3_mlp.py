"""W3 of shared/WORKLOADS.md: MLP classifier. Flatten, Linear(784,100), ReLU, Linear(100,10) on a batch of
64 1x28x28 images, cross-entropy, Adam(lr=1e-3); one iteration = zero_grad, forward, backward, step.
Ember beside torch in one process, alternating, after warm-up; medians and the ratio ember / torch.

    .venv/bin/python bench/w3_mlp.py
    .venv/bin/python bench/w3_mlp.py --profile     # cProfile of the Ember step, top costs
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, profile, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGET = 1.2


def make(lib, x_np, y_np):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 100), nn.ReLU(), nn.Linear(100, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y_np = rng.integers(0, 10, 64).astype(np.int64)
    e_step, t_step = make(ember, x_np, y_np), make(torch, x_np, y_np)
    if args.profile:
        profile(e_step, iters=300, warmup=20, top=15)
        return
    row = compare("W3 MLP + Adam", e_step, t_step, iters=args.iters)
    print(machine())
    print(table([row], {"W3 MLP + Adam": TARGET}))


if __name__ == "__main__":
    main()
