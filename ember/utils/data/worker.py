"""What runs inside a DataLoader worker process, and ``get_worker_info`` for datasets to ask who they are."""
from __future__ import annotations

import os
import random
import signal
import sys
import traceback
from typing import Any, Optional

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """Who this worker is: ``id``, ``num_workers``, ``seed`` and its copy of the ``dataset``. Read-only."""

    __initialized = False

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key: str, val: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys if k != "dataset")
        return f"WorkerInfo({items})"


_worker_info: Optional[WorkerInfo] = None


def get_worker_info() -> Optional[WorkerInfo]:
    """In a DataLoader worker: its :class:`WorkerInfo`; in the main process: ``None``.

    Example:
        >>> get_worker_info() is None   # not in a worker
        True
    """
    return _worker_info


class _KeyErrorMessage(str):
    # KeyError's str() is the repr of its argument; keep the multi-line message readable.
    def __repr__(self) -> str:
        return self


class WorkerError:
    """An exception raised in a worker, in a form that survives the trip to the main process."""

    def __init__(self, exc: BaseException, worker_id: int, index: Any, where: str) -> None:
        import pickle
        try:
            pickle.loads(pickle.dumps(type(exc)))
            self.exc_type: Optional[type] = type(exc)
        except Exception:  # a class defined in a function, say: re-raise as RuntimeError
            self.exc_type = None
        self.type_name = type(exc).__qualname__
        self.message = str(exc)
        self.worker_id = worker_id
        self.pid = os.getpid()
        self.index = index
        self.where = where
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self) -> None:
        msg = (f"Caught {self.type_name} in DataLoader worker {self.worker_id} (pid {self.pid}) {self.where} "
               f"{self.index}: {self.message}\nOriginal traceback in the worker:\n{self.traceback}")
        exc_type = self.exc_type
        if exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        exc: BaseException
        try:
            exc = exc_type(msg) if exc_type is not None else RuntimeError(msg)
        except Exception:  # the type's constructor wants other arguments
            exc = RuntimeError(msg)
        try:
            exc.worker_id = self.worker_id  # type: ignore[attr-defined]
            exc.sample_index = self.index  # type: ignore[attr-defined]
        except AttributeError:
            pass
        raise exc


class MapFetcher:
    """Turns a list of keys into a batch. ``current`` tells which key was being read if it fails."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.current: Any = None
        self.where = "while fetching sample index"

    def fetch(self, indices):
        if not self.auto_collation:
            self.current = indices
            return self.collate_fn(self.dataset[indices])
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            self.current, self.where = indices, "while fetching sample indices"
            data = getitems(indices)
        else:
            self.where = "while fetching sample index"
            data = []
            for i in indices:
                self.current = i
                data.append(self.dataset[i])
        self.current, self.where = indices, "while collating the batch of sample indices"
        return self.collate_fn(data)


class IterableFetcher:
    """Reads the next batch from an iterable dataset's iterator; raises StopIteration at its end."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool, batch_size: Optional[int]):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.drop_last, self.batch_size = drop_last, batch_size
        self.ended = False
        self.count = 0  # samples read so far: the "index" reported with an error
        self.current: Any = None
        self.where = "while reading sample number"

    def _next(self):
        self.current = self.count
        item = next(self.it)
        self.count += 1
        return item

    def fetch(self, _indices=None):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                item = self._next()
            except StopIteration:
                self.ended = True
                raise
            return self.collate_fn(item)
        data = []
        for _ in range(self.batch_size):
            try:
                data.append(self._next())
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < self.batch_size):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(kind: str, dataset, auto_collation, collate_fn, drop_last, batch_size):
    if kind == "map":
        return MapFetcher(dataset, auto_collation, collate_fn, drop_last)
    return IterableFetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed Python's ``random``, NumPy's global RNG and ember's from (base seed, worker id)."""
    import ember
    seed = (base_seed + worker_id) % (1 << 63)
    random.seed(seed)
    ember.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def worker_loop(spec: dict, task_conn, result_conn, worker_id: int, base_seed: int, parent_pid: int) -> None:
    """The worker process: receive tasks, fetch + collate, write arrays to the slot, send the description.

    Messages to the main process: ("batch", epoch, task, slot, size, described), ("error", epoch, task,
    slot, WorkerError), ("stop", epoch, task, slot) when an iterable dataset is exhausted.
    """
    global _worker_info
    from ember.utils.data._shm import WorkerSlots

    # Ctrl-C reaches the whole process group; the main process alone decides to stop, and then tells us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent around the fork
    slots = WorkerSlots(spec["shm_dir"], spec["shm_prefix"], spec.get("shm_fds"))
    init_error: Optional[WorkerError] = None
    fetcher = None
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=spec["num_workers"], seed=seed,
                                  dataset=spec["dataset"])
        if spec["worker_init_fn"] is not None:
            spec["worker_init_fn"](worker_id)
        fetcher = make_fetcher(spec["kind"], spec["dataset"], spec["auto_collation"], spec["collate_fn"],
                               spec["drop_last"], spec["batch_size"])
    except Exception as e:
        init_error = WorkerError(e, worker_id, None, "while starting (worker_init_fn / iter(dataset)), index")

    try:
        while True:
            try:
                if not task_conn.poll(1.0):
                    if os.getppid() != parent_pid:  # the main process is gone: do not linger as an orphan
                        break
                    continue
                task = task_conn.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            if task[0] == "resume":  # persistent workers, next epoch of an iterable dataset
                try:
                    fetcher = make_fetcher(spec["kind"], spec["dataset"], spec["auto_collation"],
                                           spec["collate_fn"], spec["drop_last"], spec["batch_size"])
                    init_error = None
                except Exception as e:
                    init_error = WorkerError(e, worker_id, None, "while calling iter(dataset), index")
                continue
            epoch, task_idx, slot, indices = task
            if init_error is not None:
                msg: tuple = ("error", epoch, task_idx, slot, init_error)
            else:
                try:
                    described, size = slots.pack(fetcher.fetch(indices), slot)
                    msg = ("batch", epoch, task_idx, slot, size, described)
                except StopIteration:
                    msg = ("stop", epoch, task_idx, slot)
                except Exception as e:
                    msg = ("error", epoch, task_idx, slot, WorkerError(e, worker_id, fetcher.current, fetcher.where))
            try:
                result_conn.send(msg)
            except (BrokenPipeError, EOFError, OSError):
                break
            except Exception as e:  # the batch holds something that cannot be pickled (a custom collate_fn's)
                where = "while sending (pickling) the batch of sample indices"
                try:
                    result_conn.send(("error", task[0], task[1], task[2], WorkerError(e, worker_id, task[3], where)))
                except (BrokenPipeError, EOFError, OSError):
                    break
            del msg
    except KeyboardInterrupt:
        pass
    finally:
        slots.close()
        try:
            result_conn.close()
        except OSError:
            pass
        sys.stdout.flush()

