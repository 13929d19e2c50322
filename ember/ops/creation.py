"""Tensor creation: ember.tensor, zeros, ones, arange, ... and conversions from host data."""
from __future__ import annotations

import numpy as np

from .. import _dtype, _memory
from .. import _device
from .._device import device as _device_cls, CPU
from .._tensor import Tensor
from .._errors import check_scalar_fits
from .. import backends
from ..backends import host

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange", "linspace",
           "logspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "from_dlpack",
           "asarray", "scalar_tensor", "tril_indices", "triu_indices", "meshgrid"]


def _resolve_device(device):
    """The device a factory function creates on: `device`, or the default (`ember.set_default_device`)."""
    return _device.DEFAULT if device is None else _device_cls(device)


def _from_host(arr: np.ndarray, device) -> Tensor:
    """Wrap a host array as a tensor on `device` (copying to the device when it is not the CPU)."""
    if device is CPU or device is None:
        return Tensor._make(arr, CPU)
    return Tensor._make(backends.get(device.type).to_device(arr, device), device)


def _scalar_dtype(x):
    """The dtype torch.tensor gives one scalar: a NumPy scalar's own, bool, int64 or the default float."""
    if isinstance(x, np.generic) and (x.dtype.kind in "biuf" or x.dtype.name == "bfloat16"):
        return _dtype.from_np(x.dtype)
    if isinstance(x, (bool, np.bool_)):
        return _dtype.bool
    if isinstance(x, (int, np.integer)):
        return _dtype.int64
    return _dtype.get_default_dtype()


def _leaves(data):
    """The non-sequence items of nested lists and tuples."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        else:
            yield x


def _infer_np_dtype(data):
    """torch.tensor's dtype for nested Python data: bool, int64 or the default float; with NumPy scalars
    (np.float64(1.5), [np.int32(1), 2]) each scalar's own dtype, promoted with the others', as torch."""
    if isinstance(data, np.generic):
        return _scalar_dtype(data).np
    if isinstance(data, (list, tuple)) and any(isinstance(x, np.generic) for x in _leaves(data)):
        dt = None
        for x in _leaves(data):
            dt = _scalar_dtype(x) if dt is None else _dtype.promote_types(dt, _scalar_dtype(x))
        return dt.np
    try:
        a = host.asarray(data)
    except ValueError:
        raise ValueError("tensor: ragged nested sequence: every list at one depth must have the same "
                         "length") from None
    if a.dtype == np.bool_:
        return np.dtype(np.bool_)
    if a.dtype.kind in "iu":
        return np.dtype(np.int64)
    if a.dtype.kind == "f":
        return _dtype.get_default_dtype().np
    if a.dtype.kind == "O" and isinstance(data, (list, tuple)):
        raise TypeError("tensor: could not infer dtype of the given data (ragged or mixed nested "
                        "sequences are not supported)")
    raise TypeError(f"tensor: could not infer dtype of {type(data).__name__}")


def _to_array(data, dtype=None, device=None, copy=True):
    if device is None and isinstance(data, Tensor):
        device = data.device   # as torch: a tensor's data stays on its device unless one is given
    dev = _resolve_device(device)
    dt = _dtype.to_dtype(dtype).np if dtype is not None else None
    if isinstance(data, Tensor):
        t = data.detach()
        if dt is not None:
            t = t.to(dt)
        from .shape import to_device
        t = to_device(t, dev)
        arr = t._data.copy() if copy and t._data is data._data else t._data
        return arr, dev
    if isinstance(data, np.ndarray):
        arr = data
        if arr.dtype.name not in ("bfloat16",) and arr.dtype.kind not in "biuf":
            raise TypeError(f"tensor: can't convert np.ndarray of type {arr.dtype}; the only supported "
                            f"types are: float64, float32, float16, bfloat16, int64, int32, int16, int8, "
                            f"uint8, and bool")
        _dtype.from_np(arr.dtype) if dt is None else None
        arr = arr.astype(dt if dt is not None else arr.dtype, copy=copy)
    elif hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple)):
        arr = host.from_dlpack(data).astype(dt, copy=copy) if dt else host.array(host.from_dlpack(data), copy=copy)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
            data = [x.tolist() if isinstance(x, Tensor) else x for x in data]
        arr = host.array(data, dtype=dt if dt is not None else _infer_np_dtype(data))
    if dev is not CPU:
        arr = backends.get(dev.type).to_device(arr, dev)
    return arr, dev


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, NumPy arrays, Tensors).

    >>> ember.tensor([[1., 2.], [3., 4.]], requires_grad=True).shape
    (2, 2)
    """
    arr, dev = _to_array(data, dtype, device)
    t = Tensor._make(arr, dev)
    if pin_memory:
        t = t.pin_memory()
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like `tensor`, but shares memory with `data` when dtype and device already match."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None:
            out = out.to(_dtype.to_dtype(dtype))
        return out.to(_resolve_device(device)) if device is not None else out
    arr, dev = _to_array(data, dtype, device, copy=False)
    return Tensor._make(arr, dev)


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with `ndarray` (zero-copy)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_np(ndarray.dtype)
    return Tensor._make(ndarray, CPU)


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack-capable array (NumPy, CuPy, torch...)."""
    dev_type, dev_id = ext.__dlpack_device__()
    if int(dev_type) == 1:  # kDLCPU
        return Tensor._make(host.from_dlpack(ext), CPU)
    xp = backends.get("cuda").xp
    return Tensor._make(xp.from_dlpack(ext), _device_cls("cuda", int(dev_id)))


_NO_SIZE = object()


def _size(size, kw=_NO_SIZE, op=None):
    """The shape from a factory's arguments: `(2, 3)`, `((2, 3),)`, or torch's `size=` keyword (`kw`) for `op`.
    No size at all is a 0-d shape (torch raises; Ember's own code calls zeros(*shape) for 0-d shapes)."""
    if op is not None:
        if kw is not _NO_SIZE:
            if size:
                raise TypeError(f"{op}() got multiple values for argument 'size'")
            if not isinstance(kw, (tuple, list)):
                raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(kw).__name__}")
            size = (kw,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or s < 0:
            raise ValueError(f"invalid size {tuple(size)}: sizes must be non-negative integers")
    return tuple(int(s) for s in size)


def _fill(size, value, dtype, device, requires_grad=False, op="zeros"):
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    value = check_scalar_fits(op, value, dt)
    dt = dt.np
    dev = _resolve_device(device)
    if dev is CPU:
        _memory.check(op, size, dt)
    elif dev.type == "meta":   # shape and dtype, no memory
        t = Tensor._make(backends.get("meta").MetaArray(size, dt), dev)
        return t.requires_grad_(True) if requires_grad else t
    xp = backends.get(dev.type).xp if dev is not CPU else np
    if dev is CPU:
        t = Tensor._make(host.full(size, value, dt), CPU)
    else:
        t = _from_host(host.full(size, value, dt), dev) if xp is None or xp is np else \
            Tensor._make(xp.full(size, value, dtype=dt), dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*shape, size=_NO_SIZE, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros: `zeros(2, 3)`, `zeros((2, 3))` or `zeros(size=(2, 3))`, as torch's."""
    return _fill(_size(shape, size, "zeros"), 0, dtype, device, requires_grad)


def ones(*shape, size=_NO_SIZE, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _fill(_size(shape, size, "ones"), 1, dtype, device, requires_grad, "ones")


def empty(*shape, size=_NO_SIZE, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    return _fill(_size(shape, size, "empty"), 0, dtype, device, requires_grad, "empty")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value)
    size = _size((size,) if isinstance(size, int) else tuple(size))
    return _fill(size, fill_value, dtype, device, requires_grad, "full")


def scalar_tensor(s, *, dtype=None, device=None) -> Tensor:
    return full((), s, dtype=dtype or _dtype.get_default_dtype(), device=device)


def _like(fn, input, dtype, device, requires_grad, *args):
    return fn(*args, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(zeros, input, dtype, device, requires_grad, input.shape)


def ones_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(ones, input, dtype, device, requires_grad, input.shape)


def empty_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(empty, input, dtype, device, requires_grad, input.shape)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from start (default 0) to end, exclusive; integer arguments give int64."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = _dtype.int64 if is_int else _dtype.get_default_dtype()
    dt = _dtype.to_dtype(dtype)
    t = _from_host(host.arange(start, end, step, dt.np, dt.is_floating_point), _resolve_device(device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = _from_host(host.linspace(start, end, steps, dt.np), _resolve_device(device))
    return t.requires_grad_(True) if requires_grad else t


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return _from_host(host.logspace(start, end, steps, base, dt.np), _resolve_device(device))


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = _from_host(host.eye(n, m, dt.np), _resolve_device(device))
    return t.requires_grad_(True) if requires_grad else t


def tril_indices(row, col, offset=0, *, dtype=None, device=None) -> Tensor:
    idx = host.tril_indices(row, col, offset)
    if dtype is not None:
        idx = idx.astype(_dtype.to_dtype(dtype).np)
    return _from_host(idx, _resolve_device(device))


def triu_indices(row, col, offset=0, *, dtype=None, device=None) -> Tensor:
    idx = host.triu_indices(row, col, offset)
    if dtype is not None:
        idx = idx.astype(_dtype.to_dtype(dtype).np)
    return _from_host(idx, _resolve_device(device))


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = [t.shape[0] for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(tensors):
        pos = i
        if indexing == "xy" and len(tensors) >= 2 and i < 2:
            pos = 1 - i
        view = [1] * len(tensors)
        view[pos] = -1
        out.append(t.reshape(view).expand(shape))
    return tuple(out)
