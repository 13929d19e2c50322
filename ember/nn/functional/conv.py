"""Convolutions (1-D to 3-D, transposed) and unfold/fold, over the im2col primitives."""
from __future__ import annotations

from ..._errors import op_error
from ..._tensor import Tensor
from ...ops import math as M
from ...ops import primitives as P
from ...ops.layers import Conv, ConvInputGrad, out_size
from ._utils import _ntuple, _check_dim
from ...amp import autocast_op


def _conv_padding(padding, k, dilation, nd):
    """(before, after) pads per spatial dim; 'same' puts the odd extra on the right, as torch."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            total = [d * (kk - 1) for kk, d in zip(k, dilation)]
            return [(t // 2, t - t // 2) for t in total]
        raise op_error("conv", f"padding must be 'valid', 'same', an int or a tuple, got {padding!r}", ValueError)
    p = _ntuple(padding, nd, "padding")
    return [(i, i) for i in p]


def _pad_spatial(x, pads, value=0.0):
    if not any(b or a for b, a in pads):
        return x
    return P.Pad.apply(x, pads=((0, 0), (0, 0)) + tuple(pads), value=value)


def _check_groups(op, input, weight, groups):
    """groups must be positive and split weight's first dim (out channels; in channels when transposed)."""
    if not isinstance(groups, int) or groups <= 0:
        raise op_error(op, f"groups must be a positive int, got {groups!r}")
    if weight.ndim and weight.shape[0] % groups:
        raise op_error(op, f"given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of shape {tuple(weight.shape)} (input "
                           f"{tuple(input.shape)}): {weight.shape[0]} channels cannot be split into "
                           f"{groups} groups")


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, op):
    if input.ndim == nd + 1:   # unbatched
        return _convnd(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    if weight.ndim != nd + 2:
        raise op_error(op, f"expected a {nd + 2}-D weight, got shape {tuple(weight.shape)}", ValueError)
    _check_groups(op, input, weight, groups)
    C_in = input.shape[1]
    if C_in != weight.shape[1] * groups:
        raise op_error(op, f"input {tuple(input.shape)} has {C_in} channels but weight "
                       f"{tuple(weight.shape)} with groups={groups} expects {weight.shape[1] * groups}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    k = tuple(weight.shape[2:])
    if isinstance(padding, str) and padding == "same" and any(s != 1 for s in stride):
        raise op_error(op, "padding='same' is not supported for strided convolutions", ValueError)
    pads = _conv_padding(padding, k, dilation, nd)
    padded = tuple(n + b + a for n, (b, a) in zip(input.shape[2:], pads))
    for i in range(nd):
        if padded[i] < dilation[i] * (k[i] - 1) + 1:
            raise op_error(op, f"padded input size {padded} is smaller than the kernel size {k} (dilated: "
                           f"{tuple(d * (kk - 1) + 1 for d, kk in zip(dilation, k))})")
    x, weight = M.binary_operands(input, weight, op)
    # zero padding and a bias of the same dtype happen inside the primitive (no padded copy, no extra pass)
    zero_pad = tuple(pads) if any(b or a for b, a in pads) else None
    fuse_bias = bias is not None and bias.dtype == x.dtype and bias.device == x.device
    args = (x, weight, bias) if fuse_bias else (x, weight)
    out = Conv.apply(*args, stride=stride, dilation=dilation, groups=groups, padding=zero_pad)
    if bias is not None and not fuse_bias:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out


@autocast_op("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D convolution of input (N, C, L) with weight (O, C/groups, k)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_op("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution of input (N, C, H, W) with weight (O, C/groups, kh, kw).

    >>> F.conv2d(ember.ones(1, 1, 4, 4), ember.ones(2, 1, 3, 3), padding=1).shape
    (1, 2, 4, 4)
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_op("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, op):
    if input.ndim == nd + 1:
        return _conv_transposend(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                 dilation, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    _check_groups(op, input, weight, groups)
    if input.shape[1] != weight.shape[0]:
        raise op_error(op, f"input {tuple(input.shape)} has {input.shape[1]} channels but weight "
                       f"{tuple(weight.shape)} expects {weight.shape[0]}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    padding = _ntuple(padding, nd, "padding")
    output_padding = _ntuple(output_padding, nd, "output_padding")
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= max(s, d):
            raise op_error(op, "output_padding must be smaller than either stride or dilation", ValueError)
    k = weight.shape[2:]
    N = input.shape[0]
    C_out = weight.shape[1] * groups
    reach = tuple((n - 1) * s + d * (kk - 1) + 1 for n, s, d, kk in zip(input.shape[2:], stride, dilation, k))
    full = tuple(r + o for r, o in zip(reach, output_padding))
    if any(f - 2 * p < 1 for f, p in zip(full, padding)):
        raise op_error(op, f"the output would have size {tuple(f - 2 * p for f, p in zip(full, padding))} for "
                           f"input {tuple(input.shape)}, weight {tuple(weight.shape)}, stride {stride}, padding "
                           f"{padding}, output_padding {output_padding}, dilation {dilation}: output size is too "
                           f"small")
    x, weight = M.binary_operands(input, weight, op)
    # the transpose of a conv whose weight (O=C_in, C_out/groups, *k) maps C_out -> C_in channels. The
    # last output_padding positions get no contribution: zeros. The conv gradient places them itself
    # while output_padding < stride (a conv over `full` still has the input's size); past the stride
    # (output_padding < dilation) that conv would be longer, so they are padded on afterwards.
    extra = tuple(o if o >= s else 0 for o, s in zip(output_padding, stride))
    out = ConvInputGrad.apply(x, weight, x_shape=(N, C_out) + tuple(f - e for f, e in zip(full, extra)),
                              stride=stride, dilation=dilation, groups=groups)
    if any(extra):
        from .vision import pad
        out = pad(out, [w for e in reversed(extra) for w in (0, e)])
    if any(padding):
        key = (slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(padding, full))
        out = out[key]
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out


@autocast_op("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


@autocast_op("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input); weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


@autocast_op("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution; weight (C_in, C_out/groups, kd, kh, kw)."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                             "conv_transpose3d")


def _check_sliding(op, k, d, p, s):
    """torch's checks of unfold/fold's kernel_size, dilation, padding and stride (2 ints each)."""
    for name, v, ok in (("kernel size", k, min(k) > 0), ("stride", s, min(s) > 0), ("dilation", d, min(d) > 0)):
        if not ok:
            raise op_error(op, f"{name} should be greater than zero, got {name.replace(' size', '_size')}={v}")
    if min(p) < 0:
        raise op_error(op, f"padding should be non-negative, got padding={p}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), the windows as columns, as torch.nn.functional.unfold.

    >>> F.unfold(ember.arange(9.0).reshape(1, 1, 3, 3), 2).tolist()
    [[[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]]
    """
    _check_dim(input, (4,), "unfold")
    k = _ntuple(kernel_size, 2, "kernel_size")
    d, p, s = _ntuple(dilation, 2, "dilation"), _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride")
    _check_sliding("unfold", k, d, p, s)
    span = tuple(dd * (kk - 1) + 1 for kk, dd in zip(k, d))
    padded = tuple(n + 2 * pp for n, pp in zip(input.shape[2:], p))
    if padded[0] < span[0] or padded[1] < span[1]:
        raise op_error("unfold", f"padded input size {padded} is smaller than the kernel size {k} (dilated: "
                                 f"{span})")
    N, C_in = input.shape[:2]
    x = _pad_spatial(input, [(pp, pp) for pp in p])
    # the windows as strided views, copied into place: no arithmetic, so a NaN or inf stays in the
    # columns of the windows that hold it (an identity-kernel conv would spread 0 * NaN = NaN)
    x = x.unfold(2, span[0], s[0]).unfold(3, span[1], s[1])       # (N, C, oh, ow, span_h, span_w)
    x = x[..., ::d[0], ::d[1]]                                     # (N, C, oh, ow, kh, kw)
    oh, ow = x.shape[2:4]
    return x.permute(0, 1, 4, 5, 2, 3).reshape(N, C_in * k[0] * k[1], oh * ow)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: (N, C*kh*kw, L) -> (N, C, H, W), summing overlapping values, as torch.nn.functional.fold.

    >>> F.fold(ember.ones(1, 4, 4), (3, 3), 2).tolist()
    [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    _check_dim(input, (3,), "fold")
    k = _ntuple(kernel_size, 2, "kernel_size")
    size = _ntuple(output_size, 2, "output_size")
    d, p, s = _ntuple(dilation, 2, "dilation"), _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride")
    _check_sliding("fold", k, d, p, s)
    K = k[0] * k[1]
    if input.shape[1] % K:
        raise op_error("fold", f"input.shape[1]={input.shape[1]} is not divisible by the kernel size {K}")
    C_out = input.shape[1] // K
    blocks = tuple(out_size(n + 2 * pp, kk, ss, dd) for n, kk, ss, dd, pp in zip(size, k, s, d, p))
    if blocks[0] * blocks[1] != input.shape[2]:
        raise op_error("fold", f"expected {blocks[0] * blocks[1]} blocks for output_size {size}, got "
                       f"{input.shape[2]}")
    N = input.shape[0]
    x = input.reshape(N, C_out, k[0], k[1], *blocks)
    full = (N, C_out, size[0] + 2 * p[0], size[1] + 2 * p[1])
    # each kernel offset's values added at their strided positions: sums of the values that land on a
    # position only (an identity-kernel transposed conv would add 0 * NaN from the other offsets)
    out = None
    for i in range(k[0]):
        for j in range(k[1]):
            key = (slice(None), slice(None), slice(i * d[0], i * d[0] + s[0] * (blocks[0] - 1) + 1, s[0]),
                   slice(j * d[1], j * d[1] + s[1] * (blocks[1] - 1) + 1, s[1]))
            part = P.IndexAddInto.apply(x[:, :, i, j], key=key, shape=full)
            out = part if out is None else out + part
    assert out is not None   # the kernel has at least one offset (_check_sliding)
    if any(p):
        out = out[:, :, p[0]:full[2] - p[0], p[1]:full[3] - p[1]]
    return out
