"""Shape, movement and indexing ops: views where NumPy gives views, copies otherwise."""
from __future__ import annotations

import builtins
import collections
import math as _math
import operator

import numpy as np

from .. import _dtype, _memory
from .._dims import add_numpy_names, wrap_dim as _dim, wrap_dims
from .._errors import check_same_device, check_scalar_fits, describe, op_error
from .._tensor import Tensor
from ..backends import array_module, host
from . import primitives as P
from ..amp import autocast_op


def _view_of(out, base):
    """Mark `out` as a view of `base` when it shares memory: one version counter for both."""
    if out._data.base is not None:
        out._vc = base._get_vc()
        out._base = base._base if base._base is not None else base
    return out


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def reshape(input, *shape):
    shape = _shape_arg(shape)
    if shape == input.shape:
        return _view_of(P.Reshape.apply(input, shape=shape), input)
    n = input._data.size
    bad = [i for i, s in enumerate(shape) if s < -1]
    if bad:
        raise op_error("reshape", f"invalid shape dimension {shape[bad[0]]} at index {bad[0]} of shape {list(shape)}")
    known = _math.prod(s for s in shape if s != -1) if shape else 1
    if shape.count(-1) > 1 or (-1 in shape and (known == 0 or n % known)) or \
            (-1 not in shape and known != n):
        raise op_error("reshape", f"shape {list(shape)} is invalid for input of size {n} "
                                  f"(shape {tuple(input.shape)})")
    return _view_of(P.Reshape.apply(input, shape=shape), input)


def _viewable(arr, shape):
    """Whether a strided array can take `shape` without a copy (torch's view rule, e.g. splitting a dim
    of a column slice)."""
    xp = array_module(arr)
    if xp is np:
        try:
            np.reshape(arr, shape, copy=False)   # raises ValueError when a copy would be needed
            return True
        except (ValueError, TypeError):
            return False
    try:   # CuPy's reshape has no copy=False: a view starts at the same address, a copy elsewhere
        return arr.reshape(shape).data.ptr == arr.data.ptr
    except ValueError:
        return False


def _view_dtype(input, dtype):
    """view(dtype): the same bytes read as another dtype (no conversion, no gradient), as torch."""
    dt = _dtype.to_dtype(dtype)
    a = input._data
    if dt.np.itemsize != a.itemsize and (a.ndim == 0 or a.shape[-1] * a.itemsize % dt.np.itemsize
                                         or a.strides[-1] != a.itemsize):
        raise op_error("view", f"cannot view {describe(input)} as {dt.name}: with a different element size "
                               f"the last dimension must be contiguous and hold a whole number of {dt.name}s")
    return _view_of(P.BitCast.apply(input.detach(), dtype=dt.np), input)


def view(input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return _view_dtype(input, shape[0])
    if not input._data.flags.c_contiguous and _shape_arg(shape) != input.shape \
            and not _viewable(input._data, _shape_arg(shape)):
        raise op_error("view", f"view size is not compatible with input tensor's size and stride "
                               f"(shape {tuple(input.shape)}, non-contiguous); use .reshape(...) instead")
    return reshape(input, *shape)


def contiguous(input):
    if input._data.flags.c_contiguous:
        return input
    if input.requires_grad:
        return P.Clone.apply(input)
    _memory.check("contiguous", input.shape, input.dtype)
    return P.Clone.apply(input)


def clone(input):
    return P.Clone.apply(input)


def permute(input, *dims):
    dims = _shape_arg(dims)
    if len(dims) != input.ndim:
        raise op_error("permute", f"dims {list(dims)} are not a permutation of the {input.ndim} dims of "
                                  f"a tensor of shape {tuple(input.shape)}")
    dims = wrap_dims(dims, input.ndim, "permute") if input.ndim else ()
    return _view_of(P.Permute.apply(input, dims=dims), input)


def transpose(input, dim0, dim1):
    if input.ndim < 2 and dim0 in (0, -1) and dim1 in (0, -1):
        return input
    d0, d1 = _dim(dim0, input.ndim, "transpose"), _dim(dim1, input.ndim, "transpose")
    dims = list(range(input.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _view_of(P.Permute.apply(input, dims=tuple(dims)), input)


swapaxes = swapdims = transpose


def t(input):
    if input.ndim > 2:
        raise op_error("t", f"expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def squeeze(input, dim=None):
    if dim is None:
        shape = tuple(s for s in input.shape if s != 1)
    else:
        dims = wrap_dims(dim, input.ndim, "squeeze")
        shape = tuple(s for i, s in enumerate(input.shape) if not (i in dims and s == 1))
    return input if shape == input.shape else _view_of(P.Reshape.apply(input, shape=shape), input)


def unsqueeze(input, dim):
    d = _dim(dim, input.ndim + 1, "unsqueeze")
    shape = input.shape[:d] + (1,) + input.shape[d:]
    return _view_of(P.Reshape.apply(input, shape=shape), input)


def expand(input, *sizes):
    sizes = _shape_arg(sizes)
    if len(sizes) < input.ndim:
        raise op_error("expand", f"the number of sizes provided ({len(sizes)}) must be greater or equal "
                                 f"to the number of dimensions in the tensor ({input.ndim})")
    lead = len(sizes) - input.ndim
    shape = tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i, s in enumerate(input.shape):
        if s != 1 and s != shape[i + lead]:
            raise op_error("expand", f"the expanded size {shape[i + lead]} must match the existing size "
                                     f"{s} at non-singleton dimension {i + lead}; target sizes "
                                     f"{list(sizes)}, tensor shape {tuple(input.shape)}")
    if shape == input.shape:
        return input
    return _view_of(P.Expand.apply(input, shape=shape), input)


def expand_as(input, other):
    return expand(input, other.shape)


def broadcast_to(input, shape):
    return expand(input, tuple(shape))


def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def flatten(input, start_dim=0, end_dim=-1):
    s, e = _dim(start_dim, input.ndim, "flatten"), _dim(end_dim, input.ndim, "flatten")
    if input.ndim == 0:
        return reshape(input, 1)
    if s > e:
        raise op_error("flatten", f"start_dim {start_dim} cannot come after end_dim {end_dim}")
    shape = input.shape[:s] + (_math.prod(input.shape[s:e + 1]),) + input.shape[e + 1:]
    return reshape(input, shape)


def unflatten(input, dim, sizes):
    d = _dim(dim, input.ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    if sizes.count(-1) == 1:   # infer -1 from this dim alone (a total of 0 elements says nothing)
        known = _math.prod(s for s in sizes if s != -1)
        if known and input.shape[d] % known == 0:
            sizes = tuple(input.shape[d] // known if s == -1 else s for s in sizes)
    if _math.prod(sizes) != input.shape[d]:
        raise op_error("unflatten", f"provided sizes {list(sizes)} don't multiply up to the size of dim "
                                    f"{dim} ({input.shape[d]}) in the input tensor of shape {tuple(input.shape)}")
    return reshape(input, input.shape[:d] + sizes + input.shape[d + 1:])


def ravel(input):
    return reshape(input, -1)


def cat(tensors, dim=0):
    tensors = [t for t in tensors]
    if not tensors:
        raise op_error("cat", "expected a non-empty list of Tensors", ValueError)   # torch's type
    from .math import _as_tensor
    from .. import _dtype
    # torch skips legacy empty 1-D tensors, but their dtypes still take part in the promotion
    nonempty = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    dt = _dtype.result_type(*tensors)
    if not nonempty:   # only legacy empty tensors: torch checks no dim
        return P.Cat.apply(_as_tensor(tensors[0], dt, tensors[0]._device, "cat"), axis=0)
    dev = nonempty[0]._device
    ts = [_as_tensor(t, dt, dev, "cat") for t in nonempty]
    ref = ts[0]
    if ref.ndim == 0:
        raise op_error("cat", "zero-dimensional tensor cannot be concatenated")
    d = _dim(dim, ref.ndim, "cat")
    for i, x in enumerate(ts):
        if x.ndim != ref.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape, ref.shape)) if j != d):
            raise op_error("cat", f"sizes of tensors must match except in dimension {d}: tensor 0 has "
                                  f"shape {tuple(ref.shape)}, tensor {i} has shape {tuple(x.shape)}")
    return P.Cat.apply(*ts, axis=d)


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise op_error("stack", "expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if x.shape != tensors[0].shape:
            raise op_error("stack", f"expects each tensor to be equal size, but got {tuple(tensors[0].shape)} "
                                    f"at entry 0 and {tuple(x.shape)} at entry {i}")
    d = _dim(dim, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, d) for t in tensors], d)


def hstack(tensors):
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


def _slice_along(input, d, start, stop):
    key = (slice(None),) * d + (slice(start, stop),)
    return _view_of(P.Index.apply(input, key=key), input)


def narrow(input, dim, start, length):
    d = _dim(dim, input.ndim, "narrow")
    n = input.shape[d]
    if not -n <= start <= n:   # torch: IndexError for the start, RuntimeError for the length
        raise op_error("narrow", f"start out of range (expected to be in range of [{-n}, {n}], but got {start})",
                       IndexError)
    if start < 0:
        start += n
    if length < 0:
        raise op_error("narrow", "length must be non-negative")
    if start + length > n:
        raise op_error("narrow", f"start ({start}) + length ({length}) exceeds dimension size ({n})")
    return _slice_along(input, d, start, start + length)


def split(tensor, split_size_or_sections, dim=0):
    d = _dim(dim, tensor.ndim, "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise op_error("split", f"split_size must be positive, got {step}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise op_error("split", f"split_with_sizes expects split_sizes to sum exactly to {n} "
                                    f"(dimension {d} of {tuple(tensor.shape)}), but got {sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(tensor, d, start, start + s))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise op_error("chunk", f"chunks must be greater than 0, got {chunks}")
    d = _dim(dim, input.ndim, "chunk")
    n = input.shape[d]
    if n == 0:   # torch gives `chunks` empty pieces
        return tuple(_slice_along(input, d, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), dim)


def tensor_split(input, sections, dim=0):
    d = _dim(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    if isinstance(sections, int):
        q, r = divmod(n, sections)
        sizes = [q + 1] * r + [q] * (sections - r)
        return split(input, sizes, d)
    idx = [0] + list(sections) + [n]
    return tuple(_slice_along(input, d, a, b) for a, b in zip(idx[:-1], idx[1:]))


def unbind(input, dim=0):
    d = _dim(dim, input.ndim, "unbind")
    return tuple(_view_of(P.Index.apply(input, key=(slice(None),) * d + (i,)), input)
                 for i in range(input.shape[d]))


def flip(input, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return P.Flip.apply(input, axes=wrap_dims(dims, input.ndim, "flip") if input.ndim else ())


def fliplr(input):
    return flip(input, 1)


def flipud(input):
    return flip(input, 0)


def roll(input, shifts, dims=None):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    if not shifts:
        raise op_error("roll", "`shifts` required")
    if len(shifts) != len(dims) and (dims or len(shifts) != 1):   # no pairing up by broadcasting
        raise op_error("roll", f"shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    if not dims:   # the flattened tensor, rolled
        return reshape(roll(flatten(input), shifts, 0), input.shape)
    if input._data.size == 0:   # as torch: nothing to move, the dims unchecked
        return input.clone()
    return P.Roll.apply(input, shifts=shifts, axes=tuple(_dim(d, input.ndim, "roll") for d in dims))


def repeat(input, *sizes):
    sizes = _shape_arg(sizes)
    if len(sizes) < input.ndim:
        raise op_error("repeat", f"number of dimensions of repeat dims ({len(sizes)}) can not be smaller "
                                 f"than number of dimensions of tensor ({input.ndim})")
    x = reshape(input, (1,) * (len(sizes) - input.ndim) + input.shape)
    # repeat = expand a new axis before each dim, then merge: (a, b) x (r, s) -> (r, a, s, b) -> (ra, sb)
    inter = []
    for r, s in zip(sizes, x.shape):
        inter += [1, s]
    x = reshape(x, inter)
    target = []
    for r, s in zip(sizes, x.shape[1::2]):
        target += [r, s]
    return reshape(expand(x, target), [r * s for r, s in zip(sizes, x.shape[1::2])])


def tile(input, dims):
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: each element (each slice along `dim`) repeated `repeats` times (an int,
    or a tensor of counts per element; one count serves all). `repeat_interleave(counts)` alone gives
    arange(len(counts)) repeated counts[i] times. `output_size`, the result's length, is checked."""
    from .creation import arange
    op = "repeat_interleave"
    if repeats is None:    # torch.repeat_interleave(repeats): the indices, each repeated
        if not isinstance(input, Tensor) or input.ndim > 1:
            raise op_error(op, f"repeat_interleave only accept 1D vector as repeat (got {describe(input)})")
        repeats, input = input, arange(input.shape[0] if input.ndim else 1, device=input.device)
    if dim is None:
        input, dim = flatten(input), 0
    d = _dim(dim, input.ndim, op)
    n = input.shape[d]
    if isinstance(repeats, Tensor):
        check_same_device(op, input, repeats, "repeats")
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and (repeats.ndim == 0 or n != 1):
        if repeats.dtype.is_floating_point or repeats.dtype.name == "bool":
            raise op_error(op, f"repeats must be an integer tensor, got {describe(repeats)}", NotImplementedError)
        repeats = int(repeats.reshape(()).item())      # one count for every element
    if isinstance(repeats, Tensor):
        if repeats.ndim != 1:
            raise op_error(op, f"repeat_interleave only accept 1D vector as repeat (got {describe(repeats)})")
        if repeats.dtype.is_floating_point or repeats.dtype.name == "bool":
            raise op_error(op, f"repeats must be an integer tensor, got {describe(repeats)}", NotImplementedError)
        if repeats.shape[0] != n:
            raise op_error(op, f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.shape[0]} and input.size({d}) = {n}")
        # index i repeated repeats[i] times: how many running totals of repeats are <= each position
        from .math import cumsum
        if n and bool((repeats < 0).any()):
            raise op_error(op, "repeats can not be negative")
        ends = cumsum(repeats, 0)
        total = int(ends[-1].item()) if n else 0
        if output_size is not None and output_size != total:
            raise op_error(op, f"allocated size does not match required size (output_size={output_size}, "
                               f"sum of repeats {total})")
        idx = P.SearchSorted.apply(ends, arange(total, device=input.device), side="right")
    else:
        repeats = operator.index(repeats)
        if repeats < 0:
            raise op_error(op, f"Repeats must be non-negative, got {repeats}")
        if output_size is not None and output_size != n * repeats:
            raise op_error(op, f"allocated size does not match required size (output_size={output_size}, "
                               f"{n} x {repeats})")
        idx = reshape(expand(unsqueeze(arange(n, device=input.device), 1), (n, repeats)), (-1,))
    return index_select(input, d, idx)


def _tri_mask(input, diagonal, lower):
    """A constant made from the shape: j - i <= diagonal (lower) or >= diagonal, on input's device."""
    from .creation import arange
    n, m = input.shape[-2], input.shape[-1]
    d = arange(m, device=input.device).unsqueeze(0) - arange(n, device=input.device).unsqueeze(1)
    return d <= diagonal if lower else d >= diagonal


def _zero(input):
    return False if input.dtype.name == "bool" else 0   # a bool tensor stays bool, as in torch


def tril(input, diagonal=0):
    from .math import where
    return where(_tri_mask(input, diagonal, True), input, _zero(input))


def triu(input, diagonal=0):
    from .math import where
    return where(_tri_mask(input, diagonal, False), input, _zero(input))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """torch.diagonal: a view where the two dims' strides let their elements be read as one strided run
    (any C- or column-major matrix, and batches of them), so writes go through as in torch; other layouts
    (dims of a permuted batch that do not merge) get a copy, as Ember has no as_strided yet."""
    from .creation import arange
    dim1, dim2 = wrap_dims((dim1, dim2), input.ndim, "diagonal")
    n = builtins.min(input.shape[dim1], input.shape[dim2])
    x = movedim(input, (dim1, dim2), (-2, -1))
    # the diagonal's length, from the shape alone: i = r - min(offset, 0), j = r + max(offset, 0)
    k = builtins.max(0, builtins.min(n, x.shape[-2] + builtins.min(offset, 0), x.shape[-1] - builtins.max(offset, 0)))
    if k and input.device.type != "meta" and x.shape[-2] > 1 and x.stride(-1) == x.shape[-2] * x.stride(-2) \
            and x.stride(-2) != x.shape[-1] * x.stride(-1):
        x, offset = x.mT, -offset   # column-major: the same diagonal of the transpose, whose rows merge
    R, C = x.shape[-2], x.shape[-1]
    if k and input.device.type != "meta" and (R == 1 or x.stride(-2) == C * x.stride(-1)):
        # a view, as torch's: the last two dims merged (a view when their strides allow it), then every
        # (C + 1)-th element from the first diagonal one, so that writes go through (z.diagonal().fill_(1))
        flat = reshape(x, *x.shape[:-2], R * C)
        start = offset if offset >= 0 else -offset * C
        return flat[..., start:start + (k - 1) * (C + 1) + 1:C + 1]
    rows = arange(k, device=input.device)
    i = rows - builtins.min(offset, 0)
    j = rows + builtins.max(offset, 0)
    return x[..., i, j]


def diag(input, diagonal_=0):
    if input.ndim == 1:
        n = input.shape[0] + builtins.abs(diagonal_)
        out = input.new_zeros((n, n))
        from .creation import arange
        i = arange(input.shape[0], device=input.device)
        r, c = (i, i + diagonal_) if diagonal_ >= 0 else (i - diagonal_, i)
        return index_put(out, (r, c), input)
    return diagonal(input, diagonal_)


@autocast_op("fp32")
def trace(input):
    return diagonal(input).sum()


def movedim(input, source, destination):
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise op_error("movedim", f"Invalid source or destination dims: source ({list(src)} dims) should "
                                  f"contain the same number of dims as destination ({list(dst)} dims)")
    src = list(wrap_dims(src, input.ndim, "movedim"))
    dst = list(wrap_dims(dst, input.ndim, "movedim"))
    order = [i for i in range(input.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


__all__ = [  # the public ops, re-exported by `ember`
    "reshape", "view", "contiguous", "clone", "permute", "transpose", "swapaxes", "swapdims", "t",
    "squeeze", "unsqueeze", "expand", "expand_as", "broadcast_to", "broadcast_tensors", "flatten",
    "unflatten", "ravel", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "narrow",
    "split", "chunk", "tensor_split", "unbind", "flip", "fliplr", "flipud", "roll", "repeat",
    "tile", "repeat_interleave", "tril", "triu", "diagonal", "diag", "trace", "movedim", "moveaxis",
    "index_put", "index_select", "gather", "take_along_dim", "take", "scatter", "scatter_add",
    "index_add", "index_fill", "masked_fill", "masked_select", "masked_scatter", "nonzero",
    "argwhere", "sort", "argsort", "msort", "topk", "kthvalue", "unique", "searchsorted",
    "bucketize",
]


# ------------------------------------------------------------------ indexing
def _key(key, input):
    """A NumPy index key from a user key: Tensors become arrays; lists become int arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            if k._device is not input._device and not (k._device.type == "cpu"):
                raise op_error("index", f"indices on {k._device} for a tensor on {input._device}")
            a = k._data if k._device is input._device else to_device(k, input._device)._data
            if a.dtype.kind not in "biu":   # floats, incl. bfloat16 (NumPy kind 'V')
                raise op_error("index", f"tensors used as indices must be long, int, byte or bool "
                                        f"tensors, got {k.dtype.name}", IndexError)
            if a.size == 0 and a.dtype.kind == "b":
                _check_empty_mask(key, k, input)
            out.append(a)
        elif isinstance(k, (list, np.ndarray)):   # host data from the user: copied to the device
            a = host.asarray(k)
            if a.size == 0 and a.dtype.kind == "b":
                _check_empty_mask(key, k, input)
            elif a.size == 0:
                a = a.astype(np.int64)
            if a.dtype.kind not in "biu":
                raise op_error("index", "lists used as indices must hold integers or bools", IndexError)
            xp = array_module(input)
            out.append(a if xp is np else xp.asarray(a))
        else:
            out.append(k)
    return tuple(out)


def _key_inputs(key, input):
    """(template, index tensors): the key with a P.SLOT where each index tensor (or list) goes; the
    tensors are inputs of the indexing primitive, on input's device."""
    if not isinstance(key, tuple):
        key = (key,)
    if not builtins.any(isinstance(k, (Tensor, list, np.ndarray)) for k in key):
        return key, ()
    out, idx = [], []
    for k in key:
        if isinstance(k, Tensor):
            if k._device is not input._device and not (k._device.type == "cpu"):
                raise op_error("index", f"indices on {k._device} for a tensor on {input._device}")
            if k.dtype.category not in (0, 1):   # floats, incl. bfloat16
                raise op_error("index", f"tensors used as indices must be long, int, byte or bool "
                                        f"tensors, got {k.dtype.name}", IndexError)
            if k.dtype.name == "bool" and 0 in k.shape:
                _check_empty_mask(key, k, input)
            idx.append(to_device(k.detach(), input._device))
            out.append(P.SLOT)
        elif isinstance(k, (list, np.ndarray)):   # host data from the user: an input on the device
            from .creation import tensor
            a = host.asarray(k)
            if a.size == 0 and a.dtype.kind == "b":
                _check_empty_mask(key, k, input)
            elif a.size == 0:
                a = a.astype(np.int64)
            if a.dtype.kind not in "biu":
                raise op_error("index", "lists used as indices must hold integers or bools", IndexError)
            idx.append(tensor(a, device=input.device))
            out.append(P.SLOT)
        else:
            out.append(k)
    return tuple(out), tuple(idx)


def _check_empty_mask(key, mask, input):
    """An empty bool mask must still match the dims it covers, as in torch (NumPy takes an empty bool
    array for an empty integer index: x[empty_mask] of a (3, 2) x was (0, 2), not an error)."""
    key = key if isinstance(key, tuple) else (key,)
    kinds = [_kind(k) for k in key]
    rest = input.ndim - builtins.sum(_dims_used(k, kind) for k, kind in zip(key, kinds))
    d = 0
    for k, kind in zip(key, kinds):
        if k is mask:
            break
        d += rest if k is Ellipsis else _dims_used(k, kind)
    shape = tuple(mask.shape)
    if shape != tuple(input.shape[d:d + len(shape)]):
        raise op_error("index", f"the shape of the mask {list(shape)} does not match the shape of the "
                                f"indexed tensor {list(input.shape)} at index {d}", IndexError)


def _kind(k):
    """'int' (an integer, or a 0-d integer tensor or array), 'adv' (an index tensor, array or list, or a
    mask) or 'basic' (a slice, None, Ellipsis)."""
    if isinstance(k, (bool, np.bool_)):
        return "adv"
    if isinstance(k, (int, np.integer)):
        return "int"
    if isinstance(k, Tensor):
        return "int" if k.ndim == 0 and k.dtype.category == 1 else "adv"
    if isinstance(k, np.ndarray):
        return "int" if k.ndim == 0 and k.dtype.kind in "iu" else "adv"
    return "adv" if isinstance(k, list) else "basic"


def _adv_dims(k):
    """(input dims consumed, output dims made) by an advanced index: a mask consumes its ndim and makes
    one; an index array consumes one and makes its ndim."""
    if isinstance(k, (bool, np.bool_)):
        return 0, 1
    a = k if isinstance(k, (Tensor, np.ndarray)) else host.asarray(k)
    return (a.ndim, 1) if a.dtype == np.bool_ or getattr(a.dtype, "name", "") == "bool" else (1, a.ndim)


def _dims_used(k, kind):
    """The input dims one key component consumes (an Ellipsis: none of its own)."""
    if kind == "adv":
        return _adv_dims(k)[0]
    return 0 if k is None or k is Ellipsis else 1


_ADVANCED = (Tensor, list, np.ndarray, bool, np.bool_)


def _torch_key(key, input):
    """(NumPy key, layout) for a user's key: layout is None where NumPy's result is torch's, else the
    (drop, perm) that _to_torch_layout applies. Keys with no index tensor, list or mask (basic slicing,
    the hot path) return at once."""
    if not isinstance(key, tuple):
        return key, None
    for k in key:   # a loop, not any(...): this runs at every slicing
        if isinstance(k, _ADVANCED):
            break
    else:
        return key, None
    kinds = [_kind(k) for k in key]
    if "adv" not in kinds:
        return key, None
    used = builtins.sum(_dims_used(k, kind) for k, kind in zip(key, kinds))
    if used == input.ndim and builtins.any(k is Ellipsis for k in key):
        # an Ellipsis for no dims: NumPy counts it as separating two advanced indices (their dims go
        # first), torch does not
        key = tuple(k for k in key if k is not Ellipsis)
        kinds = [_kind(k) for k in key]
    if "int" not in kinds:
        return key, None
    key, drop, perm = _ints_first(key, kinds, input.ndim - used, input)
    return key, (drop, perm)


def _ints_first(key, kinds, rest, input):
    """torch applies integer indices before the advanced ones; NumPy counts them among the advanced:
    x[0, :, [1, 2]] is (3, 2) in torch and (2, 3) in NumPy, and x[:, [0, 1], 1, [0, 1]] keeps the
    advanced dims in place in torch only. For a key with both kinds: (the NumPy key with each integer as
    a length-1 slice, the NumPy result's dims those slices leave, the permutation of the others into
    torch's order). `kinds`: each component's _kind; `rest`: the dims an Ellipsis stands for."""
    new, labels, d, block = [], [], 0, 0   # labels: one per output dim of a basic component, then "A"s
    for k, kind in zip(key, kinds):
        if kind == "int":
            n = input.shape[d] if d < input.ndim else 0
            v = int(k.item()) if isinstance(k, Tensor) else int(k)
            if not -n <= v < n:
                raise op_error("index", f"index {v} is out of bounds for dimension {d} with size {n}", IndexError)
            v %= n
            new.append(slice(v, v + 1))
            labels.append(("int", d))
            d += 1
        elif kind == "adv":
            new.append(k)
            labels.append("A")
            block = builtins.max(block, _adv_dims(k)[1])
            d += _dims_used(k, kind)
        elif k is Ellipsis:
            new.append(k)
            labels += [("dim", d + i) for i in range(rest)]
            d += rest
        else:
            new.append(k)
            labels.append(("new", len(labels)) if k is None else ("dim", d))
            d += 0 if k is None else 1
    labels += [("dim", i) for i in range(d, input.ndim)]
    pos = [i for i, lab in enumerate(labels) if lab == "A"]
    basic = [lab for lab in labels if lab != "A"]
    adv = [("adv", j) for j in range(block)]

    def layout(together, first):   # the output dims: the advanced block in place or in front
        before = builtins.sum(1 for lab in labels[:first] if lab != "A")
        return basic[:before] + adv + basic[before:] if together else adv + basic
    numpy_order = layout(pos == list(range(pos[0], pos[-1] + 1)), pos[0])
    no_ints = [lab for lab in labels if lab == "A" or lab[0] != "int"]   # torch: the integers are gone
    torch_pos = [i for i, lab in enumerate(no_ints) if lab == "A"]
    torch_order = [lab for lab in layout(torch_pos == list(range(torch_pos[0], torch_pos[-1] + 1)),
                                         labels.index("A")) if lab[0] != "int"]
    drop = tuple(i for i, lab in enumerate(numpy_order) if lab[0] == "int")
    kept = [lab for lab in numpy_order if lab[0] != "int"]
    return tuple(new), drop, tuple(kept.index(lab) for lab in torch_order)


def _to_torch_layout(out, drop, perm):
    """A NumPy-layout result of _ints_first's key in torch's layout: its integer dims gone, permuted."""
    out = reshape(out, tuple(n for i, n in enumerate(out.shape) if i not in drop))
    return out if perm == tuple(range(len(perm))) else permute(out, perm)


def _to_numpy_layout(value, drop, perm):
    """A value for the torch-layout region, for the NumPy-layout one (the inverse of _to_torch_layout;
    the value broadcast against it, not expanded)."""
    if not isinstance(value, Tensor) or value.ndim == 0:
        return value
    n = len(perm)
    v = reshape(value, (1,) * (n - value.ndim) + tuple(value.shape)) if value.ndim < n else value
    if perm != tuple(range(n)):
        v = permute(v, tuple(perm.index(i) for i in range(n)))
    shape = list(v.shape)
    for i in drop:
        shape.insert(i, 1)
    return reshape(v, tuple(shape))


def getitem(input, key):
    key, layout = _torch_key(key, input)
    if layout is not None:
        return _to_torch_layout(getitem(input, key), *layout)
    k, idx = _key_inputs(key, input)
    try:
        out = P.Index.apply(input, *idx, key=k)
    except IndexError as e:
        raise op_error("index", f"{e}; tensor shape {tuple(input.shape)}", IndexError) from None
    return _view_of(out, input) if P._is_basic(k) else out


def index_put(input, indices, values, accumulate=False):
    """Out-of-place x[indices] = values (or += with accumulate)."""
    from .math import _as_tensor
    v = _as_tensor(values, input.dtype, input._device, "index_put")
    indices, layout = _torch_key(indices, input)
    if layout is not None:
        v = _to_numpy_layout(v, *layout)
    k, idx = _key_inputs(indices, input)
    try:
        return P.IndexPut.apply(input, v, *idx, key=k, accumulate=accumulate)
    except (IndexError, ValueError) as e:   # NumPy's ValueError (values that do not broadcast): torch's RuntimeError
        raise op_error("index_put", f"{e}; tensor shape {tuple(input.shape)}, values shape {tuple(v.shape)}",
                       IndexError if isinstance(e, IndexError) else RuntimeError) from None


def setitem(input, key, value):
    from .inplace import inplace, needs_graph, check_leaf
    if needs_graph(input, value):
        inplace(input, lambda s: index_put(s, key, value), "setitem")
        return
    from .inplace import INDEX, assign
    check_leaf(input, "setitem")
    key, layout = _torch_key(key, input)
    if layout is not None:
        if isinstance(value, Tensor):
            value = _to_numpy_layout(value, *layout)
        elif not isinstance(value, (int, float, bool, np.generic)):
            from .creation import tensor
            value = _to_numpy_layout(tensor(value, dtype=input.dtype, device=input.device), *layout)
    k, index = [], []
    for e in _key(key, input):   # index arrays and masks are inputs of Assign; the rest is its key
        if isinstance(e, (int, slice, np.integer)) or e is None or e is Ellipsis:
            k.append(e)
        else:
            k.append(INDEX)
            index.append(Tensor._make(e, input._device))
    if isinstance(value, Tensor):
        src, scalar = to_device(value.detach(), input._device), None
    elif isinstance(value, (int, float, bool, np.generic)):
        src, scalar = None, value
    else:
        src, scalar = Tensor._make(array_module(input).asarray(value), input._device), None
    try:
        assign(input, src, value=scalar, key=tuple(k), index=tuple(index), name="__setitem__")
    except (IndexError, ValueError) as e:   # as index_put
        raise op_error("setitem", f"{e}; tensor shape {tuple(input.shape)}",
                       IndexError if isinstance(e, IndexError) else RuntimeError) from None


def index_select(input, dim, index):
    d = _dim(dim, input.ndim, "index_select")
    check_same_device("index_select", input, index, "index")
    if index.ndim > 1:
        raise op_error("index_select", f"index must be 1-D, got shape {tuple(index.shape)}", IndexError)
    n = input.shape[d] if input.ndim else 1
    if index.numel() and (int(index.max().item()) >= n or int(index.min().item()) < 0):   # torch: no negative
        raise op_error("index_select", f"index out of range in self: indices {index.tolist()} for dim {d} "
                                       f"of size {n} (shape {tuple(input.shape)})", IndexError)
    return getitem(input, (slice(None),) * d + (index.reshape(-1),))


def _index_arr(index, op, input):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}: index must be a Tensor, got {type(index).__name__}")
    check_same_device(op, input, index, "index")
    if index.dtype.category != 1:
        raise op_error(op, f"expected index to be an integer tensor, got {index.dtype.name}")
    return index.detach() if index.dtype.name == "int64" else P.Cast.apply(index.detach(), dtype=np.dtype(np.int64))


def gather(input, dim, index):
    d = _dim(dim, input.ndim, "gather")
    idx = _index_arr(index, "gather", input)
    if idx.ndim != input.ndim:
        raise op_error("gather", f"index {tuple(index.shape)} and input {tuple(input.shape)} must have "
                                 f"the same number of dimensions")
    if any(i > s for j, (i, s) in enumerate(zip(idx.shape, input.shape)) if j != d):
        raise op_error("gather", f"size does not match: index {tuple(index.shape)} must be no larger than "
                                 f"input {tuple(input.shape)} apart from dimension {d}")
    src = input
    if any(i < s for j, (i, s) in enumerate(zip(idx.shape, input.shape)) if j != d):
        src = getitem(input, tuple(slice(None) if j == d else slice(0, i) for j, i in enumerate(idx.shape)))
    try:
        return P.Gather.apply(src, idx, axis=d)
    except (IndexError, ValueError) as e:
        raise op_error("gather", f"{e}; input {tuple(input.shape)}, index {tuple(index.shape)}") from None


def take_along_dim(input, indices, dim=None):
    check_same_device("take_along_dim", input, indices, "indices")
    if dim is None:
        return gather(flatten(input), 0, flatten(indices))
    dim = _dim(dim, input.ndim, "take_along_dim")
    shape = list(np.broadcast_shapes(tuple(s if i != dim % input.ndim else 1 for i, s in enumerate(input.shape)),
                                     tuple(s if i != dim % input.ndim else 1 for i, s in enumerate(indices.shape))))
    shp_in, shp_ix = list(shape), list(shape)
    shp_in[dim % input.ndim] = input.shape[dim]
    shp_ix[dim % input.ndim] = indices.shape[dim]
    if not indices.is_meta and indices.numel() and int(indices.min().item()) < 0:
        # a negative index counts from the end, as numpy.take_along_axis and torch with a dim (not without)
        from .math import where
        indices = where(indices < 0, indices + input.shape[dim], indices)
    return gather(expand(input, shp_in), dim, expand(indices, shp_ix).contiguous())


def take(input, index):
    check_same_device("take", input, index, "index")
    return getitem(flatten(input), index.reshape(-1)).reshape(index.shape)


def _scatter_args(input, dim, index, src, op):
    from .math import _as_tensor
    d = _dim(dim, input.ndim, op)
    idx = _index_arr(index, op, input)
    s = _as_tensor(src, input.dtype, input._device, op)
    if s.ndim == 0:
        s = expand(s, index.shape)
    if any(i > si for i, si in zip(index.shape, s.shape)):
        raise op_error(op, f"index {tuple(index.shape)} is larger than src {tuple(s.shape)}")
    return d, idx, s


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    if src is None:
        src = value
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    d, idx, s = _scatter_args(input, dim, index, src, "scatter")
    try:
        return P.Scatter.apply(input, s, idx, axis=d)
    except IndexError as e:
        raise op_error("scatter", f"{e}; input {tuple(input.shape)}, index {tuple(index.shape)}") from None


def scatter_add(input, dim, index, src):
    d, idx, s = _scatter_args(input, dim, index, src, "scatter_add")
    try:
        return P.ScatterAdd.apply(input, s, idx, axis=d)
    except IndexError as e:
        raise op_error("scatter_add", f"{e}; input {tuple(input.shape)}, index {tuple(index.shape)}") from None


def index_add(input, dim, index, source, *, alpha=1):
    d = _dim(dim, input.ndim, "index_add")
    check_same_device("index_add", input, index, "index")
    check_same_device("index_add", input, source, "source")
    n = input.shape[d] if input.ndim else 1
    if index.numel() and not index.is_meta:   # torch: no negative index here, unlike x[index] (index_put's)
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < 0 or hi >= n:
            if input.ndim <= 1:
                raise op_error("index_add", f"index out of range in self: indices {index.tolist()} for dim {d} "
                                            f"of size {n}", IndexError)
            raise op_error("index_add", f"index {hi if hi >= n else lo} is out of bounds for dimension {d} with "
                                        f"size {n}; input {tuple(input.shape)}, index {tuple(index.shape)}")
    if alpha != 1:
        source = source * alpha
    return index_put(input, (slice(None),) * d + (index,), source, accumulate=True)


def index_fill(input, dim, index, value):
    d = _dim(dim, input.ndim, "index_fill")
    check_same_device("index_fill", input, index, "index")
    return index_put(input, (slice(None),) * d + (index,), value)


def masked_fill(input, mask, value):
    from .math import where
    if isinstance(value, Tensor) and value.ndim:
        raise op_error("masked_fill", f"only supports a 0-dimensional value tensor, got shape {tuple(value.shape)}")
    if mask.dtype.name != "bool":
        raise op_error("masked_fill", f"expected a bool mask, got {mask.dtype.name}")
    check_same_device("masked_fill", input, mask, "mask")
    if not isinstance(value, Tensor):
        value = check_scalar_fits("masked_fill", value, input.dtype)
    from .math import _scalar_tensor
    # out of place, input and mask broadcast as in torch ((3,) with a (2, 3) mask gives (2, 3)); masked_fill_
    # refuses a result larger than self
    out = where(mask, value if isinstance(value, Tensor) else _scalar_tensor(value, input.dtype, input._device),
                input)
    return out.to(input.dtype)


def masked_select(input, mask):
    check_same_device("masked_select", input, mask, "mask")
    a, m = broadcast_tensors(input, mask)
    return getitem(a, m)


def masked_scatter(input, mask, source):
    check_same_device("masked_scatter", input, mask, "mask")
    check_same_device("masked_scatter", input, source, "source")
    m = expand(mask, input.shape)
    n = int(m.sum().item())
    return index_put(input, m, flatten(source)[:n])


def nonzero(input, *, as_tuple=False):
    idx = P.Nonzero.apply(input)                                    # (n, ndim)
    if as_tuple:
        if input.ndim == 0:   # torch treats a 0-d input as 1-d here: one index, 0 or 1 zeros
            return (idx.new_zeros((idx.shape[0],)),)
        return tuple(P.Index.apply(idx, key=(slice(None), i)) for i in range(input.ndim))
    return idx


argwhere = nonzero


_SortResult = collections.namedtuple("_SortResult", ["values", "indices"])


def sort(input, dim=-1, descending=False, stable=False):
    d = _dim(dim, input.ndim, "sort")
    idx = P.ArgSort.apply(input.detach(), axis=d, descending=descending)
    if input.ndim == 0:
        return _SortResult(input * 1, idx)
    return _SortResult(P.Gather.apply(input, idx, axis=d), idx)


def argsort(input, dim=-1, descending=False, stable=False):
    d = _dim(dim, input.ndim, "argsort")
    return P.ArgSort.apply(input.detach(), axis=d, descending=descending)


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    d = _dim(dim, input.ndim, "topk")
    if input.dtype.name == "bool":
        raise op_error("topk", "does not support bool inputs (as torch on CPU); convert with .int() first")
    if not 0 <= k <= (input.shape[d] if input.ndim else 1):
        raise op_error("topk", f"selected index k={k} out of range for dimension {d} of size "
                               f"{input.shape[d] if input.ndim else 1}")
    idx = P.ArgSort.apply(input.detach(), axis=d, descending=largest)
    if input.ndim == 0:
        return _SortResult(input * 1, idx)
    idx = P.Index.apply(idx, key=(slice(None),) * d + (slice(0, k),))
    return _SortResult(P.Gather.apply(input, idx, axis=d), idx)


def kthvalue(input, k, dim=-1, keepdim=False):
    d = _dim(dim, input.ndim, "kthvalue")
    s = sort(input, d)
    v = narrow(s.values, d, k - 1, 1)
    i = narrow(s.indices, d, k - 1, 1)
    return _SortResult(v if keepdim else squeeze(v, d), i if keepdim else squeeze(i, d))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        dim = _dim(dim, input.ndim, "unique")
    x = input.detach()
    values = P.Unique.apply(x, axis=dim, part="values")
    if not (return_inverse or return_counts):
        return values
    out = [values]
    if return_inverse:
        out.append(P.Unique.apply(x, axis=dim, part="inverse"))
    if return_counts:
        out.append(P.Unique.apply(x, axis=dim, part="counts"))
    return tuple(out)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """torch.searchsorted: where each of `values` (a tensor or a number) goes in the last dim of
    `sorted_sequence` (or in its order given by `sorter`, indices that sort it); int64, int32 with
    `out_int32`. `side='right'` is `right=True`."""
    name = "torch.searchsorted()"
    if side is not None:
        if side not in ("left", "right"):
            raise op_error(name, f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise op_error(name, "side and right can't be set to opposites, got side of left while right was True")
        right = side == "right"
    if not isinstance(values, Tensor):
        if sorted_sequence.ndim != 1:
            raise op_error(name, "input value can be a scalar only when boundaries tensor dimension is 1, but we "
                                 f"got boundaries tensor dim({sorted_sequence.ndim}) and input value's dim(0) numel(1)")
        from .creation import tensor
        values = tensor(values, device=sorted_sequence.device)
    check_same_device("searchsorted", sorted_sequence, values, "values", "sorted_sequence")
    seq = sorted_sequence.detach()
    if sorter is not None:
        check_same_device("searchsorted", sorted_sequence, sorter, "sorter", "sorted_sequence")
        if sorter.shape != seq.shape:
            raise op_error(name, f"boundary and sorter must have the same size, but got boundary tensor "
                                 f"{list(seq.shape)} and got sorter tensor {list(sorter.shape)}")
        seq = P.Gather.apply(seq, sorter, axis=seq.ndim - 1)
    out = P.SearchSorted.apply(seq, values.detach(), side="right" if right else "left")
    return P.Cast.apply(out, dtype=np.dtype(np.int32)) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    if isinstance(input, Tensor):
        check_same_device("bucketize", input, boundaries, "boundaries")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ------------------------------------------------------------------ dtype and device
def to_device(input, device):
    from .._device import device as _dev
    d = _dev(device)
    if d is input._device:
        return input
    return P.ToDevice.apply(input, d)


# torch takes `axis=` for `dim=` and `keepdims=` for `keepdim=` wherever a function has a `dim`
add_numpy_names(globals(), __all__)
