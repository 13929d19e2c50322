"""backends/blas.py: out = a @ b + beta * out through NumPy's own OpenBLAS, every layout it takes checked
against NumPy, and every layout it must refuse left untouched (None)."""
import numpy as np
import pytest

import ember
from ember.backends import blas, cpu

pytestmark = pytest.mark.skipif(not blas.available(), reason="NumPy links no scipy-openblas here")


def _layouts(rng, m, n, dtype):
    """The same (m, n) values in every layout BLAS can read in place."""
    a = rng.standard_normal((m, n)).astype(dtype)
    wide = np.zeros((m, n + 3), dtype)
    wide[:, 1:n + 1] = a
    tall = np.zeros((n + 2, m), dtype)
    tall[:n] = a.T
    return {"C": a, "F": np.asfortranarray(a), "rows of a wider array": wide[:, 1:n + 1],
            "transposed view of a taller array": tall[:n].T}


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_gemm_matches_numpy_in_every_layout(dtype, tol, beta):
    rng = np.random.default_rng(0)
    for la, a in _layouts(rng, 7, 5, dtype).items():
        for lb, b in _layouts(rng, 5, 6, dtype).items():
            c0 = rng.standard_normal((7, 6)).astype(dtype)
            out = c0.copy()
            assert blas.gemm(a, b, out, beta=beta) is out, (la, lb)
            np.testing.assert_allclose(out, a @ b + beta * c0, rtol=tol, atol=tol, err_msg=f"{la} @ {lb}")


def test_gemm_writes_into_rows_of_a_wider_output():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    big = np.full((4, 5), 7, np.float32)
    assert blas.gemm(a, b, big[:, 1:3], beta=1.0) is not None
    np.testing.assert_allclose(big[:, 1:3], a @ b + 7, rtol=1e-5)
    assert (big[:, [0, 3, 4]] == 7).all()       # the columns around it untouched


@pytest.mark.parametrize("case", ["int dtype", "mixed dtypes", "3-D", "shapes", "overlap", "read-only",
                                  "strided both ways", "empty", "not an ndarray", "column-strided out"])
def test_gemm_refuses_what_blas_cannot_take_and_writes_nothing(case):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    out = np.zeros((4, 5), np.float32)
    if case == "int dtype":
        a, b, out = a.astype(np.int32), b.astype(np.int32), out.astype(np.int32)
    elif case == "mixed dtypes":
        b = b.astype(np.float64)
    elif case == "3-D":
        a = a[None]
    elif case == "shapes":
        b = b[:2]
    elif case == "overlap":
        buf = np.zeros((4, 8), np.float32)
        a, out = buf[:, :3], buf[:, 3:8]
    elif case == "read-only":
        out.flags.writeable = False
    elif case == "strided both ways":
        a = np.zeros((8, 6), np.float32)[::2, ::2]
    elif case == "empty":
        a, out = a[:0], out[:0]
    elif case == "not an ndarray":
        a = a.tolist()
    elif case == "column-strided out":
        out = np.zeros((4, 10), np.float32)[:, ::2]
    before = np.array(out, copy=True)
    assert blas.gemm(a, b, out, beta=1.0) is None
    assert np.array_equal(out, before)


def test_linear_adds_the_bias_inside_the_gemm():
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (3, 4), (3,)))
    y = cpu.linear(x, w, b)
    assert y is not None and y.shape == (6, 3) and y.flags.c_contiguous
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert cpu.linear(x.astype(np.float64), w, b) is None           # mixed dtypes: NumPy's path
    assert cpu.linear(x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)) is None


def test_without_blas_the_numpy_path_gives_the_same_linear(monkeypatch):
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (3, 4), (3,)))
    with_blas = ember.nn.functional.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b)).numpy()
    monkeypatch.setattr(blas, "_lib", {})
    assert cpu.linear(x, w, b) is None
    without = ember.nn.functional.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b)).numpy()
    np.testing.assert_allclose(with_blas, without, rtol=1e-5, atol=1e-6)
