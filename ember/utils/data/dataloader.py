"""DataLoader: batches from a dataset, in the main process or in worker processes (``torch.utils.data``'s API).

With ``num_workers > 0`` each worker is a real process (``fork`` on Linux unless a CUDA library is loaded,
``spawn`` otherwise). The main process sends each worker small tasks (a batch's indices) through a pipe,
at most ``prefetch_factor`` at a time; the worker fetches, collates and copies the batch's arrays into a
shared-memory slot (see ``_shm.py``) and answers with a description of where they are. The main process
waits on every worker's pipe and process sentinel at once, so a worker that dies is noticed at once, and
hands batches out in order.
"""
from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
import warnings
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from ember.utils.data import _rng
from ember.utils.data._shm import SlotPool, pin_structure, shm_dir
from ember.utils.data.collate import default_collate, default_convert
from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ember.utils.data.worker import make_fetcher, worker_loop

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """Index stream for iterable datasets: the keys are meaningless, only their count matters."""

    def __iter__(self):
        while True:
            yield None


def _default_context() -> str:
    # fork is fast and needs no pickling, but is unsafe once a CUDA context may exist in this process.
    if sys.platform.startswith("linux") and "cupy" not in sys.modules:
        return "fork"
    return "spawn"


class DataLoader:
    """Iterate over ``dataset`` in batches, optionally shuffled, optionally with worker processes.

    Arguments follow ``torch.utils.data.DataLoader``: ``batch_size`` (``None`` turns batching off),
    ``shuffle``, ``sampler``, ``batch_sampler``, ``num_workers``, ``collate_fn``, ``pin_memory``,
    ``drop_last``, ``timeout`` (seconds to wait for a batch from the workers; 0 waits forever),
    ``worker_init_fn(worker_id)``, ``multiprocessing_context`` (``"fork"``/``"spawn"``/a context),
    ``generator`` (for the shuffle order and the workers' base seed), ``prefetch_factor`` (batches in
    flight per worker, default 2), ``persistent_workers`` (keep workers between epochs).

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10).float(), ember.arange(10))
        >>> loader = DataLoader(ds, batch_size=4, shuffle=False)
        >>> [y.tolist() for _, y in loader]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    _initialized = False
    _reported_len: Optional[int] = None  # an iterable dataset's len(), once len(loader) asked for it

    def __init__(self, dataset: Dataset, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler: Union[Sampler, Iterable, None] = None,
                 batch_sampler: Union[Sampler, Iterable, None] = None, num_workers: int = 0,
                 collate_fn: Optional[Callable[[List], Any]] = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Optional[Callable[[int], None]] = None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor: Optional[int] = None,
                 persistent_workers: bool = False) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing (got num_workers={num_workers!r})")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got timeout={timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"prefetch_factor option should be a positive integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator: Optional[_BaseIter] = None
        self._initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _context(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            return multiprocessing.get_context(_default_context())
        if isinstance(ctx, str):
            return multiprocessing.get_context(ctx)
        return ctx

    def __iter__(self) -> "_BaseIter":
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None or self._iterator._shutdown:  # first epoch, or workers lost to an error
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            # as in torch: an iterator that then yields more batches than the dataset said it has samples warns
            self._reported_len = len(self.dataset)
        return self._num_batches()

    def _num_batches(self) -> int:
        if self._dataset_kind == "iterable":
            n = len(self.dataset)  # raises TypeError when the dataset has no length, as in torch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._batch_size = loader.batch_size
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._pin_memory = loader.pin_memory
        self._timeout = loader.timeout
        self._generator = loader.generator
        self._num_yielded = 0
        self._reported_len = loader._reported_len
        self._sampler_iter = iter(self._index_sampler)
        self._length = loader._num_batches() if _has_len(loader) else None

    def __iter__(self) -> "_BaseIter":
        return self

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this DataLoader's dataset has no len()")
        return self._length

    def _next_index(self):
        return next(self._sampler_iter)

    def _count_yielded(self) -> None:
        self._num_yielded += 1
        if self._reported_len is not None and self._num_yielded > self._reported_len:
            # torch's text (it compares batches with samples, and so do we)
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._reported_len}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if isinstance(self, _MultiProcessIter):
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=3)


def _has_len(loader: DataLoader) -> bool:
    try:
        loader._num_batches()
        return True
    except TypeError:
        return False


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = make_fetcher(self._kind, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last, self._batch_size)

    def __next__(self):
        index = self._next_index()
        data = self._fetcher.fetch(index)
        if self._pin_memory:
            data = pin_structure(data)
        self._count_yielded()
        return data


_live_iters: "weakref.WeakSet[_MultiProcessIter]" = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    for it in list(_live_iters):
        it._shutdown_workers()


def _describe_exit(code: Optional[int]) -> str:
    if code is None:
        return "is no longer responding"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        text = f"was killed by signal {name} ({-code})"
        if -code == signal.SIGKILL:
            text += "; if nobody killed it, the system probably ran out of memory (the OOM killer sends SIGKILL)"
        elif -code == signal.SIGBUS:
            text += f"; shared memory ({shm_dir()}) is probably full"
        return text
    return f"exited with code {code}"


def _check_picklable(loader: DataLoader, method: str) -> None:
    from multiprocessing.reduction import ForkingPickler
    for what, obj in (("dataset", loader.dataset), ("collate_fn", loader.collate_fn),
                      ("worker_init_fn", loader.worker_init_fn)):
        try:
            ForkingPickler.dumps(obj)
        except Exception as e:
            raise TypeError(
                f"DataLoader: the {what} ({type(obj).__name__}) cannot be sent to worker processes started with "
                f"'{method}', which must pickle it: {type(e).__name__}: {e}. Lambdas, functions and classes defined "
                f"inside other functions, open files, locks and generators cannot be pickled: define them at module "
                f"level, or use num_workers=0, or multiprocessing_context='fork' (Linux)") from e


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._shutdown = True  # until the workers exist, there is nothing to shut down
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        ctx = loader._context()
        method = ctx.get_start_method()
        if method != "fork":
            _check_picklable(loader, method)
        self._base_seed = _rng.draw_seed(self._generator)
        self._workers: List[Any] = []
        self._task_conns: List[Any] = []
        self._result_conns: List[Any] = []
        self._slots = SlotPool()
        self._shutdown = False  # from here on, __del__ / atexit clean up whatever exists
        _live_iters.add(self)
        self._slots.create(self._num_workers, self._prefetch_factor)
        spec = dict(kind=self._kind, dataset=self._dataset, auto_collation=self._auto_collation,
                    collate_fn=self._collate_fn, drop_last=self._drop_last, batch_size=self._batch_size,
                    worker_init_fn=loader.worker_init_fn, num_workers=self._num_workers,
                    shm_dir=self._slots.directory, shm_prefix=self._slots.prefix,
                    shm_fds=dict(self._slots.fds) if method == "fork" else None)
        # Block SIGINT while forking so a Ctrl-C cannot hit a worker before it has chosen to ignore it;
        # the worker unblocks it after installing SIG_IGN, and we unblock ours right after (see below).
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for w in range(self._num_workers):
                task_r, task_w = ctx.Pipe(duplex=False)
                res_r, res_w = ctx.Pipe(duplex=False)
                p = ctx.Process(target=worker_loop, args=(spec, task_r, res_w, w, self._base_seed, os.getpid()),
                                daemon=True, name=f"ember-dataloader-worker-{w}")
                p.start()
                task_r.close()
                res_w.close()
                self._workers.append(p)
                self._task_conns.append(task_w)
                self._result_conns.append(res_r)
        except BaseException:
            self._shutdown_workers()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        if method == "fork":  # every worker holds the slots open now: drop the names so nothing can leak
            self._slots.unlink_names()
        self._epoch = 0
        self._start_epoch(first=True)

    # --- bookkeeping -----------------------------------------------------------------------------------
    def _start_epoch(self, first: bool) -> None:
        self._epoch += 1
        self._send_idx = 0  # next task number to hand out
        self._rcvd_idx = 0  # next task number to give to the user
        self._sampler_done = False
        # Batches received but not handed out when the last epoch was cut short: free their slots and places.
        for w, *msg in getattr(self, "_reorder", {}).values():
            self._slots.release(w, msg[3])
            self._outstanding[w] -= 1
        self._reorder: Dict[int, tuple] = {}
        if first:
            self._outstanding = [0] * self._num_workers
            self._active = [True] * self._num_workers
        else:
            self._active = [True] * self._num_workers
            if self._kind == "iterable":
                for conn in self._task_conns:
                    conn.send(("resume", self._epoch))
        self._next_worker = 0
        for _ in range(self._prefetch_factor * self._num_workers):
            if not self._try_put_index():
                break

    def _reset(self, loader: DataLoader) -> None:
        """Persistent workers: start the next epoch with the same processes (``DataLoader.__iter__`` makes a new
        iterator instead when these were shut down after an error)."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._reported_len = loader._reported_len
        self._start_epoch(first=False)

    def _try_put_index(self) -> bool:
        if self._sampler_done:
            return False
        n = self._num_workers
        for k in range(n):
            w = (self._next_worker + k) % n
            if self._active[w] and self._outstanding[w] < self._prefetch_factor:
                break
        else:
            return False  # every worker has its fill; try again when a batch comes back
        try:
            index = self._next_index()
        except StopIteration:
            self._sampler_done = True
            return False
        slot = self._slots.acquire(w)
        self._task_conns[w].send((self._epoch, self._send_idx, slot, index))
        self._outstanding[w] += 1
        self._send_idx += 1
        self._next_worker = (w + 1) % n
        return True

    # --- receiving -------------------------------------------------------------------------------------
    def _fail(self, message: str) -> None:
        self._shutdown_workers()
        raise RuntimeError(message)

    def _receive(self) -> None:
        """Wait for one message from any worker (or a worker's death, or the timeout) and file it."""
        conns = {c: w for w, c in enumerate(self._result_conns)}
        sentinels = {p.sentinel: w for w, p in enumerate(self._workers)}
        waiting_for = [c for c in conns] + list(sentinels)
        ready = multiprocessing.connection.wait(waiting_for, timeout=self._timeout if self._timeout > 0 else None)
        if not ready:
            self._fail(f"DataLoader timed out after {self._timeout} seconds waiting for batch {self._rcvd_idx} "
                       f"from the workers (timeout={self._timeout})")
        for r in ready:  # results first: a worker may have answered just before dying
            if r in conns:
                w = conns[r]
                try:
                    msg = r.recv()
                except (EOFError, OSError):
                    self._workers[w].join(timeout=1.0)
                    self._worker_died(w)
                self._file(w, msg)
        for r in ready:
            if r in sentinels:
                self._worker_died(sentinels[r])

    def _worker_died(self, w: int) -> None:
        p = self._workers[w]
        p.join(timeout=1.0)
        self._fail(f"DataLoader worker {w} (pid {p.pid}) exited unexpectedly: it {_describe_exit(p.exitcode)}")

    def _file(self, w: int, msg: tuple) -> None:
        kind, epoch, task_idx, slot = msg[:4]
        if epoch != self._epoch:  # left over from an epoch that was cut short (persistent workers)
            self._outstanding[w] -= 1
            self._slots.release(w, slot)
            self._try_put_index()
            return
        self._reorder[task_idx] = (w,) + msg

    def __next__(self):
        while True:
            if self._shutdown:
                raise StopIteration
            if self._rcvd_idx in self._reorder:
                w, kind, _epoch, task_idx, slot, *rest = self._reorder.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                # A task counts against its worker's prefetch_factor until it is handed out, as in torch, so
                # a slow worker cannot make the others pile up batches without bound.
                self._outstanding[w] -= 1
                if kind == "batch":
                    size, described = rest
                    data = self._slots.unpack(described, slot, size, pin=False)
                    self._slots.release(w, slot)
                    if self._pin_memory:  # tensors, and custom batch types by their pin_memory(), as without workers
                        data = pin_structure(data)
                    self._try_put_index()
                    self._count_yielded()
                    return data
                self._slots.release(w, slot)
                if kind == "stop":  # this worker's share of an iterable dataset is exhausted
                    self._active[w] = False
                    self._try_put_index()
                    continue
                self._try_put_index()
                rest[0].reraise()  # kind == "error"
            if self._rcvd_idx >= self._send_idx:
                if self._sampler_done or not any(self._active):
                    if not self._persistent:
                        self._shutdown_workers()
                    raise StopIteration
                if self._try_put_index():
                    continue
                # no room: the workers are still busy with tasks of a cut-short epoch; collect those
            self._receive()

    # --- shutting down ---------------------------------------------------------------------------------
    def _shutdown_workers(self) -> None:
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        _live_iters.discard(self)
        try:
            # Closing our ends first makes a worker blocked on a send fail at once instead of hanging.
            for c in self._result_conns:
                try:
                    c.close()
                except OSError:
                    pass
            for c in self._task_conns:
                try:
                    c.send(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + 1.0  # idle workers exit at once; busy ones get terminated
            for p in self._workers:
                p.join(timeout=max(0.0, deadline - time.monotonic()))
            for p in self._workers:
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=1.0)
        finally:
            # Even if we are interrupted above (Ctrl-C during shutdown), no process or slot may outlive us.
            for p in self._workers:
                try:
                    if p.is_alive():
                        p.kill()
                        p.join(timeout=1.0)
                    p.close()
                except ValueError:
                    pass
            for c in self._task_conns + self._result_conns:
                try:
                    c.close()
                except OSError:
                    pass
            self._slots.close()

    def __del__(self) -> None:
        self._shutdown_workers()
