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


# -- issue 17: survivors of the mutation run -------------------------------------------------------------
import collections  # noqa: E402
import stat  # noqa: E402

import pytest  # noqa: E402

from ember.utils.data import _shm  # noqa: E402

Pair = collections.namedtuple("Pair", ["a", "b"])


class MyList(list):
    pass


class MyTuple(tuple):
    pass


def _round_trip(batch, pin=False):
    pool = SlotPool()
    try:
        pool.create(1, 1)
        worker = WorkerSlots(pool.directory, pool.prefix)
        slot = pool.acquire(0)
        described, size = worker.pack(batch, slot)
        out = pool.unpack(pickle.loads(pickle.dumps(described)), slot, size, pin=pin)
        worker.close()
        return out, size
    finally:
        pool.close()


def test_containers_and_leaves_keep_their_types():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    batch = [Pair(a, ember.ones(2)), collections.OrderedDict(z=a, y=(a, "s")), MyList([a, 3]), MyTuple((a,)),
             (a, None)]
    out, size = _round_trip(batch)
    assert type(out) is list and type(out[0]) is Pair and type(out[1]) is collections.OrderedDict
    assert list(out[1]) == ["z", "y"] and type(out[1]["y"]) is tuple and out[1]["y"][1] == "s"
    assert type(out[2]) is MyList and out[2][1] == 3 and type(out[3]) is MyTuple and out[4][1] is None
    assert ember.is_tensor(out[0].b) and out[0].b.tolist() == [1.0, 1.0]
    assert isinstance(out[0].a, np.ndarray) and out[0].a.dtype == np.int16
    np.testing.assert_array_equal(out[2][0], a)
    assert size >= 64 * 6


def test_empty_arrays_need_no_slot_and_keep_dtype_shape_and_kind():
    out, size = _round_trip({"t": ember.zeros((0, 3)), "a": np.zeros((2, 0), dtype=np.uint8)})
    assert size == 0
    assert ember.is_tensor(out["t"]) and tuple(out["t"].shape) == (0, 3) and out["t"].dtype == ember.float32
    assert isinstance(out["a"], np.ndarray) and out["a"].shape == (2, 0) and out["a"].dtype == np.uint8


def test_pinned_batches_are_pinned_tensors(monkeypatch):
    pinned = []
    monkeypatch.setattr(ember.Tensor, "pin_memory", lambda self: pinned.append(tuple(self.shape)) or self)
    out, _ = _round_trip([ember.ones(3), np.ones(2)], pin=True)
    assert pinned == [(3,)]
    _round_trip([ember.ones(3)], pin=False)
    out, _ = _round_trip([ember.zeros((0,))], pin=True)
    assert pinned == [(3,), (0,)]


def test_device_tensors_come_back_through_the_host(fake_cuda):
    out, _ = _round_trip(ember.tensor([1.0, 2.0], device="cuda"))
    assert ember.is_tensor(out) and out.tolist() == [1.0, 2.0]


def test_slots_are_private_files_named_per_worker_and_reused():
    pool = SlotPool()
    try:
        assert pool.prefix.startswith(f"ember_dl_{os.getpid()}_") and len(pool.prefix.split("_")[-2]) == 8
        pool.create(2, 2)
        assert pool.created == ["w0s0", "w0s1", "w1s0", "w1s1"] and pool.free == {0: ["w0s0", "w0s1"],
                                                                                   1: ["w1s0", "w1s1"]}
        assert stat.S_IMODE(os.stat(pool.path("w0s0")).st_mode) == 0o600
        assert pool.acquire(1) == "w1s1" and pool.acquire(1) == "w1s0"
        assert pool.acquire(1) == "w1s2" and pool.acquire(3) == "w3s0"   # more than were made: new ones
        pool.release(1, "w1s0")
        assert pool.free[1] == ["w1s0"] and pool.acquire(1) == "w1s0"
    finally:
        pool.close()


def test_shm_dir_is_dev_shm_when_writable_else_tmp(monkeypatch):
    assert _shm.shm_dir() == ("/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
                              else __import__("tempfile").gettempdir())
    monkeypatch.setattr(_shm.os, "access", lambda p, mode: False)
    assert _shm.shm_dir() == __import__("tempfile").gettempdir()
