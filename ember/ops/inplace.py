"""In-place ops (methods ending in `_`, `+=`, `x[...] = v`).

Each in-place op is its out-of-place op followed by `inplace`, which writes the result into the
tensor's own memory (views see it), moves the tensor's history to the new node, and bumps the
version counter so that backward can detect a saved value that was overwritten.
"""
from __future__ import annotations

from .. import _dtype
from .._errors import op_error
from .._tensor import Tensor
from ..autograd.grad_mode import STATE


def check_leaf(t: Tensor, op: str) -> None:
    if STATE.enabled and t.requires_grad and t._node is None:
        raise op_error(op, "a leaf Variable that requires grad is being used in an in-place operation; "
                           "wrap it in `with ember.no_grad():` or use the out-of-place op")


def inplace(self: Tensor, fn, op: str) -> Tensor:
    """Compute `fn(self)` and store it into `self`; returns `self`."""
    check_leaf(self, op)
    if STATE.enabled and self._base is not None and self._base.requires_grad:
        raise op_error(op, "in-place modification of a view of a tensor that requires grad is not "
                           "supported; use the out-of-place op (e.g. `x = x.index_put(...)`)",
                       NotImplementedError)
    # run on a stand-in for the old `self`: if the graph saved it, it keeps a copy of the old values
    src = Tensor._make(self._data, self._device, self.requires_grad, self._node, self._out_idx) \
        if STATE.enabled else self
    out = fn(src)
    if out.requires_grad and STATE.enabled:
        src._data = self._data.copy()
    if out.shape != self.shape:
        raise op_error(op, f"output with shape {tuple(self.shape)} doesn't match the broadcast shape "
                           f"{tuple(out.shape)}")
    if out._data.dtype != self._data.dtype:
        if out.dtype.category > self.dtype.category:
            raise op_error(op, f"result type {out.dtype.name} can't be cast to the desired output type "
                               f"{self.dtype.name}")
        out = out.to(self.dtype)
    if out._device is not self._device:
        raise op_error(op, f"expected all tensors on {self._device}, got {out._device}")
    if out._data is not self._data:
        self._data[...] = out._data
    if out.requires_grad and STATE.enabled:
        self.requires_grad, self._node, self._out_idx = True, out._node, out._out_idx
    self._bump_version(op)
    return self


def needs_graph(self: Tensor, other) -> bool:
    return STATE.enabled and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad))


def write_direct(self: Tensor, op: str, ufunc_name: str, other) -> Tensor:
    """The no-graph path of add_/sub_/mul_/div_: one ufunc writing into `self`'s memory."""
    from ..backends import array_module
    check_leaf(self, op)
    if _dtype.result_type(self, other).category > self.dtype.category:
        raise op_error(op, f"result type {_dtype.result_type(self, other).name} can't be cast to the "
                           f"desired output type {self.dtype.name}")
    xp = array_module(self)
    if isinstance(other, Tensor):
        if other._device is not self._device and other._data.ndim:
            raise op_error(op, f"expected all tensors on {self._device}, got {other._device}")
        arr = other._data
    else:
        arr = xp.asarray(other, dtype=self._data.dtype)
    try:
        getattr(xp, ufunc_name)(self._data, arr, out=self._data, casting="unsafe")
    except ValueError:
        raise op_error(op, f"output with shape {tuple(self.shape)} doesn't match the broadcast shape "
                           f"of the operands {tuple(self.shape)} and {tuple(arr.shape)}") from None
    self._bump_version(op)
    return self
