"""MPI job (3 ranks: a server, two workers): parameter-server training converges in async and sync mode;
async staleness stays within max_staleness. Prints 'OK ...' / 'FAIL ...' lines on the server."""
import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.parameter_server import ParameterServer

dist.init_process_group("mpi")
R = dist.get_rank()
rng = np.random.default_rng(0)
X = rng.standard_normal((512, 8)).astype("float32")
Y = (X @ rng.standard_normal((8, 3))).argmax(1)
XT, YT = ember.tensor(X), ember.tensor(Y)


def run(mode, max_staleness, steps=40):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    ps = ParameterServer(model, lambda ps_: ember.optim.SGD(ps_, lr=0.2), mode=mode, max_staleness=max_staleness)
    if ps.is_server:
        before = float(F.cross_entropy(model(XT), YT))
        stats = ps.serve()
        after = float(F.cross_entropy(model(XT), YT))
        total = stats["applied"] + stats["dropped"]
        sent = 2 * steps
        ok = after < 0.6 * before and (mode == "sync" or total == sent) \
            and (max_staleness is None or stats["staleness_max"] <= max_staleness)
        print(f"{'OK' if ok else 'FAIL'} ps {mode} max_staleness={max_staleness}: loss {before:.3f} -> {after:.3f}, "
              f"applied {stats['applied']}, dropped {stats['dropped']}, staleness mean "
              f"{stats['staleness_mean']:.2f} max {stats['staleness_max']} hist {dict(stats['staleness'])}",
              flush=True)
    else:
        g = np.random.default_rng(R)
        for _ in range(steps):
            idx = g.integers(0, len(X), 32)
            F.cross_entropy(model(XT[ember.tensor(idx)]), YT[ember.tensor(idx)]).backward()
            ps.step()
        ps.finish()
    dist.barrier()


run("async", None)
run("async", 1)
run("sync", None)
dist.destroy_process_group()
