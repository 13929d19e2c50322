"""The NCCL backend (ember/distributed/_nccl.py) on a real GPU: world size 1 in this process. Skipped without
a CUDA device and CuPy built with NCCL (and under EMBER_FAKE_CUDA)."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.cuda


@pytest.fixture
def nccl_group():
    import ember.distributed as dist
    if not dist.is_nccl_available():
        pytest.skip("no CUDA device with CuPy's NCCL")
    dist.init_process_group("nccl")
    yield dist
    dist.destroy_process_group()


def test_nccl_all_reduce_broadcast_gather(nccl_group):
    dist = nccl_group
    t = ember.arange(6, dtype=ember.float32).reshape(2, 3).cuda()
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6).reshape(2, 3) * dist.get_world_size())
    t = ember.ones(5, device="cuda")
    dist.all_reduce(t, dist.ReduceOp.AVG)
    np.testing.assert_allclose(t.cpu().numpy(), 1.0)
    b = ember.full((4,), 3.0, device="cuda")
    dist.broadcast(b, 0)
    np.testing.assert_array_equal(b.cpu().numpy(), 3.0)
    outs = [ember.zeros(3, device="cuda") for _ in range(dist.get_world_size())]
    dist.all_gather(outs, ember.ones(3, device="cuda"))
    assert all(float(o.sum()) == 3.0 for o in outs)
    w = dist.all_reduce(ember.ones(1 << 20, device="cuda"), async_op=True)
    w.wait()
    assert w.is_completed()
    dist.barrier()


def test_nccl_rejects_cpu_tensors(nccl_group):
    with pytest.raises(TypeError, match="nccl backend: collectives need CUDA tensors"):
        nccl_group.all_reduce(ember.ones(2))
