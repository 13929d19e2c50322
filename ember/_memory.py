"""Fail fast when an op's output cannot fit in memory, naming the op, the shape, the dtype and the bytes.

A broadcast view (`x.expand(10**6, 10**6)`) costs nothing, but an elementwise op on it would allocate
the full 1e12 elements: NumPy either spends minutes first (a reduction before the allocation) or ends
in a raw `MemoryError: Unable to allocate 3.64 TiB`. Where an op would work before it allocates (softmax
reduces first; var, logsumexp, norm, cumsum, creation ops, casts), Ember checks the bytes of its output
against a limit before any work (`check`); a plain ufunc allocates first and fails at once, so it is not
checked up front (that would cost every small op). Any `MemoryError` a primitive raises becomes the
same error (`from_memory_error`), like torch's
`RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate N bytes`.

The limit defaults to the machine's physical memory; set `EMBER_MEMORY_LIMIT` (bytes) or call
`set_limit(nbytes)` to change it. Only host (NumPy) arrays are checked up front: device allocators fail
fast on their own, and their out-of-memory error is converted like NumPy's.
"""
from __future__ import annotations

import math
import os

from ._errors import op_error

__all__ = ["OutOfMemoryError", "check", "from_memory_error", "get_limit", "set_limit"]


class OutOfMemoryError(RuntimeError):
    """An op's output (or a temporary it needs) is larger than the memory Ember may use."""


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):   # not a POSIX system: no up-front check
        return 1 << 62


def _initial_limit() -> int:
    env = os.environ.get("EMBER_MEMORY_LIMIT")
    return int(env) if env else _physical_memory()


_LIMIT = _initial_limit()


def get_limit() -> int:
    """The largest output, in bytes, an op may allocate (physical memory unless changed)."""
    return _LIMIT


def set_limit(nbytes: int) -> int:
    """Change the limit (bytes); returns the previous one, so a test can put it back."""
    global _LIMIT
    old, _LIMIT = _LIMIT, int(nbytes)
    return old


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} PiB"


def _error(op: str, shape, dtype, nbytes: int) -> OutOfMemoryError:
    name = getattr(dtype, "name", str(dtype))
    return op_error(op, f"not enough memory: you tried to allocate {nbytes} bytes ({_human(nbytes)}) for a "
                        f"{name} tensor of shape {tuple(shape)}; the limit is {_LIMIT} bytes "
                        f"({_human(_LIMIT)}, set EMBER_MEMORY_LIMIT to change it)", OutOfMemoryError)


def check(op: str, shape, dtype) -> None:
    """Raise OutOfMemoryError if a tensor of `shape` and `dtype` (NumPy or Ember) cannot fit."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _LIMIT:
        raise _error(op, shape, dtype, nbytes)


def from_memory_error(op: str, exc: MemoryError, arrays=()) -> OutOfMemoryError:
    """The OutOfMemoryError for a MemoryError raised inside `op` (NumPy's carries shape and dtype)."""
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is not None and dtype is not None:
        return _error(op, shape, dtype, math.prod(shape) * dtype.itemsize)
    inputs = ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)
    return op_error(op, f"not enough memory ({exc}); inputs {inputs}", OutOfMemoryError)
