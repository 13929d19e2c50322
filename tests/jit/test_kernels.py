"""Fused kernels: the NumPy one-buffer kernel is the default (bit for bit eager); the numba kernel is
opt-in (EMBER_JIT_KERNELS=numba, the optional extra ember[jit]) and matches within float32 rounding;
without numba the compiled path still works."""
import sys

import numpy as np
import pytest

import ember
from ember.jit import kernels


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
    "float64": lambda x, y: (ember.maximum(x, y) / y - x).relu(),          # called with float64 x and y
    "isclose_where": lambda x, y: ember.where(ember.isclose(x, y), x, y) * 1.0,   # isclose: NumPy's
    "row_broadcast": lambda x, y: (x + y[0]) * y[:, :1],          # operands of (100,) and (64, 1): NumPy's
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
        dt = np.float64 if chain == "float64" else np.float32
        return ember.from_numpy(a.astype(dt)), ember.from_numpy(b.astype(dt))

    fn = EXACT_CHAINS[chain]
    f = ember.compile(fn, passes=["fuse"])
    runs = kernels.RUNS["numba"]
    for _ in range(3):
        x, y = data()
        with np.errstate(all="ignore"):
            want = fn(x, y).numpy()
        got = f(x, y).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))     # a NaN's sign bit may differ
        ok = ~np.isnan(want)
        it = np.int64 if got.dtype == np.float64 else np.int32
        assert np.array_equal(got.view(it)[ok], want.view(it)[ok]), np.argwhere(got.view(it) != want.view(it))[:5]
    fused = [n for n in f.graph.nodes if n.name == "Fused"]
    assert len(fused) == 1, str(f.graph)
    in_numba = chain not in ("isclose_where", "row_broadcast")
    assert kernels.RUNS["numba"] - runs == (2 if in_numba else 0)     # the calls after the trace
    assert len(list((tmp_path / "ember" / "jit").glob("chain_*.py"))) == in_numba


CHAINS = {"exact": lambda x: (x * 2 + 1).relu(), "exp": lambda x: (x * 2 + 1).exp(), "bool": lambda x: x * 2 > 1}


@pytest.mark.parametrize("mode, chain, size, in_numba", [
    ("auto", "exact", kernels.NUMBA_MIN - 1, False), ("auto", "exact", kernels.NUMBA_MIN, True),
    ("auto", "exp", kernels.NUMBA_MIN, False),                  # numba's exp is not NumPy's to the bit
    ("no such mode", "exp", kernels.NUMBA_MIN, False),          # as auto
    ("numba", "exp", kernels.NUMBA_MIN, True),
    ("auto", "bool", kernels.NUMBA_MIN, False),                 # a bool result: NumPy's
    ("numpy", "exact", 10 * kernels.NUMBA_MIN, False)])
def test_which_chains_run_in_numba(mode, chain, size, in_numba, monkeypatch, tmp_path):
    if in_numba:
        pytest.importorskip("numba", reason="numba is the optional extra ember[jit]")
    monkeypatch.setenv("EMBER_JIT_KERNELS", mode)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fn = CHAINS[chain]
    f = ember.compile(fn, passes=["fuse"])
    x = ember.randn(size)
    runs = kernels.RUNS["numba"]
    f(x)
    if chain == "exp":
        np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-6)
    else:
        np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
    assert kernels.RUNS["numba"] - runs == in_numba      # the call after the trace
    assert (tmp_path / "ember" / "jit").exists() == in_numba


def test_an_unwritable_kernel_cache_falls_back_to_numpy(monkeypatch, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))     # under a file: makedirs fails
    monkeypatch.delenv("EMBER_JIT_KERNELS", raising=False)
    fn = CHAINS["exact"]
    f = ember.compile(fn, passes=["fuse"])
    x = ember.randn(4 * kernels.NUMBA_MIN)
    runs = kernels.RUNS["numba"]
    f(x)
    np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
    assert kernels.RUNS["numba"] == runs
