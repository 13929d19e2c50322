"""Optimizer step alone: Adam, AdamW and SGD(momentum) on a ~1M-parameter MLP (Linear(1024, 512), ReLU,
Linear(512, 512), ReLU, Linear(512, 256): 919,296 parameters), gradients filled once. Ember beside torch,
medians of alternating runs and the ratio ember / torch.

    .venv/bin/python bench/optim_step.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402


def make(lib, opt_name):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 256))
    rng = np.random.default_rng(0)
    for p in model.parameters():
        p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 1e-3)
    opt = {"Adam": lambda ps: lib.optim.Adam(ps, lr=1e-3),
           "AdamW": lambda ps: lib.optim.AdamW(ps, lr=1e-3, weight_decay=1e-2),
           "SGD momentum": lambda ps: lib.optim.SGD(ps, lr=1e-2, momentum=0.9)}[opt_name](model.parameters())
    return opt.step


def main():
    rows = [compare(f"{name} step, 0.92M params", make(ember, name), make(torch, name), iters=50)
            for name in ("Adam", "AdamW", "SGD momentum")]
    print(machine())
    print(table(rows))


if __name__ == "__main__":
    main()
