"""MPI job: a 5-layer Sequential split over the ranks with Pipeline; the gradients (and the loss) equal the
unsplit model's on the whole batch. Prints OK/FAIL lines."""
import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.pipeline import Pipeline

dist.init_process_group("mpi")
R, W = dist.get_rank(), dist.get_world_size()


def net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 4))


rng = np.random.default_rng(0)
x = ember.tensor(rng.standard_normal((10, 6)).astype("float32"))
y = ember.tensor(rng.integers(0, 4, 10))

for chunks, balance in ((3, None), (4, [2, 3] if W == 2 else None), (1, None)):
    ref = net()
    ref_loss = F.cross_entropy(ref(x), y)
    ref_loss.backward()
    model = net()
    pipe = Pipeline(model, balance=balance, chunks=chunks)
    loss = pipe.train_step(x if R == 0 else None, y if R == W - 1 else None, F.cross_entropy)
    ref_stage = {id(m): r for m, r in zip(model, ref)}
    diffs = []
    for m in pipe.stage:
        r = ref_stage[id(m)]
        for p, q in zip(m.parameters(), r.parameters()):
            diffs.append(float(np.abs(p.grad.numpy() - q.grad.numpy()).max()))
    ok = (max(diffs) if diffs else 0.0) < 1e-6 and (loss is None or abs(loss - float(ref_loss)) < 1e-6)
    print(f"[rank {R}] {'OK' if ok else 'FAIL'} pipeline chunks={chunks} balance={balance} "
          f"layers={len(pipe.stage)} grad diff {max(diffs) if diffs else 0:.2e} loss {loss}", flush=True)
dist.destroy_process_group()
