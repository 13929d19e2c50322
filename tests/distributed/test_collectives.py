"""ember.distributed collectives, timeouts, failure handling and the debug check, as 2-process MPI jobs
(the worker scripts beside this file; `mpirun` is in conftest.py)."""
import os
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_collectives_match_numpy(mpirun):
    r = mpirun("worker_collectives.py")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "[rank 0] CASES" in out and "[rank 1] CASES" in out, out
    assert "FAIL" not in out, out


def test_world_of_one_without_launcher():
    """A plain `python script.py` is a world of 1 (MPI singleton)."""
    pytest.importorskip("mpi4py")
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(HERE, "worker_collectives.py")], capture_output=True,
                       text=True, timeout=240, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0 and "[rank 0] CASES" in r.stdout and "FAIL" not in r.stdout, r.stdout + r.stderr


def test_timeout_fires_and_job_ends(mpirun, tmp_path):
    report = tmp_path / "rank0.txt"
    r = mpirun("worker_failures.py", "timeout", timeout=180, env={"EMBER_TEST_OUT": str(report)})
    out = r.stdout + r.stderr + (report.read_text() if report.exists() else "")
    assert "TIMEOUT_OK" in out and "all_reduce: timed out after 2 s" in out, out
    assert "BROKEN_OK" in out, out        # later calls fail at once instead of hanging
    assert r.returncode != 0, out         # rank 0 aborted the job at exit (rank 1 was sleeping 600 s)


def _leftovers(token):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if token in f.read():
                        found.append(pid)
            except OSError:
                pass
    return found


def test_rank_failure_aborts_all_ranks(mpirun):
    r = mpirun("worker_failures.py", "raise", timeout=180)
    end = time.time()
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "[rank 1] uncaught exception, aborting all ranks" in out, out
    assert "ValueError: boom from rank 1" in out, out
    raised = float(out.split("RAISING_AT ")[1].split()[0])
    assert end - raised < 10, f"abort took {end - raised:.1f} s\n{out}"    # the bound
    for _ in range(50):     # a killed rank may take a moment to be reaped
        if not _leftovers(b"worker_failures.py\0raise"):
            break
        time.sleep(0.2)
    assert not _leftovers(b"worker_failures.py\0raise"), "orphan rank left running"


def test_debug_mode_names_the_differing_rank(mpirun):
    r = mpirun("worker_failures.py", "debug", env={"EMBER_DISTRIBUTED_DEBUG": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in (0, 1):
        assert f"DEBUG_MSG rank {rank}: EMBER_DISTRIBUTED_DEBUG: collective mismatch" in out, out
    assert "rank 1 called all_reduce(shape=(4,)" in out or "rank 0 called all_reduce(shape=(3,)" in out, out


def test_not_initialized_errors():
    import ember
    import ember.distributed as dist
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="all_reduce: Default process group has not been initialized"):
        dist.all_reduce(ember.ones(2))


def test_import_does_not_load_mpi():
    import subprocess
    import sys
    code = "import ember, ember.nn, ember.distributed, ember.cli, sys; ember.cli.build_parser(); " \
           "print('mpi4py' in sys.modules, 'cupy' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.stdout.split() == ["False", "False"], r.stdout + r.stderr
