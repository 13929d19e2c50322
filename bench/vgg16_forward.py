"""VGG16 (torchvision's configuration D, bench/cnn_models.py) forward at batch 1, 3x224x224, eval mode,
no grad: Ember beside torch in one process, alternating, same weights, torch with 2 threads.

    /work/venv/bin/python bench/vgg16_forward.py [--iters 2] [--repeats 5] [--profile]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, profile, table  # noqa: E402
from cnn_models import copy_weights, vgg16  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

NAME = "VGG16 forward b1 224x224"
TARGET = 1.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads of both libraries")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds (time.process_time), not wall time: "
                    "with --threads 1, robust to other jobs on the machine")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    x_np = np.random.default_rng(0).standard_normal((args.batch, 3, 224, 224)).astype(np.float32)
    torch.manual_seed(0)
    tm = vgg16(torch).eval()
    em = vgg16(ember).eval()
    copy_weights(ember, tm, em)
    ex, tx = ember.from_numpy(x_np), torch.from_numpy(x_np)

    def e_fwd():
        with ember.no_grad():
            return em(ex)

    def t_fwd():
        with torch.no_grad():
            return tm(tx)
    diff = float(np.abs(e_fwd().numpy() - t_fwd().numpy()).max())
    if args.profile:
        profile(e_fwd, iters=3, warmup=1, top=25)
        return
    row = compare(NAME, e_fwd, t_fwd, iters=args.iters, repeats=args.repeats, warmup=1, clock=time.process_time if args.cpu else time.perf_counter)
    print(machine() + ("; CPU seconds (process_time)" if args.cpu else "; wall seconds"))
    print(table([row], {NAME: TARGET}))
    print(f"max |ember - torch| of the logits: {diff:.2e}")


if __name__ == "__main__":
    main()
