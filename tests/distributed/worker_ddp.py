"""MPI job: DistributedDataParallel against single-process training, computed on every rank.

Every rank builds the same reference model (one seed) and trains it on the global batch B; the DDP model
trains on this rank's B/N slice. After 10 steps the parameters must agree within float tolerance.
Prints 'OK name' or 'FAIL name: ...' lines."""
import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
R, W = dist.get_rank(), dist.get_world_size()
B = 8 * W


class Net(nn.Module):
    def __init__(self, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)
        self.unused = nn.Linear(16, 16) if extra else None    # never called
        self.side = nn.Linear(16, 3) if extra else None       # called on rank 0 only (locally unused elsewhere)

    def forward(self, x, use_side=False):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        out = self.head(h)
        if use_side:
            out = out + self.side(h)
        return out


def batch(step, k=0):
    rng = np.random.default_rng(100 * step + k)
    return ember.tensor(rng.standard_normal((B, 6)).astype("float32")), ember.tensor(rng.integers(0, 3, B))


def local(x):
    n = x.shape[0] // W
    return x[R * n:(R + 1) * n]


def report(name, ok, msg=""):
    print(f"[rank {R}] {'OK' if ok else 'FAIL'} {name}{': ' + msg if msg else ''}", flush=True)


def max_diff(a, b):
    return max(float(np.abs(p.detach().numpy() - q.detach().numpy()).max()) for p, q in zip(a, b))


def equivalence(opt_name, bucket_cap_mb):
    ember.manual_seed(1)
    ref = Net()
    ember.manual_seed(1 + R)              # different init per rank: DDP must broadcast rank 0's
    model = Net()
    model.load_state_dict(ref.state_dict()) if R == 0 else None
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    make = (lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9)) if opt_name == "sgd" else \
        (lambda ps: ember.optim.Adam(ps, lr=0.01))
    o_ref, o = make(ref.parameters()), make(ddp.parameters())
    for step in range(10):
        x, y = batch(step)
        o_ref.zero_grad()
        F.cross_entropy(ref(x), y).backward()
        o_ref.step()
        o.zero_grad()
        F.cross_entropy(ddp(local(x)), local(y)).backward()
        o.step()
    d = max_diff(ref.parameters(), model.parameters())
    report(f"equivalence {opt_name} cap={bucket_cap_mb} buckets={len(ddp._buckets)}", d < 1e-5, f"max diff {d:.2e}")


def unused():
    # find_unused_parameters with tiny buckets (one per parameter): `unused` never gets a gradient, `side`
    # only on rank 0 (its gradient is rank 0's divided by W, torch's rule)
    ember.manual_seed(2)
    ref = Net(extra=True)
    model = Net(extra=True)
    model.load_state_dict(ref.state_dict())
    ddp = DDP(model, bucket_cap_mb=1e-4, find_unused_parameters=True)
    x, y = batch(0)
    F.cross_entropy(ddp(local(x), use_side=(R == 0)), local(y)).backward()
    # reference: the mean over ranks of each rank's local-loss gradient
    grads = {}
    for r in range(W):
        ref.zero_grad()
        n = B // W
        F.cross_entropy(ref(x[r * n:(r + 1) * n], use_side=(r == 0)), y[r * n:(r + 1) * n]).backward()
        for name, p in ref.named_parameters():
            if p.grad is not None:
                grads[name] = grads.get(name, 0) + p.grad.numpy() / W
    bad = []
    for name, p in model.named_parameters():
        if name.startswith("unused"):
            if p.grad is not None:
                bad.append(f"{name} got a gradient")
        elif p.grad is None or float(np.abs(p.grad.numpy() - grads[name]).max()) > 1e-6:
            bad.append(name)
    want_names = ["unused.weight", "unused.bias"] + ([] if R == 0 else ["side.weight", "side.bias"])
    if sorted(ddp.unused_parameter_names) != sorted(want_names):
        bad.append(f"unused_parameter_names {ddp.unused_parameter_names}")
    report(f"unused parameters ({len(ddp._buckets)} buckets)", not bad, ", ".join(bad))
    # a second iteration works (state was reset)
    ddp.zero_grad()
    F.cross_entropy(ddp(local(x)), local(y)).backward()
    report("unused second iteration", model.side.weight.grad is None and model.fc1.weight.grad is not None)


def unused_without_flag():
    ember.manual_seed(3)
    ddp = DDP(Net(extra=True))
    x, y = batch(0)
    F.cross_entropy(ddp(local(x)), local(y)).backward()
    try:
        ddp(local(x))
    except RuntimeError as e:
        msg = str(e)
        report("unused without flag names parameters", "unused.weight" in msg and "side.bias" in msg
               and "fc1" not in msg, msg[-120:])
    else:
        report("unused without flag names parameters", False, "no error")


def no_sync():
    ember.manual_seed(4)
    ref = Net()
    model = Net()
    model.load_state_dict(ref.state_dict())
    ddp = DDP(model, bucket_cap_mb=1e-3)
    for k in range(3):         # reference: the global-batch gradient summed over 3 micro-batches
        x, y = batch(7, k)
        F.cross_entropy(ref(x), y).backward()
    for k in range(3):
        x, y = batch(7, k)
        if k < 2:
            with ddp.no_sync():
                F.cross_entropy(ddp(local(x)), local(y)).backward()
        else:
            F.cross_entropy(ddp(local(x)), local(y)).backward()
    d = max_diff([p.grad for p in ref.parameters()], [p.grad for p in model.parameters()])
    # inside no_sync nothing was reduced: the local gradient differs from the reference before the last step
    report("no_sync", d < 1e-5, f"max diff {d:.2e}")


def buffers_broadcast():
    ember.manual_seed(10 + R)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = DDP(m)
    with ember.no_grad():
        m[1].running_mean.fill_(float(R + 5))
    ddp(ember.ones(4, 3))     # broadcast_buffers: rank 0's running stats first (then updated by the batch)
    vals = [None] * W
    dist.all_gather_object(vals, m[1].running_mean.numpy().tolist())
    report("buffers broadcast", all(v == vals[0] for v in vals))


def overlap():
    # one bucket per parameter: by the time fc1.weight's gradient arrives, the buckets of head and fc2
    # (ready earlier in backward) have been launched, i.e. their all-reduces run while backward goes on
    ember.manual_seed(5)
    model = Net()
    ddp = DDP(model, bucket_cap_mb=1e-4)
    seen = {}

    def check(g):
        seen["launched"] = sum(b.flat is not None for b in ddp._buckets)
        seen["in_flight"] = sum(b.work is not None and not b.work.is_completed() for b in ddp._buckets)
    model.fc1.weight.register_hook(check)
    x, y = batch(0)
    F.cross_entropy(ddp(local(x)), local(y)).backward()
    report(f"overlap: buckets launched during backward ({seen})", seen["launched"] >= 4)


def sampler():
    # num_replicas and rank come from the process group; every index exactly once over the ranks
    from ember.utils.data import DistributedSampler
    for n in (10 * W, 10 * W + 1):
        s = DistributedSampler(range(n), shuffle=True, seed=3, drop_last=True)
        s.set_epoch(1)
        got = [None] * W
        dist.all_gather_object(got, list(s))
        flat = [i for g in got for i in g]
        report(f"sampler n={n}", len(flat) == len(set(flat)) and len(flat) == (n // W) * W
               and set(flat) <= set(range(n)) and (n % W or set(flat) == set(range(n))), str(got)[:80])


for opt_name in ("sgd", "adam"):
    for cap in (25, 1e-3):
        equivalence(opt_name, cap)
unused()
unused_without_flag()
no_sync()
buffers_broadcast()
sampler()
overlap()
dist.destroy_process_group()
