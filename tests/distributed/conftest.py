"""Run a worker script as an MPI job from pytest: `mpirun(script, n=2)` -> CompletedProcess.

Each job is `mpiexec -n N python tests/distributed/<script>` with the worktree on PYTHONPATH. Jobs are kept
short; the timeouts are generous (the CI machine has 2 cores shared with other jobs)."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def mpiexec_path():
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return exe if os.path.exists(exe) else shutil.which("mpiexec")


@pytest.fixture
def mpirun():
    pytest.importorskip("mpi4py", reason="ember.distributed needs mpi4py: pip install ember[mpi]")
    exe = mpiexec_path()
    if exe is None:
        pytest.skip("no mpiexec (pip install ember[mpi] brings the mpich wheel's)")

    def run(script, *args, n=2, timeout=240, env=None):
        e = dict(os.environ)
        e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
        e.setdefault("OMP_NUM_THREADS", "1")
        e.update(env or {})
        cmd = [exe, "-n", str(n), sys.executable, os.path.join(HERE, script), *map(str, args)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=ROOT)
    return run
