"""torch's NumPy-style shape helpers: atleast_1d/2d/3d, hsplit/vsplit/dsplit, column_stack, dstack, rot90.
Composites of reshape, cat, tensor_split, flip and transpose (no backward of their own)."""
from __future__ import annotations

from .._dims import wrap_dim
from .._errors import op_error
from . import shape as S

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "hsplit", "vsplit", "dsplit", "column_stack", "dstack",
           "rot90"]


def _each(fn, tensors):
    """torch's calling convention: one tensor -> a tensor; several (or a list) -> a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    elif len(tensors) == 1:
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    return _each(lambda t: t.reshape(1) if t.ndim == 0 else t, tensors)


def atleast_2d(*tensors):
    return _each(lambda t: t.reshape(1, 1) if t.ndim == 0 else (t.unsqueeze(0) if t.ndim == 1 else t), tensors)


def atleast_3d(*tensors):
    def one(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, t.shape[0], 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    return _each(one, tensors)


def _split(op, input, sections, dim, min_ndim):
    if input.ndim < min_ndim:
        raise op_error(op, f"requires a tensor with at least {min_ndim} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise op_error(op, f"attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return S.tensor_split(input, sections, dim)


def hsplit(input, sections):
    """Split along dim 1 (dim 0 for a 1-D input) into equal `sections` or at the given indices."""
    return _split("hsplit", input, sections, 0 if input.ndim == 1 else 1, 1)


def vsplit(input, sections):
    return _split("vsplit", input, sections, 0, 2)


def dsplit(input, sections):
    return _split("dsplit", input, sections, 2, 3)


def column_stack(tensors):
    """Stack 1-D tensors as columns (0-d and 1-d become (n, 1)), then join along dim 1."""
    cols = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors]
    return S.cat(cols, 1)


def dstack(tensors):
    """Join along dim 2 after atleast_3d."""
    return S.cat([atleast_3d(t) for t in tensors], 2)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `dims`, from the first towards the second."""
    if len(dims) != 2:
        raise op_error("rot90", f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = wrap_dim(dims[0], input.ndim, "rot90"), wrap_dim(dims[1], input.ndim, "rot90")
    if d0 == d1:
        raise op_error("rot90", f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                                f"dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return S.flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return S.flip(input, (d0, d1))
    if k == 3:
        return S.flip(input, (d0,)).transpose(d0, d1)
    return S.clone(input)
