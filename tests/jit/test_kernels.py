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


EXACT_CHAINS = {
    "maximum": lambda x, y: ember.maximum(x, y) * 1.0,
    "relu": lambda x, y: (x * 1.0).relu(),
    "div_neg": lambda x, y: -(x / y),
    "sub_add_mul": lambda x, y: (x - y) * y + x,
    "compare_where": lambda x, y: ember.where(x >= y, x, y) * 1.0,
    "masked": lambda x, y: ember.where(x > 0.0, y, 0.0) * 1.0,
}


@pytest.mark.parametrize("chain", list(EXACT_CHAINS))
def test_exact_chains_run_in_numba_by_default_with_numpys_bits(chain, monkeypatch, tmp_path):
    """Add, Sub, Mul, Div, Neg, Relu, Maximum, Compare and Where are one IEEE operation per element in
    numba as in NumPy's loops: the default kernel for their chains, bit for bit over every pair of special
    values (inf and -0.0 too; a NaN stays a NaN, its sign bit may differ)."""
    pytest.importorskip("numba", reason="numba is the optional extra ember[jit]")
    monkeypatch.delenv("EMBER_JIT_KERNELS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38], np.float32)
    rng = np.random.default_rng(0)

    def data():
        a = rng.standard_normal((64, 100), dtype=np.float32)
        a.reshape(-1)[:64] = np.tile(special, 8)
        b = rng.standard_normal((64, 100), dtype=np.float32)
        b.reshape(-1)[:64] = np.repeat(special, 8)
        return ember.from_numpy(a), ember.from_numpy(b)

    fn = EXACT_CHAINS[chain]
    f = ember.compile(fn, passes=["fuse"])
    for _ in range(3):
        x, y = data()
        with np.errstate(all="ignore"):
            want = fn(x, y).numpy()
        got = f(x, y).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))     # a NaN's sign bit may differ
        ok = ~np.isnan(want)
        bits, want_bits = got.view(np.int32)[ok], want.view(np.int32)[ok]
        assert np.array_equal(bits, want_bits), np.argwhere(got.view(np.int32) != want.view(np.int32))[:5]
    assert f.graph.counts() == {"Fused": 1}, str(f.graph)
    assert len(list((tmp_path / "ember" / "jit").glob("chain_*.py"))) == 1


def test_small_chains_stay_in_numpy(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBER_JIT_KERNELS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from ember.jit.kernels import NUMBA_MIN
    f = ember.compile(lambda x: (x * 2 + 1).relu(), passes=["fuse"])
    x = ember.randn(NUMBA_MIN - 1)
    f(x)
    np.testing.assert_array_equal(f(x).numpy(), (x * 2 + 1).relu().numpy())
    assert not (tmp_path / "ember" / "jit").exists()
