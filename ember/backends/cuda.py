"""The CUDA backend: CuPy arrays on an NVIDIA GPU, imported on first use.

For testing the CUDA code paths on a machine without a GPU, `EMBER_FAKE_CUDA=1` makes the
"cuda" device store `fake_cuda.FakeArray`s: NumPy arrays that refuse to mix with host memory as CuPy
arrays do (see fake_cuda.py), so every device check, copy and dispatch runs, the math is NumPy's.
"""
from __future__ import annotations

import os

import numpy as np

from . import fake_cuda as _fake   # NumPy only; tests may switch FAKE on after import

FAKE = os.environ.get("EMBER_FAKE_CUDA") == "1"

if FAKE:
    xp = _fake.xp
else:
    try:
        import cupy as xp  # noqa: F401
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


def to_device(host_array, device=None):
    _require()
    if FAKE:
        return xp.asarray(host_array)
    with xp.cuda.Device(device.index if device is not None else 0):
        return xp.asarray(host_array)


def to_host(array):
    return xp.asnumpy(array)


def synchronize(device=None) -> None:
    if not FAKE and is_available():
        xp.cuda.Device(device.index if device is not None else 0).synchronize()


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


def scatter_add(out, key, values) -> None:
    """out[key] += values in place, repeated indices accumulating (NumPy's `add.at`)."""
    if FAKE:
        return _fake.scatter_add(out, key, values)
    import cupyx
    cupyx.scatter_add(out, key, values)
