"""Backend registry: each device type maps to a module that owns all of that device's array code.

Every NumPy- or CuPy-specific call in Ember lives under `ember/backends/` (tests/test_lint.py checks it):
primitives' forwards are written once against `xp = array_module(x)`, and everything else asks a
backend. A backend module (cpu.py, cuda.py, meta.py; the fake CUDA device of `EMBER_FAKE_CUDA=1` goes
through cuda.py) provides:

| name                              | what it does                                                     | cpu          | cuda                         | meta                        |
|-----------------------------------|------------------------------------------------------------------|--------------|------------------------------|-----------------------------|
| `xp`                              | the array module the primitives are written against              | numpy        | cupy (fake: fake_cuda.xp)    | raises on any use           |
| `is_available() -> bool`          | whether the device can be used here                              | True         | CuPy and a GPU found         | True                        |
| `allocate(shape, dtype, device)`  | an uninitialised array (as `xp.empty`)                           | np.empty     | on `device.index`            | MetaArray                   |
| `from_host(host, device)`         | a copy of a host (NumPy) array on the device (alias `to_device`) | no copy      | cupy.asarray                 | MetaArray of shape/dtype    |
| `to_host(array) -> np.ndarray`    | the array's values in host memory                                | no copy      | cupy.asnumpy                 | raises (no data)            |
| `copy(array, device)`             | the array on another device (any type), always a new array       | via host     | peer copy or via host        | MetaArray / raises          |
| `synchronize(device=None)`        | wait for queued work                                             | no-op        | Device.synchronize           | no-op                       |
| `stream(device=None)`             | a context manager: work inside it is queued on a new stream      | nullcontext  | cupy.cuda.Stream             | nullcontext                 |
| `kernels: dict`                   | Primitive class -> `fn(node, *arrays)`, this backend's own kernel | empty        | empty                        | empty                       |
| `run(node, arrays)`               | `kernels[type(node)](node, *arrays)`, else `node.forward(*arrays)` | yes          | yes                          | kernel, else node.infer     |
| `pin_memory(host)` / `is_pinned`  | page-locked host memory for fast copies                          | asks cuda    | cupy pinned memory           | raises / False              |
| `erf(x)`, `scatter_add(out, k, v)`| the special function and `add.at` NumPy's namespace lacks or CuPy spells differently | scipy / np.add.at | cupyx | raises |

`Primitive.apply` calls `node.forward` directly for host arrays when the cpu backend registers no
kernel for that primitive (the hot path: no extra call), and `run` of the array's backend otherwise.
Host-side helpers on host data (a user's list, printing values already copied out, files) are in
`host.py`. Backends are imported by name on first use, so `import ember` never imports CuPy.
"""
from __future__ import annotations

import importlib

import numpy as np

from .fake_cuda import FakeArray, xp as fake_xp   # NumPy only: no cost, no CuPy

__all__ = ["get", "array_module", "is_available", "backend_of", "run", "copy"]

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


def _type_of(data) -> str:
    if isinstance(data, np.ndarray) or np.isscalar(data):
        return "cpu"
    if getattr(data, "_is_meta", False):
        return "meta"
    return "cuda"   # a CuPy array or the fake device's FakeArray


def backend_of(x):
    """The backend module that holds array (or tensor) `x`."""
    if getattr(x, "_is_meta", False):   # a MetaArray answers any other attribute with an error
        return get("meta")
    return get(_type_of(getattr(x, "_data", x)))


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


def run(node, arrays):
    """`node`'s output on `arrays`, computed by the backend that holds the first array."""
    return (backend_of(arrays[0]) if arrays else get("cpu")).run(node, arrays)


def run_with(kernels: dict, node, arrays):
    """A backend's `run`: its kernel for this primitive if it has one, else the primitive's forward."""
    kernel = kernels.get(type(node))
    if kernel is not None:
        return kernel(node, *arrays)
    return node.forward(*arrays)


def copy(array, device):
    """`array` (of any backend) on `device`, as a new array."""
    return backend_of(array).copy(array, device)


def copy_via_host(src_backend, array, device):
    """The generic `copy`: out through the host, into `device`'s backend; always a new array."""
    host = src_backend.to_host(array)
    if device.type == "cpu":
        return host.copy() if host is array else host
    return get(device.type).from_host(host, device)


def __getattr__(name):
    """torch.backends' flag modules on first access (`ember.backends.cudnn.benchmark = True`), so that
    scripts written for torch port: cudnn's flags and cuda.matmul's are kept and change nothing here,
    mps is never available. None imports CuPy."""
    if name in ("cuda", "cudnn", "mps"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
