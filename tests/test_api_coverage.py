"""Every public name of Ember is used by some test (the static half of tests/api_coverage.py; the run-time
half is `pytest --api-coverage`, run by `make coverage`)."""
import importlib
import os

import pytest

import ember
from api_coverage import MODULES, Recorder, entered_code, names_in_tests, public_api


@pytest.mark.parametrize("modname", MODULES)
def test_public_modules_declare_all_and_every_name_exists(modname):
    mod = importlib.import_module(modname)
    assert isinstance(mod.__all__, (list, tuple)) and len(set(mod.__all__)) == len(mod.__all__)
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{modname}.__all__ names what the module does not define: {missing}"


def test_public_api_has_functions_classes_and_tensor_methods():
    api = public_api()
    assert api["ember.nn.Conv3d"] is ember.nn.Conv3d
    assert api["ember.nn.functional.conv3d"] is ember.nn.functional.conv3d
    assert "ember.Tensor.add_" in api and "ember.Tensor.T" in api and "ember.Tensor.shape" in api
    assert "ember.float32" not in api and "ember.nn.functional" not in api   # no code of their own
    assert not any(q.rsplit(".", 1)[1].startswith("_") and not q.endswith("_calculate_fan_in_and_fan_out")
                   and not q.startswith("ember.Tensor.") for q in api)


def test_every_public_name_appears_in_some_test():
    used = names_in_tests()
    missing = sorted(q for q in public_api() if q.rsplit(".", 1)[1] not in used)
    assert not missing, (f"{len(missing)} public names appear in no test (add a test through "
                         f"helpers.check_op / nn_helpers.check_module): {missing}")


def test_run_time_evidence_counts_only_code_that_ran():
    coverage = pytest.importorskip("coverage")
    if coverage.Coverage.current() is not None:
        pytest.skip("already measured by coverage.py: `--api-coverage` checks the whole run")
    rec = Recorder()   # starts its own measurement and wraps Tensor's methods
    try:
        x = ember.tensor([1.0, -2.0])
        x.abs()
        ember.nn.functional.relu(x)
        entered = entered_code(rec.cov.get_data())
    finally:
        rec.stop()
        rec.restore()
    def key(fn):
        return os.path.realpath(fn.__code__.co_filename), fn.__code__.co_firstlineno
    assert key(ember.nn.functional.relu) in entered
    assert key(ember.nn.functional.triplet_margin_loss) not in entered
    assert "ember.Tensor.abs" in rec.called and "ember.Tensor.fliplr" not in rec.called
    assert not hasattr(ember.Tensor.abs, "__wrapped__") and "__init__" not in vars(ember.nn.BatchNorm1d)
