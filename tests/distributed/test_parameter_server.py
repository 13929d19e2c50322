"""Parameter-server training (ember/distributed/parameter_server.py) as a 3-process MPI job."""


def test_parameter_server_converges_and_bounds_staleness(mpirun):
    r = mpirun("worker_ps.py", n=3)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in out, out
    for line in ("OK ps async max_staleness=None", "OK ps async max_staleness=1", "OK ps sync"):
        assert line in out, out
