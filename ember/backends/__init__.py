"""Backend registry: each device type maps to a module that implements a small interface.

A backend module provides:
    xp                        the array module (numpy, cupy) that the primitives are written against
    is_available() -> bool
    to_device(host_array, device) / to_host(array) -> numpy.ndarray
    synchronize(device)
    pin_memory(host_array) / is_pinned(host_array)
    erf(x)                    the one special function NumPy lacks
    scatter_add(out, key, v)  out[key] += v with repeated indices accumulating (NumPy's add.at)

Backends are imported by name on first use, so `import ember` never imports CuPy.
"""
from __future__ import annotations

import importlib

import numpy as np

from .fake_cuda import FakeArray, xp as fake_xp   # NumPy only: no cost, no CuPy

__all__ = ["get", "array_module", "is_available"]

_MODULES = {"cpu": "ember.backends.cpu", "cuda": "ember.backends.cuda", "meta": "ember.backends.meta"}
_loaded: dict = {}


def get(device_type: str):
    """The backend module for a device type, imported on first use."""
    b = _loaded.get(device_type)
    if b is None:
        if device_type not in _MODULES:
            raise ValueError(f"no backend for device type {device_type!r}; known: {sorted(_MODULES)}")
        b = _loaded[device_type] = importlib.import_module(_MODULES[device_type])
    return b


def is_available(device_type: str) -> bool:
    try:
        return get(device_type).is_available()
    except ImportError:
        return False


def array_module(x):
    """numpy for CPU tensors/arrays, cupy for CUDA ones (Chainer's `get_array_module`); the fake
    CUDA device's array module for its FakeArrays (`EMBER_FAKE_CUDA=1`)."""
    data = getattr(x, "_data", x)
    if isinstance(data, np.ndarray) or np.isscalar(data):
        return np
    if isinstance(data, FakeArray):
        return fake_xp
    if getattr(data, "_is_meta", False):   # a MetaArray: its xp raises on any use (no data)
        return get("meta").xp
    return get("cuda").xp
