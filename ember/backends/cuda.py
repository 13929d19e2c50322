"""The CUDA backend: CuPy arrays on an NVIDIA GPU, imported on first use.

For testing the CUDA code paths on a machine without a GPU, `EMBER_FAKE_CUDA=1` makes the
"cuda" device store `fake_cuda.FakeArray`s: NumPy arrays that refuse to mix with host memory as CuPy
arrays do (see fake_cuda.py), so every device check, copy and dispatch runs, the math is NumPy's.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from . import fake_cuda as _fake   # NumPy only; tests may switch FAKE on after import
from . import copy_via_host, get, run_with

FAKE = os.environ.get("EMBER_FAKE_CUDA") == "1"


class _MatmulFlags:
    """`torch.backends.cuda.matmul`'s flags (torch's defaults), kept so that scripts setting them
    (nanoGPT: `torch.backends.cuda.matmul.allow_tf32 = True`) port. Nothing reads them: CuPy's cuBLAS
    runs float32 GEMMs in float32 unless CuPy was started with CUPY_TF32=1."""
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()

xp: Any   # the cupy module (no stubs), the fake one, or None when CuPy is missing
if FAKE:
    xp = _fake.xp
else:
    try:
        import cupy as xp  # type: ignore[no-redef]  # noqa: F401  (declared Any above)
    except ImportError:  # is_available() reports it; using the device raises with the reason
        xp = None


def is_available() -> bool:
    if FAKE:
        return True
    if xp is None:
        return False
    try:
        return xp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _require():
    if not is_available():
        raise RuntimeError("cuda: no CUDA device is usable (CuPy is not installed or no GPU was found); "
                           "install cupy-cuda12x on a machine with an NVIDIA GPU, or use device='cpu'")


def device_count() -> int:
    if FAKE:
        return 1
    return xp.cuda.runtime.getDeviceCount() if is_available() else 0


# Primitive class -> fn(node, *arrays): a CUDA kernel (a fused cupy.ElementwiseKernel, a cuBLAS call)
# that replaces the primitive's `xp` forward on this device. Empty: the forwards run as CuPy code.
kernels: dict = {}


def _index(device) -> int:
    return device.index if device is not None and device.index is not None else 0


def allocate(shape, dtype, device=None):
    _require()
    if FAKE:
        return xp.empty(shape, dtype)
    with xp.cuda.Device(_index(device)):
        return xp.empty(shape, dtype)


def from_host(host_array, device=None):
    _require()
    if FAKE:
        return xp.asarray(host_array)
    with xp.cuda.Device(_index(device)):
        return xp.asarray(host_array)


to_device = from_host


def to_host(array):
    return xp.asnumpy(array)


def copy(array, device):
    """`array` on `device`: a device-to-device copy (peer access where the GPUs have it) between CUDA
    devices, through the host to any other device type."""
    if device.type == "cuda":
        _require()
        if FAKE:
            return xp.array(array, copy=True)
        with xp.cuda.Device(_index(device)):
            return xp.array(array, copy=True)
    return copy_via_host(get("cuda"), array, device)


def synchronize(device=None) -> None:
    if not FAKE and is_available():
        xp.cuda.Device(_index(device)).synchronize()


def stream(device=None):
    """A new non-blocking CUDA stream on `device` as a context manager: kernels launched inside it are
    queued there. The fake device has no queue (a null context)."""
    if FAKE:
        return contextlib.nullcontext()
    _require()
    with xp.cuda.Device(_index(device)):
        return xp.cuda.Stream(non_blocking=True)


def run(node, arrays):
    return run_with(kernels, node, arrays)


def pin_memory(host_array):
    if FAKE:
        return host_array
    mem = xp.cuda.alloc_pinned_memory(host_array.nbytes)
    out = np.frombuffer(mem, host_array.dtype, host_array.size).reshape(host_array.shape)
    out[...] = host_array
    return out


def is_pinned(host_array) -> bool:
    if FAKE:
        return False
    try:
        xp.cuda.runtime.pointerGetAttributes(host_array.ctypes.data)
        return True
    except Exception:
        return False


def erf(x):
    if FAKE:
        return _fake.erf(x)
    from cupyx.scipy.special import erf as _erf
    return _erf(x)


def erfc(x):
    if FAKE:
        return _fake.erfc(x)
    from cupyx.scipy.special import erfc as _erfc
    return _erfc(x)


def erfinv(x):
    if FAKE:
        return _fake.erfinv(x)
    from cupyx.scipy.special import erfinv as _erfinv
    return _erfinv(x)


def _special(name):
    import cupyx.scipy.special
    return getattr(cupyx.scipy.special, name)


def lgamma(x):
    return _fake.lgamma(x) if FAKE else _special("gammaln")(x)


def digamma(x):
    return _fake.digamma(x) if FAKE else _special("digamma")(x)


def polygamma(n, x):
    return _fake.polygamma(n, x) if FAKE else _special("polygamma")(n, x)


def i0(x):
    return _fake.i0(x) if FAKE else _special("i0")(x)


def i0e(x):
    return _fake.i0e(x) if FAKE else _special("i0e")(x)


def i1(x):
    return _fake.i1(x) if FAKE else _special("i1")(x)


def i1e(x):
    return _fake.i1e(x) if FAKE else _special("i1e")(x)


def erfcx(x):
    return _fake.erfcx(x) if FAKE else _special("erfcx")(x)


def ndtri(x):
    return _fake.ndtri(x) if FAKE else _special("ndtri")(x)


def gammainc(a, x):
    return _fake.gammainc(a, x) if FAKE else _special("gammainc")(a, x)


def gammaincc(a, x):
    return _fake.gammaincc(a, x) if FAKE else _special("gammaincc")(a, x)


def scatter_add(out, key, values) -> None:
    """out[key] += values in place, repeated indices accumulating (NumPy's `add.at`)."""
    if FAKE:
        return _fake.scatter_add(out, key, values)
    import cupyx
    cupyx.scatter_add(out, key, values)


def scatter_reduce(out, key, values, ufunc: str) -> None:
    """out[key] = ufunc(out[key], values) in place for 'maximum' / 'minimum' (cupyx's scatter kernels);
    'multiply', which CuPy has no scatter kernel for, on the host."""
    if FAKE:
        return _fake.scatter_reduce(out, key, values, ufunc)
    import cupy
    import cupyx
    if ufunc != "multiply":
        return getattr(cupyx, "scatter_max" if ufunc == "maximum" else "scatter_min")(out, key, values)
    host = cupy.asnumpy(out)
    np.multiply.at(host, tuple(cupy.asnumpy(k) if isinstance(k, cupy.ndarray) else k for k in key),
                   cupy.asnumpy(values))
    out[...] = cupy.asarray(host)
