"""The one BLAS call NumPy does not expose: `gemm(a, b, out, beta)`, out = a @ b + beta * out, written
into `out` by the OpenBLAS that NumPy itself links (its wheels bundle scipy-openblas).

NumPy's `matmul(a, b, out=c)` always overwrites c. A Linear layer then needs a second pass over its
output to add the bias, and a residual block a third to add the skip; with beta = 1 BLAS adds the product
to what `out` already holds, in the pass it makes anyway (torch's `addmm` does the same). On this
machine that pass is 5-10% of a W5 Linear (bench/RESULTS.md, session 12).

    >>> import numpy as np
    >>> from ember.backends import blas
    >>> a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    >>> out = np.full((2, 4), 10, np.float32)
    >>> _ = blas.gemm(a, b, out, beta=1.0) if blas.available() else np.add(out, a @ b, out=out)
    >>> out[0, 0]
    np.float32(13.0)

`gemm` returns None when it could not run (no bundled OpenBLAS found, another dtype, a layout BLAS cannot
take): the caller then computes with NumPy. Every argument is checked before the call (ctypes cannot
check a pointer): 2-D float32 or float64 arrays of one dtype, each with unit stride along one axis and a
leading dimension that fits, `out` row-major, writeable and sharing no memory with `a` or `b`.
Nothing is loaded until the first call (`import ember` stays as it was).
"""
from __future__ import annotations

import glob
import os

import numpy as np

__all__ = ["gemm", "available"]

_ROW, _NOTRANS, _TRANS = 101, 111, 112      # CBLAS_ORDER / CBLAS_TRANSPOSE values
_lib = None        # {dtype: ctypes function} once loaded; {} where none was found


def _load():
    """NumPy's bundled OpenBLAS (ILP64, `scipy_` symbols: scipy-openblas64), or {}."""
    global _lib
    if _lib is not None:
        return _lib
    _lib = {}
    if os.environ.get("EMBER_BLAS", "1") == "0":
        return _lib
    import ctypes
    root = os.path.dirname(os.path.dirname(np.__file__))
    paths = glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so*")) + \
        glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "libscipy_openblas64_*.dylib"))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        i, e, p = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
        for dtype, name, real in ((np.float32, "scipy_cblas_sgemm64_", ctypes.c_float),
                                  (np.float64, "scipy_cblas_dgemm64_", ctypes.c_double)):
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            fn.argtypes = [e, e, e, i, i, i, real, p, i, p, i, real, p, i]
            fn.restype = None
            _lib[np.dtype(dtype)] = fn
        if _lib:
            break
    return _lib


def available() -> bool:
    return bool(_load())


def _operand(a):
    """(transpose flag, leading dimension) of a 2-D operand BLAS can read in place, or None."""
    s = a.itemsize
    r, c = a.strides
    if a.shape[1] == 1 or c == s:                       # rows contiguous: row-major, lda = row stride
        ld = r // s if a.shape[0] > 1 else a.shape[1]
        if r % s == 0 and ld >= max(1, a.shape[1]):
            return _NOTRANS, ld
    if a.shape[0] == 1 or r == s:                       # columns contiguous: the transpose of row-major
        ld = c // s if a.shape[1] > 1 else a.shape[0]
        if c % s == 0 and ld >= max(1, a.shape[0]):
            return _TRANS, ld
    return None


def gemm(a, b, out, beta: float = 0.0):
    """out = a @ b + beta * out in place, for 2-D a (m, k), b (k, n), out (m, n) of one float dtype.
    Returns `out`, or None (nothing written) when BLAS cannot take these arrays."""
    fn = _load().get(out.dtype)
    if fn is None or a.__class__ is not np.ndarray or b.__class__ is not np.ndarray or \
            out.__class__ is not np.ndarray or a.dtype != out.dtype or b.dtype != out.dtype or \
            a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or out.shape != (m, n) or m == 0 or n == 0 or k == 0 or not out.flags.writeable:
        return None
    oa, ob = _operand(a), _operand(b)
    s = out.itemsize
    if oa is None or ob is None or out.strides[1] != s and n > 1 or out.strides[0] % s or \
            (m > 1 and out.strides[0] // s < n) or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    ldc = out.strides[0] // s if m > 1 else n
    fn(_ROW, oa[0], ob[0], m, n, k, 1.0, a.ctypes.data, oa[1], b.ctypes.data, ob[1], beta, out.ctypes.data, ldc)
    return out
