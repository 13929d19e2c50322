"""W5 by component: each layer of the tiny GPT at W5's shapes, forward + backward, Ember vs torch.

Explains where W5's gap is (see bench/RESULTS.md). Min of 5 repeats of 20 iterations per side; Ember with
its compiled CPU kernels (ember/backends/cpu_kernels.py) and without them, alternating in one process.

    .venv/bin/python bench/w5_parts.py
    .venv/bin/python bench/w5_parts.py --cpu    # one thread each side, CPU time of the thread: the work
                                                # done, robust to other jobs on a loaded machine
"""
import argparse
import os
import statistics
import time
import timeit

import numpy as np
import torch

import ember
import ember.nn.functional as EF  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from ember.backends import cpu_kernels  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--cpu", action="store_true")
ap.add_argument("--rounds", type=int, default=3)
ARGS = ap.parse_args()
TIMER = time.thread_time if ARGS.cpu else time.perf_counter
if ARGS.cpu:
    torch.set_num_threads(1)
    ember.set_num_threads(1)
else:
    torch.set_num_threads(os.cpu_count() or 1)


def run(lib, F, x_np, fn, g_np):
    x = lib.tensor(x_np, requires_grad=True) if lib is ember else torch.tensor(x_np, requires_grad=True)
    g = lib.tensor(g_np) if lib is ember else torch.tensor(g_np)

    def step():
        x.grad = None
        y = fn(lib, F, x)
        y.backward(g)
    n = 20
    step()
    return min(timeit.repeat(step, number=n, repeat=5, timer=TIMER)) / n * 1e3


rng = np.random.default_rng(0)
def lin(inf, outf):
    w = rng.standard_normal((outf, inf)).astype(np.float32) * 0.05; b = np.zeros(outf, np.float32)
    return {ember: (ember.tensor(w, requires_grad=True), ember.tensor(b, requires_grad=True)),
            torch: (torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True))}
L1, L2, L3 = lin(128, 384), lin(128, 512), lin(512, 128)
lnw = {ember: (ember.ones(128, requires_grad=True), ember.zeros(128, requires_grad=True)),
       torch: (torch.ones(128, requires_grad=True), torch.zeros(128, requires_grad=True))}
cases = [
  ("linear 128->384", (16, 64, 128), lambda L, F, x: F.linear(x, *L1[L]), (16, 64, 384)),
  ("linear 128->512", (16, 64, 128), lambda L, F, x: F.linear(x, *L2[L]), (16, 64, 512)),
  ("linear 512->128", (16, 64, 512), lambda L, F, x: F.linear(x, *L3[L]), (16, 64, 128)),
  ("gelu", (16, 64, 512), lambda L, F, x: F.gelu(x), (16, 64, 512)),
  ("layer_norm", (16, 64, 128), lambda L, F, x: F.layer_norm(x, (128,), *lnw[L]), (16, 64, 128)),
  ("sdpa causal", (16, 64, 384), lambda L, F, x: F.scaled_dot_product_attention(
        *[t.reshape(16, 64, 4, 32).transpose(1, 2) for t in x.split(128, dim=2)], is_causal=True), (16, 4, 64, 32)),
  ("residual add", (16, 64, 128), lambda L, F, x: x + x * 1, (16, 64, 128)),
  ("cross_entropy", (1024, 65), lambda L, F, x: F.cross_entropy(x, TGT[L]), ()),
]
TGT = {ember: ember.tensor(rng.integers(0, 65, 1024)), torch: torch.tensor(rng.integers(0, 65, 1024))}

print(f"{'component':16s} {'no kernels':>10s} {'kernels':>8s} {'torch':>8s}   ratio before -> after"
      f"  ({'CPU time, 1 thread' if ARGS.cpu else 'wall'}, ms, median of {ARGS.rounds} rounds)")
for name, shape, fn, gshape in cases:
    x = rng.standard_normal(shape).astype(np.float32); g = rng.standard_normal(gshape).astype(np.float32)
    off, on, tt = [], [], []
    for _ in range(ARGS.rounds):
        cpu_kernels.disable()
        off.append(run(ember, EF, x, fn, g))
        cpu_kernels.enable()
        on.append(run(ember, EF, x, fn, g))
        tt.append(run(torch, TF, x, fn, g))
    off, on, tt = (statistics.median(v) for v in (off, on, tt))
    print(f"{name:16s} {off:10.3f} {on:8.3f} {tt:8.3f}   {off / tt:5.2f} -> {on / tt:5.2f}")
