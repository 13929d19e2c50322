"""All-reduce latency and bandwidth on 2 ranks, Ember (MPI) beside torch.distributed's gloo, and the DDP step
overhead for W3 and W4 at equal global batch.

    python bench/allreduce.py                 # both parts; launches its own 2-rank jobs with mpiexec
    python bench/allreduce.py --part allreduce --repeats 3

Jobs alternate (ember, gloo, ember, gloo, ...) so a loaded machine hits both alike; the median per size
over the repeats is reported. Each rank is one process started by the mpich wheel's mpiexec; gloo ranks
get their rank from Hydra's PMI_RANK and meet over TCP on localhost.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [4 * 4 ** k for k in range(13)]        # 4 B .. 64 MiB (float32 elements: 1 .. 16 Mi)


def iters_for(nbytes):
    return max(5, min(300, int(2e7 / max(nbytes, 1)) + 5))


def worker_allreduce(kind):
    import numpy as np
    rank = int(os.environ.get("PMI_RANK", "0"))
    world = int(os.environ.get("PMI_SIZE", "1"))
    if kind == "ember":
        sys.path.insert(0, ROOT)
        import ember
        import ember.distributed as dist
        dist.init_process_group("mpi")
        make = lambda n: ember.ones(n)                                   # noqa: E731
        op = lambda t: dist.all_reduce(t)                               # noqa: E731
        barrier = dist.barrier
    else:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=rank, world_size=world)
        make = lambda n: torch.ones(n)                                   # noqa: E731
        op = lambda t: dist.all_reduce(t)                               # noqa: E731
        barrier = dist.barrier
    out = {}
    for nbytes in SIZES:
        t = make(nbytes // 4)
        n = iters_for(nbytes)
        for _ in range(max(2, n // 10)):
            op(t)
        barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            op(t)
        dt = (time.perf_counter() - t0) / n
        out[nbytes] = dt
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    if kind == "ember":
        dist.destroy_process_group()
    else:
        dist.destroy_process_group()
    _ = np


def worker_ddp(workload, mode, steps):
    """One DDP training step time (median), this rank's; mode: single (1 process, batch 64), ddp (per-rank
    batch 64/W, cap 25 MB), ddp_small (cap 0.05 MB: several buckets, overlap), local (no_sync: no comm)."""
    sys.path.insert(0, ROOT)
    import numpy as np
    import ember
    import ember.nn as nn
    import ember.nn.functional as F
    import ember.distributed as dist
    dist.init_process_group("mpi")
    W = dist.get_world_size()
    ember.manual_seed(0)
    if workload == "W3":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 100), nn.ReLU(), nn.Linear(100, 10))
        make_opt = lambda ps: ember.optim.Adam(ps, lr=1e-3)             # noqa: E731
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(1568, 10))
        make_opt = lambda ps: ember.optim.SGD(ps, lr=0.01, momentum=0.9)  # noqa: E731
    batch = 64 // W
    rng = np.random.default_rng(dist.get_rank())
    x = ember.tensor(rng.standard_normal((batch, 1, 28, 28)).astype("float32"))
    y = ember.tensor(rng.integers(0, 10, batch))
    net = model
    if mode in ("ddp", "ddp_small", "local"):
        net = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.05 if mode == "ddp_small" else 25)
    opt = make_opt(model.parameters())

    def step():
        opt.zero_grad()
        if mode == "local":
            with net.no_sync():
                F.cross_entropy(net(x), y).backward()
        else:
            F.cross_entropy(net(x), y).backward()
        opt.step()
    for _ in range(5):
        step()
    times = []
    dist.barrier()
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    stats = getattr(net, "stats", {})
    wait = stats.get("wait_s", 0.0) / max(1, stats.get("reductions", 1))
    meds = [None] * W
    dist.all_gather_object(meds, (med, wait, stats.get("buckets", 0)))
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"step": max(m[0] for m in meds), "wait": max(m[1] for m in meds),
                                      "buckets": meds[0][2]}), flush=True)
    dist.destroy_process_group()


def launch(n, *args):
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT}
    r = subprocess.run([exe, "-n", str(n), sys.executable, os.path.abspath(__file__), *args], capture_output=True,
                       text=True, env=env, timeout=900)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"job {args} failed:\n{r.stdout}\n{r.stderr}")


def human(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} GiB"


def part_allreduce(repeats):
    runs = {"ember": [], "gloo": []}
    for _ in range(repeats):
        for kind in ("ember", "gloo"):
            runs[kind].append(launch(2, "--worker", "allreduce", kind))
    print("\n## All-reduce, 2 ranks, float32 SUM (median of", repeats, "jobs)\n")
    print("| size | Ember MPI (us) | gloo (us) | Ember / gloo | Ember GB/s | gloo GB/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for nbytes in SIZES:
        e = statistics.median(r[str(nbytes)] for r in runs["ember"])
        g = statistics.median(r[str(nbytes)] for r in runs["gloo"])
        print(f"| {human(nbytes)} | {e * 1e6:.1f} | {g * 1e6:.1f} | {e / g:.2f} | {nbytes / e / 1e9:.3f} | "
              f"{nbytes / g / 1e9:.3f} |")


def part_ddp(repeats, steps):
    print("\n## DDP step (max over ranks, median of steps; global batch 64)\n")
    print("| workload | 1 process (ms) | 2 ranks no comm (ms) | 2 ranks DDP 1 bucket (ms) | 2 ranks DDP small "
          "buckets (ms) | final wait 1 bucket / small (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for w in ("W3", "W4"):
        res = {m: [] for m in ("single", "local", "ddp", "ddp_small")}
        for _ in range(repeats):
            res["single"].append(launch(1, "--worker", "ddp", w, "single", str(steps)))
            for m in ("local", "ddp", "ddp_small"):
                res[m].append(launch(2, "--worker", "ddp", w, m, str(steps)))
        med = {m: statistics.median(r["step"] for r in v) * 1e3 for m, v in res.items()}
        wait = {m: statistics.median(r["wait"] for r in res[m]) * 1e3 for m in ("ddp", "ddp_small")}
        nb = res["ddp_small"][0]["buckets"]
        print(f"| {w} | {med['single']:.2f} | {med['local']:.2f} | {med['ddp']:.2f} | {med['ddp_small']:.2f} "
              f"({nb} buckets) | {wait['ddp']:.2f} / {wait['ddp_small']:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["allreduce", "ddp", "all"], default="all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--worker", nargs="+")
    a = ap.parse_args()
    if a.worker:
        if a.worker[0] == "allreduce":
            worker_allreduce(a.worker[1])
        else:
            worker_ddp(a.worker[1], a.worker[2], int(a.worker[3]))
        return
    import platform
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f} (provisional numbers on a shared, loaded machine)")
    if a.part in ("allreduce", "all"):
        part_allreduce(a.repeats)
    if a.part in ("ddp", "all"):
        part_ddp(a.repeats, a.steps)


if __name__ == "__main__":
    main()
