"""The GPU rows of shared/WORKLOADS.md: Ember's `cuda` device beside torch's CUDA build in one process,
alternating, each device synchronised before every clock read (harness.compare's `sync`).

    python3 bench/gpu.py                  # every workload below
    python3 bench/gpu.py W6 W5            # some of them
    python3 bench/gpu.py --quick          # small sizes and few iterations: a first smoke run

| id | what one iteration is |
|---|---|
| W6 | a @ b, 8192 x 8192 x 8192, float32 and bfloat16 (TFLOP/s beside the times; Ember has no TF32 mode) |
| W3, W4 | the CPU workloads on the GPU: MLP + Adam, small CNN + SGD(momentum) |
| W5 | the tiny GPT (bench/w5_gpt.py) + AdamW |
| GPT-2 small | the same model at vocab 50304, n_embd 768, 12 heads, 12 layers, block 1024, batch 8 |
| W7 | ResNet-18 (bench/cnn_models.py) + SGD(momentum) at 3x64x64 and 3x224x224, batch 32 |

Same weights on both sides (torch's copied into Ember), same data, float32 unless a row says otherwise.
docs/gpu-runbook.md says how a session with a lent GPU runs this (scripts/gpu_check.sh). No real GPU has
run it yet; `EMBER_FAKE_CUDA=1 python bench/gpu.py --quick` checks its plumbing on the CPU only (those
numbers mean nothing).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_models import copy_weights, resnet18, w4_cnn  # noqa: E402
from harness import compare, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

SYNC = (ember.cuda.synchronize, torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None))


def _pair(build, *args, **kw):
    """The same model in torch and Ember (torch's weights copied), each on its library's cuda device."""
    torch.manual_seed(0)
    tm = build(torch, *args, **kw)
    em = build(ember, *args, **kw)
    copy_weights(ember, tm, em)
    return tm.to(_tdev()), em.to("cuda")


def _tdev():
    return "cuda" if torch.cuda.is_available() else "cpu"   # cpu: the fake-device plumbing run


def _step(lib, model, x, y, opt, loss="ce"):
    dev = "cuda" if lib is ember else _tdev()
    x, y = lib.from_numpy(x).to(dev), lib.from_numpy(y).to(dev)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        out = model(x)
        loss_value = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss_value.backward()
        opt.step()
        return loss_value
    return step


def _train_rows(name, build, x, y, make_opt, iters, **kw):
    tm, em = _pair(build, **kw)
    steps = [_step(lib, m, x, y, make_opt(lib, m)) for lib, m in ((ember, em), (torch, tm))]
    return [compare(name, *steps, iters=iters, repeats=5, warmup=1, sync=SYNC)]


def w6(q):
    n = 2048 if q else 8192
    rows = []
    for dt in ("float32", "bfloat16"):
        a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
        ea, eb = (ember.from_numpy(a).to("cuda").to(getattr(ember, dt)) for _ in range(2))
        ta, tb = (torch.from_numpy(a).to(_tdev()).to(getattr(torch, dt)) for _ in range(2))
        torch.backends.cuda.matmul.allow_tf32 = False    # float32 on both sides, not TF32
        r = compare(f"W6 GEMM {n}^3 {dt}", lambda: ea @ eb, lambda: ta @ tb, iters=3 if q else 10, repeats=5,
                    warmup=1, sync=SYNC)
        r["name"] += f" (ember {2 * n ** 3 / r['ember'] / 1e12:.0f}, torch {2 * n ** 3 / r['torch'] / 1e12:.0f} TFLOP/s)"
        rows.append(r)
    return rows


def w3(q):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)
    mlp = lambda lib: lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(784, 100), lib.nn.ReLU(),  # noqa: E731
                                        lib.nn.Linear(100, 10))
    return _train_rows("W3 MLP + Adam", mlp, x, y, lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3),
                       10 if q else 100)


def w4(q):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)
    return _train_rows("W4 small CNN + SGD", w4_cnn, x, y, _sgd, 5 if q else 50)


def _sgd(lib, m):
    return lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)


def _adamw(lib, m):
    return lib.optim.AdamW(m.parameters(), lr=3e-4)


def _gpt_rows(name, cfg, batch, iters):
    from w5_gpt import gpt
    rng = np.random.default_rng(0)
    idx = rng.integers(0, cfg["vocab"], (batch, cfg["block"]))
    tgt = rng.integers(0, cfg["vocab"], (batch, cfg["block"]))
    return _train_rows(name, gpt, idx, tgt, _adamw, iters, **cfg)


def w5(q):
    return _gpt_rows("W5 tiny GPT + AdamW", dict(vocab=65, block=64, n_embd=128, n_head=4, n_layer=2), 16,
                     5 if q else 50)


def gpt2(q):
    cfg = dict(vocab=50304, block=128 if q else 1024, n_embd=768, n_head=12, n_layer=2 if q else 12)
    return _gpt_rows(f"GPT-2 small{' (quick: 2 layers, block 128)' if q else ''} + AdamW", cfg, 8, 2 if q else 10)


def w7(q):
    rows = []
    for size in ((32,) if q else (64, 224)):
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((32, 3, size, size)).astype(np.float32), rng.integers(0, 10, 32)
        rows += _train_rows(f"W7 ResNet-18 3x{size}x{size} b32", resnet18, x, y, _sgd, 2 if q else 20,
                            num_classes=10)
    return rows


WORKLOADS = {"W6": w6, "W3": w3, "W4": w4, "W5": w5, "GPT2": gpt2, "W7": w7}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"workloads (default: all): {', '.join(WORKLOADS)}")
    ap.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    args = ap.parse_args()
    if not ember.cuda.is_available():
        sys.exit("bench/gpu.py: Ember sees no cuda device (CuPy and a GPU, or EMBER_FAKE_CUDA=1 for a dry run)")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (fake device: numbers mean nothing)"
    print(f"{gpu}; torch {torch.__version__}; NumPy {np.__version__}; "
          f"CuPy {getattr(sys.modules.get('cupy'), '__version__', 'not imported')}", flush=True)
    rows = []
    for name in args.names or WORKLOADS:
        t0 = time.perf_counter()
        try:
            new = WORKLOADS[name](args.quick)
        except Exception as e:     # one workload failing must not lose the others' numbers
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
            continue
        rows += new
        print(table(new).splitlines()[-1] + f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
