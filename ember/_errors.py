"""Errors that teach: name the op, the operands and the user's line."""
from __future__ import annotations

import os
import sys

_PKG = os.path.dirname(os.path.abspath(__file__))


def user_frame() -> str:
    """'file.py:LINE' of the innermost caller outside the ember package (and outside the stdlib)."""
    f = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(_PKG) and not path.startswith("<frozen"):
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
