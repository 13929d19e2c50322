"""`ember run -n N script.py [args]` (ember/distributed/launch.py)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))



def ember_cli(*argv, timeout=240):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "ember", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def test_run_starts_n_ranks_with_arguments(mpirun):
    r = ember_cli("run", "-n", "2", os.path.join(HERE, "worker_hello.py"), "--lr", "0.1")
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in (0, 1):
        assert f"HELLO rank {rank} of 2 args ['--lr', '0.1']" in r.stdout, r.stdout + r.stderr


def test_run_passes_the_exit_status(mpirun):
    r = ember_cli("run", "-n", "2", os.path.join(HERE, "worker_hello.py"), "--fail")
    assert r.returncode != 0


def test_dry_run_command():
    pytest.importorskip("mpi4py")
    r = ember_cli("run", "-n", "3", "--dry-run", "train.py", "--epochs", "2")
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.split()
    assert cmd[1:3] == ["-n", "3"] and cmd[-3:] == ["train.py", "--epochs", "2"] and sys.executable in cmd


def test_run_in_help():
    r = ember_cli("--help")
    assert "run" in r.stdout
