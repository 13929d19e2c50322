"""DataLoader: batches, order, shuffling, seeding, workers, prefetch, iterable datasets, persistent workers,
argument validation and len: compared with torch's DataLoader where both are deterministic."""
import collections
import multiprocessing
import random
import sys
import threading
import time
import types
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
from ember.utils.data import (DataLoader, Dataset, IterableDataset, RandomSampler, SequentialSampler,
                              TensorDataset, WorkerInfo, get_worker_info)

pytestmark = pytest.mark.timeout(60)

Pair = collections.namedtuple("Pair", ["image", "label"])


class Images(Dataset):
    """n small images with varied sample structure; NumPy only, so torch's DataLoader can read it too."""

    def __init__(self, n=37, structure="tuple"):
        self.n, self.structure = n, structure

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = np.full((2, 3), i, dtype=np.float32)
        if self.structure == "dict":
            return {"img": img, "label": i, "name": f"s{i}"}
        if self.structure == "namedtuple":
            return Pair(img, i)
        return img, i


def to_np(batch):
    if ember.is_tensor(batch) or isinstance(batch, torch.Tensor):
        return batch.numpy()
    if isinstance(batch, dict):
        return {k: to_np(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [to_np(v) for v in batch]
    return batch


def assert_same_batches(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = to_np(a), to_np(b)
        if isinstance(b, dict):
            for k in b:
                np.testing.assert_array_equal(a[k], b[k])
        else:
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("structure", ["tuple", "dict", "namedtuple"])
@pytest.mark.parametrize("batch_size,drop_last", [(5, False), (5, True), (1, False)])
def test_batches_match_torch(num_workers, structure, batch_size, drop_last, no_leaks):
    ds = Images(structure=structure)
    ours = list(DataLoader(ds, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers))
    theirs = list(tud.DataLoader(ds, batch_size=batch_size, drop_last=drop_last))
    assert_same_batches(ours, theirs)
    if structure == "namedtuple":
        assert type(ours[0]).__name__ == "Pair"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_no_auto_batching_matches_torch(num_workers, no_leaks):
    ds = Images(n=5)
    ours = list(DataLoader(ds, batch_size=None, num_workers=num_workers))
    theirs = list(tud.DataLoader(ds, batch_size=None))
    assert_same_batches(ours, theirs)


def test_tensor_dataset_with_workers_returns_tensors(no_leaks):
    x = ember.from_numpy(np.arange(40, dtype=np.float32).reshape(20, 2))
    y = ember.from_numpy(np.arange(20))
    batches = list(DataLoader(TensorDataset(x, y), batch_size=8, num_workers=2))
    assert [b[1].tolist() for b in batches] == [list(range(8)), list(range(8, 16)), list(range(16, 20))]
    assert ember.is_tensor(batches[0][0]) and batches[0][0].dtype == ember.float32


def test_custom_collate_and_batch_sampler(no_leaks):
    ds = Images(n=10)
    loader = DataLoader(ds, batch_sampler=[[0, 5], [9], [1, 2, 3]], collate_fn=lambda b: [s[1] for s in b],
                        num_workers=2)
    assert list(loader) == [[0, 5], [9], [1, 2, 3]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_is_a_permutation_and_reproducible(num_workers, no_leaks):
    ds = Images(n=50)

    def epoch(loader):
        return [int(v) for _, y in loader for v in y.tolist()]

    ember.manual_seed(123)
    loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=num_workers)
    a, b = epoch(loader), epoch(loader)
    ember.manual_seed(123)
    loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=num_workers)
    assert epoch(loader) == a and epoch(loader) == b
    assert sorted(a) == list(range(50)) and a != b
    g = ember.Generator().manual_seed(9)
    c = epoch(DataLoader(ds, batch_size=8, shuffle=True, generator=g))
    g.manual_seed(9)
    assert epoch(DataLoader(ds, batch_size=8, shuffle=True, generator=g)) == c


class RandomDraws(Dataset):
    """Each sample reports the worker and a draw from Python's, NumPy's and ember's global RNGs."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([info.id if info else -1, random.random(), np.random.rand(), ember.rand(1).item()])


def test_worker_seeding(no_leaks):
    def run():
        return np.concatenate([b.numpy() for b in DataLoader(RandomDraws(), batch_size=2, num_workers=2)])

    ember.manual_seed(7)
    first, second = run(), run()
    ember.manual_seed(7)
    again = run()
    np.testing.assert_array_equal(first, again)  # reproducible under ember.manual_seed
    assert not np.array_equal(first[:, 1:], second[:, 1:])  # a new base seed every epoch
    by_worker = {w: first[first[:, 0] == w, 1:] for w in (0, 1)}
    for col in range(3):  # Python, NumPy and ember each differ between workers
        assert by_worker[0][0, col] != by_worker[1][0, col]


def test_worker_info_and_init_fn(no_leaks):
    class Who(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return np.array([info.id, info.num_workers, info.seed % 1000, len(info.dataset),
                             isinstance(info, WorkerInfo)])

    def init(worker_id):
        assert get_worker_info().id == worker_id

    out = np.concatenate([b.numpy() for b in DataLoader(Who(), batch_size=1, num_workers=2, worker_init_fn=init)])
    assert sorted(set(out[:, 0].tolist())) == [0, 1] and set(out[:, 1].tolist()) == {2}
    assert set(out[:, 3].tolist()) == {4} and set(out[:, 4].tolist()) == {1}
    assert get_worker_info() is None


class WorkerInfoProbe(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        info = get_worker_info()
        try:
            info.id = 99
            refused = False
        except RuntimeError as e:
            refused = "Cannot assign attributes to WorkerInfo objects" in str(e)
        shown = repr(info)
        return np.array([refused, shown.startswith("WorkerInfo(id=0, num_workers=1, seed=") and "dataset" not in shown])


def test_worker_info_is_read_only_and_printable(no_leaks):
    out = np.concatenate([b.numpy() for b in DataLoader(WorkerInfoProbe(), batch_size=1, num_workers=1)])
    assert out.all()


class SlowFirstWorker(Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        if get_worker_info().id == 0:
            time.sleep(0.01)
        return i


@pytest.mark.parametrize("prefetch_factor", [1, 2, 4])
def test_in_order_with_bounded_prefetch(prefetch_factor, no_leaks):
    it = iter(DataLoader(SlowFirstWorker(), batch_size=2, num_workers=3, prefetch_factor=prefetch_factor))
    assert it._send_idx == 3 * prefetch_factor  # prefetch_factor tasks per worker in flight at the start
    seen = []
    for batch in it:
        # in flight = sent and not yet handed out (received-and-waiting included): prefetch_factor per worker
        assert max(it._outstanding) <= prefetch_factor
        assert it._send_idx - it._rcvd_idx <= 3 * prefetch_factor
        assert sum(len(free) for free in it._slots.free.values()) + (it._send_idx - it._rcvd_idx) == \
            len(it._slots.created)  # every slot is either free or holds an in-flight batch
        per_worker = [sum(1 for s in it._slots.created if s.startswith(f"w{w}s")) for w in range(3)]
        assert max(per_worker) <= prefetch_factor  # shared-memory slots per worker: prefetch_factor, reused
        seen.extend(batch.tolist())
    assert seen == list(range(24))


class Stream(IterableDataset):
    """range(start, end), shared among workers the way torch's docs show."""

    def __init__(self, start, end, split=True):
        self.start, self.end, self.split = start, end, split

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.split:
            return iter(range(self.start, self.end))
        per = int(np.ceil((self.end - self.start) / info.num_workers))
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))

    def __len__(self):
        return self.end - self.start


class TorchStream(tud.IterableDataset):
    def __init__(self, start, end, split=True):
        self.inner = Stream(start, end, split)

    def __iter__(self):
        info = tud.get_worker_info()
        if info is None or not self.inner.split:
            return iter(range(self.inner.start, self.inner.end))
        per = int(np.ceil((self.inner.end - self.inner.start) / info.num_workers))
        lo = self.inner.start + info.id * per
        return iter(range(lo, min(lo + per, self.inner.end)))


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (None, False)])
def test_iterable_dataset_order_matches_torch(num_workers, batch_size, drop_last, no_leaks):
    def as_list(b):
        return b.tolist() if hasattr(b, "tolist") else b

    ours = [as_list(b) for b in DataLoader(Stream(3, 26), batch_size=batch_size, drop_last=drop_last,
                                           num_workers=num_workers)]
    theirs = [as_list(b) for b in tud.DataLoader(TorchStream(3, 26), batch_size=batch_size, drop_last=drop_last,
                                                 num_workers=num_workers)]
    assert ours == theirs


def test_iterable_dataset_without_split_is_duplicated(no_leaks):
    out = sorted(v for b in DataLoader(Stream(0, 5, split=False), batch_size=2, num_workers=2) for v in b.tolist())
    assert out == sorted(list(range(5)) * 2)  # as in torch: each worker yields the whole stream


@pytest.mark.parametrize("kind", ["map", "iterable"])
def test_persistent_workers_reuse_processes(kind, no_leaks):
    ds = Images(n=20) if kind == "map" else Stream(0, 20)
    loader = DataLoader(ds, batch_size=3, num_workers=2, persistent_workers=True)
    pids = None
    for _ in range(3):
        it = iter(loader)
        got = [to_np(b) for b in it]
        labels = [v for b in got for v in (b[1] if kind == "map" else b).tolist()]
        assert (labels if kind == "map" else sorted(labels)) == list(range(20))
        now = [p.pid for p in it._workers]
        assert pids is None or now == pids
        pids = now
    # an epoch cut short, then a full one: stale batches of the old epoch must not leak into the new one
    it = iter(loader)
    next(it)
    labels = [v for b in iter(loader) for v in (to_np(b)[1] if kind == "map" else to_np(b)).tolist()]
    assert (labels if kind == "map" else sorted(labels)) == list(range(20))
    del loader, it


def test_pin_memory(no_leaks):
    ds = TensorDataset(ember.from_numpy(np.arange(12, dtype=np.float32).reshape(6, 2)))
    for nw in (0, 2):
        batches = list(DataLoader(ds, batch_size=4, pin_memory=True, num_workers=nw))
        assert batches[0][0].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
        if not ember.cuda.is_available():
            assert not batches[0][0].is_pinned()  # a no-op without CUDA


def test_len_matches_torch():
    ds = Images(n=37)
    for kw in [dict(batch_size=5), dict(batch_size=5, drop_last=True), dict(batch_size=None),
               dict(batch_size=4, sampler=RandomSampler(ds, num_samples=10))]:
        assert len(DataLoader(ds, **kw)) == len(tud.DataLoader(ds, **kw)), kw
    for kw in [dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None)]:
        assert len(DataLoader(Stream(0, 10), **kw)) == len(tud.DataLoader(Stream(0, 10), **kw)), kw


INVALID = [
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(persistent_workers=True),
    dict(sampler=SequentialSampler(range(4)), shuffle=True),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
]


@pytest.mark.parametrize("kwargs", INVALID, ids=[",".join(k) for k in INVALID])
def test_argument_validation_like_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        tud.DataLoader(Images(n=4), **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader(Images(n=4), **kwargs)
    first_words = " ".join(str(theirs.value).split()[:2])
    assert first_words in str(ours.value)


def test_iterable_dataset_rejects_shuffle_and_attribute_changes():
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(0, 3), shuffle=True)
    loader = DataLoader(Images(n=4))
    with pytest.raises(ValueError, match="batch_size attribute"):
        loader.batch_size = 3


def test_iterator_len_matches_torch():
    ds = Images(n=37)
    for kw in [dict(batch_size=5), dict(batch_size=5, drop_last=True), dict(batch_size=None)]:
        assert len(iter(DataLoader(ds, **kw))) == len(iter(tud.DataLoader(ds, **kw))), kw

    class NoLen(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError):
        len(iter(tud.DataLoader(NoLen(), batch_size=2)))
    with pytest.raises(TypeError, match=r"^this DataLoader's dataset has no len\(\)$"):
        len(iter(DataLoader(NoLen(), batch_size=2)))


class LyingStream(Stream):
    """A Stream whose len() says ``reported``."""

    def __init__(self, start, end, reported, split=True):
        super().__init__(start, end, split)
        self.reported = reported

    def __len__(self):
        return self.reported


class TorchLyingStream(TorchStream):
    def __init__(self, start, end, reported, split=True):
        super().__init__(start, end, split)
        self.reported = reported

    def __len__(self):
        return self.reported


def length_warnings(loader, epochs=1):
    """Per epoch: the "Length of IterableDataset" warnings (dataset shown as DS, and the file they name)."""
    out = []
    for _ in range(epochs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            n = sum(1 for _ in loader)
        out.append((n, [str(w.message).replace(str(loader.dataset), "DS") for w in caught
                        if "Length of IterableDataset" in str(w.message)]))
    return out


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("batch_size", [None, 2])
def test_iterable_dataset_longer_than_its_len_warns_like_torch(num_workers, batch_size, no_leaks):
    # torch warns for each batch past the dataset's len(), once len(loader) was asked for (before that: never)
    def run(loader_cls, ds, ask_len):
        loader = loader_cls(ds, batch_size=batch_size, num_workers=num_workers)
        if ask_len:
            len(loader)
        return length_warnings(loader)

    for ask_len in (False, True):
        ours = run(DataLoader, LyingStream(0, 8, reported=3, split=False), ask_len)
        theirs = run(tud.DataLoader, TorchLyingStream(0, 8, reported=3, split=False), ask_len)
        assert ours == theirs
        assert bool(ours[0][1]) == ask_len


def test_length_warning_counts_each_epoch_of_persistent_workers_like_torch(no_leaks):
    for reported in (6, 4):  # exact: no warning in any epoch; too small: the same warnings every epoch
        got = []
        for loader_cls, ds_cls in ((DataLoader, LyingStream), (tud.DataLoader, TorchLyingStream)):
            loader = loader_cls(ds_cls(0, 6, reported), batch_size=None, num_workers=2, persistent_workers=True)
            assert len(loader) == reported
            got.append(length_warnings(loader, epochs=2))
            del loader
        assert got[0] == got[1]
        assert got[0][0] == got[0][1] and bool(got[0][0][1]) == (reported < 6)


def test_default_start_method(monkeypatch):
    from ember.utils.data import dataloader
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert dataloader._default_context() == "fork"
    assert DataLoader(Images(n=4), num_workers=1)._context().get_start_method() == "fork"
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))  # a CUDA context may exist: fork is unsafe
    assert dataloader._default_context() == "spawn"
    monkeypatch.delitem(sys.modules, "cupy")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert dataloader._default_context() == "spawn"
    assert DataLoader(Images(n=4), num_workers=1)._context().get_start_method() == "spawn"


def test_multiprocessing_context_by_name_or_object():
    assert DataLoader(Images(n=4), num_workers=1, multiprocessing_context="spawn")._context() is \
        multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    assert DataLoader(Images(n=4), num_workers=1, multiprocessing_context=ctx)._context() is ctx


SAME_TEXT_AS_TORCH = [
    dict(persistent_workers=True),
    dict(sampler=SequentialSampler(range(4)), shuffle=True),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
]
OWN_TEXT = [  # torch's text plus the bad value, or a check torch does not make
    (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing "
                           "(got num_workers=-1)"),
    (dict(num_workers=1.0), "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing "
                            "(got num_workers=1.0)"),
    (dict(timeout=-0.5), "timeout option should be non-negative, got timeout=-0.5"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 "
                              "to enable multiprocessing, otherwise set prefetch_factor to None."),
    (dict(num_workers=1, prefetch_factor=0), "prefetch_factor option should be a positive integer, got 0"),
    (dict(num_workers=1, prefetch_factor=2.0), "prefetch_factor option should be a positive integer, got 2.0"),
]


def test_argument_errors_exactly():
    for kwargs in SAME_TEXT_AS_TORCH:
        with pytest.raises(ValueError) as theirs:
            tud.DataLoader(Images(n=4), **kwargs)
        with pytest.raises(ValueError) as ours:
            DataLoader(Images(n=4), **kwargs)
        assert str(ours.value) == str(theirs.value), kwargs
    for kwargs, message in OWN_TEXT:
        with pytest.raises(ValueError) as ours:
            DataLoader(Images(n=4), **kwargs)
        assert str(ours.value) == message
    for kwargs in [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])]:
        with pytest.raises(ValueError) as theirs:
            tud.DataLoader(TorchStream(0, 3), **kwargs)
        with pytest.raises(ValueError) as ours:
            DataLoader(Stream(0, 3), **kwargs)
        assert str(ours.value) == str(theirs.value), kwargs


def loader_parts(loader):
    def name(obj):
        return None if obj is None else getattr(obj, "__name__", type(obj).__name__)
    return (name(loader.sampler), name(loader.batch_sampler), name(loader.collate_fn), loader.batch_size,
            loader.drop_last, loader.prefetch_factor, loader._auto_collation, name(loader._index_sampler),
            loader.num_workers, loader.pin_memory, loader.timeout, loader.worker_init_fn,
            loader.multiprocessing_context, loader.generator, loader.persistent_workers)


def test_defaults_and_boundary_arguments_like_torch():
    ds = Images(n=4)
    for kwargs in [dict(), dict(shuffle=True), dict(num_workers=0, timeout=0), dict(num_workers=1),
                   dict(num_workers=1, prefetch_factor=1), dict(shuffle=False), dict(batch_size=3, drop_last=True),
                   dict(sampler=SequentialSampler(ds), shuffle=False), dict(batch_sampler=[[0, 1]], batch_size=1),
                   dict(batch_size=None), dict(batch_size=None, drop_last=False),
                   dict(num_workers=1, persistent_workers=True), dict(collate_fn=list)]:
        assert loader_parts(DataLoader(ds, **kwargs)) == loader_parts(tud.DataLoader(ds, **kwargs)), kwargs
    for kwargs in [dict(), dict(shuffle=False), dict(batch_size=None), dict(batch_size=2, drop_last=True)]:
        assert loader_parts(DataLoader(Stream(0, 3), **kwargs)) == \
            loader_parts(tud.DataLoader(TorchStream(0, 3), **kwargs)), kwargs


def test_attributes_frozen_after_init_like_torch():
    for attr in ["batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"]:
        with pytest.raises(ValueError) as theirs:
            setattr(tud.DataLoader(Images(n=4)), attr, None)
        with pytest.raises(ValueError) as ours:
            setattr(DataLoader(Images(n=4)), attr, None)
        assert str(ours.value) == str(theirs.value)
    loader = DataLoader(Images(n=4))
    loader.num_workers, loader.collate_fn, loader.timeout = 1, list, 5.0  # as in torch: these may change
    assert (loader.num_workers, loader.collate_fn, loader.timeout) == (1, list, 5.0)


class WaitsForEvent(Dataset):
    """12 samples; those in [lo, hi) come only once ``event`` is set, the others at once."""

    def __init__(self, event, lo=0, hi=1):
        self.event, self.lo, self.hi = event, lo, hi

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if self.lo <= i < self.hi:
            self.event.wait(60)
        return i


def test_batches_left_over_from_a_cut_short_epoch_are_freed(no_leaks):
    ctx = multiprocessing.get_context("fork")
    event = ctx.Event()
    loader = DataLoader(WaitsForEvent(event), batch_size=2, num_workers=2, prefetch_factor=1,
                        persistent_workers=True, multiprocessing_context=ctx)
    it = iter(loader)

    def release_batch_0_once_batch_1_waits():  # deterministic: no sleep decides the order
        deadline = time.monotonic() + 60
        while not it._reorder and time.monotonic() < deadline:
            time.sleep(0.01)
        event.set()

    helper = threading.Thread(target=release_batch_0_once_batch_1_waits)
    helper.start()
    assert next(it).tolist() == [0, 1]
    helper.join()
    assert list(it._reorder) == [1]  # received from worker 1, never handed out; batch 2 is still in flight
    assert it._result_conns[0].poll(60)  # batch 2 is back (unread): the next epoch's first wait files it
    assert [v for b in loader for v in b.tolist()] == list(range(12))  # the next epoch, same workers
    assert it._outstanding == [0, 0]  # the leftovers' places were given back
    created = {w: sorted(s for s in it._slots.created if s.startswith(f"w{w}s")) for w in (0, 1)}
    assert {w: sorted(free) for w, free in it._slots.free.items()} == created  # and their slots
    del loader, it


class PinAware:
    """A custom batch type: with pin_memory=True the loader calls its pin_memory(), as torch does."""

    def __init__(self, labels, pinned=False):
        self.labels, self.pinned = labels, pinned

    def pin_memory(self):
        return PinAware(self.labels, pinned=True)


def collate_pin_aware(samples):
    return PinAware([label for _, label in samples])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_custom_batch_type_is_pinned_with_or_without_workers(num_workers, no_leaks):
    for pin in (True, False):
        batches = list(DataLoader(Images(n=5), batch_size=3, pin_memory=pin, collate_fn=collate_pin_aware,
                                  num_workers=num_workers))
        assert [(b.labels, b.pinned) for b in batches] == [([0, 1, 2], pin), ([3, 4], pin)]


class WorkerSeeds(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return get_worker_info().seed


def test_worker_seeds_come_from_the_loaders_generator(no_leaks):
    # as in torch: with generator=, the workers' base seed is drawn from it, not from the global RNG
    def seeds(global_seed):
        ember.manual_seed(global_seed)
        g = ember.Generator().manual_seed(5)
        return sorted(int(v) for b in DataLoader(WorkerSeeds(), batch_size=1, num_workers=2, generator=g)
                      for v in b.tolist())

    first = seeds(0)
    assert seeds(1) == first and len(set(first)) == 2  # one seed per worker


@pytest.mark.parametrize("prefetch_factor", [1, 2])
def test_new_epoch_while_every_worker_is_busy_with_the_last_one(prefetch_factor, no_leaks):
    ctx = multiprocessing.get_context("fork")
    event = ctx.Event()
    loader = DataLoader(WaitsForEvent(event, 2, 12), batch_size=2, num_workers=2, prefetch_factor=prefetch_factor,
                        persistent_workers=True, multiprocessing_context=ctx)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]  # prefetch_factor batches now in flight per worker: no room for more
    event.set()
    for conn in it._result_conns:  # the stale batches are back (unread): the next epoch's first wait files both
        assert conn.poll(60)
    assert [v for b in loader for v in b.tolist()] == list(range(12))  # files the stale ones, then goes on
    assert it._outstanding == [0, 0]
    per_worker = [sum(1 for s in it._slots.created if s.startswith(f"w{w}s")) for w in (0, 1)]
    assert per_worker == [prefetch_factor] * 2  # never more than prefetch_factor in flight, so no more slots
    del loader, it


class UnevenStream(IterableDataset):
    """Worker w yields ``lengths[w]`` items (w * 100 + k); in the main process, all of them."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        info = get_worker_info()
        workers = range(len(self.lengths)) if info is None else [info.id]
        return iter([w * 100 + k for w in workers for k in range(self.lengths[w])])


class TorchUnevenStream(tud.IterableDataset):
    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        info = tud.get_worker_info()
        workers = range(len(self.lengths)) if info is None else [info.id]
        return iter([w * 100 + k for w in workers for k in range(self.lengths[w])])


@pytest.mark.parametrize("prefetch_factor", [1, 2])
def test_uneven_iterable_workers_order_matches_torch(prefetch_factor, no_leaks):
    # a worker whose stream ends is skipped; the next task goes to the next live worker in turn, as in torch
    lengths = [1, 4, 6]
    ours = [int(b) for b in DataLoader(UnevenStream(lengths), batch_size=None, num_workers=3,
                                       prefetch_factor=prefetch_factor)]
    theirs = [int(b) for b in tud.DataLoader(TorchUnevenStream(lengths), batch_size=None, num_workers=3,
                                             prefetch_factor=prefetch_factor)]
    assert ours == theirs


def test_length_warning_names_the_users_line():
    # deselected under mutmut, whose trampoline adds a frame
    loader = DataLoader(LyingStream(0, 4, reported=1), batch_size=None)
    len(loader)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        next_line = sys._getframe().f_lineno + 1
        batches = list(loader)
    assert len(batches) == 4
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, next_line)] * 3
