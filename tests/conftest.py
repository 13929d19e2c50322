"""Shared pytest setup: puts tests/ on sys.path so any test can `from helpers import check_op`, and the
`--api-coverage` option (tests/api_coverage.py): fail the run if a public name of Ember never ran."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_recorder = None


def pytest_addoption(parser):
    parser.addoption("--check-op-device", default="cpu",
                     help="the device Ember's side of every check_op (tests/helpers.py) runs on: the "
                          "Makefile's fake-CUDA pass uses cuda with EMBER_FAKE_CUDA=1; check_op tests skip "
                          "when that device is not available")
    parser.addoption("--api-coverage", action="store_true",
                     help="fail unless every public function, class and Tensor method of Ember ran "
                          "(see tests/api_coverage.py; `make coverage` uses it)")


def pytest_configure(config):
    # torch is only the oracle, on tiny tensors: its thread pool costs time and gains nothing. On a
    # loaded 2-core machine a (8, 8) linear + layer_norm took ~30 ms with 2 threads, ~0.01 ms with 1.
    import torch
    torch.set_num_threads(1)
    device = config.getoption("check_op_device")
    if device != "cpu":
        import helpers
        helpers.DEVICE = device
    global _recorder
    if config.getoption("api_coverage"):
        from api_coverage import Recorder
        _recorder = Recorder()


def pytest_sessionfinish(session, exitstatus):
    if _recorder is None:
        return
    missing = _recorder.unused()
    _recorder.stop()
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if missing:
        tr.write_line(f"\napi coverage: {len(missing)} public names never ran in this session:", red=True)
        for name in missing:
            tr.write_line(f"    {name}")
        session.exitstatus = 1
    else:
        tr.write_line("\napi coverage: every public name ran", green=True)


@pytest.fixture
def fake_cuda(monkeypatch):
    """The strict fake 'cuda' device (ember/backends/fake_cuda.py) in this process, as EMBER_FAKE_CUDA=1
    gives at import: for tests of device code paths that must run in the default suite too."""
    from ember.backends import cuda, fake_cuda
    monkeypatch.setattr(cuda, "FAKE", True)
    monkeypatch.setattr(cuda, "xp", fake_cuda.xp)
