"""Errors that teach: name the op, the operands and the user's line."""
from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

_PKG = os.path.dirname(os.path.abspath(__file__))


def _is_internal(path: str) -> bool:
    return path.startswith(_PKG) or path.startswith("<frozen")


def user_frame() -> str:
    """'file.py:LINE' of the innermost caller outside the ember package (and outside the stdlib)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not _is_internal(path):
            return f"{os.path.basename(path)}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def describe(x) -> str:
    """'(64, 1000) float32 cpu' for a tensor, the repr for anything else."""
    if hasattr(x, "_data"):
        return f"{tuple(x.shape)} {x.dtype.name} {x.device}"
    return repr(x)


def op_error(op: str, message: str, exc_type=RuntimeError):
    """An exception for `op` that ends with the user's source line."""
    return exc_type(f"{op}: {message} (at {user_frame()})")


def check_same_device(op: str, input, other, name: str, input_name: str = "input") -> None:
    """torch's rule for an index, mask or target tensor: it lives on input's device (a Python number
    given for `other` is left to the op)."""
    if getattr(other, "_device", input._device) is not input._device:
        raise op_error(op, f"expected all tensors to be on the same device, but found at least two devices, "
                           f"{input._device} and {other._device} ({input_name} {describe(input)}, {name} "
                           f"{describe(other)})")


def warn(op: str, message: str, category=UserWarning) -> None:
    """warnings.warn for `op`, attributed to the user's line (the warning's file and line are theirs)."""
    f: FrameType | None
    f, level = sys._getframe(1), 2   # stacklevel 2 is our caller
    while f is not None and _is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(f"{op}: {message} (at {user_frame()})", category, stacklevel=level)


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}


def check_scalar_fits(op: str, value, dtype):
    """torch's rule (c10::overflows) for a Python number stored into a tensor of `dtype` by fill-like ops
    (full, fill_, masked_fill, where, clamp): it must fit, except that an unsigned type takes negative
    values down to -max, which wrap around as in C (uint8: -1 is 255). Arithmetic (`x + 300`) wraps
    instead and does not come here. Returns the value to store (a negative one wrapped for unsigned types)."""
    import builtins
    import math
    import numpy as np
    if isinstance(value, builtins.bool) or dtype.name == "bool":
        return value
    if dtype.is_floating_point:
        if not isinstance(value, (builtins.int, builtins.float)) or \
                (isinstance(value, builtins.float) and not math.isfinite(value)):   # ints are finite
            return value
        bad = builtins.abs(value) > _FLOAT_MAX.get(dtype.name, float("inf"))
    elif isinstance(value, builtins.int):
        info = np.iinfo(dtype.np)
        if info.min == 0:
            bad = value > info.max or -value > info.max
        else:
            bad = value < info.min or value > info.max
    else:
        return value   # a float into an integer tensor is truncated, as torch does
    if bad:
        raise op_error(op, f"value {value!r} cannot be converted to type {dtype.name} without overflow")
    if isinstance(value, builtins.int) and value < 0 and not dtype.is_floating_point and np.iinfo(dtype.np).min == 0:
        return value + (1 << (8 * np.dtype(dtype.np).itemsize))
    return value
