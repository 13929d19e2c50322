"""Shared benchmark harness: Ember beside torch in one process, alternating, medians and ratios.

Usage in a workload script:
    from harness import compare, machine, table
    rows = [compare("W1 add", ember_step, torch_step, iters=10000)]
    print(machine()); print(table(rows))
"""
from __future__ import annotations

import os
import platform
import statistics
import time


def _time(fn, iters: int, clock=time.perf_counter, sync=None) -> float:
    if sync is not None:
        sync()
    t0 = clock()
    for _ in range(iters):
        fn()
    if sync is not None:
        sync()
    return (clock() - t0) / iters


PAUSE = 0.25   # seconds of sleep before each timed block


def compare(name: str, ember_fn, torch_fn, iters: int, repeats: int = 7, warmup: int = 2,
            clock=time.perf_counter, pause: float = PAUSE, sync=(None, None)) -> dict:
    """Median seconds per iteration of each side; runs alternate so drift hits both alike.

    Each timed block starts after `pause` seconds of sleep: with more than one thread, the thread pool
    of the side that just ran (OpenBLAS's workers, torch's OpenMP team) spins for up to ~0.1 s after
    its last call and would take a core from the other side's first calls. Measured on W5 at 2 threads
    without the pause: torch 42 ms beside Ember against 27 ms alone; with it, both sides as alone.

    clock=time.process_time measures CPU seconds of the whole process instead of wall time: with one
    thread per library it is the work done, whatever else runs on the machine (a loaded shared VM).

    sync = (ember's, torch's) device synchronisation, called before each clock read (a GPU runs its
    work after the Python call returns: bench/gpu.py)."""
    es, ts = sync
    for _ in range(warmup):
        _time(ember_fn, max(1, iters // 10), clock, es)
        _time(torch_fn, max(1, iters // 10), clock, ts)
    te, tt = [], []
    for _ in range(repeats):
        time.sleep(pause)
        te.append(_time(ember_fn, iters, clock, es))
        time.sleep(pause)
        tt.append(_time(torch_fn, iters, clock, ts))
    e, t = statistics.median(te), statistics.median(tt)
    return {"name": name, "ember": e, "torch": t, "ratio": e / t}


def profile(fn, iters: int, warmup: int = 3, top: int = 20) -> None:
    """cProfile `iters` calls of `fn` after warm-up; prints the top entries by own time."""
    import cProfile
    import pstats
    for _ in range(warmup):
        fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(iters):
        fn()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def _fmt(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def table(rows, targets=None) -> str:
    targets = targets or {}
    out = ["| workload | ember | torch | ember / torch | target |", "|---|---|---|---|---|"]
    for r in rows:
        tgt = targets.get(r["name"])
        mark = "" if tgt is None else (f"<= {tgt} " + ("met" if r["ratio"] <= tgt else "**missed**"))
        out.append(f"| {r['name']} | {_fmt(r['ember'])} | {_fmt(r['torch'])} | {r['ratio']:.2f} | {mark} |")
    return "\n".join(out)


def machine() -> str:
    """The CPU (model name, family/model: "AMD EPYC" alone does not tell Zen 4 from Zen 5), the versions,
    and the kernel NumPy's BLAS runs (OPENBLAS_CORETYPE can force an older one: ember.__config__.show())."""
    import numpy as np
    import torch
    from threadpoolctl import threadpool_info
    cpu, fam = platform.processor() or "unknown CPU", {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name":
                    cpu = value.strip()
                elif key in ("cpu family", "model"):
                    fam.setdefault(key, value.strip())
                if key == "flags":
                    break
    except OSError:
        pass
    if fam:
        cpu += f" (family {fam.get('cpu family')} model {fam.get('model')})"
    blas = ", ".join(f"{p['internal_api']} {p.get('architecture')} kernel" for p in threadpool_info()
                     if p.get("user_api") == "blas")
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, NumPy {np.__version__} ({blas}), "
            f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
