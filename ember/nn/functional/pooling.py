"""Max, average, power-average (LP) and adaptive pooling over 1, 2 or 3 spatial dims, and max unpooling.

One code path per kind for every number of spatial dims: max pooling is the N-D MaxPool primitive
(ember/ops/layers.py), average pooling an N-D Conv with a kernel of ones, and the rest composites.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._errors import op_error
from ..._tensor import Tensor
from ...backends import host
from ...ops import math as M, creation as C, shape as S
from ...ops.layers import Conv, Embedding, MaxPool, MaxPoolIndex
from ...ops.primitives import Gather, Pad, Scatter
from ._utils import _ntuple, _check_dim
from .conv import _pad_spatial
from ...amp import autocast_op

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride if stride is not None and stride != [] else kernel_size, nd, "stride")
    p = _ntuple(padding, nd, "padding")
    d = _ntuple(dilation, nd, "dilation")
    if min(k) <= 0:
        raise op_error(op, f"kernel size should be greater than zero, got kernel_size={k}")
    if min(s) <= 0:
        raise op_error(op, f"stride should be greater than zero, got stride={s}")
    if min(d) <= 0:
        raise op_error(op, f"dilation should be greater than zero, got dilation={d}")
    if min(p) < 0:
        raise op_error(op, f"pad must be non-negative, got padding={p}")
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise op_error(op, f"pad should be at most half of effective kernel size, got padding={p}, "
                           f"kernel_size={k}", ValueError)
    pads = []
    for n, kk, ss, pp, dd in zip(input.shape[-nd:], k, s, p, d):
        span = dd * (kk - 1) + 1
        if ceil_mode:
            o = -(-(n + 2 * pp - span) // ss) + 1
            if (o - 1) * ss >= n + pp:   # the last window must start inside the input or left pad
                o -= 1
        else:
            o = (n + 2 * pp - span) // ss + 1
        if o < 1:
            raise op_error(op, f"input {tuple(input.shape)} is too small for kernel {k}, padding {p}")
        extra = max((o - 1) * ss + span - (n + 2 * pp), 0)
        pads.append((pp, pp + extra))
    return k, s, p, d, pads


def _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    if input.ndim == nd + 1:
        out = _max_poolnd(input.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                          return_indices, nd, op)
        return tuple(o.squeeze(0) for o in out) if return_indices else out.squeeze(0)
    _check_dim(input, (nd + 2,), op)
    if 0 in input.shape[1:]:   # torch's check (padding could otherwise make windows of nothing)
        raise op_error(op, f"expected the input's non-batch dimensions to have positive length, got shape "
                           f"{tuple(input.shape)}")
    k, s, p, d, pads = _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    # one primitive: maxima over strided views, the gradient to the first maximum (the last NaN)
    out = MaxPool.apply(input, kernel=k, stride=s, dilation=d,
                        padding=tuple(pads) if any(b or a for b, a in pads) else None)
    if not return_indices:
        return out
    # the positions of those maxima in the unpadded input, as torch returns them
    x = _pad_spatial(input.detach(), pads, value=-math.inf)
    return out, MaxPoolIndex.apply(x, kernel=k, stride=s, dilation=d, pads=tuple(pads))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over kh x kw windows of (N, C, H, W); stride defaults to the kernel size."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


@autocast_op("fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over kd x kh x kw windows of (N, C, D, H, W) or (C, D, H, W); stride defaults to the kernel size.

    >>> F.max_pool3d(ember.randn(1, 2, 4, 6, 6), 2).shape
    (1, 2, 2, 3, 3)
    """
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d")


# torch's *_with_indices forms: the pooled values and their indices whatever return_indices says
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1, "max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2, "max_pool2d")


@autocast_op("fp32")
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """max_pool3d's values and indices (flat positions in each (D, H, W) volume, as torch's).

    >>> out, idx = F.max_pool3d_with_indices(ember.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    >>> out.tolist(), idx.tolist()
    ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3, "max_pool3d")


def _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op):
    if input.ndim == nd + 1:
        return _avg_poolnd(input.unsqueeze(0), kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    if divisor_override is not None and divisor_override == 0:
        raise op_error(op, "divisor must be not zero, got divisor_override=0")
    k = _ntuple(kernel_size, nd, "kernel_size")
    if nd == 3 and any(n < kk for n, kk in zip(input.shape[2:], k)):   # torch checks this in 3-D only
        raise op_error(op, f"input image {tuple(input.shape[2:])} is smaller than kernel size {k}")
    k, s, p, d, pads = _pool_geometry(input, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    N, Cc = input.shape[:2]
    x = _pad_spatial(input.reshape(N * Cc, 1, *input.shape[2:]), pads)
    ones = C.ones((1, 1) + k, dtype=input.dtype, device=input.device)
    summed = Conv.apply(x, ones, stride=s, dilation=d, groups=1)
    if divisor_override is not None:
        out = summed / divisor_override
    elif count_include_pad and not ceil_mode:
        out = summed / math.prod(k)
    else:
        # how many window cells fall in the input (or in the input plus its padding): a constant from
        # the shapes, counted by the same Conv on a region of ones
        region = C.ones((1, 1) + tuple(input.shape[2:]), dtype=input.dtype, device=input.device)
        if count_include_pad:
            region = Pad.apply(region, pads=((0, 0), (0, 0)) + tuple((pp, pp) for pp in p), value=1)
            rest = tuple((0, a - b) for b, a in pads)
        else:
            rest = tuple(pads)
        region = Pad.apply(region, pads=((0, 0), (0, 0)) + rest, value=0)
        counts = Conv.apply(region, ones, stride=s, dilation=d, groups=1)
        out = summed / counts
    return out.reshape(N, Cc, *out.shape[2:])


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over kh x kw windows of (N, C, H, W); stride defaults to the kernel size."""
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                       "avg_pool2d")


@autocast_op("fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over kd x kh x kw windows of (N, C, D, H, W) or (C, D, H, W); stride defaults to the kernel size.

    >>> F.avg_pool3d(ember.ones(1, 1, 3, 3, 3), 3, padding=1, stride=2).shape
    (1, 1, 2, 2, 2)
    """
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                       "avg_pool3d")


def _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, nd, op):
    """torch's formula: (sum of x**p over each window) ** (1/p), the sum as an average times the window
    size; max pooling of |x| at p = inf. torch passes the sum through sign(s) * relu(|s|): the identity
    whose gradient is 0 at s == 0 (not the root's inf: relu selects) and g * sign(NaN)**2 = g * 0 at a
    NaN sum (0 for a finite g, NaN for the root's NaN g at p != 1); here a where and a mask of s == s."""
    if norm_type == math.inf:
        return _max_poolnd(input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd, op)
    if norm_type == -math.inf:
        return -_max_poolnd(-input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd, op)
    out = _avg_poolnd(input.pow(norm_type), kernel_size, stride, 0, ceil_mode, True, None, nd, op)
    size = math.prod(_ntuple(kernel_size, nd, "kernel_size"))
    out = M.where(out == 0, out.detach(), out * (out == out).to(out.dtype))
    return out.mul(size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """Power-average pooling: (sum of x**norm_type over each window) ** (1 / norm_type).

    >>> F.lp_pool2d(ember.full((1, 1, 4, 4), 2.0), 2, 2).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


def _adaptive_output_size(input, output_size, nd, op):
    """output_size as nd ints: one int for every dim, or nd entries where None keeps that input size."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise op_error(op, f"output_size must be an int or a tuple of {nd} ints (None: the input's "
                               f"size), got {tuple(output_size)}")
        size = tuple(output_size)
    else:
        size = (output_size,) * nd
    if nd == 1 and size[0] is None:   # torch keeps a size only in 2-D and 3-D
        raise op_error(op, f"output_size must be an int or a tuple of one int, got {output_size}", TypeError)
    size = tuple(n if m is None else int(m) for n, m in zip(input.shape[-nd:], size))
    if min(size) < 0:
        raise op_error(op, f"output_size must be non-negative, got {size}")
    if min(input.shape[-nd:]) == 0:
        raise op_error(op, f"expected input to have non-zero size for non-batch dimensions, got shape "
                           f"{tuple(input.shape)}")
    return size


def _adaptive_windows(n, m):
    """torch's adaptive windows of n positions into m: [(floor(i*n/m), ceil((i+1)*n/m)) for i < m]."""
    return [((i * n) // m, -(-((i + 1) * n) // m)) for i in range(m)]


def _adaptive_avg_dim(x, dim, m):
    """x averaged over torch's m adaptive windows along `dim`. Each sum reads only its window's values:
    an averaging matrix would multiply a NaN or inf outside a window by 0 and spread NaN."""
    from ...ops.creation import _from_host
    n = x.shape[dim]
    lead, rest = x.shape[:dim], x.shape[dim + 1:]
    if m == 0:
        return x[(slice(None),) * dim + (slice(0, 0),)]
    if n % m == 0:   # equal windows of k side by side
        k = n // m
        if k <= 3:   # a sum of k strided slices (NumPy reduces a short middle axis slowly)
            key = (slice(None),) * dim
            total = x[key + (slice(0, None, k),)]
            for j in range(1, k):
                total = total + x[key + (slice(j, None, k),)]
            return total / k
        return x.reshape(*lead, m, k, *rest).mean(dim + 1)
    if m % n == 0:   # each value repeated m // n times
        return x.unsqueeze(dim + 1).expand(*lead, n, m // n, *rest).reshape(*lead, m, *rest)
    # windows of two widths, w and w + 1: the dim first, as the rows of a table; each window's first w
    # rows looked up (an embedding lookup, whose backward sums rows by sorting, not scatter-adding) and
    # summed, then its last row where it has one (a where, not a multiplication by 0)
    windows = _adaptive_windows(n, m)
    w = min(b - a for a, b in windows)
    rows = x.movedim(dim, 0).reshape(n, -1)                                          # (n, R)
    taps = _from_host(host.array([[a + j for j in range(w)] for a, _ in windows], np.int64), x.device)   # (m, w)
    total = Embedding.apply(rows, taps, padding_idx=None).sum(1)                     # (m, R)
    for j in range(w, max(b - a for a, b in windows)):
        has = _from_host(host.array([[b - a > j] for a, b in windows]), x.device)               # (m, 1)
        tap = _from_host(host.array([min(a + j, n - 1) for a, _ in windows], np.int64), x.device)
        total = total + M.where(has, Embedding.apply(rows, tap, padding_idx=None), total.new_zeros(()))
    scale = _from_host(host.array([[1.0 / (b - a)] for a, b in windows], x.dtype.np), x.device)
    return (total * scale).reshape(m, *lead, *rest).movedim(0, dim)


def _adaptive_avg_poolnd(input, output_size, nd, op):
    _check_dim(input, (nd + 1, nd + 2), op)
    size = _adaptive_output_size(input, output_size, nd, op)
    out = input
    # windows are products of 1-D windows: average one dim at a time, the most shrunk first
    dims = sorted(range(nd), key=lambda i: size[i] / input.shape[input.ndim - nd + i])
    for i in dims:
        if size[i] != input.shape[input.ndim - nd + i]:
            out = _adaptive_avg_dim(out, input.ndim - nd + i, size[i])
    return out


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    return _adaptive_avg_poolnd(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average pooling to a fixed output size (N, C, *output_size), windows as torch chooses them."""
    return _adaptive_avg_poolnd(input, output_size, 2, "adaptive_avg_pool2d")


@autocast_op("fp32")
def adaptive_avg_pool3d(input, output_size) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to (..., *output_size); None keeps a size.

    >>> F.adaptive_avg_pool3d(ember.randn(2, 3, 5, 7, 9), (1, None, 4)).shape
    (2, 3, 1, 7, 4)
    """
    return _adaptive_avg_poolnd(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_window_table(spatial, size):
    """(prod(size), K): the flat positions in a plane of shape `spatial` of each adaptive window, row-major,
    each window padded to the widest one (K positions) by repeating its last position: a repeat changes
    neither the maximum nor the first position holding it."""
    nd = len(spatial)
    table = host.zeros((1,) * (2 * nd), np.int64)
    step, width = 1, 1
    for d in reversed(range(nd)):
        windows = _adaptive_windows(spatial[d], size[d])
        k = max((b - a for a, b in windows), default=1)
        pos = host.array([[min(a + j, b - 1) for j in range(k)] for a, b in windows], np.int64)   # (m, k)
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = size[d], k
        table = table + pos.reshape(shape) * step            # broadcast: (m_1, ..., m_nd, k_1, ..., k_nd)
        step, width = step * spatial[d], width * k
    return table.reshape(math.prod(size), width)


def _adaptive_max_poolnd(input, output_size, return_indices, nd, op):
    _check_dim(input, (nd + 1, nd + 2), op)
    if input.ndim == nd + 1:
        out = _adaptive_max_poolnd(input.unsqueeze(0), output_size, return_indices, nd, op)
        return tuple(o.squeeze(0) for o in out) if return_indices else out.squeeze(0)
    size = _adaptive_output_size(input, output_size, nd, op)
    N, Cc = input.shape[:2]
    from ...ops.creation import _from_host
    table = _from_host(_adaptive_window_table(input.shape[2:], size), input.device)   # (M, K)
    x = input.reshape(N, Cc, math.prod(input.shape[2:]))                             # (N, C, L)
    # each window's candidates, the first maximum among them, and its flat position (no gradient)
    cand = x.detach()[:, :, table]                                                    # (N, C, M, K)
    first = M.argmax(cand, dim=-1, keepdim=True)                                      # (N, C, M, 1)
    nan = M.isnan(Gather.apply(cand, first, axis=3))
    if not input.is_meta and M.any(nan).item():   # a window holding NaN: its last NaN, as torch's
        last = table.shape[1] - 1 - M.argmax(M.isnan(cand).flip(-1).to(_dtype.int8), dim=-1, keepdim=True)
        first = M.where(nan, last, first)
    index = Gather.apply(table.expand(N, Cc, *table.shape), first, axis=3).reshape(N, Cc, table.shape[0])
    # the maxima: x gathered there (the gradient scatters back, adding where windows overlap)
    out = Gather.apply(x, index, axis=2).reshape(N, Cc, *size)
    return (out, index.reshape(N, Cc, *size)) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed output size, over torch's windows [floor(i*H/h), ceil((i+1)*H/h)) per dim;
    the indices are flat positions in each (H, W) plane. None in output_size keeps that input size.

    >>> out, idx = F.adaptive_max_pool2d(ember.arange(12.0).reshape(1, 3, 4), (2, 3), return_indices=True)
    >>> out.tolist(), idx.tolist()
    ([[[5.0, 6.0, 7.0], [9.0, 10.0, 11.0]]], [[[5, 6, 7], [9, 10, 11]]])
    """
    return _adaptive_max_poolnd(input, output_size, return_indices, 2, "adaptive_max_pool2d")


@autocast_op("fp32")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 2, "adaptive_max_pool2d")


@autocast_op("fp32")
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 3, "adaptive_max_pool3d")


def _unpool_output_size(input, k, s, p, output_size, op):
    """torch's: (in - 1) * stride + kernel - 2 * padding per dim, or output_size (its last nd entries
    when it has nd + 2) when it lies strictly within a stride of that."""
    nd = len(k)
    default = tuple((n - 1) * ss + kk - 2 * pp for n, kk, ss, pp in zip(input.shape[-nd:], k, s, p))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)
        if len(size) == nd + 2:
            size = size[2:]
        if len(size) != nd:
            raise op_error(op, f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                               f"has a length of '{len(size)}'", ValueError)
        for d in range(nd):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not lo < size[d] < hi:
                raise op_error(op, f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} '
                                   f'and {hi})', ValueError)
    for d in range(nd):
        if size[d] < 0:
            raise op_error(op, f"output_size must contain non-negative spatial dimensions, but got "
                               f"output_size[{d}]={size[d]}", ValueError)
    return tuple(int(n) for n in size)


def _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, nd, op):
    _check_dim(input, (nd + 1, nd + 2), op)
    if not isinstance(indices, Tensor) or indices.dtype.name != "int64":
        raise op_error(op, f"elements in indices should be type int64, got "
                           f"{indices.dtype.name if isinstance(indices, Tensor) else type(indices).__name__}")
    if tuple(indices.shape) != tuple(input.shape):
        raise op_error(op, f"expected shape of indices to be same as that of the input tensor "
                           f"({tuple(input.shape)}) but got indices tensor with shape: {tuple(indices.shape)}")
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride if stride is not None else kernel_size, nd, "stride")
    p = _ntuple(padding, nd, "padding")
    size = _unpool_output_size(input, k, s, p, output_size, op)
    lead = tuple(input.shape[:-nd])                                   # (N, C) or (C,)
    planes = math.prod(lead)
    n = math.prod(size)
    if n == 0:   # an empty output (a default size of 0): torch returns it without reading the indices
        return C.zeros((*lead, *size), dtype=input.dtype, device=input.device) + input.sum() * 0
    idx = indices.reshape(planes, math.prod(input.shape[-nd:])).detach()
    bad = (idx < 0) | (idx >= n)
    if bool(bad.any().item()):
        raise op_error(op, f"found an invalid max index: {int(idx[bad].reshape(-1)[0].item())} (output volumes "
                           f"are of size {'x'.join(map(str, size))})")
    # each value written at its index, zeros elsewhere; the gradient gathers from the same positions
    zeros = C.zeros((planes, n), dtype=input.dtype, device=input.device)
    out = Scatter.apply(zeros, input.reshape(idx.shape), idx, axis=1)
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


@autocast_op("fp32")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: each value put back at its index, zeros elsewhere.

    >>> out, idx = F.max_pool2d(ember.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2).tolist()
    [[[[0.0, 0.0, 0.0, 0.0], [0.0, 5.0, 0.0, 7.0], [0.0, 0.0, 0.0, 0.0], [0.0, 13.0, 0.0, 15.0]]]]
    """
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


@autocast_op("fp32")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def _fractional_starts(sample, n, out, k):
    """torch's generate_intervals for every plane at once: the first input position of each of `out`
    windows of size `k` along an axis of `n`, from one uniform sample per plane (N, C) in the input's dtype:
    int((i + u) * alpha) - int(u * alpha), alpha = (n - k) / (out - 1), and the last window at n - k."""
    N, Cc = sample.shape
    last = C.full((N, Cc, 1), n - k, dtype=_dtype.int64, device=sample.device)
    if out <= 1:
        return last[:, :, :out]
    alpha = C.full((), (n - k) / (out - 1), dtype=sample.dtype, device=sample.device)   # rounded as torch's
    i = C.arange(out - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)                                                                # (N, C, 1)
    starts = ((i + u) * alpha).to(_dtype.int64) - (u * alpha).to(_dtype.int64)          # (N, C, out - 1)
    return S.cat([starts, last], dim=-1)                                                    # (N, C, out)


def _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nd, op):
    _check_dim(input, (nd + 1, nd + 2), op)
    if input.ndim == nd + 1:
        out = _fractional_max_poolnd(input.unsqueeze(0), kernel_size, output_size, output_ratio, True,
                                     _random_samples, nd, op)
        out = tuple(o.squeeze(0) for o in out)
        return out if return_indices else out[0]
    if output_size is None and output_ratio is None:
        raise op_error(op, "requires specifying either an output_size or an output_ratio", ValueError)
    k = _ntuple(kernel_size, nd, "kernel_size")
    spatial = tuple(input.shape[2:])
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        if len(ratio) != nd:
            raise op_error(op, f"output_ratio must be a number or a tuple of {nd}, got {tuple(ratio)}", ValueError)
        size = tuple(int(n * r) for n, r in zip(spatial, ratio))
    else:
        size = _ntuple(output_size, nd, "output_size")
    if min(k) <= 0:
        raise op_error(op, f"kernel_size must be greater than zero, got kernel_size={k}")
    if min(size) < 0:
        raise op_error(op, f"output_size must be non-negative, got {size}")
    N, Cc = input.shape[:2]
    if Cc == 0 or 0 in spatial:
        raise op_error(op, f"expected input to have non-zero size for non-batch dimensions, got shape "
                           f"{tuple(input.shape)}")
    for name, n, o, kk in zip(("height", "width") if nd == 2 else ("time", "height", "width"), spatial, size, k):
        if o + kk - 1 > n or (nd == 3 and o + kk - 1 == n):   # torch's 3-D check is strict
            raise op_error(op, f"pool {name} {kk} too large relative to input {name} {n} (output {name} {o})")
    if not input.dtype.is_floating_point:
        raise op_error(op, f"expected a floating point input, got {input.dtype.name}", TypeError)
    if _random_samples is None:
        from ...random import rand
        samples = rand(N, Cc, nd, dtype=input.dtype, device=input.device)
    else:
        samples = _random_samples
        if samples.ndim != 3 or samples.shape[2] != nd:
            raise op_error(op, f"_random_samples must have shape (N, C, {nd}), got {tuple(samples.shape)}")
        if samples.shape[0] < N:
            raise op_error(op, f"_random_samples has {samples.shape[0]} rows, fewer than the input's batch {N}")
        if samples.shape[1] != Cc:
            raise op_error(op, f"_random_samples has {samples.shape[1]} channels, the input {Cc}")
        if samples.dtype != input.dtype:
            raise op_error(op, f"expected _random_samples of the input's dtype {input.dtype.name}, got "
                               f"{samples.dtype.name}")
        samples = samples.detach()[:N]
    # torch's samples are ordered (W, H) in 2-D and (T, H, W) in 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    # the flat position in the input plane of every (output position, kernel offset): (N, C, M, K)
    index = C.zeros((N, Cc) + (1,) * (2 * nd), dtype=_dtype.int64, device=input.device)
    step = 1
    for d in reversed(range(nd)):
        starts = _fractional_starts(samples[:, :, order[d]], spatial[d], size[d], k[d])       # (N, C, out_d)
        pos = starts.unsqueeze(-1) + C.arange(k[d], device=input.device)                      # (N, C, out_d, k_d)
        shape = [N, Cc] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = size[d], k[d]
        index = index + pos.reshape(shape) * step
        step *= spatial[d]
    index = index.reshape(N, Cc, math.prod(size), math.prod(k))
    x = input.reshape(N, Cc, math.prod(spatial))                                               # (N, C, L)
    # the first maximum of each window (no gradient), its flat position, and x gathered there
    candidates = Gather.apply(x.detach(), index.reshape(N, Cc, index.shape[2] * index.shape[3]), axis=2)
    candidates = candidates.reshape(index.shape)                                               # (N, C, M, K)
    first = M.argmax(candidates, dim=-1, keepdim=True)                                         # (N, C, M, 1)
    where = Gather.apply(index, first, axis=3).reshape(N, Cc, math.prod(size))
    out = Gather.apply(x, where, axis=2).reshape(N, Cc, *size)
    return (out, where.reshape(N, Cc, *size)) if return_indices else out


@autocast_op("fp32")
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling (Graham, 2014), as torch's: windows of `kernel_size` at pseudo-random starts,
    one uniform sample per plane and axis (`_random_samples` (N, C, 2) in (W, H) order, or drawn from Ember's
    generator), giving `output_size` or `input size * output_ratio` outputs; indices are flat positions in
    each (H, W) plane.

    >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
    >>> F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=ember.full((1, 1, 2), 0.5)).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, return_indices, _random_samples,
                                  2, "fractional_max_pool2d")


@autocast_op("fp32")
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (T, H, W), as torch's; `_random_samples` is (N, C, 3) in (T, H, W) order."""
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, return_indices, _random_samples,
                                  3, "fractional_max_pool3d")


@autocast_op("fp32")
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, True, _random_samples, 2,
                                  "fractional_max_pool2d")


@autocast_op("fp32")
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, True, _random_samples, 3,
                                  "fractional_max_pool3d")
