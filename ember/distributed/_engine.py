"""The communication thread: one FIFO of operations per process, run in the order they were issued (the
same order on every rank), each polled against its deadline.

An operation is a `Work` whose `start()` returns requests (mpi4py requests or, for NCCL, CUDA events)
and whose `finish()` writes results back (Assign) once they are complete. A synchronous call with an
empty queue runs on the calling thread: no hand-off, lower latency.
"""
from __future__ import annotations

import collections
import os
import threading
import time

_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class DistributedTimeoutError(RuntimeError):
    """A collective or point-to-point operation did not complete within the process group's timeout."""


class Work:
    """The handle of an operation (torch's `Work`): `wait()`, `is_completed()`, `exception()`."""

    def __init__(self, name: str, start, finish=None, describe: str = ""):
        self.name = name
        self.describe = describe
        self._start = start
        self._finish = finish
        self._done = threading.Event()
        self._exc: BaseException | None = None
        self._result = None
        self._lock = threading.Lock()
        self.statuses = None      # backend status objects (recv from any source), when asked for
        self.deadline = None
        self.timeout = None

    def is_success(self) -> bool:
        return self._done.is_set() and self._exc is None

    def exception(self):
        return self._exc

    def result(self):
        return self._result

    def is_completed(self) -> bool:
        if not self._done.is_set():
            return False
        self._complete()
        return True

    def wait(self, timeout=None) -> bool:
        """Block until the operation is done; raise its error (a `DistributedTimeoutError` past the
        group's timeout). `timeout` (seconds or timedelta) bounds this wait alone. The result is
        written into the tensors here, on the waiting thread (so its dispatch modes see the `Assign`)."""
        if timeout is not None and not isinstance(timeout, (int, float)):
            timeout = timeout.total_seconds()
        if not self._done.wait(timeout):
            d = self.describe() if callable(self.describe) else self.describe
            raise DistributedTimeoutError(f"{self.name}: Work.wait timed out after {timeout} s ({d})")
        self._complete()
        return True

    def _complete(self):
        if self._exc is not None:
            raise self._exc
        with self._lock:
            if self._finish is not None:
                finish, self._finish = self._finish, None
                self._result = finish()

    def _fail(self, exc):
        self._exc = exc
        self._done.set()


class Engine:
    def __init__(self, backend, timeout: float):
        self.backend = backend
        self.timeout = timeout
        self.broken: str | None = None
        self._lock = threading.Lock()
        self._work_ready = threading.Condition(self._lock)   # the communication thread waits for work here
        self._all_done = threading.Condition(self._lock)     # drain() waits here
        self._queue: collections.deque = collections.deque()
        self._pending = 0          # queued + running: a synchronous call runs inline only at 0
        self._run_lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="ember-comm", daemon=True)
        self._thread.start()

    def submit(self, work: Work, async_op: bool) -> Work:
        if self.broken:
            raise RuntimeError(f"{work.name}: the process group is broken ({self.broken}); "
                               f"destroy it and restart the job")
        work.timeout = self.timeout
        with self._lock:
            inline = not async_op and self._pending == 0
            self._pending += 1
            if inline:
                self._run_lock.acquire()      # under the lock: no queued op can start before this one
            else:
                self._queue.append(work)
                self._work_ready.notify()
        if inline:      # no thread hand-off: the caller runs it (no wake-up of the communication thread)
            try:
                self._execute(work)
            finally:
                self._run_lock.release()
                with self._lock:
                    self._pending -= 1
                    if not self._pending:
                        self._all_done.notify_all()
        if not async_op:
            work.wait()
        return work

    def _loop(self):
        while True:
            with self._lock:
                while not self._queue and not self._stop:
                    self._work_ready.wait()
                if self._stop and not self._queue:
                    return
                work = self._queue.popleft()
            with self._run_lock:
                self._execute(work)
            with self._lock:
                self._pending -= 1
                if not self._pending:
                    self._all_done.notify_all()

    def _execute(self, work: Work):
        if self.broken:
            work._fail(RuntimeError(f"{work.name}: the process group is broken ({self.broken})"))
            return
        work.deadline = time.monotonic() + self.timeout
        try:
            reqs = work._start()
            if reqs:
                self.poll(reqs, work.deadline, work.name, work.describe, work.statuses)
        except BaseException as e:      # noqa: BLE001 - handed to the waiter
            if isinstance(e, DistributedTimeoutError):
                self.broken = str(e)
            work._fail(e)
            return
        work._done.set()

    def poll(self, reqs, deadline, name, describe="", statuses=None):
        """Test `reqs` until complete. MPICH progresses only inside MPI calls (a shared-memory transfer
        moves while a rank polls), and a rank on a loaded machine may share its core with the peer: spin
        briefly (latency), then poll with `sched_yield` between tests for the first 5 ms (as fast as a
        spin on an idle core, and the peer runs on a shared one), then sleep in short steps (20 us up to
        10 ms, 0.2 ms up to 1 s, then 1 ms), checking the deadline."""
        test = self.backend.test
        spins = 0
        since = None
        while not test(reqs, statuses):
            spins += 1
            if spins < 200:
                continue
            now = time.monotonic()
            if since is None:
                since = now
            waited = now - since
            if waited < 0.005:
                _yield()
                continue
            time.sleep(2e-5 if waited < 0.01 else 2e-4 if waited < 1.0 else 1e-3)
            if now > deadline:
                d = describe() if callable(describe) else describe
                raise DistributedTimeoutError(
                    f"{name}: timed out after {self.timeout:g} s ({d}); another rank may have "
                    f"failed or issued a different collective (EMBER_DISTRIBUTED_DEBUG=1 checks)")

    def drain(self, timeout: float | None = None):
        """Wait until every queued operation has run."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._pending:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._all_done.wait(left)
        return True

    def stop(self):
        with self._lock:
            self._stop = True
            self._work_ready.notify_all()
        self._thread.join(timeout=5)
