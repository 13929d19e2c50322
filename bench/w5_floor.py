"""W5's floor: what its GEMMs take alone, and what its compiled nodes take with hot and with cold caches.

    .venv/bin/python bench/w5_floor.py gemm        # each GEMM shape of a W5 step, NumPy vs torch, one thread
    .venv/bin/python bench/w5_floor.py cold [NAME] # compiled W5 nodes named NAME (default: the attention ones)
                                                   # on the step's own inputs, repeated (hot) and after a
                                                   # 64 MB cache flush (cold); medians of 30 calls

The GEMM table is the part of the step no library can shorten (both run at the core's peak); the cold
column is what a node costs inside the step, where the activations it reads were written long before.
"""
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

T, C = 16 * 64, 128     # W5's tokens per batch and width
LAYERS = [(C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)]   # qkv, attention proj, MLP up, MLP down (per block)
HEAD = (C, 65)


def _best(fn, n=200, repeats=5):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def gemm():
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    total = {"numpy": 0.0, "torch": 0.0}
    print("| product | shape (M x K x N) | NumPy | torch | NumPy GFLOP/s |\n|---|---|---|---|---|")
    for blocks, (i, o) in [(2, s) for s in LAYERS] + [(1, HEAD)]:
        x, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((T, i), (o, i), (T, o)))
        tx, tw, tg = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(g)
        for name, shape, f_np, f_t in [
                ("x w^T", (T, i, o), lambda: x @ w.T, lambda: tx @ tw.T),
                ("g w", (T, o, i), lambda: g @ w, lambda: tg @ tw),
                ("g^T x", (o, T, i), lambda: g.T @ x, lambda: tg.T @ tx)]:
            a, b = _best(f_np), _best(f_t)
            total["numpy"] += blocks * a
            total["torch"] += blocks * b
            print(f"| {name} | {' x '.join(map(str, shape))} | {a * 1e6:.0f} us | {b * 1e6:.0f} us | "
                  f"{2 * np.prod(shape) / a / 1e9:.0f} |")
    print(f"\nGEMMs of one W5 step: NumPy {total['numpy'] * 1e3:.2f} ms, torch {total['torch'] * 1e3:.2f} ms")


def cold(names):
    from compiled import compiled_step
    step, _ = compiled_step("W5")
    runner = step._last.runner
    seen = {}
    for node in step.graph.nodes:
        if node.name in names:
            fn = runner.fns[id(node)]
            runner.fns[id(node)] = lambda *a, fn=fn, node=node: (seen.__setitem__(id(node), (node, fn, a)), fn(*a))[1]
    runner._run = None       # generate the replay again over the wrapped functions
    for _ in range(3):
        step()
    flush = np.ones(64 << 18, np.float32)   # 64 MB

    def median(fn, args, flushed):
        ts = []
        for _ in range(30):
            if flushed:
                flush[::16] += 1
            t0 = time.perf_counter()
            fn(*args)
            ts.append(time.perf_counter() - t0)
        return sorted(ts)[len(ts) // 2]
    print("| node | hot | cold |\n|---|---|---|")
    for node, fn, args in seen.values():
        print(f"| {node.name} | {median(fn, args, False) * 1e6:.0f} us | {median(fn, args, True) * 1e6:.0f} us |")


if __name__ == "__main__":
    threadpool_limits(1)
    what = sys.argv[1] if len(sys.argv) > 1 else "gemm"
    if what == "gemm":
        gemm()
    else:
        cold(set(sys.argv[2:]) or {"Attention", "AttentionGradPacked"})
