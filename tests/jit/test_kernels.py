"""Fused kernels: the NumPy one-buffer kernel is the default (bit for bit eager); the numba kernel is
opt-in (EMBER_JIT_KERNELS=numba, the optional extra ember[jit]) and matches within float32 rounding;
without numba the compiled path still works."""
import sys

import numpy as np
import pytest

import ember


def _fn(x, y):
    return ((x * y + 1.0).relu() - y).exp()


def test_numba_kernel_matches_eager(monkeypatch, tmp_path):
    pytest.importorskip("numba", reason="numba is the optional extra ember[jit]")
    monkeypatch.setenv("EMBER_JIT_KERNELS", "numba")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    x, y = ember.randn(64, 100), ember.randn(64, 100)
    f = ember.compile(_fn, passes=["fuse"])
    f(x, y)
    out = f(x, y)
    assert f.graph.counts() == {"Fused": 1}
    np.testing.assert_allclose(out.numpy(), _fn(x, y).numpy(), rtol=1e-6, atol=1e-6)
    assert list((tmp_path / "ember" / "jit").glob("chain_*.py"))     # the kernel source is cached on disk


def test_without_numba_the_compiled_path_falls_back_to_numpy(monkeypatch):
    monkeypatch.setenv("EMBER_JIT_KERNELS", "numba")
    monkeypatch.setitem(sys.modules, "numba", None)      # import numba raises ImportError
    x, y = ember.randn(8, 3), ember.randn(8, 3)
    f = ember.compile(_fn, passes=["fuse"])
    f(x, y)
    np.testing.assert_array_equal(f(x, y).numpy(), _fn(x, y).numpy())


def test_import_ember_does_not_import_numba():
    import subprocess
    r = subprocess.run([sys.executable, "-c", "import ember, sys; ember.compile(lambda x: x + 1)(ember.ones(1)); "
                        "print('numba' in sys.modules)"], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr
