"""torch.multiprocessing.spawn: start `nprocs` processes running fn(i, *args) and watch them; the first to fail
stops the others and its error is raised in the parent with the child's index and traceback."""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from typing import Any, Callable, List, Optional, Tuple

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A child of `spawn` failed; `error_index` is its index, `error_pid` its process id."""
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child raised an exception: the message holds its index and traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code, or was killed by a signal, without raising."""
    __slots__ = ["exit_code", "signal_name"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: Optional[str] = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_queue) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass   # the parent is stopping us
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes `spawn(..., join=False)` started: `.processes`, `.pids()`, `.join(timeout)`."""

    def __init__(self, processes: List[Any], error_queues: List[Any]) -> None:
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> List[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait for the processes (at most `timeout` seconds); True once all ended well, False while some run.
        The first that fails has the others terminated and raises ProcessRaisedException (it raised) or
        ProcessExitedException (it exited non-zero or by a signal)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        for process in self.processes:   # stop the rest
            if process.is_alive():
                process.terminate()
            process.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            code = failed.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(f"process {error_index} terminated with signal {name}",
                                             error_index, failed.pid, code, name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code {code}",
                                         error_index, failed.pid, code)
        original = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, error_index, failed.pid)


SpawnContext = ProcessContext   # torch's older name


def start_processes(fn: Callable, args: Tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> Optional[ProcessContext]:
    """`spawn` with any start method ('spawn', 'fork', 'forkserver')."""
    if nprocs < 1:
        raise ValueError(f"start_processes: nprocs must be at least 1, got {nprocs}")
    mp = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        error_queue = mp.SimpleQueue()
        process = mp.Process(target=_wrap, args=(fn, i, tuple(args), error_queue), daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(error_queue)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: Tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> Optional[ProcessContext]:
    """Start `nprocs` processes that each run `fn(i, *args)` (i = 0 .. nprocs-1), as torch.multiprocessing.spawn.

    With `join=True` wait for all of them and return None; an exception in a child terminates the others and
    is raised here as `ProcessRaisedException` naming the child and carrying its traceback. With `join=False`
    return the `ProcessContext` (`.processes`, `.join()`). `fn` must be importable by name (a module-level
    function), as the 'spawn' start method pickles it.
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
