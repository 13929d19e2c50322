"""DataLoader robustness: worker errors, dead workers, timeouts, interrupted iteration, unpicklable datasets.
Every test also checks (fixture ``no_leaks``) that no worker process or shared-memory slot is left behind."""
import faulthandler
import gc
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, Sampler, TensorDataset, get_worker_info

# Seconds within which a failure must be reported. The behaviours under test take well under a second;
# the bound is long so that a loaded machine cannot fail them, and the slow datasets below sleep far
# longer than it, so that a hang still fails.
HANG = 20

pytestmark = pytest.mark.timeout(60)


class Failing(Dataset):
    """Raises ``exc`` when asked for sample ``bad``."""

    def __init__(self, bad=7, exc=None, n=16):
        self.bad, self.exc, self.n = bad, exc or ValueError(f"cannot decode sample {bad}"), n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return np.full(3, i, dtype=np.float32)


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")


def test_worker_exception_reraised_with_type_message_worker_index_and_traceback(no_leaks):
    loader = DataLoader(Failing(bad=7), batch_size=4, num_workers=2)
    with pytest.raises(ValueError) as info:
        for _ in loader:
            pass
    msg = str(info.value)
    assert "cannot decode sample 7" in msg
    assert "DataLoader worker 1" in msg  # batch 1 (samples 4-7) went to worker 1
    assert "sample index 7" in msg
    assert "Traceback" in msg and "__getitem__" in msg and "raise self.exc" in msg
    assert info.value.worker_id == 1 and info.value.sample_index == 7
    del info


@pytest.mark.parametrize("exc,expected", [(KeyError("missing"), KeyError), (NeedsTwoArgs(1, 2), RuntimeError),
                                          (OSError("disk"), OSError)])
def test_worker_exception_types(exc, expected, no_leaks):
    with pytest.raises(expected) as info:
        list(DataLoader(Failing(bad=2, exc=exc), batch_size=2, num_workers=1))
    assert "sample index 2" in str(info.value)
    del info


def test_iteration_continues_after_a_worker_exception(no_leaks):
    # as in torch: the failing batch raises, the loader goes on with the next one
    it = iter(DataLoader(Failing(bad=0, n=6), batch_size=2, num_workers=2))
    with pytest.raises(ValueError):
        next(it)
    assert [b[:, 0].tolist() for b in it] == [[2, 3], [4, 5]]


def test_worker_init_fn_exception_is_reported(no_leaks):
    def init(worker_id):
        raise RuntimeError(f"init failed in {worker_id}")

    with pytest.raises(RuntimeError, match="init failed in"):
        list(DataLoader(Failing(bad=-1), batch_size=2, num_workers=2, worker_init_fn=init))


def test_exception_in_main_process_single_process_loader():
    with pytest.raises(ValueError, match="cannot decode sample 3"):
        list(DataLoader(Failing(bad=3), batch_size=2))


class Suicidal(Dataset):
    """The worker that reads sample ``bad`` is SIGKILLed (as the OOM killer would)."""

    def __init__(self, bad, sig=signal.SIGKILL):
        self.bad, self.sig = bad, sig

    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == self.bad:
            faulthandler.disable()  # pytest's fault handler would print a stack dump for the SIGSEGV case
            os.kill(os.getpid(), self.sig)
            time.sleep(10)
        return i


@pytest.mark.parametrize("sig,name", [(signal.SIGKILL, "SIGKILL"), (signal.SIGSEGV, "SIGSEGV")])
def test_killed_worker_raises_naming_worker_and_signal(sig, name, no_leaks):
    loader = DataLoader(Suicidal(bad=5, sig=sig), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        for _ in loader:
            pass
    assert time.monotonic() - start < HANG
    msg = str(info.value)
    assert "DataLoader worker 0" in msg and name in msg and "exited unexpectedly" in msg
    del info


def test_worker_killed_from_outside_while_idle(no_leaks):
    loader = DataLoader(Suicidal(bad=-1), batch_size=2, num_workers=2, prefetch_factor=1)
    it = iter(loader)
    next(it)
    victim = it._workers[1]
    os.kill(victim.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 .*SIGKILL"):
        for _ in it:
            pass
    assert time.monotonic() - start < HANG
    del it


class Slow(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i >= 2:
            time.sleep(3 * HANG)
        return i


def test_timeout_expires(no_leaks):
    it = iter(DataLoader(Slow(), batch_size=2, num_workers=1, timeout=0.5))
    assert next(it).tolist() == [0, 1]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        next(it)
    assert time.monotonic() - start < HANG
    del it


class Plain(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.full((4, 4), i, dtype=np.float32), i


def test_break_shuts_down_and_next_epoch_works(no_leaks):
    loader = DataLoader(Plain(), batch_size=4, num_workers=2)
    for _ in loader:
        break
    gc.collect()
    assert not any(p.is_alive() for p in multiprocessing_children())
    labels = [v for _, y in loader for v in y.tolist()]
    assert labels == list(range(64))


def multiprocessing_children():
    import multiprocessing
    return [p for p in multiprocessing.active_children() if p.name.startswith("ember-dataloader")]


def test_exception_in_user_loop_shuts_down(no_leaks):
    loader = DataLoader(Plain(), batch_size=4, num_workers=2)

    def train():
        for i, _ in enumerate(loader):
            if i == 2:
                raise ZeroDivisionError("user code failed")

    with pytest.raises(ZeroDivisionError) as info:
        train()
    del info  # the traceback holds the iterator; once it goes, so do the workers


def test_garbage_collected_iterator_shuts_down(no_leaks):
    it = iter(DataLoader(Plain(), batch_size=4, num_workers=2))
    next(it)
    pids = [p.pid for p in it._workers]
    del it
    gc.collect()
    for pid in pids:
        with pytest.raises(OSError):
            os.kill(pid, 0)  # the process is gone (joined, so not even a zombie)


class Stuck(Dataset):
    """Samples 0 and 1 come at once; every later one never does (until the worker is shut down)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i >= 2:
            time.sleep(3600)
        return i


def _main_thread_waits_for_workers():
    """True while the main thread is blocked in the loader's wait for a worker's message."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return "_receive" in names and names[0] in ("select", "poll", "wait")


def test_ctrl_c_interrupts_main_and_workers_shut_down(no_leaks):
    # Deterministic under any load: the batch the main thread waits for never comes, and the Ctrl-C is
    # sent only once the main thread is seen blocked in that wait. The handler is installed here because
    # a pytest started with SIGINT ignored (`cmd &` in a script, nohup) has none; gc is off so that no
    # finaliser of an earlier test runs (and swallows the KeyboardInterrupt) while the signal is pending.
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.collect()
    gc.disable()
    seen_blocked = []

    def interrupt_when_blocked():
        deadline = time.monotonic() + 30
        while not _main_thread_waits_for_workers() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_blocked.append(_main_thread_waits_for_workers())
        os.kill(os.getpid(), signal.SIGINT)

    try:
        loader = DataLoader(Stuck(), batch_size=2, num_workers=2)
        it = iter(loader)
        assert next(it).tolist() == [0, 1]
        for p in it._workers:  # a terminal's Ctrl-C reaches the workers too: they must ignore it
            os.kill(p.pid, signal.SIGINT)
        sender = threading.Thread(target=interrupt_when_blocked)
        with pytest.raises(KeyboardInterrupt):
            sender.start()
            next(it)  # blocked waiting for a batch that never comes
        sender.join()
        assert seen_blocked == [True]
        assert all(p.is_alive() for p in it._workers)  # workers survived their SIGINT until we shut them down
        del it
    finally:
        gc.enable()
        signal.signal(signal.SIGINT, old_handler)


def test_persistent_workers_shut_down_when_loader_goes(no_leaks):
    loader = DataLoader(Plain(), batch_size=8, num_workers=2, persistent_workers=True)
    assert len(list(loader)) == 8
    it = iter(loader)
    next(it)
    del it, loader


class Unpicklable(Dataset):
    def __init__(self):
        self.fn = lambda i: i  # lambdas cannot be pickled

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.fn(i)


def test_unpicklable_dataset_with_spawn_explains_why(no_leaks):
    loader = DataLoader(Unpicklable(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    start = time.monotonic()
    with pytest.raises(TypeError) as info:
        iter(loader)
    msg = str(info.value)
    assert "dataset (Unpicklable) cannot be sent to worker processes started with 'spawn'" in msg
    assert "lambda" in msg.lower() or "pickle" in msg.lower()
    assert time.monotonic() - start < HANG  # up front, not after a worker start's 60 s wait
    del info


def test_unpicklable_dataset_is_fine_with_fork(no_leaks):
    assert [b.tolist() for b in DataLoader(Unpicklable(), batch_size=2, num_workers=2,
                                           multiprocessing_context="fork")] == [[0, 1], [2, 3]]


def test_spawn_workers_work(no_leaks):
    ds = TensorDataset(ember.from_numpy(np.arange(10)))
    out = [b[0].tolist() for b in DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")]
    assert out == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_large_and_growing_batches_through_shared_memory(no_leaks):
    class Growing(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return np.full((64 * (i + 1), 1024), i, dtype=np.float32)  # 256 KB to 1.5 MB samples

    loader = DataLoader(Growing(), batch_size=None, num_workers=2, prefetch_factor=1)
    for i, x in enumerate(loader):
        assert x.shape == (64 * (i + 1), 1024) and float(x.numpy()[-1, -1]) == i


def test_batch_that_cannot_be_pickled_is_reported(no_leaks):
    import threading as th

    def collate(samples):
        return {"lock": th.Lock(), "n": len(samples)}  # locks cannot be pickled

    with pytest.raises(TypeError, match="while sending"):
        next(iter(DataLoader(Plain(), batch_size=4, num_workers=1, collate_fn=collate)))


def test_persistent_workers_restart_after_a_dead_worker(no_leaks):
    loader = DataLoader(Suicidal(bad=3), batch_size=2, num_workers=2, persistent_workers=True)
    with pytest.raises(RuntimeError, match="SIGKILL"):
        list(loader)
    loader.dataset.bad = -1  # the next epoch gets fresh workers
    assert len(list(loader)) == 20
    del loader


def test_interrupted_shutdown_still_cleans_up(no_leaks):
    it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    victim = it._workers[0]
    real_join, calls = victim.join, []

    def join_interrupted(timeout=None):
        calls.append(timeout)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while shutting down
        return real_join(timeout)

    victim.join = join_interrupted
    with pytest.raises(KeyboardInterrupt):
        it._shutdown_workers()
    del it


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    script = tmp_path / "main.py"
    script.write_text(
        "import sys, time\n"
        "from ember.utils.data import DataLoader, TensorDataset\n"
        "import ember, numpy as np\n"
        "it = iter(DataLoader(TensorDataset(ember.from_numpy(np.arange(100))), batch_size=2, num_workers=2))\n"
        "next(it)\n"
        "print(' '.join(str(p.pid) for p in it._workers), flush=True)\n"
        "time.sleep(60)\n")
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None else "no worker pids"
        proc.kill()
        proc.wait()
        # workers poll for their parent every ~0.1 s; the long deadline only bounds a hang (loaded CI)
        deadline = time.monotonic() + 60
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in pids if _running(p)]
        assert not alive, f"workers {alive} outlived their main process"
    finally:
        proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    # with fork the slots' names are unlinked as soon as the workers hold them: a SIGKILL leaks nothing
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"ember_dl_{proc.pid}_")]


def test_no_shared_memory_names_exist_while_fork_workers_run(no_leaks):
    from ember.utils.data._shm import SLOT_PREFIX, shm_dir
    it = iter(DataLoader(Plain(), batch_size=4, num_workers=2))
    next(it)
    assert not [f for f in os.listdir(shm_dir()) if f.startswith(f"{SLOT_PREFIX}{os.getpid()}_")]
    assert len(list(it)) == 15


def test_worker_exit_descriptions():
    from ember.utils.data._shm import shm_dir
    from ember.utils.data.dataloader import _describe_exit
    assert _describe_exit(None) == "is no longer responding"
    assert _describe_exit(0) == "exited with code 0"
    assert _describe_exit(1) == "exited with code 1"
    assert _describe_exit(-signal.SIGTERM) == f"was killed by signal SIGTERM ({int(signal.SIGTERM)})"
    assert _describe_exit(-signal.SIGKILL) == (
        f"was killed by signal SIGKILL ({int(signal.SIGKILL)}); if nobody killed it, the system probably ran out of "
        f"memory (the OOM killer sends SIGKILL)")
    assert _describe_exit(-signal.SIGBUS) == (
        f"was killed by signal SIGBUS ({int(signal.SIGBUS)}); shared memory ({shm_dir()}) is probably full")
    assert _describe_exit(-200) == "was killed by signal signal 200 (200)"  # no such signal name


def failure_and_cleanup(call):
    """The exception ``call()`` raises, and what its garbage collection reported as unraisable (``__del__``)."""
    unraisable, old_hook = [], sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(f"{type(u.exc_value).__name__}: {u.exc_value}")
    try:
        try:
            call()
        except Exception as e:
            error = e
        else:
            error = None
        if error is not None:
            error.__traceback__ = None  # its frames hold the half-made iterator
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    return error, unraisable


def _collate_in_test(samples):
    return samples


def test_unpicklable_collate_fn_or_worker_init_fn_with_spawn_names_it(no_leaks):
    from multiprocessing.reduction import ForkingPickler
    fn = lambda x: x  # noqa: E731 (lambdas cannot be pickled)
    try:
        ForkingPickler.dumps(fn)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
    for kwargs, what in [(dict(collate_fn=fn), "collate_fn"), (dict(worker_init_fn=fn), "worker_init_fn"),
                         (dict(collate_fn=_collate_in_test, worker_init_fn=fn), "worker_init_fn")]:
        loader = DataLoader(Plain(), batch_size=2, num_workers=1, multiprocessing_context="spawn", **kwargs)
        error, unraisable = failure_and_cleanup(lambda: iter(loader))
        assert type(error) is TypeError and (
            f"DataLoader: the {what} (function) cannot be sent to worker processes started with 'spawn', "
            f"which must pickle it: {why}. Lambdas") in str(error)
        assert error.__cause__ is not None
        assert unraisable == []  # the half-made iterator is collected quietly: nothing to shut down


class FailingBatchSampler(Sampler):
    def __iter__(self):
        raise RuntimeError("the batch sampler failed")

    def __len__(self):
        return 1


def test_sampler_failing_before_the_workers_start_is_raised_and_cleaned_up_quietly(no_leaks):
    error, unraisable = failure_and_cleanup(
        lambda: iter(DataLoader(Plain(), batch_sampler=FailingBatchSampler(), num_workers=2)))
    assert type(error) is RuntimeError and str(error) == "the batch sampler failed"
    assert unraisable == []


def test_workers_are_named_daemons_and_the_sigint_mask_is_restored(no_leaks):
    mask_before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    it = iter(DataLoader(Plain(), batch_size=4, num_workers=2))
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask_before  # SIGINT was blocked only around the forks
    assert [p.name for p in it._workers] == ["ember-dataloader-worker-0", "ember-dataloader-worker-1"]
    assert all(p.daemon for p in it._workers)  # as in torch: never left running when the interpreter exits
    assert len(list(it)) == 16
    del it


class Never(Dataset):
    """No sample ever comes (until the worker is shut down)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(3600)


def test_timeout_message_exactly(no_leaks):
    it = iter(DataLoader(Never(), batch_size=2, num_workers=1, timeout=0.25))
    with pytest.raises(RuntimeError) as info:
        next(it)
    assert str(info.value) == "DataLoader timed out after 0.25 seconds waiting for batch 0 from the workers " \
                              "(timeout=0.25)"
    assert it._shutdown and not any(p.is_alive() for p in multiprocessing_children())
    del info, it


def test_dead_worker_message_exactly(no_leaks):
    it = iter(DataLoader(Suicidal(bad=-1), batch_size=2, num_workers=2, prefetch_factor=1))
    next(it)
    pid = it._workers[1].pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(RuntimeError) as info:
        for _ in it:
            pass
    assert str(info.value) == (f"DataLoader worker 1 (pid {pid}) exited unexpectedly: it was killed by signal "
                               f"SIGKILL ({int(signal.SIGKILL)}); if nobody killed it, the system probably ran out of "
                               f"memory (the OOM killer sends SIGKILL)")
    assert it._shutdown
    with pytest.raises(StopIteration):  # as after any error: the iterator is finished
        next(it)
    del info, it


def test_dead_worker_seen_through_its_closed_pipe(no_leaks):
    # the worker's end of the result pipe is closed and its sentinel is ready before we wait: the results
    # are read first, so the death is noticed by the pipe's EOF (deterministic: poll, no sleep)
    it = iter(DataLoader(Stuck(), batch_size=2, num_workers=1, prefetch_factor=1))
    assert next(it).tolist() == [0, 1]  # the worker is now stuck in batch 1
    worker, conn = it._workers[0], it._result_conns[0]
    pid = worker.pid
    os.kill(pid, signal.SIGKILL)
    import multiprocessing.connection
    assert multiprocessing.connection.wait([worker.sentinel], timeout=60) and conn.poll(60)
    with pytest.raises(RuntimeError) as info:
        next(it)
    assert str(info.value).startswith(f"DataLoader worker 0 (pid {pid}) exited unexpectedly: it was killed by "
                                      f"signal SIGKILL")
    del info, it


def test_a_failed_batch_gives_its_slot_back(no_leaks):
    it = iter(DataLoader(Failing(bad=0, n=8), batch_size=2, num_workers=1, prefetch_factor=1))
    with pytest.raises(ValueError):
        next(it)
    assert next(it)[:, 0].tolist() == [2, 3]
    assert it._slots.created == ["w0s0"]  # the failed batch's slot was reused, not replaced by a new one
    del it
