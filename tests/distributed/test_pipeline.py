"""Pipeline (ember/distributed/pipeline.py): gradients equal the unsplit model's, 2 and 3 stages."""
import pytest


@pytest.mark.parametrize("n", [2, 3])
def test_pipeline_gradients_equal_unsplit(mpirun, n):
    r = mpirun("worker_pipeline.py", n=n)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in out and out.count("OK pipeline") == 3 * n, out


def test_split_balance():
    from ember.distributed.pipeline import split_balance
    assert split_balance(5, 2) == [3, 2] and split_balance(6, 3) == [2, 2, 2]
    with pytest.raises(ValueError, match="3 layers cannot fill 4 stages"):
        split_balance(3, 4)
