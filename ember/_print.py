"""repr(tensor) in torch's style: tensor([[1., 2.], [3., 4.]], dtype=ember.float64, requires_grad=True),
with the options of `ember.set_printoptions`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _dtype
from ._errors import op_error
from .backends import host

__all__ = ["set_printoptions"]

# torch's PRINT_OPTS: the "default" profile
PRINT_OPTS: dict[str, Any] = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
_PROFILES: dict[str, dict[str, Any]] = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Options of every tensor's repr, as torch.set_printoptions: digits after the point (`precision`),
    the element count above which a summary with `edgeitems` items per end is shown (`threshold`), the
    line width, a `profile` ("default", "short", "full") applied first, and `sci_mode` (True/False
    forces e-notation on or off; None, the default of every call, chooses as torch does).

    >>> ember.set_printoptions(precision=2)
    >>> ember.tensor([1.12345])
    tensor([1.12])
    >>> ember.set_printoptions(threshold=5)
    >>> ember.arange(10)
    tensor([0, 1, 2,  ..., 7, 8, 9])
    >>> ember.set_printoptions(profile="default")
    >>> ember.tensor([1.12345])
    tensor([1.1235])
    """
    if profile is not None:
        if profile not in _PROFILES:   # torch ignores an unknown profile silently; a typo should not pass
            raise op_error("set_printoptions", f"profile must be one of 'default', 'short' or 'full', got "
                                               f"{profile!r}", ValueError)
        PRINT_OPTS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise op_error("set_printoptions", f"{name} must be a non-negative int, got {value!r}", ValueError)
            PRINT_OPTS[name] = value
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold:
            raise op_error("set_printoptions", f"threshold must be a number, got {threshold!r}", ValueError)
        PRINT_OPTS["threshold"] = threshold
    PRINT_OPTS["sci_mode"] = sci_mode

_DEFAULT_SHOWN = ("float32", "int64", "bool")


def tensor_repr(t) -> str:
    if t.device.type == "meta":   # no values to show, as torch: tensor(..., device='meta', size=(2, 3))
        return "tensor(" + ", ".join(["...", "device='meta'", f"size={tuple(t.shape)}"] + _extras(t)) + ")"
    a = t.detach().cpu()._data
    if t.dtype is _dtype.bfloat16 or a.dtype == np.float16:
        a = a.astype(np.float32)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype.name not in _DEFAULT_SHOWN or (t.dtype.name == "float32" and _dtype.get_default_dtype().name != "float32"):
        extras.append(f"dtype=ember.{t.dtype.name}")
    if t._node is not None:
        extras.append(f"grad_fn=<{t._node.name}Backward>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    if a.size == 0:
        body = "[]" if a.ndim <= 1 else "[]"
        extras.insert(0, f"size={tuple(a.shape)}") if a.ndim > 1 else None
    else:
        body = host.format_array(a, prefix="tensor(", **PRINT_OPTS)
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _extras(t) -> list:
    """The dtype and autograd parts of a meta tensor's repr."""
    out = []
    if t.dtype.name != _dtype.get_default_dtype().name:   # torch: any dtype but the default (int64 too)
        out.append(f"dtype=ember.{t.dtype.name}")
    if t._node is not None:
        out.append(f"grad_fn=<{t._node.name}Backward>")
    elif t.requires_grad:
        out.append("requires_grad=True")
    return out
