"""`worker_loop`, the body of a DataLoader worker process, run in this process (issue 17).

The DataLoader tests run it in forked processes, where neither coverage's mutation runs nor a failing
assert inside it are seen directly. Here the tasks are queued into a real pipe first, then the loop runs
in the test's own thread until the final None, and the messages it sent are read back and unpacked
from the real shared-memory slots. `signal.signal`/`pthread_sigmask` are replaced by recorders, so the
test process's own Ctrl-C handling is untouched (and the worker's choices are checked)."""
import multiprocessing as mp
import os
import random

import numpy as np
import pytest

import ember
from ember.utils.data import worker as W
from ember.utils.data._shm import SlotPool
from ember.utils.data.collate import default_collate


class Squares:
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 7:
            raise ValueError("sample 7 is broken")
        info = W.get_worker_info()
        return np.array([i * i], dtype=np.int64), (info.id, info.num_workers, info.seed)


class Stream:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(self.n, 1))


@pytest.fixture
def signals(monkeypatch):
    calls = []
    monkeypatch.setattr(W.signal, "signal", lambda *a: calls.append(("signal", a)))
    monkeypatch.setattr(W.signal, "pthread_sigmask", lambda *a: calls.append(("mask", a)))
    monkeypatch.setattr(W, "_worker_info", None)
    return calls


def run_worker(dataset, tasks, kind="map", auto_collation=True, batch_size=2, drop_last=False,
               worker_init_fn=None, collate_fn=default_collate, worker_id=1, num_workers=3, base_seed=100,
               close_tasks=False):
    """Queue `tasks` (+ a final None unless close_tasks), run the loop here; return (messages, batches)."""
    pool = SlotPool()
    pool.create(num_workers, 2)
    spec = dict(kind=kind, dataset=dataset, auto_collation=auto_collation, collate_fn=collate_fn,
                drop_last=drop_last, batch_size=batch_size, worker_init_fn=worker_init_fn,
                num_workers=num_workers, shm_dir=pool.directory, shm_prefix=pool.prefix, shm_fds=None)
    task_r, task_w = mp.Pipe(duplex=False)
    res_r, res_w = mp.Pipe(duplex=False)
    slots = [pool.acquire(worker_id) for t in tasks if t != "resume"]
    k = 0
    for t in tasks:
        if t == "resume":
            task_w.send(("resume",))
        else:
            task_w.send((0, k, slots[k], t))
            k += 1
    if close_tasks:
        task_w.close()
    else:
        task_w.send(None)
    try:
        W.worker_loop(spec, task_r, res_w, worker_id, base_seed, os.getppid())
        messages = []
        while True:   # the loop closed its end: read to EOF
            try:
                messages.append(res_r.recv())
            except EOFError:
                break
        batches = [pool.unpack(m[5], m[3], m[4], False) if m[0] == "batch" else None for m in messages]
        return messages, batches
    finally:
        pool.close()


def test_batches_come_back_through_shared_memory_with_worker_info(signals):
    messages, batches = run_worker(Squares(), [[0, 1], [2, 3, 4]])
    assert [m[:3] for m in messages] == [("batch", 0, 0), ("batch", 0, 1)]
    values, info = batches[0]
    assert values.tolist() == [[0], [1]] and isinstance(values, ember.Tensor)
    assert batches[1][0].tolist() == [[4], [9], [16]]
    ids, nums, seeds = info
    assert ids.tolist() == [1, 1] and nums.tolist() == [3, 3] and seeds.tolist() == [101, 101]   # base + id
    # Ctrl-C is ignored in a worker (the main process decides), after unblocking it
    assert signals[0] == ("signal", (W.signal.SIGINT, W.signal.SIG_IGN))
    assert signals[1][0] == "mask" and signals[1][1][0] == W.signal.SIG_UNBLOCK


def test_an_error_names_the_worker_the_sample_and_the_phase(signals):
    messages, _ = run_worker(Squares(), [[6, 7, 8], [1]])
    kind, epoch, task, slot, err = messages[0]
    assert (kind, epoch, task) == ("error", 0, 0)
    assert (err.worker_id, err.index, err.type_name) == (1, 7, "ValueError")
    assert err.where == "while fetching sample index" and "sample 7 is broken" in err.message
    assert "Squares" in err.traceback or "__getitem__" in err.traceback
    assert messages[1][0] == "batch"                   # the worker goes on after an error
    with pytest.raises(ValueError, match=r"worker 1 .*while fetching sample index 7: sample 7 is broken") as e:
        err.reraise()
    assert e.value.worker_id == 1 and e.value.sample_index == 7


def test_collate_errors_say_collating(signals):
    def bad_collate(batch):
        raise TypeError("cannot collate")
    messages, _ = run_worker(Squares(), [[0, 1]], collate_fn=bad_collate)
    err = messages[0][4]
    assert err.where == "while collating the batch of sample indices" and err.index == [0, 1]


def test_a_failing_worker_init_fn_fails_every_task(signals):
    seen = []

    def init(worker_id):
        seen.append(worker_id)
        raise RuntimeError("no GPU here")
    messages, _ = run_worker(Squares(), [[0], [1]], worker_init_fn=init)
    assert seen == [1]
    assert [m[0] for m in messages] == ["error", "error"]
    assert messages[0][4].where.startswith("while starting") and messages[0][4].message == "no GPU here"


def test_the_worker_seeds_python_numpy_and_ember_from_base_seed_and_id(signals):
    def init(worker_id):
        init.draws = (random.random(), np.random.random(), float(ember.rand(1)))
    run_worker(Squares(), [[0]], worker_init_fn=init, worker_id=2, base_seed=40)
    first = init.draws
    run_worker(Squares(), [[0]], worker_init_fn=init, worker_id=2, base_seed=40)
    assert init.draws == first
    run_worker(Squares(), [[0]], worker_init_fn=init, worker_id=1, base_seed=40)
    assert all(a != b for a, b in zip(init.draws, first))
    assert W.seed_worker(40, 2) == 42
    assert random.random() == first[0] and float(ember.rand(1)) == first[2]


def test_iterable_datasets_stop_and_resume(signals):
    messages, batches = run_worker(Stream(5), [[None], [None], [None], "resume", [None]], kind="iterable")
    assert [m[0] for m in messages] == ["batch", "batch", "batch", "batch"]
    assert [b.reshape(-1).tolist() for b in batches] == [[0, 1], [2, 3], [4], [0, 1]]
    messages, _ = run_worker(Stream(5), [[None], [None], [None], [None]], kind="iterable", drop_last=True)
    assert [m[0] for m in messages] == ["batch", "batch", "stop", "stop"]


def test_without_auto_collation_each_task_is_one_sample(signals):
    messages, batches = run_worker(Squares(), [3, 5], auto_collation=False, collate_fn=lambda s: s[0])
    assert [b.tolist() for b in batches] == [[9], [25]]


def test_an_unpicklable_batch_becomes_an_error_not_a_hang(signals):
    messages, _ = run_worker(Squares(), [[0], [1]], collate_fn=lambda s: (lambda: None))
    assert [m[0] for m in messages] == ["error", "error"]
    assert messages[0][4].where == "while sending (pickling) the batch of sample indices"
    assert messages[0][4].index == [0]


def test_a_closed_task_pipe_ends_the_loop(signals):
    messages, _ = run_worker(Squares(), [[0]], close_tasks=True)
    assert [m[0] for m in messages] == ["batch"]


def test_worker_info_is_read_only_and_absent_outside_workers(signals):
    assert W.get_worker_info() is None
    info = W.WorkerInfo(id=0, num_workers=2, seed=5, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo"):
        info.id = 3
    assert repr(info) == "WorkerInfo(id=0, num_workers=2, seed=5)"
