"""Fused-kernel candidates for the compiled CPU path: NumPy (the primitives' forwards / kernels.py's one-buffer
chains) against numexpr and numba, on the shapes of W3-W5. Prints microseconds per call (median of 7) and
numba's first-call compile time. (issue 10: "measure numba against numexpr and plain NumPy; keep what pays")

    .venv/bin/python bench/jit_kernels.py
"""
from __future__ import annotations

import os
import math
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bench(fn, *args, iters=50):
    fn(*args)
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        ts.append((time.perf_counter() - t0) / iters)
    return statistics.median(ts) * 1e6


def main():
    import numexpr
    import numba
    from ember.ops.layers import Gelu, LayerNorm
    from ember.jit.kernels import build
    rng = np.random.default_rng(0)
    rows = []

    # 1. a three-op chain (Mul + Add + Relu) at W3's hidden size and W5's MLP size
    for shape in ((64, 100), (1024, 512)):
        a, b, c = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))

        def np_chain(a, b, c):
            t = a * b
            t += c
            return np.maximum(t, 0, out=t)

        @numba.njit(cache=False)
        def nb_chain(a, b, c):
            out = np.empty_like(a)
            fa, fb, fc, fo = a.reshape(-1), b.reshape(-1), c.reshape(-1), out.reshape(-1)
            for i in range(fa.size):
                t = fa[i] * fb[i] + fc[i]
                fo[i] = t if t > 0 else np.float32(0)
            return out
        t0 = time.perf_counter()
        nb_chain(a, b, c)
        jit_s = time.perf_counter() - t0
        ne = lambda a, b, c: numexpr.evaluate("where(a * b + c > 0, a * b + c, 0)")   # noqa: E731
        rows.append((f"Mul+Add+Relu {shape}", bench(np_chain, a, b, c), bench(ne, a, b, c),
                     bench(nb_chain, a, b, c), jit_s))

    # 2. exact GELU (W5 MLP: 1024 x 512)
    x = rng.standard_normal((1024, 512), dtype=np.float32)
    g = Gelu()

    @numba.njit(cache=False)
    def nb_gelu(x):
        out = np.empty_like(x)
        fx, fo = x.reshape(-1), out.reshape(-1)
        for i in range(fx.size):
            v = np.float64(fx[i])
            fo[i] = np.float32(0.5 * v * (1.0 + math.erf(v * 0.7071067811865476)))
        return out
    t0 = time.perf_counter()
    nb_gelu(x)
    jit_s = time.perf_counter() - t0
    rows.append(("Gelu (1024, 512)", bench(g.forward, x), float("nan"), bench(nb_gelu, x), jit_s))

    # 3. LayerNorm (W5: 1024 x 128)
    x = rng.standard_normal((1024, 128), dtype=np.float32)
    w, b = np.ones(128, np.float32), np.zeros(128, np.float32)
    ln = LayerNorm()
    ln.n, ln.eps = 1, 1e-5

    @numba.njit(cache=False)
    def nb_ln(x, w, b, eps):
        out = np.empty_like(x)
        n, d = x.shape
        for r in range(n):
            m = 0.0
            for j in range(d):
                m += x[r, j]
            m /= d
            v = 0.0
            for j in range(d):
                t = x[r, j] - m
                v += t * t
            rs = 1.0 / np.sqrt(v / d + eps)
            for j in range(d):
                out[r, j] = (x[r, j] - m) * rs * w[j] + b[j]
        return out
    t0 = time.perf_counter()
    nb_ln(x, w, b, 1e-5)
    jit_s = time.perf_counter() - t0
    rows.append(("LayerNorm (1024, 128)", bench(ln.forward, x, w, b), float("nan"), bench(nb_ln, x, w, b, 1e-5),
                 jit_s))

    print("| kernel | NumPy us | numexpr us | numba us | numba first call s |")
    print("|---|---|---|---|---|")
    for name, a, b, c, j in rows:
        print(f"| {name} | {a:.1f} | {b:.1f} | {c:.1f} | {j:.2f} |")


if __name__ == "__main__":
    main()
