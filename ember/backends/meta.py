"""The meta backend: tensors with a shape and a dtype and no data, as torch's `device="meta"`.

A meta tensor's `_data` is a `MetaArray`. `Primitive.apply` never runs a forward on one: it asks the
primitive's `infer(*specs) -> (shape, dtype)` and makes a new MetaArray, so a whole model (forward,
backward, since backward rules are primitive calls too) runs in the time it takes to walk its graph,
whatever the sizes. Anything that would read values raises `MetaDataError` and says so.
"""
from __future__ import annotations

import contextlib
import math
from typing import ClassVar

import numpy as np

__all__ = ["MetaArray", "MetaDataError", "xp", "is_available", "allocate", "from_host", "to_device", "to_host",
           "copy", "synchronize", "stream", "kernels", "run", "pin_memory", "is_pinned", "erf",
           "erfc", "lgamma", "digamma", "polygamma", "i0", "i0e", "i1", "i1e", "erfcx", "ndtri"]


class MetaDataError(RuntimeError):
    """Raised by any attempt to read the values of a meta tensor (it has none)."""


def _no_data(what: str, arr=None) -> MetaDataError:
    from .._errors import user_frame
    spec = f" {arr.shape} {arr.dtype.name}" if arr is not None else ""
    return MetaDataError(f"{what}: a tensor on device='meta'{spec} has shape and dtype but no data; "
                         f"nothing can read its values (create it on a real device, or run only "
                         f"shape/dtype work on meta) (at {user_frame()})")


class MetaArray:
    """Shape and dtype of an array that does not exist. `.shape`, `.dtype`, `.ndim`, `.size`,
    `.nbytes`, `.itemsize`, `.strides` (contiguous) answer; reading values raises MetaDataError.

    >>> MetaArray((2, 3), np.float32).nbytes
    24
    """
    __slots__ = ("shape", "dtype", "__weakref__")   # weakref: the planner follows lifetimes
    __array_ufunc__: ClassVar[None]   # set below, after the operators
    _is_meta = True
    base = None   # no memory, so no view relations are tracked (a view is a new meta array)

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        out, step = [], self.dtype.itemsize
        for s in reversed(self.shape):
            out.append(step)
            step *= max(s, 1)
        return tuple(reversed(out))

    @property
    def flags(self):
        return _Flags

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype.name})"

    # --- everything that reads values ---------------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise _no_data("converting to a NumPy array", self)

    def __bool__(self):
        raise _no_data("bool()", self)

    def __float__(self):
        raise _no_data("float()", self)

    def __int__(self):
        raise _no_data("int()", self)

    def __index__(self):
        raise _no_data("index()", self)

    def __iter__(self):
        raise _no_data("iterating", self)

    def __len__(self):
        return self.shape[0] if self.shape else 0

    def __getitem__(self, key):
        raise _no_data("reading elements", self)

    def __setitem__(self, key, value):
        raise _no_data("writing elements", self)

    def item(self, *args):
        raise _no_data("item()", self)

    def tolist(self):
        raise _no_data("tolist()", self)

    def __getattr__(self, name):   # any NumPy array method (.copy(), .sum(), .astype(), .fill(), ...)
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_data(f"array method .{name}()", self)

    __hash__ = object.__hash__


class _Flags:
    c_contiguous = True
    f_contiguous = False
    writeable = True


def _raise_binary(name):
    def op(self, *args, **kwargs):
        raise _no_data(f"array arithmetic ({name}) outside a primitive", self)
    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(MetaArray, _form.format(_name), _raise_binary(_form.format(_name)))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__",
              "__eq__", "__ne__"):
    setattr(MetaArray, _name, _raise_binary(_name))
MetaArray.__array_ufunc__ = None   # NumPy defers to the reflected operators above: a clear error


class _NoModule:
    """The meta backend's `xp`: any NumPy function called on meta data raises a clear error."""
    __name__ = "meta"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_data(f"array function {name}()")


xp = _NoModule()


def is_available() -> bool:
    return True


# Primitive class -> fn(node, *arrays) returning MetaArrays, for a primitive whose `infer` is not enough.
kernels: dict = {}


def allocate(shape, dtype, device=None):
    return MetaArray(shape, dtype)


def from_host(host_array, device=None):
    """The meta copy of a host array: its shape and dtype, not its values."""
    return MetaArray(host_array.shape, host_array.dtype)


to_device = from_host


def to_host(array):
    raise NotImplementedError(f"Cannot copy out of meta tensor; no data! ({array.shape} {array.dtype.name}: "
                              f"a tensor on device='meta' has no values to copy; use .to_empty(device=...) "
                              f"to allocate real memory)")


def copy(array, device):
    """A meta array to meta (its shape and dtype again); to any real device raises, as to_host does."""
    if device.type == "meta":
        return MetaArray(array.shape, array.dtype)
    return to_host(array)


def synchronize(device=None) -> None:
    pass


def stream(device=None):
    return contextlib.nullcontext()


def run(node, arrays):
    """Shape and dtype of the output from the primitive's `infer` (no forward ever runs on meta).
    Primitive.apply does this itself (with its device checks); this is the interface's form of it."""
    kernel = kernels.get(type(node))
    if kernel is not None:
        return kernel(node, *arrays)
    if node.multi_output:
        return tuple(MetaArray(shape, dtype) for shape, dtype in node.infer(*arrays))
    return MetaArray(*node.infer(*arrays))


def pin_memory(array):
    raise RuntimeError("pin_memory: meta tensors have no memory to pin")


def is_pinned(array) -> bool:
    return False


def erf(x):
    raise _no_data("erf", x)


def erfc(x):
    raise _no_data("erfc", x)


def lgamma(x):
    raise _no_data("lgamma", x)


def digamma(x):
    raise _no_data("digamma", x)


def polygamma(n, x):
    raise _no_data("polygamma", x)


def i0(x):
    raise _no_data("i0", x)


def i0e(x):
    raise _no_data("i0e", x)


def i1(x):
    raise _no_data("i1", x)


def i1e(x):
    raise _no_data("i1e", x)


def erfcx(x):
    raise _no_data("erfcx", x)


def ndtri(x):
    raise _no_data("ndtri", x)
