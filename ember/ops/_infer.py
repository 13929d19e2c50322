"""Shape and dtype rules shared by the primitives' `infer` methods.

`Primitive.infer(*specs) -> (shape, numpy dtype)` gives a primitive's output from inputs that have only
`.shape` and `.dtype` (meta tensors; a planner). The rules come in families, one helper each:
elementwise (same, broadcast), reductions over axes, movement (reshape, index, concatenate) and
contractions (matmul, einsum). An `infer` also leaves on the node what its forward leaves for backward
(shapes; arrays as MetaArrays of the right shape), so backward runs on meta tensors too.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .._errors import op_error


def _meta(shape, dtype):
    from ..backends.meta import MetaArray
    return MetaArray(shape, dtype)


def _shape_error(op, message):
    return op_error(op, message)


def _same(x):
    """Unary elementwise: the input's shape and dtype."""
    return tuple(x.shape), x.dtype


def _broadcast_shape(op, *shapes, to=False):
    """NumPy's broadcast of `shapes` (with `to`: the first broadcast to the second, as expand)."""
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(nd):
        sizes = [s[i - nd + len(s)] if i - nd + len(s) >= 0 else 1 for s in shapes]
        if to:
            src, dst = sizes
            if dst == -1:
                dst = src
            if src != dst and src != 1:
                raise _shape_error(op, f"the expanded size of the tensor ({dst}) must match the existing size "
                                       f"({src}) at non-singleton dimension {i}: {shapes[0]} to {shapes[1]}")
            out.append(dst)
            continue
        big = max(sizes) if all(s >= 1 for s in sizes) else min(sizes)   # a 0 wins over 1
        for s in sizes:
            if s != big and s != 1:
                raise _shape_error(op, f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast "
                                       f"together: {s} != {big} at dimension {i}")
        out.append(big)
    return tuple(out)


def _broadcast(node, *xs):
    """Binary elementwise: the broadcast shape, the operands' common dtype."""
    shape = _broadcast_shape(node.op_name, *[tuple(x.shape) for x in xs])
    return shape, np.result_type(*[x.dtype for x in xs])


@lru_cache(maxsize=None)
def _acc_dtype(dt):
    """The dtype NumPy's sum/prod/cumsum give without a dtype: bool and small ints widen to the
    platform int (torch: int64)."""
    return np.zeros(1, dtype=dt).sum().dtype if dt.kind in "biu" else dt


def _reduced(shape, axis, keepdims):
    """The shape after reducing `axis` (int, tuple or None for all) with or without keepdims."""
    nd = len(shape)
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {a % nd for a in (axis if isinstance(axis, (tuple, list)) else (axis,))} if nd else set()
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reshaped(src, shape):
    """`shape` with one -1 resolved against the size of `src`."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    n = math.prod(src)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or n % known:
            raise _shape_error("reshape", f"shape {shape} is invalid for input of size {n}")
        shape = tuple(n // known if s == -1 else s for s in shape)
    if math.prod(shape) != n:
        raise _shape_error("reshape", f"shape {shape} is invalid for input of size {n}")
    return shape


def _indexed(shape, key):
    """The shape of x[key] for a NumPy key; integer index arrays may be MetaArrays (their shapes
    broadcast), a boolean mask must have values (its result's size depends on them)."""
    from ..backends.meta import MetaArray
    parts = key if isinstance(key, tuple) else (key,)
    stand_in = []
    for k in parts:
        if isinstance(k, MetaArray) or (hasattr(k, "shape") and hasattr(k, "dtype")
                                         and not isinstance(k, (np.ndarray, np.generic))):   # a spec
            if k.dtype.kind == "b":
                raise _shape_error("index", f"a boolean mask on device='meta' {k.shape}: the result's size "
                                            f"depends on the mask's values, which meta tensors do not have")
            k = np.broadcast_to(np.zeros((), np.intp), k.shape)   # index 0: in range, shape only
        stand_in.append(k)
    key = tuple(stand_in) if isinstance(key, tuple) else stand_in[0]
    # basic indexing of a zero-strided view allocates nothing; advanced indexing one byte per element
    return np.broadcast_to(np.zeros((), np.int8), shape)[key].shape


def _concatenated(shapes, axis):
    first = shapes[0]
    ax = axis % len(first)
    for s in shapes[1:]:
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != ax):
            raise _shape_error("cat", f"sizes of tensors must match except in dimension {ax}: "
                                      f"{' and '.join(str(tuple(s)) for s in shapes)}")
    return first[:ax] + (sum(s[ax] for s in shapes),) + first[ax + 1:]


def _matmul_shape(a, b):
    """a @ b for operands of >= 2 dims with broadcast batch dims."""
    if a[-1] != b[-2]:
        raise _shape_error("matmul", f"shapes {tuple(a)} and {tuple(b)} do not align: {a[-1]} != {b[-2]}")
    return _broadcast_shape("matmul", a[:-2], b[:-2]) + (a[-2], b[-1])


def _einsum_shape(eq, shapes):
    ins, out = eq.replace(" ", "").split("->")
    size = {}
    for sub, shape in zip(ins.split(","), shapes):
        for c, n in zip(sub, shape):
            m = size.get(c)
            if m is None or m == 1:   # a size 1 broadcasts against any other, 0 included
                size[c] = n
            elif n != 1 and n != m:
                raise _shape_error("einsum", f"index {c!r} has sizes {m} and {n} in {eq!r}")
    return tuple(size[c] for c in out)
