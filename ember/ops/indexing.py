"""More shape and indexing ops of torch: select and the *_scatter embeddings, index_copy / index_reduce /
scatter_reduce / put, isin, unique_consecutive, cartesian_prod / combinations, broadcast_shapes,
unravel_index, diagflat, split_with_sizes, and Tensor.unfold / fill_diagonal_.

Composites over index_put, ScatterAdd and friends, except two primitives kept here with their
backward: `ScatterReduce` (the prod/amax/amin reductions: NumPy's `ufunc.at`, which no composite
matches in speed) and `Unfold` (sliding windows as a strided view, which no composite can give).
Re-exported by `ember` and bound as Tensor methods by `ember/_tensor_methods.py`.
"""
from __future__ import annotations

import builtins
import itertools
import math as _math

import numpy as np

from .. import _dtype
from .._dims import wrap_dim as _dim
from .._errors import check_same_device, describe, op_error
from .._tensor import Tensor
from ..autograd.function import Primitive
from ..backends import array_module
from . import math as M
from . import primitives as P
from . import shape as S
from ._infer import _same

__all__ = ["isin", "select", "select_scatter", "slice_scatter", "diagonal_scatter", "index_copy", "index_reduce",
           "scatter_reduce", "put", "unique_consecutive", "cartesian_prod", "combinations", "broadcast_shapes",
           "unravel_index", "diagflat", "split_with_sizes"]


# ------------------------------------------------------------------ select and the *_scatter embeddings
def select(input, dim, index):
    """input[..., index, ...] with `index` at dimension `dim` (a view, one dim fewer).

    >>> ember.tensor([[1, 2], [3, 4]]).select(1, 0).tolist()
    [1, 3]
    """
    if input.ndim == 0:
        raise op_error("select", "select() cannot be applied to a 0-dim tensor.", IndexError)
    d = _dim(dim, input.ndim, "select")
    n = input.shape[d]
    if not -n <= index < n:
        raise op_error("select", f"index {index} out of range for tensor of size {list(input.shape)} at "
                                 f"dimension {d}", IndexError)
    return S.getitem(input, (slice(None),) * d + (index % n,))


def _embed(op, input, src, key, part):
    """input with input[key] = src (out of place; gradients to both), src the exact shape of `part`."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    check_same_device(op, input, src, "src")
    if tuple(src.shape) != tuple(part.shape):
        raise op_error(op, f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(part.shape)}")
    return S.index_put(input, key, src)


def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src.

    >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    part = select(input, dim, index)
    d = _dim(dim, input.ndim, "select_scatter")
    return _embed("select_scatter", input, src, (slice(None),) * d + (index % input.shape[d],), part)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[..., start:end:step, ...] (at `dim`) replaced by src.

    >>> ember.slice_scatter(ember.zeros(4), ember.ones(2), start=1, step=2).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    d = _dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise op_error("slice_scatter", f"slice step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _embed("slice_scatter", input, src, key, S.getitem(input, key))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with input.diagonal(offset, dim1, dim2) replaced by src.

    >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    part = S.diagonal(input, offset, dim1, dim2)
    if not isinstance(src, Tensor) or tuple(src.shape) != tuple(part.shape):
        _embed("diagonal_scatter", input, src, None, part)   # its error
    from .creation import arange
    d1, d2 = S.wrap_dims((dim1, dim2), input.ndim, "diagonal_scatter")
    x = S.movedim(input, (d1, d2), (-2, -1))                  # (..., n, m): the diagonal's dims last
    rows = arange(part.shape[-1], device=input.device)
    out = S.index_put(x, (Ellipsis, rows - builtins.min(offset, 0), rows + builtins.max(offset, 0)), src)
    return S.movedim(out, (-2, -1), (d1, d2))


# ------------------------------------------------------------------ index_copy, put, scatter/index_reduce
def _index_along(op, input, dim, index, source):
    """(dim, int64 index) for index_copy / index_reduce, with torch's checks (1-D index, one entry per
    slice of source along dim, in range, same dtype)."""
    d = _dim(dim, input.ndim, op) if input.ndim else 0
    idx = S._index_arr(index, op, input)
    check_same_device(op, input, source, "source")
    if idx.ndim > 1:
        raise op_error(op, f"Index should have dimension 1 or 0 (got {idx.ndim})", IndexError)
    if source.dtype is not input.dtype:
        raise op_error(op, f"self and source expected to have the same dtype, but got (self) {input.dtype.name} "
                           f"and (source) {source.dtype.name}")
    if input.ndim and source.ndim and source.ndim != input.ndim:
        raise op_error(op, f"When source and destination are not scalars, their dimensionality must match "
                           f"(source {tuple(source.shape)}, self {tuple(input.shape)})", IndexError)
    if source.ndim and builtins.any(a != b for k, (a, b) in enumerate(zip(source.shape, input.shape)) if k != d):
        raise op_error(op, f"Source/destination tensor must have same slice shapes (source {tuple(source.shape)}, "
                           f"self {tuple(input.shape)}, dim {d})", IndexError)
    n_src = source.shape[d] if source.ndim else 1
    if idx.numel() != n_src:
        raise op_error(op, f"Number of indices ({idx.numel()}) should be equal to source.size(dim) ({n_src})",
                       IndexError)
    _check_range(op, idx, input.shape[d] if input.ndim else 1, d)
    return d, idx.reshape(-1)


def _check_range(op, idx, n, d, exc=IndexError):
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        bad = hi if hi >= n else lo if lo < 0 else None
        if bad is not None:
            raise op_error(op, f"index {bad} is out of bounds for dimension {d} with size {n}", exc)


def index_copy(input, dim, index, source):
    """A copy of input with the slices input.select(dim, index[i]) replaced by source.select(dim, i).

    >>> ember.zeros(3).index_copy(0, ember.tensor([2, 0]), ember.tensor([5.0, 6.0])).tolist()
    [6.0, 0.0, 5.0]
    """
    d, idx = _index_along("index_copy", input, dim, index, source)
    if input.ndim == 0:
        return S.reshape(source, ()).clone()
    return S.index_put(input, (slice(None),) * d + (idx,), source)


def put(input, index, source, accumulate=False):
    """A copy of input with its elements at the flat positions `index` (C order, negative from the end)
    set to (or, with accumulate, increased by) source.

    >>> ember.tensor([1, 2, 3]).put(ember.tensor([0, -1]), ember.tensor([9, 8])).tolist()
    [9, 2, 8]
    """
    idx = S._index_arr(index, "put", input)
    check_same_device("put", input, source, "source")
    if idx.numel() != source.numel():
        raise op_error("put", f"Expected source and index to have the same number of elements, but got "
                              f"source.numel() = {source.numel()}, index.numel() = {idx.numel()}", IndexError)
    n = input.numel()
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        bad = hi if hi >= n else lo if lo < -n else None
        if bad is not None:
            raise op_error("put", f"out of range: tried to access index {bad} on a tensor of {n} elements.",
                           IndexError)
    flat = S.index_put(S.reshape(input, -1), (S.reshape(idx, -1),), S.reshape(source, -1), accumulate)
    return S.reshape(flat, input.shape)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNCS = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}


class ScatterReduce(Primitive):
    """x with src combined into it at positions `index` along `axis` by `op` ('prod', 'amax', 'amin'),
    repeated positions combining; with `include_self` False the positions written start from src alone.
    Gradients as torch's: amax/amin split evenly among the values equal to the result, prod divides
    the result by each factor (the product of the others where a factor is 0)."""
    attrs = {"axis": int, "op": str, "include_self": bool}
    saves_inputs = True
    saves_output = True

    def forward(self, x, src, index):
        xp = array_module(x)
        out = x.copy()
        key = P._scatter_key(xp, index, self.axis)
        values = src[P._prefix(index.shape)]
        if not self.include_self:   # the positions written start from the reduction's identity
            out[key] = _identity(self.op, x.dtype)
        if xp is np:
            getattr(np, _UFUNCS[self.op]).at(out, key, values)
        else:
            from .. import backends
            backends.get("cuda").scatter_reduce(out, key, values, _UFUNCS[self.op])
        return out

    def save_for_backward(self, x, src, index):
        self.src_shape = tuple(src.shape)
        super().save_for_backward(x, src, index)

    def infer(self, x, src, index): return _same(x)

    def backward(self, g):
        x, src, index = self.saved_tensors
        result = self.saved_output()
        d = self.axis
        src = S.getitem(src, P._prefix(index.shape))    # the part of src that takes part
        written = S.scatter(g.new_zeros(tuple(g.shape), dtype=_dtype.bool), d, index, True)   # where values land
        if self.op == "prod":
            masked_x = M.where(M.eq(x, 0), 1, x)
            gx = g * scatter_reduce(masked_x, d, index, src, "prod", include_self=self.include_self) / masked_x
            src_zero = M.eq(src, 0)
            zeros = S.scatter_add(x.new_zeros(tuple(x.shape)), d, index, src_zero.to(x.dtype))
            single_zero = M.logical_and(src_zero, M.eq(S.gather(zeros, d, index), 1))
            others = scatter_reduce(x, d, index, M.where(single_zero, 1, src), "prod", include_self=self.include_self)
            gs = M.where(single_zero, S.gather(g * others, d, index),
                         S.gather(g * result, d, index) / M.where(src_zero, 1, src))
        else:   # amax / amin: evenly among the values equal to the result (an excluded self never counts)
            x_is = M.eq(x, result)
            if not self.include_self:   # torch counts an excluded self equal to the result (its bug)
                x_is = M.logical_and(x_is, M.logical_not(written))
            src_is = M.eq(src, S.gather(result, d, index))
            n = S.scatter_add(x_is.to(g.dtype), d, index, src_is.to(g.dtype))
            shared = g / n
            gx = M.where(x_is, shared, 0.0)
            gs = M.where(src_is, S.gather(shared, d, index), 0.0)
        if not self.include_self:   # input's values at the positions written took no part
            gx = M.where(written, 0.0, gx)
        if tuple(gs.shape) != self.src_shape:   # src larger than index: zeros for the part not used
            gs = P.IndexPut.apply(g.new_zeros(self.src_shape), gs, key=P._prefix(index.shape), accumulate=False)
        return gx, gs, None


def _identity(op, dtype):
    if op == "prod":
        return 1
    if dtype.kind == "f" or dtype.kind == "V":   # V: bfloat16
        return -np.inf if op == "amax" else np.inf
    if dtype.kind == "b":
        return op == "amin"
    info = np.iinfo(dtype)
    return info.min if op == "amax" else info.max


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with each src[i][j][k] combined into input[index[i][j][k]][j][k] (for dim=0) by `reduce`
    ('sum', 'prod', 'mean', 'amax', 'amin'); `include_self=False` leaves input's own values out of the
    positions written. Integer means round down, as torch.

    >>> x = ember.tensor([5.0, 3.0, 2.0])
    >>> x.scatter_reduce(0, ember.tensor([0, 0, 1]), ember.tensor([4.0, 7.0, 1.0]), "amax").tolist()
    [7.0, 3.0, 2.0]
    """
    if reduce not in _REDUCTIONS:
        raise op_error("scatter_reduce", f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    d = _dim(dim, input.ndim, "scatter_reduce") if input.ndim else 0
    if not isinstance(index, Tensor) or index.dtype.name not in ("int32", "int64"):
        raise op_error("scatter_reduce", f"Expected dtype int32/int64 for index, got {describe(index)}")
    idx = S._index_arr(index, "scatter_reduce", input)
    check_same_device("scatter_reduce", input, src, "src")
    if src.dtype is not input.dtype:
        raise op_error("scatter_reduce", f"Expected self.dtype to be equal to src.dtype, got {describe(input)} "
                                         f"and src {describe(src)}")
    if idx.ndim != input.ndim or src.ndim != input.ndim:
        raise op_error("scatter_reduce", f"Index tensor must have the same number of dimensions as self tensor "
                                         f"(index {tuple(index.shape)}, self {tuple(input.shape)}, src "
                                         f"{tuple(src.shape)})")
    for k in range(idx.ndim):
        if idx.shape[k] > src.shape[k] or (k != d and idx.shape[k] > input.shape[k]):
            raise op_error("scatter_reduce", f"Expected index {list(idx.shape)} to be smaller than self "
                                             f"{list(input.shape)} apart from dimension {d} and to be smaller "
                                             f"size than src {list(src.shape)}")
    _check_range("scatter_reduce", idx, input.shape[d] if input.ndim else 1, d, RuntimeError)
    if input.ndim == 0:
        input, src, idx = S.reshape(input, 1), S.reshape(src, 1), S.reshape(idx, 1)
        return S.reshape(scatter_reduce(input, 0, idx, src, reduce, include_self=include_self), ())
    if idx.numel() == 0:
        return input * 1
    if reduce in ("sum", "mean"):
        base = input if include_self else S.scatter(input, d, idx, 0)
        total = S.scatter_add(base, d, idx, src)
        if reduce == "sum":
            return total
        ones = input.new_ones(tuple(input.shape))
        count = S.scatter_add(ones if include_self else S.scatter(ones, d, idx, 0), d, idx,
                              src.new_ones(idx.shape))
        if input.dtype.is_floating_point:
            return total / count
        return M.div(total, count, rounding_mode="floor")
    return ScatterReduce.apply(input, src, idx, axis=d, op=reduce, include_self=bool(include_self))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with the slices source.select(dim, i) combined into input.select(dim, index[i]) by `reduce`
    ('prod', 'mean', 'amax', 'amin'); `include_self=False` leaves input's own values out of the slices
    written.

    >>> x = ember.tensor([5.0, 3.0, 2.0])
    >>> x.index_reduce(0, ember.tensor([0, 0, 1]), ember.tensor([4.0, 7.0, 1.0]), "prod").tolist()
    [140.0, 3.0, 2.0]
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise op_error("index_reduce", f"Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, idx = _index_along("index_reduce", input, dim, index, source)
    if input.ndim == 0:
        return scatter_reduce(input, 0, S.reshape(idx, ()), S.reshape(source, ()), reduce, include_self=include_self)
    shape = [1] * source.ndim
    shape[d] = idx.shape[0]
    full = S.expand(S.reshape(idx, shape), source.shape).contiguous()   # index_reduce's index, scatter's way
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


# ------------------------------------------------------------------ set and sequence helpers
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of `elements` is in `test_elements` (either may be a number), elementwise; NaN is
    in nothing.

    >>> ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2, 5])).tolist()
    [False, True, False]
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected elements or test_elements to be a Tensor, got two numbers")
    dev = elements._device if isinstance(elements, Tensor) else test_elements._device
    dt = _dtype.result_type(elements, test_elements)
    a = M._as_tensor(elements, dt, dev, "isin").detach()
    b = M._as_tensor(test_elements, dt, dev, "isin").detach()
    table = S.sort(S.reshape(b, -1)).values                          # sorted: a binary search per element
    if table.numel() == 0:
        found = a.new_zeros(tuple(a.shape), dtype=_dtype.bool)
    else:
        flat = S.reshape(a, -1)
        pos = P.SearchSorted.apply(table, flat, side="left")
        found = S.reshape(M.eq(S.gather(table, 0, M.clamp(pos, max=table.numel() - 1)), flat), a.shape)
    return M.logical_not(found) if invert else found


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first of each run of equal consecutive values (or slices along `dim`), with optionally the
    run each element is in (`return_inverse`) and the run lengths (`return_counts`).

    >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 3, 1])).tolist()
    [1, 2, 3, 1]
    """
    x = input.detach()
    if dim is None:
        flat = S.reshape(x, -1)
        n, axis = flat.shape[0], 0
    else:
        axis = _dim(dim, x.ndim, "unique_consecutive")
        flat, n = x, x.shape[axis]
    differs = M.ne(S.narrow(flat, axis, 1, n - 1), S.narrow(flat, axis, 0, n - 1)) if n > 1 else \
        flat.new_zeros((0,), dtype=_dtype.bool)
    if differs.ndim > 1:   # a slice differs from the one before if any of its elements does
        differs = M.any(S.reshape(S.movedim(differs, axis, 0), (n - 1, -1)), 1)
    new_run = S.cat([flat.new_ones((builtins.min(n, 1),), dtype=_dtype.bool), differs])   # (n,): a run starts
    starts = S.reshape(S.nonzero(new_run), -1)
    values = S.index_select(flat, axis, starts)
    out = [values]
    if return_inverse:
        inverse = M.cumsum(new_run.long(), 0) - 1
        out.append(S.reshape(inverse, input.shape) if dim is None else inverse)
    if return_counts:
        ends = S.cat([starts[1:], M._scalar_tensor(n, _dtype.int64, input._device).reshape(1)]) if n else starts
        out.append(ends - starts)
    return out[0] if len(out) == 1 else tuple(out)


def _check_vector(op, t):
    if t.ndim != 1:
        raise op_error(op, f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (itertools.product's order).

    >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        _check_vector("cartesian_prod", t)
    if len(tensors) == 1:
        return tensors[0] * 1 if tensors[0].dtype.name != "bool" else tensors[0].clone()
    sizes = [t.shape[0] for t in tensors]
    cols = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        cols.append(S.reshape(S.expand(S.reshape(t, shape), sizes), -1))
    return S.stack(cols, 1)


def combinations(input, r=2, with_replacement=False):
    """Every r-element combination of a 1-D tensor's elements, as rows (itertools' order), with repeated
    elements too when `with_replacement`.

    >>> ember.combinations(ember.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    _check_vector("combinations", input)
    if r < 0:
        raise op_error("combinations", f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    from .creation import tensor
    idx = tensor([i for row in rows for i in row], dtype=_dtype.int64, device=input.device)
    return S.reshape(S.index_select(input, 0, idx), (len(rows), r))


def broadcast_shapes(*shapes):
    """The shape that tensors of `shapes` broadcast to (a number is a 1-D shape), without tensors.

    >>> ember.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    out: list[int] = []
    for k, s in enumerate(shapes):
        if builtins.any(n < 0 for n in s):
            raise ValueError("broadcast_shapes: Attempting to broadcast a dimension with negative length!")
        if len(s) > len(out):
            out = [1] * (len(s) - len(out)) + out
        for i in range(1, len(s) + 1):
            if s[-i] != 1 and out[-i] != 1 and s[-i] != out[-i]:
                raise op_error("broadcast_shapes", f"Attempting to broadcast a dimension of length {s[-i]} at "
                                                   f"{-i}! Mismatching argument at index {k} had {s}; but expected "
                                                   f"shape should be broadcastable to {out}")
            if s[-i] != 1:
                out[-i] = s[-i]
    return tuple(out)


def unravel_index(indices, shape):
    """The coordinates in a tensor of `shape` of flat (C-order) `indices`: a tuple of int64 tensors, one
    per dim. As torch, an index past the end wraps around and a negative one counts from the end.

    >>> [t.tolist() for t in ember.unravel_index(ember.tensor([4, 5]), (2, 3))]
    [[1, 1], [1, 2]]
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index: expected 'indices' to be a Tensor, got {type(indices).__name__}")
    if indices.dtype.category != 1:
        raise TypeError(f"unravel_index: expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"unravel_index: 'shape' cannot have negative values, but got {shape}")
    idx = indices.long()
    out = []
    for k in range(len(shape)):
        stride = _math.prod(shape[k + 1:])
        out.append(M.remainder(M.floor_divide(idx, stride), shape[k]) if shape[k] else idx * 0)
    return tuple(out)


def diagflat(input, offset=0):
    """A 2-D tensor with the flattened input on diagonal `offset` (zeros elsewhere).

    >>> ember.diagflat(ember.tensor([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    return S.diag(S.reshape(input, -1), offset)


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of input along `dim` with the given sizes (which sum to its size there); views.

    >>> [t.tolist() for t in ember.split_with_sizes(ember.tensor([1, 2, 3]), [1, 2])]
    [[1], [2, 3]]
    """
    sizes = [int(s) for s in split_sizes]
    d = _dim(dim, input.ndim, "split_with_sizes")
    if builtins.any(s < 0 for s in sizes):
        raise op_error("split_with_sizes", f"split_with_sizes expects split_sizes have only non-negative entries, "
                                           f"but got split_sizes={sizes}")
    if builtins.sum(sizes) != input.shape[d]:
        raise op_error("split_with_sizes", f"split_with_sizes expects split_sizes to sum exactly to "
                                           f"{input.shape[d]} (input tensor's size at dimension {d}), but got "
                                           f"split_sizes={sizes}")
    return S.split(input, sizes, d)


# ------------------------------------------------------------------ Tensor.unfold, Tensor.fill_diagonal_
class Unfold(Primitive):
    """Every window of `size` elements along `axis`, `step` apart, as a strided view whose last dim is
    the window (Tensor.unfold); the backward adds each window offset's gradient back in place."""
    attrs = {"axis": int, "size": int, "step": int}
    saves_inputs = True   # only the input's shape (save_for_backward)

    def forward(self, x):
        xp = array_module(x)
        v = xp.lib.stride_tricks.sliding_window_view(x, self.size, axis=self.axis)
        return v[(slice(None),) * self.axis + (slice(None, None, self.step),)]

    def save_for_backward(self, x):
        self.src = x.shape

    def infer(self, x):
        shape = list(x.shape)
        shape[self.axis] = (shape[self.axis] - self.size) // self.step + 1
        return tuple(shape) + (self.size,), x.dtype

    def backward(self, g):
        n = g.shape[self.axis]
        total = None
        for o in range(self.size):   # window offset o: its values sit at o, o + step, ... along axis
            key = (slice(None),) * self.axis + (slice(o, o + self.step * (n - 1) + 1, self.step),)
            part = P.IndexAddInto.apply(S.getitem(g, (Ellipsis, o)), key=key, shape=self.src)
            total = part if total is None else total + part
        return (total if total is not None else g.new_zeros(self.src),)


def unfold(input, dimension, size, step):
    """The windows of `size` elements along `dimension`, `step` apart: a view whose dimension
    `dimension` counts the windows and whose new last dimension holds each window.

    >>> ember.arange(5).unfold(0, 2, 2).tolist()
    [[0, 1], [2, 3]]
    """
    x = S.reshape(input, 1) if input.ndim == 0 else input
    d = _dim(dimension, x.ndim, "unfold")
    if step <= 0:
        raise op_error("unfold", f"step is {step} but must be > 0")
    if size < 0 or size > x.shape[d]:
        raise op_error("unfold", f"maximum size for tensor at dimension {d} is {x.shape[d]} but size is {size}")
    out = S._view_of(Unfold.apply(x, axis=d, size=size, step=step), input)
    return S.reshape(out, (size,)) if input.ndim == 0 else out


def fill_diagonal_(self, fill_value, wrap=False):
    """Write fill_value on the main diagonal (all dims equal for more than 2 dims), in place; a tall
    2-D matrix with `wrap` starts again every columns + 1 rows, as NumPy's fill_diagonal.

    >>> ember.zeros(2, 2).fill_diagonal_(1.0).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    from .creation import arange
    if self.ndim < 2:
        raise op_error("fill_diagonal_", f"dimensions must larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise op_error("fill_diagonal_", f"all dimensions of input must be of equal length, got {tuple(self.shape)}")
    rows, cols = self.shape[0], self.shape[1]
    if self.ndim == 2:
        stop = rows * cols if wrap and rows > cols + 1 else builtins.min(rows, cols) * (cols + 1)
        flat = arange(0, builtins.min(stop, rows * cols), cols + 1, device=self.device)
        key = (M.floor_divide(flat, cols), M.remainder(flat, cols)) if cols else (flat, flat)
    else:
        i = arange(rows, device=self.device)
        key = (i,) * self.ndim
    S.setitem(self, key, fill_value)
    return self
