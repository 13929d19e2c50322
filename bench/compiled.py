"""Compiled mode (shared/WORKLOADS.md): W2, W3, W4, W5 with the whole training step under `ember.compile`,
beside torch eager and Ember eager, in one process, alternating (bench/harness.py).

    .venv/bin/python bench/compiled.py                 # all four, ratio table
    .venv/bin/python bench/compiled.py W5 --passes     # and what each pass contributes
    .venv/bin/python bench/compiled.py --compile-time  # W5 compile time in a fresh process
    .venv/bin/python bench/compiled.py W5 --free gemm  # what a node group is worth (gemm, attention, ...)

Targets (issue 10): compiled W2, W3, W5 <= 0.8x torch eager, compiled W4 <= 1.2x; W5 compile time < 5 s.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, machine, table  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402

TARGETS = {"W2": 0.8, "W3": 0.8, "W4": 1.2, "W5": 0.8}
ITERS = {"W2": 100, "W3": 100, "W4": 20, "W5": 5}   # W4: 5-step blocks (30 ms) varied 1.04-1.22 between runs


def w2(lib, compiled=False):
    N, D_in, H, D_out = 64, 1000, 100, 10
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((N, D_in), dtype=np.float32), rng.standard_normal((N, D_out), dtype=np.float32)
    w1, w2_ = rng.standard_normal((D_in, H), dtype=np.float32), rng.standard_normal((H, D_out), dtype=np.float32)
    X, Y = lib.from_numpy(x), lib.from_numpy(y)
    W1, W2 = lib.from_numpy(w1).requires_grad_(), lib.from_numpy(w2_).requires_grad_()
    lr = 1e-6

    def step():
        y_pred = X.mm(W1).clamp(min=0).mm(W2)
        loss = (y_pred - Y).pow(2).sum()
        loss.backward()
        with lib.no_grad():
            W1.sub_(lr * W1.grad)
            W2.sub_(lr * W2.grad)
            W1.grad.zero_()
            W2.grad.zero_()
        return loss
    return step


def _train_step(lib, model, opt, x, y, flat=False):
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)) if flat else F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss
    return step


def w3(lib):
    nn = lib.nn
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64).astype(np.int64))
    lib.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 100), nn.ReLU(), nn.Linear(100, 10))
    return _train_step(lib, model, lib.optim.Adam(model.parameters(), lr=1e-3), x, y)


def w4(lib):
    nn = lib.nn
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64).astype(np.int64))
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(1568, 10))
    return _train_step(lib, model, lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), x, y)


def w5(lib):
    from w5_gpt import make, VOCAB, BATCH, BLOCK
    rng = np.random.default_rng(0)
    idx = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    tgt = rng.integers(0, VOCAB, (BATCH, BLOCK)).astype(np.int64)
    return make(lib, idx, tgt)


WORKLOADS = {"W2": w2, "W3": w3, "W4": w4, "W5": w5}


def compiled_step(name, passes=None):
    """The compiled Ember step, warmed up (trace, retrace to the steady state, first replay); and the
    seconds that took."""
    t0 = time.perf_counter()
    step = ember.compile(WORKLOADS[name](ember), passes=passes)
    for _ in range(3):
        step()
    return step, time.perf_counter() - t0


def run(names, pass_table, clock=time.perf_counter):
    rows = []
    for name in names:
        t_step = WORKLOADS[name](torch)
        e_step = WORKLOADS[name](ember)
        c_step, secs = compiled_step(name)
        rows.append(compare(f"{name} compiled", c_step, t_step, iters=ITERS[name], clock=clock))
        rows.append(compare(f"{name} eager", e_step, t_step, iters=ITERS[name], clock=clock))
        info = c_step.cache_info()
        print(f"{name}: warm-up (trace, retrace, first replay) {secs:.2f} s; {len(c_step.graph)} nodes; "
              f"cache {dict(traces=info.traces, hits=info.hits)}", flush=True)
        if pass_table:
            print(passes_table(name), flush=True)
    print(machine() + ("; CPU seconds (process_time)" if clock is time.process_time else "; wall seconds"))
    print(table(rows, {f"{n} compiled": TARGETS[n] for n in names}))


def passes_table(name):
    """Time of the compiled step with the pipeline cut after each pass (alternating, medians)."""
    from ember.jit.passes import DEFAULT
    cuts = [DEFAULT[:i] for i in range(len(DEFAULT))] + [None]    # each prefix of the default pipeline
    steps = [(("none" if c == [] else "+".join(c)) if c is not None else "default (" + "+".join(DEFAULT) + ")",
              compiled_step(name, c)[0]) for c in cuts]
    import statistics
    times = {k: [] for k, _ in steps}
    for _ in range(9):
        for k, s in steps:
            t0 = time.perf_counter()
            for _ in range(ITERS[name]):
                s()
            times[k].append((time.perf_counter() - t0) / ITERS[name])
    out = [f"| {name}: passes | nodes | ms / step |", "|---|---|---|"]
    for k, s in steps:
        out.append(f"| {k} | {len(s.graph)} | {statistics.median(times[k]) * 1e3:.2f} |")
    return "\n".join(out)


def node_profile(name, repeats=5):
    """Seconds per step spent in each primitive (or fused chain) of the compiled step, by name."""
    from collections import defaultdict
    from ember.jit.codegen import _fix
    step, _ = compiled_step(name)
    runner = step._last.runner
    g = step.graph
    fns = runner.fns
    # the leaves as the last replay bound them: run the step once more through a timing interpreter
    orig = runner._run
    times = defaultdict(float)

    def timed(leaves):
        env = {v.id: a for v, a in zip(g.leaves, leaves)}
        for kind, item in runner.order:
            if kind == "check":
                continue
            ins = [env[v.id] for v in item.inputs]
            t0 = time.perf_counter()
            out = fns[id(item)](*ins)
            if id(item) in runner.fix:
                out = [_fix(o, runner.fix[id(item)]) for o in out] if len(item.outputs) > 1 else \
                    _fix(out, runner.fix[id(item)])
            key = item.attrs.get("ops", item.name) if item.name == "Fused" else item.name
            times[key] += time.perf_counter() - t0
            for o, v in zip(out if len(item.outputs) > 1 else (out,), item.outputs):
                env[v.id] = o
        return ([env[v.id] for v in g.outputs], [env[v.id] for v in g.escapes],
                [r(env[v.id]) for r, (v, _) in zip(runner.reads, g.reads)])
    runner._run = timed
    t0 = time.perf_counter()
    for _ in range(repeats):
        step()
    total = (time.perf_counter() - t0) / repeats
    runner._run = orig
    rows = sorted(times.items(), key=lambda kv: -kv[1])
    print(f"{name} compiled: {total * 1e3:.1f} ms / step; by node (ms / step):")
    for k, t in rows[:25]:
        print(f"  {t / repeats * 1e3:8.2f}  {k}")


FREE_GROUPS = {   # --free: node groups of the compiled step, by primitive name
    "gemm": {"MatMul", "Linear"},
    "attention": {"Attention", "AttentionGrad"},
    "sum": {"Sum"},
    "cat": {"Cat"},
    "rest": None,   # every other node but the in-place updates (AdamStep, ...)
}


def free_nodes(name, groups, rounds=30):
    """What a group of nodes is worth: the compiled step beside a copy of it in which each node of the
    groups returns its first output again instead of computing (wrong values, the rest of the step
    unchanged), alternating; the median of the paired ratios. A node's cost in --profile includes
    cache misses that another node pays for once it is gone; this measures the whole step."""
    import statistics
    full, _ = compiled_step(name)
    cut, _ = compiled_step(name)
    runner = cut._last.runner
    named = set().union(*(FREE_GROUPS[g] for g in groups if FREE_GROUPS[g] is not None))
    others = set().union(*(v for v in FREE_GROUPS.values() if v is not None))
    n = 0
    for node in cut.graph.nodes:
        rest = "rest" in groups and node.name not in others and not node.mutates
        if node.name in named or rest:
            fn, memo = runner.fns[id(node)], []
            runner.fns[id(node)] = lambda *a, fn=fn, memo=memo: memo[0] if memo else memo.append(fn(*a)) or memo[0]
            n += 1
    runner._run = None   # generate the replay function again over the changed fns
    cut()
    ratios, t_full, t_cut = [], [], []
    for _ in range(rounds):
        for step, acc in ((full, t_full), (cut, t_cut)):
            time.sleep(0.03)
            t0 = time.perf_counter()
            for _ in range(ITERS[name]):
                step()
            acc.append((time.perf_counter() - t0) / ITERS[name])
        ratios.append(t_cut[-1] / t_full[-1])
    ratios.sort()
    print(f"{name}, {'+'.join(groups)} free ({n} nodes): {statistics.median(t_full) * 1e3:.2f} -> "
          f"{statistics.median(t_cut) * 1e3:.2f} ms / step; paired ratio median {statistics.median(ratios):.3f} "
          f"(quartiles {ratios[len(ratios) // 4]:.3f}-{ratios[3 * len(ratios) // 4]:.3f})")


def compile_time():
    code = ("import time; t0 = time.perf_counter(); import sys; sys.path.insert(0, 'bench');"
            "import ember; from compiled import compiled_step; s, secs = compiled_step('W5');"
            "print(f'{time.perf_counter() - t0:.2f} {secs:.2f}')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    total, secs = r.stdout.split()[-2:]
    print(f"W5 compile in a fresh process: {secs} s (trace, retrace, first replay); {total} s with imports")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--passes", action="store_true")
    ap.add_argument("--compile-time", action="store_true")
    ap.add_argument("--profile", action="store_true", help="time per node of the compiled step")
    ap.add_argument("--free", metavar="GROUP[,GROUP]", help="what node groups are worth: "
                    f"the step with them made free ({', '.join(FREE_GROUPS)})")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both sides")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds (time.process_time), not wall time: "
                    "with --threads 1, robust to other jobs on the machine")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    if args.compile_time:
        compile_time()
        return
    if args.free:
        for n in [n.upper() for n in args.names] or ["W5"]:
            free_nodes(n, args.free.split(","))
        return
    if args.profile:
        for n in [n.upper() for n in args.names] or list(WORKLOADS):
            node_profile(n)
        return
    run([n.upper() for n in args.names] or list(WORKLOADS), args.passes,
        time.process_time if args.cpu else time.perf_counter)


if __name__ == "__main__":
    main()
