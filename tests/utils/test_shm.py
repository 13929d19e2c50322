"""The shared-memory transport: only a small description crosses the pipe; arrays come back exact; slots are
reused, grown, and unlinked."""
import os
import pickle
import subprocess
import sys

import numpy as np

import ember
from ember.utils.data._shm import SlotPool, WorkerSlots


def test_batch_arrays_travel_through_shared_memory_not_pickle():
    pool = SlotPool()
    try:
        worker = WorkerSlots(pool.directory, pool.prefix)
        batch = {"x": ember.from_numpy(np.random.rand(128, 1, 28, 28).astype(np.float32)),
                 "y": np.arange(128), "names": ["a"] * 3, "k": 5}
        slot = pool.acquire(0)
        described, size = worker.pack(batch, slot)
        assert len(pickle.dumps(described)) < 1024  # 400 KB of data, well under 1 KB of message
        out = pool.unpack(pickle.loads(pickle.dumps(described)), slot, size, pin=False)
        np.testing.assert_array_equal(out["x"].numpy(), batch["x"].numpy())
        assert ember.is_tensor(out["x"]) and isinstance(out["y"], np.ndarray)
        assert out["names"] == ["a"] * 3 and out["k"] == 5
        # the slot is reused, and grows when a bigger batch comes
        bigger = np.ones((1024, 1024), dtype=np.float32)
        described, size2 = worker.pack(bigger, slot)
        assert size2 >= bigger.nbytes > size
        np.testing.assert_array_equal(pool.unpack(described, slot, size2, pin=False), bigger)
        worker.close()
        assert os.path.exists(pool.path(slot))
    finally:
        pool.close()
    assert not os.path.exists(pool.path(slot))


def test_data_pipeline_never_imports_torch():
    code = ("import sys, ember, ember.utils.data, ember.datasets, ember.transforms; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
