"""W7 of shared/WORKLOADS.md: ResNet-18 (torchvision's layout, bench/cnn_models.py) at 3x64x64, batch 32,
cross-entropy, SGD(momentum 0.9): forward + backward + step. Ember beside torch in one process,
alternating, same weights and data, torch with 2 threads. Also a VGG16 training step (--vgg, batch 8
at 3x32x32 by default: the issue's "VGG16 train step" figure).

    /work/venv/bin/python bench/w7_resnet.py [--iters 2] [--repeats 5] [--profile] [--vgg]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, profile, table  # noqa: E402
from cnn_models import copy_weights, resnet18, train_step, vgg16  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGETS = {"W7 ResNet-18 3x64x64 b32": 1.5}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--vgg", action="store_true", help="VGG16 instead of ResNet-18")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both libraries")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds (time.process_time), not wall time: "
                    "with --threads 1, robust to other jobs on the machine")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((args.batch, 3, args.size, args.size)).astype(np.float32)
    y_np = rng.integers(0, 10, args.batch).astype(np.int64)
    build = vgg16 if args.vgg else resnet18
    torch.manual_seed(0)
    tm = build(torch, num_classes=10)
    em = build(ember, num_classes=10)
    copy_weights(ember, tm, em)
    e_step, t_step = train_step(ember, em, x_np, y_np), train_step(torch, tm, x_np, y_np)
    if args.profile:
        profile(e_step, iters=2, warmup=1, top=30)
        return
    name = f"{'VGG16' if args.vgg else 'W7 ResNet-18'} 3x{args.size}x{args.size} b{args.batch}"
    row = compare(name, e_step, t_step, iters=args.iters, repeats=args.repeats, warmup=1, clock=time.process_time if args.cpu else time.perf_counter)
    print(machine() + ("; CPU seconds (process_time)" if args.cpu else "; wall seconds"))
    print(table([row], TARGETS))


if __name__ == "__main__":
    main()
