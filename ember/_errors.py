"""Errors that teach: name the op, the operands and the user's line."""
from __future__ import annotations

import os
import sys
import warnings

_PKG = os.path.dirname(os.path.abspath(__file__))


def _is_internal(path: str) -> bool:
    return path.startswith(_PKG) or path.startswith("<frozen")


def user_frame() -> str:
    """'file.py:LINE' of the innermost caller outside the ember package (and outside the stdlib)."""
    f = sys._getframe(1)
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
    f, level = sys._getframe(1), 2   # stacklevel 2 is our caller
    while f is not None and _is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(f"{op}: {message} (at {user_frame()})", category, stacklevel=level)
