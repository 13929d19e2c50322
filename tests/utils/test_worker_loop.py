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
               close_tasks=False, by_fd=False):
    """Queue `tasks` (+ a final None unless close_tasks), run the loop here; return (messages, batches).
    by_fd: the worker gets the slots as inherited descriptors (fork), and their names are moved away."""
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
    moved = []
    if by_fd:
        spec["shm_fds"] = {}
        for slot in set(slots):
            path = os.path.join(pool.directory, pool.prefix + slot)
            spec["shm_fds"][slot] = os.open(path, os.O_RDWR)
            os.rename(path, path + ".away")
            moved.append(path)
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
        for path in moved:
            os.rename(path + ".away", path)
        for fd in (spec["shm_fds"] or {}).values():
            os.close(fd)
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


# -- issue 17: survivors of the mutation run -------------------------------------------------------------
def test_signals_are_ignored_and_unblocked_exactly(signals):
    run_worker(Squares(), [[0]])
    assert signals == [("signal", (W.signal.SIGINT, W.signal.SIG_IGN)),
                       ("mask", (W.signal.SIG_UNBLOCK, {W.signal.SIGINT}))]


def test_slots_inherited_as_descriptors_are_used(signals):
    messages, batches = run_worker(Squares(), [[2, 3]], by_fd=True)
    assert [m[0] for m in messages] == ["batch"] and batches[0][0].tolist() == [[4], [9]]


class WhoAmI:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return np.array([W.get_worker_info().dataset is self], dtype=np.bool_)


def test_worker_info_holds_the_workers_dataset(signals):
    ds = WhoAmI()
    _, batches = run_worker(ds, [[0, 1]])
    assert batches[0].tolist() == [[True], [True]]


def test_a_failing_worker_init_fn_names_the_worker(signals):
    def init(worker_id):
        raise RuntimeError("no GPU here")
    messages, _ = run_worker(Squares(), [[0]], worker_init_fn=init, worker_id=2)
    err = messages[0][4]
    assert (err.worker_id, err.index) == (2, None)
    assert err.where == "while starting (worker_init_fn / iter(dataset)), index"


class Flaky:
    """An iterable dataset whose second iter() fails."""
    def __init__(self):
        self.calls = 0

    def __iter__(self):
        self.calls += 1
        if self.calls == 2:
            raise OSError("the stream is gone")
        return iter(np.arange(3, dtype=np.float32).reshape(3, 1))


def test_a_failing_resume_reports_iter_and_the_worker(signals):
    messages, _ = run_worker(Flaky(), [[None], "resume", [None]], kind="iterable", worker_id=2)
    assert [m[0] for m in messages] == ["batch", "error"]
    err = messages[1][4]
    assert (err.worker_id, err.index, err.type_name, err.message) == (2, None, "OSError", "the stream is gone")
    assert err.where == "while calling iter(dataset), index"
    with pytest.raises(OSError, match=r"^Caught OSError in DataLoader worker 2 \(pid \d+\) while calling "
                                      r"iter\(dataset\), index None: the stream is gone\n"):
        err.reraise()


def test_resume_keeps_drop_last(signals):
    messages, batches = run_worker(Stream(3), [[None], [None], "resume", [None], [None]], kind="iterable",
                                   drop_last=True)
    assert [m[0] for m in messages] == ["batch", "stop", "batch", "stop"]


def test_iterable_without_auto_collation_sends_each_sample(signals):
    messages, batches = run_worker(Stream(2), [None, None, None, None], kind="iterable", auto_collation=False,
                                   collate_fn=lambda s: s * 10)
    assert [m[0] for m in messages] == ["batch", "batch", "stop", "stop"]
    assert [b.tolist() for b in batches[:2]] == [[0.0], [10.0]]


def test_the_loop_ends_when_the_parent_is_gone(signals):
    # no task and no end marker: the loop polls, finds another parent pid and stops (no orphan worker)
    pool = SlotPool()
    pool.create(1, 1)
    spec = dict(kind="map", dataset=Squares(), auto_collation=True, collate_fn=default_collate, drop_last=False,
                batch_size=2, worker_init_fn=None, num_workers=1, shm_dir=pool.directory, shm_prefix=pool.prefix,
                shm_fds=None)
    task_r, task_w = mp.Pipe(duplex=False)
    res_r, res_w = mp.Pipe(duplex=False)
    try:
        W.worker_loop(spec, task_r, res_w, 0, 0, parent_pid=-1)
        with pytest.raises(EOFError):
            res_r.recv()
    finally:
        task_w.close()
        pool.close()


class Restartable:
    """An iterator that yields again after its StopIteration (a fetcher must remember the end itself)."""
    def __init__(self, items):
        self.items, self.i = list(items), 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i == len(self.items):
            self.i = 0
            raise StopIteration
        if self.items[self.i] is None:
            self.i += 1
            raise KeyError("bad sample")
        self.i += 1
        return self.items[self.i - 1]


def test_iterable_fetcher_remembers_the_end_and_counts_samples():
    f = W.IterableFetcher(Restartable([1, 2]), False, lambda x: x, False, None)
    assert (f.count, f.current, f.where, f.ended) == (0, None, "while reading sample number", False)
    assert [f.fetch(), f.fetch()] == [1, 2] and (f.count, f.current) == (2, 1)
    for _ in range(2):
        with pytest.raises(StopIteration):
            f.fetch()
    assert f.ended is True
    f = W.IterableFetcher(Restartable([1, 2, 3]), True, list, False, 2)
    assert f.fetch() == [1, 2] and f.fetch() == [3] and f.ended is True
    with pytest.raises(StopIteration):
        f.fetch()
    f = W.IterableFetcher(Restartable([1, 2, None]), True, list, False, 5)
    with pytest.raises(KeyError):
        f.fetch()
    assert (f.current, f.count) == (2, 2)


def test_map_fetcher_reports_what_it_was_doing():
    class Plain:
        def __getitem__(self, i):
            if i == 3:
                raise IndexError("three")
            return i

    class Batched(Plain):
        def __getitems__(self, idx):
            Batched.asked = list(idx)
            return [i * 2 for i in idx]

    f = W.MapFetcher(Plain(), True, list, False)
    assert (f.current, f.where) == (None, "while fetching sample index")
    with pytest.raises(IndexError):
        f.fetch([1, 3, 5])
    assert (f.current, f.where) == (3, "while fetching sample index")
    f = W.MapFetcher(Batched(), True, list, False)
    assert f.fetch([4, 5]) == [8, 10] and Batched.asked == [4, 5]
    assert (f.current, f.where) == ([4, 5], "while collating the batch of sample indices")
    f = W.MapFetcher(Batched(), True, lambda d: 1 / 0, False)
    with pytest.raises(ZeroDivisionError):
        f.fetch([1])
    assert (f.current, f.where) == ([1], "while collating the batch of sample indices")

    class FailingBatched(Plain):
        def __getitems__(self, idx):
            raise IndexError("batched")

    f = W.MapFetcher(FailingBatched(), True, list, False)
    with pytest.raises(IndexError):
        f.fetch([6, 7])
    assert (f.current, f.where) == ([6, 7], "while fetching sample indices")
    f = W.MapFetcher(Plain(), False, lambda x: x, False)
    with pytest.raises(IndexError):
        f.fetch(3)
    assert f.current == 3


def _error(exc):
    try:
        raise exc
    except Exception as e:
        return W.WorkerError(e, 4, [1, 2], "while testing"), e


def test_worker_error_keeps_the_full_traceback_and_pid():
    import traceback
    err, e = _error(ValueError("bad value"))
    assert err.pid == os.getpid() and err.exc_type is ValueError
    assert err.traceback == "".join(traceback.format_exception(type(e), e, e.__traceback__))
    assert err.traceback.startswith("Traceback") and err.traceback.endswith("ValueError: bad value\n")


class TwoArgs(Exception):   # picklable, but its constructor wants two arguments
    def __init__(self, a, b):
        super().__init__(a, b)


def test_worker_error_reraise_types_and_messages():
    class Local(Exception):
        pass

    head = "Caught {} in DataLoader worker 4 (pid %d) while testing [1, 2]: {}\n" % os.getpid()
    for exc, raised, name, message in [(Local("here"), RuntimeError, "Local", "here"),
                                       (TwoArgs(1, 2), RuntimeError, "TwoArgs", "(1, 2)"),
                                       (KeyError("k"), KeyError, "KeyError", "'k'")]:
        err, _ = _error(exc)
        assert err.exc_type is (None if name == "Local" else type(exc))
        with pytest.raises(Exception) as e:
            err.reraise()
        assert type(e.value) is raised
        text = str(e.value)
        assert text.startswith(head.format(type(exc).__qualname__, message)), text
        assert "Original traceback in the worker:\nTraceback" in text
        assert e.value.worker_id == 4 and e.value.sample_index == [1, 2]


def test_seed_worker_seeds_numpy_from_a_seed_sequence_and_wraps_at_2_to_63():
    assert W.seed_worker(2 ** 63 - 1, 1) == 0
    W.seed_worker(7, 3)
    got = np.random.random()
    np.random.seed(np.random.SeedSequence([3, 7]).generate_state(4))
    assert got == np.random.random()
