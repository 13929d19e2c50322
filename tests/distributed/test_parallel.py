"""DistributedDataParallel (2-process MPI job: worker_ddp.py), DataParallel over CPU device ids (in process),
and DistributedSampler sharding."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def test_ddp_matches_single_process(mpirun):
    r = mpirun("worker_ddp.py")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in out, out
    for name in ("equivalence sgd cap=25", "equivalence sgd cap=0.001 buckets=3", "equivalence adam cap=25",
                 "equivalence adam cap=0.001", "unused parameters", "unused second iteration",
                 "unused without flag names parameters", "no_sync", "buffers broadcast", "sampler n=",
                 "overlap: buckets launched during backward"):
        assert out.count(f"OK {name}") >= 2, f"{name} missing\n{out}"


def test_ddp_needs_process_group():
    with pytest.raises(RuntimeError, match="DistributedDataParallel: Default process group has not been"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))


@pytest.mark.parametrize("n_dev", [2, 3])
def test_data_parallel_cpu_device_ids(n_dev):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    x = ember.randn(8, 5)
    y = ember.tensor(np.arange(8) % 3)
    ref = model(x)
    F.cross_entropy(ref, y).backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    devices = [f"cpu:{i}" for i in range(n_dev)]
    dp = nn.DataParallel(model, device_ids=devices, output_device="cpu")   # gathered where y lives
    out = dp(x)
    assert out.device == ember.device("cpu") and out.shape == (8, 3)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    F.cross_entropy(out, y).backward()
    for p, g in zip(model.parameters(), want):     # summed into the original parameters
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-6)
    # the replicas really lived on the other devices: a replica's weight is a copy on cpu:1
    rep = nn.parallel.replicate(model, ember.device("cpu:1"))
    assert rep[0].weight.device == ember.device("cpu:1") and rep[0].weight.requires_grad


def test_data_parallel_gathers_tuples_and_scalars():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            out = self.fc(x)
            return out, out.sum()
    m = Two()
    out, s = nn.DataParallel(m, device_ids=["cpu:0", "cpu:1"])(ember.randn(4, 3))
    assert out.shape == (4, 2) and s.shape == (2,)


@pytest.mark.parametrize("n,replicas", [(10, 2), (11, 2), (12, 3), (13, 4), (1, 2)])
def test_distributed_sampler_covers_once(n, replicas):
    from ember.utils.data import DistributedSampler
    shards = [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=5)) for r in range(replicas)]
    flat = [i for s in shards for i in s]
    assert set(flat) == set(range(n))                          # every sample is seen
    assert len({len(s) for s in shards}) == 1                  # equal shards (padded by repeating, as torch)
    assert len(flat) - n == (-n) % replicas                    # only the padding repeats
    dropped = [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=5, drop_last=True))
               for r in range(replicas)]
    flat = [i for s in dropped for i in s]
    assert len(flat) == len(set(flat)) == (n // replicas) * replicas


def test_distributed_sampler_without_group():
    from ember.utils.data import DistributedSampler
    with pytest.raises(ValueError, match="init_process_group"):
        DistributedSampler(range(4))
