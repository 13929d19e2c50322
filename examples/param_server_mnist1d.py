"""Synchronous vs asynchronous parameter-server training on MNIST-1D: test loss against wall-clock.

    ember run -n 3 examples/param_server_mnist1d.py            # rank 0 the server, 2 workers
    ember run -n 3 examples/param_server_mnist1d.py --plot ps.png

Worker 2 is made a straggler (--straggler-ms per step), as on a shared cluster: in sync mode every update
waits for it; in async mode the fast worker goes on and the server applies gradients as they come,
with their staleness recorded (and bounded by --max-staleness).
"""
import argparse
import time

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.datasets import MNIST1D
from ember.distributed.parameter_server import ParameterServer


def mlp():
    return nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 10))


def run(mode, a, xs, ys, xt, yt):
    rank = dist.get_rank()
    ember.manual_seed(0)
    model = mlp()
    ps = ParameterServer(model, lambda p: ember.optim.SGD(p, lr=a.lr, momentum=0.9), mode=mode,
                         max_staleness=a.max_staleness if mode == "async" else None)
    curve = []
    if ps.is_server:
        t0 = time.perf_counter()

        def evaluate(server):
            if server.version % a.eval_every == 0:
                with ember.no_grad():
                    loss = float(F.cross_entropy(model(xt), yt))
                curve.append((time.perf_counter() - t0, server.version, loss))
        evaluate(ps)
        stats = ps.serve(on_update=evaluate)
        return curve, stats
    rng = np.random.default_rng(rank)
    for _ in range(a.steps):
        idx = ember.tensor(rng.integers(0, len(ys), a.batch))
        F.cross_entropy(model(xs[idx]), ys[idx]).backward()
        if rank == 2 and a.straggler_ms:
            time.sleep(a.straggler_ms / 1000)
        ps.step()
    ps.finish()
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300, help="steps per worker")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--max-staleness", type=int, default=8)
    ap.add_argument("--straggler-ms", type=float, default=20.0)
    ap.add_argument("--eval-every", type=int, default=20)
    ap.add_argument("--plot", default=None, help="save loss-vs-time curves to this image (needs matplotlib)")
    a = ap.parse_args()
    dist.init_process_group("mpi")
    train, test = MNIST1D(train=True), MNIST1D(train=False)
    xs, ys = ember.tensor(train.data), ember.tensor(train.targets)
    xt, yt = ember.tensor(test.data), ember.tensor(test.targets)
    results = {}
    for mode in ("sync", "async"):
        results[mode] = run(mode, a, xs, ys, xt, yt)
        dist.barrier()
    if dist.get_rank() == 0:
        print("mode   updates  wall (s)  final test loss  staleness mean/max  dropped")
        for mode, (curve, stats) in results.items():
            print(f"{mode:6s} {stats['applied']:7d}  {stats['wall_s']:8.2f}  {curve[-1][2]:15.3f}  "
                  f"{stats['staleness_mean']:8.2f}/{stats['staleness_max']:<3d}      {stats['dropped']}")
        print("\ntest loss at wall-clock time t (s):")
        horizon = min(results[m][1]["wall_s"] for m in results)
        for frac in (0.25, 0.5, 0.75, 1.0):
            t = horizon * frac
            row = []
            for mode in ("sync", "async"):
                pts = [p for p in results[mode][0] if p[0] <= t]
                row.append(f"{mode} {pts[-1][2]:.3f}" if pts else f"{mode} -")
            print(f"  t={t:6.2f}  " + "  ".join(row))
        if a.plot:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            for mode in ("sync", "async"):
                c = results[mode][0]
                plt.plot([p[0] for p in c], [p[2] for p in c], label=mode)
            plt.xlabel("wall-clock (s)")
            plt.ylabel("MNIST-1D test loss")
            plt.legend()
            plt.savefig(a.plot)
            print("saved", a.plot)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
