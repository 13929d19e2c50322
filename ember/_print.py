"""repr(tensor) in torch's style: tensor([[1., 2.], [3., 4.]], dtype=ember.float64, requires_grad=True)."""
from __future__ import annotations

import numpy as np

from . import _dtype
from .backends import host

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
        body = host.format_array(a, prefix="tensor(")
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
