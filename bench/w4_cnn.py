"""W4 of shared/WORKLOADS.md: the small CNN (Conv 1->16, ReLU, MaxPool, Conv 16->32, ReLU, MaxPool,
Linear 1568->10) on a batch of 64 1x28x28 images, cross-entropy, SGD(0.01, momentum 0.9). Ember beside
torch in one process, alternating, same weights and data, torch with 2 threads.

    /work/venv/bin/python bench/w4_cnn.py [--iters 20] [--profile]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, profile, table  # noqa: E402
from cnn_models import copy_weights, train_step, w4_cnn  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGET = 1.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both libraries")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds (time.process_time), not wall time: "
                    "with --threads 1, robust to other jobs on the machine")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y_np = rng.integers(0, 10, 64).astype(np.int64)
    torch.manual_seed(0)
    tm = w4_cnn(torch)
    em = w4_cnn(ember)
    copy_weights(ember, tm, em)
    e_step, t_step = train_step(ember, em, x_np, y_np), train_step(torch, tm, x_np, y_np)
    if args.profile:
        profile(e_step, iters=30, warmup=3, top=25)
        return
    row = compare("W4 small CNN + SGD", e_step, t_step, iters=args.iters, repeats=args.repeats, clock=time.process_time if args.cpu else time.perf_counter)
    print(machine() + ("; CPU seconds (process_time)" if args.cpu else "; wall seconds"))
    print(table([row], {"W4 small CNN + SGD": TARGET}))


if __name__ == "__main__":
    main()
