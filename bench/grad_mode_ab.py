"""A/B of per-thread grad mode (this checkout) against a checkout where it was one plain object.

Both run in one process on the same tensors, in alternating blocks, timed in CPU time of this thread
(time.thread_time: on a shared machine other processes' load counts less than in wall time). The base
side is the base checkout's `Primitive.apply` and `engine.run_backward`, compiled against this
checkout's package with grad mode in a plain object, so only that change is measured.

    git archive 04672f1 ember | tar -x -C /tmp/base     # the commit before per-thread grad mode
    /work/venv/bin/python bench/grad_mode_ab.py /tmp/base [repeats]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.autograd import engine, function  # noqa: E402


class _Plain:
    enabled = True


PLAIN = _Plain()   # the base side's grad mode


def _base_module(base: str, name: str) -> dict:
    src = open(os.path.join(base, "ember", "autograd", name + ".py")).read()
    ns = {"__name__": f"ember.autograd.{name}", "__package__": "ember.autograd"}
    exec(compile(src, f"base/{name}.py", "exec"), ns)
    ns["STATE"] = PLAIN
    ns["_make_fn"] = function._make_fn
    ns["function"] = function
    return ns


def main(base: str, repeats: int) -> None:
    bf, be = _base_module(base, "function"), _base_module(base, "engine")
    base_prim = bf["Primitive"].__dict__
    impls = {"base": (base_prim["apply"], base_prim["_no_graph"], be["run_backward"]),
             "branch": (function.Primitive.__dict__["apply"], function.Primitive.__dict__["_no_graph"],
                        engine.run_backward)}

    def use(key):
        function.Primitive.apply, function.Primitive._no_graph, engine.run_backward = impls[key]

    clock = time.thread_time
    a = ember.tensor(np.ones(10, np.float32), requires_grad=True)
    b = ember.tensor(np.ones(10, np.float32), requires_grad=True)
    c = ember.tensor(np.ones(10, np.float32))
    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
    opt = ember.optim.SGD(mlp.parameters(), lr=1e-3, momentum=0.9)
    xb, yb = ember.randn(16, 64), ember.randn(16, 10)

    def add(n):
        t0 = clock()
        for _ in range(n):
            a + b
        return (clock() - t0) / n

    def add_no_grad(n):
        with ember.no_grad():      # this checkout's switch ...
            PLAIN.enabled = False  # ... and the base's
            try:
                t0 = clock()
                for _ in range(n):
                    a + b
                return (clock() - t0) / n
            finally:
                PLAIN.enabled = True

    def add_plain(n):
        t0 = clock()
        for _ in range(n):
            c + c
        return (clock() - t0) / n

    def mul_sum_backward(n):
        t0 = clock()
        for _ in range(n):
            (a * b).sum().backward()
        return (clock() - t0) / n

    def mlp_step(n):   # the SGD update works on the arrays in place: no grad-mode switch in it
        t0 = clock()
        for _ in range(n):
            opt.zero_grad()
            nn.functional.mse_loss(mlp(xb), yb).backward()
            opt.step()
        return (clock() - t0) / n

    for key in impls:   # both sides really record graphs, and none under no_grad
        use(key)
        assert (a + b).requires_grad and not (c + c).requires_grad
        with ember.no_grad():
            PLAIN.enabled = False
            assert not (a + b).requires_grad
            PLAIN.enabled = True

    cases = [("a + b, 10 floats, requires_grad (records)", add, 100_000),
             ("a + b under no_grad", add_no_grad, 100_000),
             ("c + c, no input requires grad", add_plain, 100_000),
             ("(a * b).sum().backward()", mul_sum_backward, 20_000),
             ("MLP 16x64-32-10 SGD step", mlp_step, 2_000)]
    print(f"{'case':44s} {'base':>10s} {'branch':>10s}  branch/base")
    for name, fn, n in cases:
        res = {"base": [], "branch": []}
        for key in impls:
            use(key)
            fn(n // 10)
        for r in range(repeats):
            for key in (("base", "branch") if r % 2 else ("branch", "base")):
                use(key)
                res[key].append(fn(n))
        tb, tn = statistics.median(res["base"]), statistics.median(res["branch"])
        print(f"{name:44s} {tb * 1e6:8.3f}us {tn * 1e6:8.3f}us  {tn / tb:.3f}")
    use("branch")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 11)
