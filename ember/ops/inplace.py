"""In-place ops (methods ending in `_`, `+=`, `x[...] = v`) and `Assign`, the one primitive that writes.

Each in-place op is its out-of-place op followed by `inplace`, which writes the result into the
tensor's own memory with `Assign` (views see it), moves the tensor's history to the new node, and bumps
the version counter so that backward can detect a saved value that was overwritten. Without a graph,
add_/sub_/mul_/div_ are one `Assign` with `op=` (`write_direct`): one ufunc into the tensor's memory.
"""
from __future__ import annotations

from .. import _dtype
from .._errors import op_error
from .._tensor import Tensor
from ..autograd.function import HOOKS_OPEN, SAVED_HOOKS, Primitive
from ..autograd.grad_mode import STATE
from ..backends import array_module
from ._attr_types import KEY, NONE, OPT_NUMBER
from .primitives import SLOT, Cast, Clone

INDEX = SLOT   # in Assign's `key`: an index array, taken in order from the inputs after `src` (as Index's)

_UFUNCS = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}


class Assign(Primitive):
    """Write into `dst`'s own memory and return it: `dst[key] = src`, or `dst[key] op= src`.

    Inputs: `dst`, then `src` unless the attribute `value` (a Python number) is given, then one array
    per `INDEX` entry of `key`. Attributes: `key` (None: the whole tensor; else a NumPy index tuple of
    ints, slices, None, Ellipsis, and `INDEX` placeholders for index arrays and masks), `op` (None:
    store; 'add', 'sub', 'mul', 'div': combine with the old value, as `+=` does), `value`.

    Every in-place write of tensor data goes through here (the `_` methods, `x[k] = v`, `.grad`
    accumulation, optimizer updates), so dispatch modes see it. It is not differentiable: an in-place op
    on a tensor that records history computes its result out of place (that is its graph node, see
    `inplace`) and writes it with this primitive. The caller bumps the version counter (`assign`).
    """
    attrs = {"key": (KEY, NONE), "op": (str, NONE), "value": OPT_NUMBER}
    differentiable = False
    key = None
    op = None
    value = None

    def forward(self, dst, *rest):
        xp = array_module(dst)
        if self.value is None:
            src, idx = rest[0], rest[1:]
        else:
            src, idx = xp.asarray(self.value, dtype=dst.dtype), rest
        if self.key is not None:
            it = iter(idx)
            key = tuple(next(it) if k is SLOT else k for k in self.key)
            # with op: read, combine, write back (x[i] += v as NumPy: a repeated index adds once)
            dst[key] = src if self.op is None else getattr(xp, _UFUNCS[self.op])(dst[key], src)
        elif self.op is None:
            dst[...] = src
        else:
            getattr(xp, _UFUNCS[self.op])(dst, src, out=dst, casting="unsafe")
        return dst

    def infer(self, dst, *rest):
        return tuple(dst.shape), dst.dtype


def assign(dst: Tensor, src: Tensor | None = None, *, value=None, op: str | None = None, key=None,
           index=(), name: str | None = None) -> Tensor:
    """`Assign` into `dst` (no checks, no graph) and bump its version; returns `dst`.
    `name` ('add_') is what autograd's stale-saved-tensor error names."""
    attrs = {}
    if value is not None:
        attrs["value"] = value
    if op is not None:
        attrs["op"] = op
    if key is not None:
        attrs["key"] = key
    if src is None:
        Assign.apply(dst, *index, **attrs)
    else:
        Assign.apply(dst, src, *index, **attrs)
    dst._bump_version(name)
    return dst


def check_leaf(t: Tensor, op: str) -> None:
    if STATE.enabled and t.requires_grad and t._node is None:
        raise op_error(op, "a leaf Variable that requires grad is being used in an in-place operation; "
                           "wrap it in `with ember.no_grad():` or use the out-of-place op")
    if t._custom_view is not None and STATE.enabled and t.requires_grad:
        raise RuntimeError(custom_view_error(t._custom_view, "is being modified inplace"))


def custom_view_error(view, what: str) -> str:
    """torch's error for an input a custom Function returned as it is (a view, e.g. the tensors a module
    with backward hooks passes on) that is changed in place: its custom backward would be bypassed."""
    name, idx, several = view
    if several:
        return (f"Output {idx} of {name} is a view and {what}. This view is the output of a function that "
                f"returns multiple views. Such functions do not allow the output views to be modified inplace. "
                f"You should replace the inplace operation by an out-of-place one.")
    return (f"Output {idx} of {name} is a view and {what}. This view was created inside a custom Function (or "
            f"because an input was returned as-is) and the autograd logic to handle view+inplace would override "
            f"the custom backward associated with the custom Function, leading to incorrect gradients. This "
            f"behavior is forbidden. You can fix this by cloning the output of the custom Function.")


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
    hooked = HOOKS_OPEN and STATE.enabled and SAVED_HOOKS.stack
    if hooked:   # a pack hook may keep src's memory itself (save_on_cpu of a CPU tensor): copy it first
        src._data = Clone.apply(Tensor._make(self._data, self._device))._data
    out = fn(src)
    if out.requires_grad and STATE.enabled and not hooked:
        src._data = Clone.apply(Tensor._make(self._data, self._device))._data
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
        Assign.apply(self, out)
    if out.requires_grad and STATE.enabled:
        self.requires_grad, self._node, self._out_idx = True, out._node, out._out_idx
    self._bump_version(op)
    return self


def needs_graph(self: Tensor, other) -> bool:
    return STATE.enabled and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad))


def write_direct(self: Tensor, op: str, ufunc_name: str, other) -> Tensor:
    """The no-graph path of add_/sub_/mul_/div_: one `Assign(op=...)`, a ufunc into `self`'s memory."""
    check_leaf(self, op)
    if op == "sub_" and (self._data.dtype == bool or isinstance(other, bool) or
                         (isinstance(other, Tensor) and other._data.dtype == bool)):
        from .math import sub
        sub(self, other)   # its error: subtraction with a bool tensor
    if isinstance(other, Tensor):
        if other._data.dtype != self._data.dtype:   # same dtype (the usual case): nothing to promote
            rt = _check_result_type(self, other, op)
            if rt.np == self._data.dtype:
                other = Cast.apply(other, dtype=self._data.dtype)   # computed in self's dtype, as torch does
        if other._device is not self._device:
            if other._data.ndim or other._device.type != "cpu":
                raise op_error(op, f"expected all tensors on {self._device}, got {other._device}")
            from .shape import to_device
            other = to_device(other, self._device)   # a CPU scalar tensor joins self's device, as in torch
        inputs: tuple[Tensor, ...] = (self, other)
        attrs: dict = {"op": _OPS[ufunc_name]}
    else:
        if not (other.__class__ is float and self._data.dtype.kind == "f"):
            _check_result_type(self, other, op)
        inputs, attrs = (self,), {"op": _OPS[ufunc_name], "value": other}
    try:
        Assign.apply(*inputs, **attrs)
    except ValueError:
        shape = tuple(other.shape) if isinstance(other, Tensor) else ()
        raise op_error(op, f"output with shape {tuple(self.shape)} doesn't match the broadcast shape "
                           f"of the operands {tuple(self.shape)} and {shape}") from None
    self._bump_version(op)
    return self


def _check_result_type(self: Tensor, other, op: str):
    rt = _dtype.result_type(self, other)
    if rt.category > self.dtype.category:
        raise op_error(op, f"result type {rt.name} can't be cast to the desired output type {self.dtype.name}")
    return rt


_OPS = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div"}
