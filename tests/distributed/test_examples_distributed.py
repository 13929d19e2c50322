"""The distributed examples run (short settings): DDP on 2 processes reaches the 1-process accuracy, and
the parameter-server example runs both modes."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


pytest.importorskip("mnist1d", reason="the examples train on MNIST-1D (pip install mnist1d)")


def _accuracy(out):
    return [float(a) for a in re.findall(r"test accuracy ([0-9.]+)", out)]


def test_ddp_example_two_processes_match_one(mpirun):
    args = ["--epochs", "2", "--train-size", "256"]
    two = mpirun(os.path.join("..", "..", "examples", "ddp_mnist1d.py"), *args, n=2, timeout=400)
    assert two.returncode == 0, two.stdout + two.stderr
    one = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ddp_mnist1d.py"), *args],
                         capture_output=True, text=True, timeout=400, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert one.returncode == 0, one.stdout + one.stderr
    a2, a1 = _accuracy(two.stdout), _accuracy(one.stdout)
    assert len(a2) == len(a1) == 2 and "2 processes" in two.stdout
    # the same global batches in the same order (DistributedSampler interleaves one permutation): the
    # runs differ only by float summation order
    assert abs(a2[-1] - a1[-1]) <= 0.01, (a1, a2)
    assert a2[-1] > 0.2


@pytest.mark.slow     # ~20 s on the loaded CI machine; the parameter server itself: test_parameter_server.py
def test_param_server_example(mpirun):
    r = mpirun(os.path.join("..", "..", "examples", "param_server_mnist1d.py"), "--steps", "30", "--eval-every", "10",
               n=3, timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^sync\s+30\s", r.stdout, re.M) and re.search(r"^async\s+\d+\s", r.stdout, re.M), r.stdout
    assert "test loss at wall-clock time" in r.stdout
