"""repr(tensor) in torch's style: tensor([[1., 2.], [3., 4.]], dtype=ember.float64, requires_grad=True)."""
from __future__ import annotations

import numpy as np

from . import _dtype

_DEFAULT_SHOWN = ("float32", "int64", "bool")


def _padded(fmt, a):
    # torch right-aligns every element to the widest one: tensor([ 0.1235, 10.5000])
    width = max((len(fmt(v)) for v in a.flat), default=0)
    return lambda v: fmt(v).rjust(width)


def _formatter(a: np.ndarray):
    if a.dtype.kind == "b":
        return {"bool": _padded(lambda v: "True" if v else "False", a)}
    if a.dtype.kind in "iu":
        return None
    finite = a[np.isfinite(a)] if a.size else a
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        fmt = lambda v: f"{v:.0f}." if np.isfinite(v) else str(v).replace("nan", "nan")  # noqa: E731
    elif finite.size and (np.abs(finite).max() >= 1e8 or np.abs(finite[finite != 0]).min(initial=1) < 1e-4):
        fmt = lambda v: f"{v:.4e}"  # noqa: E731
    else:
        fmt = lambda v: f"{v:.4f}"  # noqa: E731
    return {"float_kind": _padded(fmt, a)}


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
        body = np.array2string(a, separator=", ", prefix="tensor(", formatter=_formatter(a),
                               threshold=1000, edgeitems=3, max_line_width=80)
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
