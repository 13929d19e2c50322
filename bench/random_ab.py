"""A/B of ember's random numbers: this checkout against a base checkout (e.g. the PCG64 host generator).

Each side runs in its own process (the two are different `ember` packages), alternating, timed in CPU
time (time.process_time: on a shared machine other processes' load counts less than in wall time); the
best of all runs is printed per case.

    git archive 3f2ee54 ember | tar -x -C /tmp/base      # the commit before the Philox generator
    /work/venv/bin/python bench/random_ab.py /tmp/base [rounds]
"""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = """
import time, timeit, ember, ember.nn.functional as F
ember.manual_seed(0)
x = ember.randn(256, 1024)
cases = {"randn(1024, 1024)": lambda: ember.randn(1024, 1024), "rand(1024, 1024)": lambda: ember.rand(1024, 1024),
         "F.dropout((256, 1024), 0.5)": lambda: F.dropout(x, 0.5)}
for name, fn in cases.items():
    print(name, min(timeit.repeat(fn, timer=time.process_time, number=10, repeat=9)) / 10 * 1e3, sep="\\t")
"""


def run(path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CASES], cwd=path, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=path), check=True).stdout
    return {name: float(ms) for name, ms in (line.split("\t") for line in out.strip().splitlines())}


def main() -> None:
    base = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    best = {"base": {}, "this": {}}
    for _ in range(rounds):
        for side, path in (("base", base), ("this", ROOT)):
            for name, ms in run(path).items():
                best[side][name] = min(ms, best[side].get(name, float("inf")))
    for name in best["this"]:
        b, t = best["base"][name], best["this"][name]
        print(f"{name:30s} base {b:7.2f} ms   this {t:7.2f} ms   this/base {t / b:5.2f}")


if __name__ == "__main__":
    main()
