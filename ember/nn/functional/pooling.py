"""Max, average and adaptive average pooling."""
from __future__ import annotations

import math

from ..._errors import op_error
from ..._tensor import Tensor
from ...backends import host
from ...ops import math as M, creation as C
from ...ops.layers import Conv, MaxPool, MaxPoolIndex
from ...ops.primitives import Gather, Pad
from ._utils import _ntuple, _check_dim
from .conv import _pad_spatial


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride if stride is not None and stride != [] else kernel_size, nd, "stride")
    p = _ntuple(padding, nd, "padding")
    d = _ntuple(dilation, nd, "dilation")
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
    k, s, p, d, pads = _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    if not return_indices:   # one primitive: maxima over strided views, the gradient to the first maximum
        return MaxPool.apply(input, kernel=k, stride=s, dilation=d,
                             padding=tuple(pads) if any(b or a for b, a in pads) else None)
    x = _pad_spatial(input, pads, value=-math.inf)
    N, Cc = x.shape[:2]
    index = MaxPoolIndex.apply(x.detach(), kernel=k, stride=s, dilation=d)      # (N, C, *out)
    # the maxima: x gathered at those positions (its gradient scatters back to them)
    out = Gather.apply(x.reshape(N, Cc, -1), index.reshape(N, Cc, -1), axis=2).reshape(index.shape)
    if not return_indices:
        return out
    # indices into the unpadded input, as torch returns them
    return out, MaxPoolIndex.apply(x.detach(), kernel=k, stride=s, dilation=d, pads=tuple(pads))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over kh x kw windows of (N, C, H, W); stride defaults to the kernel size."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op):
    if input.ndim == nd + 1:
        return _avg_poolnd(input.unsqueeze(0), kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    k, s, p, d, pads = _pool_geometry(input, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    N, Cc = input.shape[:2]
    x = _pad_spatial(input.reshape(N * Cc, 1, *input.shape[2:]), pads)
    ones = C.ones((1, 1) + k, dtype=input.dtype, device=input.device)
    summed = Conv.apply(x, ones, stride=s, dilation=d, groups=1)
    if divisor_override:
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


def _adaptive_matrix(n, m, dtype, device):
    """(n, m) matrix whose column i averages torch's adaptive window i: [floor(i*n/m), ceil((i+1)*n/m))."""
    A = host.zeros((n, m), dtype.np)
    for i in range(m):
        a, b = (i * n) // m, -(-((i + 1) * n) // m)
        A[a:b, i] = 1.0 / (b - a)
    from ...ops.creation import _from_host
    return _from_host(A, device)


def _adaptive_avg_poolnd(input, output_size, nd, op):
    _check_dim(input, (nd + 1, nd + 2), op)
    size = _ntuple(output_size, nd, "output_size") if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    out = input
    for i, m in enumerate(size):   # windows are products of 1-D windows: average one dim at a time
        dim = input.ndim - nd + i
        n = input.shape[dim]
        m = n if m is None else m
        if m == n:
            continue
        A = _adaptive_matrix(n, m, input.dtype, input.device)
        out = M.matmul(out.transpose(dim, -1), A).transpose(dim, -1)
    return out


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    return _adaptive_avg_poolnd(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average pooling to a fixed output size (N, C, *output_size), windows as torch chooses them."""
    return _adaptive_avg_poolnd(input, output_size, 2, "adaptive_avg_pool2d")
