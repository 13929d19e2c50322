"""`ember.nn.functional`: every layer as a function, and the losses.

All composites of Tensor ops (no backward of their own), except convolution and max pooling,
which call the primitives of `ember/ops/layers.py`. Names, arguments and defaults are torch's.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import math as M, shape as S, creation as C
from ..ops import primitives as P
from ..ops.layers import Conv, ConvInputGrad, MaxPool, Gelu, Softmax, LogSoftmax, Normalize, out_size
from ..ops.layers import Embedding as EmbeddingLookup, Linear as LinearPrim, LayerNorm as LayerNormPrim
from .. import random as R

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "batch_norm", "layer_norm", "group_norm", "dropout", "dropout1d", "dropout2d", "embedding",
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "tanh", "sigmoid", "softplus",
    "hardtanh", "logsigmoid", "softmax", "log_softmax", "softmin",
    "scaled_dot_product_attention", "one_hot", "pad", "interpolate", "normalize", "cosine_similarity",
    "pairwise_distance", "unfold", "fold",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "multi_margin_loss",
    "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss",
]


def _ntuple(v, n, name="argument"):
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {tuple(v)}")
        return tuple(int(i) for i in v)
    return (int(v),) * n


def _check_dim(input, dims, op):
    if input.ndim not in dims:
        raise ValueError(f"{op}: expected a {' or '.join(f'{d}-D' for d in dims)} input, "
                         f"got shape {tuple(input.shape)}")


# ============================================================== linear
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y = input @ weight.T + bias, over the last dim of input.

    >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    (2, 4)
    """
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear: input's last dim {input.shape[-1]} != weight's in_features "
                           f"{weight.shape[-1]} (input {tuple(input.shape)}, weight {tuple(weight.shape)})")
    lead = input.shape[:-1]
    x = input if input.ndim == 2 else input.reshape(-1, input.shape[-1])  # one 2-D GEMM, not a batch
    same = x._data.dtype == weight._data.dtype and x._device is weight._device and weight.ndim == 2 and \
        (bias is None or (bias._data.dtype == x._data.dtype and bias._device is x._device and bias.ndim == 1))
    if same:   # the common case: one fused node
        out = LinearPrim.apply(x, weight) if bias is None else LinearPrim.apply(x, weight, bias)
    else:      # mixed dtypes or devices: the general ops promote or explain
        out = M.matmul(x, weight.t())
        if bias is not None:
            out = out + bias
    return out if input.ndim == 2 else out.reshape(*lead, weight.shape[0])


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y_k = x1 @ W_k @ x2 + b_k."""
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = M.einsum("bi,kij,bj->bk", x1, weight, x2)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])


# ============================================================== convolution
def _conv_padding(padding, k, dilation, nd):
    """(before, after) pads per spatial dim; 'same' puts the odd extra on the right, as torch."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            total = [d * (kk - 1) for kk, d in zip(k, dilation)]
            return [(t // 2, t - t // 2) for t in total]
        raise ValueError(f"padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
    p = _ntuple(padding, nd, "padding")
    return [(i, i) for i in p]


def _pad_spatial(x, pads, value=0.0):
    if not any(b or a for b, a in pads):
        return x
    return P.Pad.apply(x, pads=((0, 0), (0, 0)) + tuple(pads), value=value)


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, op):
    if input.ndim == nd + 1:   # unbatched
        return _convnd(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: expected a {nd + 2}-D weight, got shape {tuple(weight.shape)}")
    C_in = input.shape[1]
    if C_in != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: input {tuple(input.shape)} has {C_in} channels but weight "
                           f"{tuple(weight.shape)} with groups={groups} expects {weight.shape[1] * groups}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    k = tuple(weight.shape[2:])
    if isinstance(padding, str) and padding == "same" and any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
    pads = _conv_padding(padding, k, dilation, nd)
    x = _pad_spatial(input, pads)
    for i in range(nd):
        if x.shape[2 + i] < dilation[i] * (k[i] - 1) + 1:
            raise RuntimeError(f"{op}: padded input size {tuple(x.shape[2:])} is smaller than the "
                               f"(dilated) kernel size {k}")
    x, weight = M.binary_operands(x, weight, op)
    out = Conv.apply(x, weight, stride=stride, dilation=dilation, groups=groups)
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D convolution of input (N, C, L) with weight (O, C/groups, k)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution of input (N, C, H, W) with weight (O, C/groups, kh, kw).

    >>> F.conv2d(ember.ones(1, 1, 4, 4), ember.ones(2, 1, 3, 3), padding=1).shape
    (1, 2, 4, 4)
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, op):
    if input.ndim == nd + 1:
        return _conv_transposend(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                 dilation, nd, op).squeeze(0)
    _check_dim(input, (nd + 2,), op)
    if input.shape[1] != weight.shape[0]:
        raise RuntimeError(f"{op}: input {tuple(input.shape)} has {input.shape[1]} channels but weight "
                           f"{tuple(weight.shape)} expects {weight.shape[0]}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    padding = _ntuple(padding, nd, "padding")
    output_padding = _ntuple(output_padding, nd, "output_padding")
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= max(s, d):
            raise ValueError(f"{op}: output_padding must be smaller than either stride or dilation")
    k = weight.shape[2:]
    N = input.shape[0]
    C_out = weight.shape[1] * groups
    full = tuple((n - 1) * s + d * (kk - 1) + 1 + o
                 for n, s, d, kk, o in zip(input.shape[2:], stride, dilation, k, output_padding))
    x, weight = M.binary_operands(input, weight, op)
    # the transpose of a conv whose weight (O=C_in, C_out/groups, *k) maps C_out -> C_in channels
    out = ConvInputGrad.apply(x, weight, x_shape=(N, C_out) + full, stride=stride, dilation=dilation,
                              groups=groups)
    if any(padding):
        key = (slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(padding, full))
        out = out[key]
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input); weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), the windows as columns, as torch.nn.functional.unfold."""
    _check_dim(input, (4,), "unfold")
    k = _ntuple(kernel_size, 2, "kernel_size")
    C_in = input.shape[1]
    K = C_in * k[0] * k[1]
    eye = C.eye(K, dtype=input.dtype, device=input.device).reshape(K, C_in, *k)
    out = conv2d(input, eye, None, stride, padding, dilation)    # (N, C*K, oh, ow)
    return out.reshape(out.shape[0], K, -1)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: (N, C*kh*kw, L) -> (N, C, H, W), summing overlapping values, as torch.nn.functional.fold."""
    _check_dim(input, (3,), "fold")
    k = _ntuple(kernel_size, 2, "kernel_size")
    size = _ntuple(output_size, 2, "output_size")
    d, p, s = _ntuple(dilation, 2), _ntuple(padding, 2), _ntuple(stride, 2)
    K = k[0] * k[1]
    if input.shape[1] % K:
        raise RuntimeError(f"fold: input.shape[1]={input.shape[1]} is not divisible by the kernel size {K}")
    C_out = input.shape[1] // K
    blocks = tuple(out_size(n + 2 * pp, kk, ss, dd) for n, kk, ss, dd, pp in zip(size, k, s, d, p))
    if blocks[0] * blocks[1] != input.shape[2]:
        raise RuntimeError(f"fold: expected {blocks[0] * blocks[1]} blocks for output_size {size}, got "
                           f"{input.shape[2]}")
    N = input.shape[0]
    x = input.reshape(N, C_out * K, *blocks)
    eye = C.eye(C_out * K, dtype=input.dtype, device=input.device).reshape(C_out * K, C_out, *k)
    full = (size[0] + 2 * p[0], size[1] + 2 * p[1])
    out = ConvInputGrad.apply(x, eye, x_shape=(N, C_out) + full, stride=s, dilation=d, groups=1)
    if any(p):
        out = out[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1]]
    return out


# ============================================================== pooling
def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride if stride is not None and stride != [] else kernel_size, nd, "stride")
    p = _ntuple(padding, nd, "padding")
    d = _ntuple(dilation, nd, "dilation")
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise ValueError(f"{op}: pad should be at most half of effective kernel size, got padding={p}, "
                             f"kernel_size={k}")
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
            raise RuntimeError(f"{op}: input {tuple(input.shape)} is too small for kernel {k}, padding {p}")
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
    x = _pad_spatial(input, pads, value=-math.inf)
    out = MaxPool.apply(x, kernel=k, stride=s, dilation=d)
    if not return_indices:
        return out
    # indices into the unpadded input, as torch returns them
    node_index = _maxpool_index(x, k, s, d)
    xp = np if isinstance(node_index, np.ndarray) else __import__("cupy")
    coords = xp.unravel_index(node_index, x.shape[2:])
    coords = [c - b for c, (b, _) in zip(coords, pads)]
    idx = xp.ravel_multi_index(coords, input.shape[2:]).reshape(out.shape)
    return out, Tensor._make(idx.astype(np.int64), input._device)


def _maxpool_index(x, k, s, d):
    prim = MaxPool.__new__(MaxPool)
    prim.kernel, prim.stride, prim.dilation = k, s, d
    prim.forward(x._data)
    return prim.index


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
        # how many window cells fall in the input (or in the input plus its padding)
        xp = np if input._device.type == "cpu" else __import__("cupy")
        region = xp.ones((1, 1) + tuple(input.shape[2:]), dtype=input._data.dtype)
        if count_include_pad:
            region = xp.pad(region, ((0, 0), (0, 0)) + tuple((pp, pp) for pp in p), constant_values=1)
            rest = tuple((0, a - b) for b, a in pads)
        else:
            rest = tuple(pads)
        region = xp.pad(region, ((0, 0), (0, 0)) + rest)
        counts = _conv_arrays(region, ones._data, s, d)
        out = summed / Tensor._make(counts, input._device)
    return out.reshape(N, Cc, *out.shape[2:])


def _conv_arrays(x, w, stride, dilation):
    """Conv on raw arrays, outside autograd (for constant divisors)."""
    prim = Conv.__new__(Conv)
    prim.stride, prim.dilation, prim.groups = stride, dilation, 1
    return prim.forward(x, w)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over kh x kw windows of (N, C, H, W); stride defaults to the kernel size."""
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                       "avg_pool2d")


def _adaptive_matrix(n, m, dtype, device):
    """(n, m) matrix whose column i averages torch's adaptive window i: [floor(i*n/m), ceil((i+1)*n/m))."""
    A = np.zeros((n, m), dtype=dtype.np)
    for i in range(m):
        a, b = (i * n) // m, -(-((i + 1) * n) // m)
        A[a:b, i] = 1.0 / (b - a)
    from ..ops.creation import _from_host
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


# ============================================================== normalisation
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5) -> Tensor:
    """Normalise over every dim but the channel dim (1); updates the running stats in training."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2-D input (N, C, ...), got {tuple(input.shape)}")
    C_ = input.shape[1]
    shape = (1, C_) + (1,) * (input.ndim - 2)
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        n = input.numel() // C_
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{tuple(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.reshape(C_) * momentum)
        if running_var is not None:
            with no_grad():
                running_var.mul_(1 - momentum).add_(var.reshape(C_) * (momentum * n / (n - 1)))
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * M.rsqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalise over the last len(normalized_shape) dims."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    nd = len(normalized_shape)
    if tuple(input.shape[-nd:]) != normalized_shape:
        raise RuntimeError(f"layer_norm: expected input with trailing shape {normalized_shape}, got "
                           f"{tuple(input.shape)}")
    if weight is not None and bias is not None and weight.dtype == input.dtype == bias.dtype:
        return LayerNormPrim.apply(input, weight, bias, n=nd, eps=eps)
    out = Normalize.apply(input, n=nd, eps=eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5) -> Tensor:
    N, C_ = input.shape[:2]
    if C_ % num_groups:
        raise RuntimeError(f"group_norm: {C_} channels are not divisible into {num_groups} groups")
    x = input.reshape(N, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, correction=0)
    out = ((x - mean) * M.rsqrt(var + eps)).reshape(input.shape)
    shape = (1, C_) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# ============================================================== dropout
def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input, shape, p):
    if p == 1.0:
        return C.zeros(shape, dtype=input.dtype, device=input.device)
    keep = R.rand(*shape, dtype=input.dtype, device=input.device) >= p
    return keep.to(input.dtype) * (1.0 / (1.0 - p))


def _apply_inplace(input, out, inplace):
    """`inplace=True`: write into input when no graph is being recorded; otherwise stay out of place."""
    if inplace and not out.requires_grad:
        input._data[...] = out._data
        input._bump_version()
        return input
    return out


def dropout(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training."""
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    return _apply_inplace(input, input * _dropout_mask(input, input.shape, p), inplace)


def _channel_dropout(input, p, training, inplace, op, dims):
    _check_p(p, op)
    if input.ndim not in dims:
        raise RuntimeError(f"{op}: expected a {' or '.join(f'{d}-D' for d in dims)} input, got shape "
                           f"{tuple(input.shape)}")
    if input.ndim == dims[0]:   # unbatched (C, ...): one mask per channel
        return _channel_dropout(input.unsqueeze(0), p, training, False, op, dims).squeeze(0)
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _apply_inplace(input, input * _dropout_mask(input, shape, p), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False) -> Tensor:
    return _channel_dropout(input, p, training, inplace, "dropout1d", (2, 3))


def dropout2d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels (N, C, H, W) -> masks of shape (N, C, 1, 1)."""
    return _channel_dropout(input, p, training, inplace, "dropout2d", (3, 4))


# ============================================================== embedding, one_hot
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; the padding_idx row gets no gradient."""
    if input.dtype.is_floating_point:
        raise RuntimeError(f"embedding: expected an integer index tensor, got {input.dtype.name}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    if max_norm is not None:
        with no_grad():
            rows = np.unique(np.asarray(input._data).reshape(-1))
            w = weight[rows]
            norms = w.norm(norm_type, dim=1, keepdim=True)
            scale = M.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
            weight[rows] = w * scale
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= weight.shape[0]):
        raise IndexError(f"embedding: index out of range: indices must be in [0, {weight.shape[0]}), got "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return EmbeddingLookup.apply(weight, idx=idx, padding_idx=padding_idx)


def one_hot(tensor, num_classes=-1) -> Tensor:
    """(...) integer classes -> (..., num_classes) int64 one-hot."""
    if tensor.dtype.is_floating_point:
        raise RuntimeError("one_hot is only applicable to index tensor")
    a = np.asarray(tensor.cpu()._data)
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        raise RuntimeError(f"one_hot: class values must be in [0, {num_classes}), got [{a.min()}, {a.max()}]")
    out = (a[..., None] == np.arange(num_classes)).astype(np.int64)
    return C.tensor(out, device=tensor.device)


# ============================================================== activations
def relu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, M.relu(input), inplace)


def relu6(input, inplace=False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False) -> Tensor:
    return _apply_inplace(input, M.clamp(input, min_val, max_val), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False) -> Tensor:
    return _apply_inplace(input, M.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False) -> Tensor:
    # expm1 of the clamped input: the unused branch never overflows (no inf * 0 in backward)
    neg = alpha * M.expm1(M.clamp(input, max=0.0))
    return _apply_inplace(input, M.where(input > 0, input, neg), inplace)


def selu(input, inplace=False) -> Tensor:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _apply_inplace(input, scale * elu(input, alpha), inplace)


def gelu(input, approximate="none") -> Tensor:
    """x * Phi(x); approximate='tanh' uses 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate == "none":
        return Gelu.apply(input)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + M.tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.sigmoid(input), inplace)


def softplus(input, beta=1.0, threshold=20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (for stability)."""
    bx = input * beta
    soft = M.log1p(M.exp(M.clamp(bx, max=threshold))) / beta
    return M.where(bx > threshold, input, soft)


def mish(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.tanh(softplus(input)), inplace)


def tanh(input) -> Tensor:
    return M.tanh(input)


def sigmoid(input) -> Tensor:
    return M.sigmoid(input)


def logsigmoid(input) -> Tensor:
    return -softplus(-input)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1   # torch's legacy implicit-dim rule


def _softmax_like(prim, input, dim, dtype):
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"softmax: expected a floating point input, got {input.dtype.name}")
    if input.ndim == 0:
        return prim.apply(input.reshape(1), axis=0).reshape(())
    dim = _softmax_dim(input.ndim) if dim is None else dim
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"softmax: dim {dim} is out of range for a {input.ndim}-D input")
    return prim.apply(input, axis=dim % input.ndim)


def softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return _softmax_like(Softmax, input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return _softmax_like(LogSoftmax, input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return softmax(-input, dim, dtype=dtype)


# ============================================================== attention
_CAUSAL = {}


def _causal_bias(L, S_, like):
    """A constant (L, S) additive mask, -inf above the diagonal; cached (the same one every step)."""
    key = (L, S_, like._data.dtype.str, str(like.device))
    bias = _CAUSAL.get(key)
    if bias is None:
        m = np.triu(np.full((L, S_), -np.inf, dtype=like._data.dtype), 1)
        bias = _CAUSAL[key] = C.tensor(m, device=like.device)
    return bias


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over (..., L, E) queries and (..., S, E) keys/values.

    A boolean `attn_mask` marks with True the positions that take part; a float one is added.
    """
    L, S_ = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    attn = M.matmul(query * scale, key.transpose(-2, -1))        # (..., L, S); scaling q is the cheaper side
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: pass either attn_mask or is_causal, not both")
        attn = attn + _causal_bias(L, S_, attn)
    elif attn_mask is not None:
        if attn_mask.dtype is _dtype.bool:
            attn = attn.masked_fill(M.logical_not(attn_mask), -math.inf)
        else:
            attn = attn + attn_mask
    attn = softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return M.matmul(attn, value)


# ============================================================== shape utilities
def pad(input, pad, mode="constant", value=None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (left_last, right_last, left_prev, right_prev, ...)."""
    if len(pad) % 2:
        raise ValueError(f"pad: padding length must be divisible by 2, got {len(pad)}")
    n = len(pad) // 2
    if n > input.ndim:
        raise ValueError(f"pad: padding for {n} dims given to a {input.ndim}-D input")
    pads = [(0, 0)] * input.ndim
    for i in range(n):
        pads[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if mode == "constant":
        out = input
        if any(b < 0 or a < 0 for b, a in pads):   # negative padding crops
            key = tuple(slice(-b if b < 0 else None, a if a < 0 else None) for b, a in pads)
            out = out[key]
            pads = [(max(b, 0), max(a, 0)) for b, a in pads]
        if not any(b or a for b, a in pads):
            return out
        return P.Pad.apply(out, pads=tuple(pads), value=0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (constant, reflect, replicate, circular)")
    out = input
    for d, (b, a) in enumerate(pads):
        if not (b or a):
            continue
        size = input.shape[d]
        idx = np.arange(-b, size + a)
        if mode == "reflect":
            if b >= size or a >= size:
                raise ValueError(f"pad: reflect padding ({b}, {a}) must be smaller than the dim size {size}")
            idx = np.abs(idx)
            idx = np.where(idx >= size, 2 * (size - 1) - idx, idx)
        elif mode == "replicate":
            idx = np.clip(idx, 0, size - 1)
        else:
            idx = idx % size
        out = out[(slice(None),) * d + (C.tensor(idx, device=input.device),)]
    return out


def _interp_indices_linear(n_in, n_out, scale, align_corners):
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:
    """Resize the spatial dims of (N, C, ...) by `size` or `scale_factor`: nearest, (bi)linear."""
    nd = input.ndim - 2
    if nd < 1:
        raise ValueError(f"interpolate: expected (N, C, ...) input, got {tuple(input.shape)}")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    in_sizes = input.shape[2:]
    if size is not None:
        out_sizes = _ntuple(size, nd, "size")
        scales = [i / o for i, o in zip(in_sizes, out_sizes)]
    else:
        sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * nd
        out_sizes = tuple(int(math.floor(i * f)) for i, f in zip(in_sizes, sf))
        scales = [1.0 / f if not recompute_scale_factor else i / o for f, i, o in zip(sf, in_sizes, out_sizes)]
    if mode in ("nearest",):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
        out = input
        for i, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
            idx = np.minimum(np.floor(np.arange(n_out) * sc).astype(np.int64), n_in - 1)
            out = out[(slice(None),) * (2 + i) + (C.tensor(idx, device=input.device),)]
        return out
    if mode in ("linear", "bilinear", "trilinear"):
        if {"linear": 1, "bilinear": 2, "trilinear": 3}[mode] != nd:
            raise ValueError(f"interpolate: mode {mode!r} needs a {2 + {'linear': 1, 'bilinear': 2}.get(mode, 3)}-D "
                             f"input, got {tuple(input.shape)}")
        out = input
        for i, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
            i0, i1, lam = _interp_indices_linear(n_in, n_out, sc, bool(align_corners))
            d = 2 + i
            lead = (slice(None),) * d
            shape = (n_out,) + (1,) * (input.ndim - d - 1)
            w1 = C.tensor(lam.reshape(shape), dtype=input.dtype, device=input.device)
            a = out[lead + (C.tensor(i0, device=input.device),)]
            b = out[lead + (C.tensor(i1, device=input.device),)]
            out = a + (b - a) * w1
        return out
    raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, linear, bilinear)")


def normalize(input, p=2.0, dim=1, eps=1e-12) -> Tensor:
    """input / max(||input||_p over dim, eps)."""
    n = M.norm(input, p, dim, keepdim=True)
    return input / M.clamp(n, min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8) -> Tensor:
    n1 = M.clamp(M.norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = M.clamp(M.norm(x2, 2, dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False) -> Tensor:
    return M.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


# ============================================================== losses
def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _same_shape(input, target, op):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: target shape {tuple(target.shape)} differs from input shape "
                         f"{tuple(input.shape)}; they would broadcast silently and give a wrong loss. "
                         f"Reshape the target (e.g. target.view_as(input)).")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """Mean squared error; input and target must have the same shape."""
    _same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    _same_shape(input, target, "l1_loss")
    return _reduce(M.abs(input - target), reduction, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Tensor:
    _same_shape(input, target, "smooth_l1_loss")
    d = M.abs(input - target)
    if beta == 0.0:
        return _reduce(d, reduction, "smooth_l1_loss")
    loss = M.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Tensor:
    _same_shape(input, target, "huber_loss")
    d = M.abs(input - target)
    loss = M.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "huber_loss")


def _class_target(input, target, op):
    """Check an integer class target against (N, C, d1...) or (C,) input."""
    if target.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected an integer class-index target, got {target.dtype.name}")
    exp = (input.shape[0],) + tuple(input.shape[2:]) if input.ndim >= 2 else ()
    if tuple(target.shape) != exp:
        raise ValueError(f"{op}: expected target shape {exp} for input shape {tuple(input.shape)}, got "
                         f"{tuple(target.shape)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean") -> Tensor:
    """-input[n, target[n]] (input holds log-probabilities (N, C, ...)), weighted, ignoring ignore_index."""
    _class_target(input, target, "nll_loss")
    if input.ndim == 1:
        return nll_loss(input.unsqueeze(0), target.unsqueeze(0), weight, None, ignore_index, None, reduction)
    n_cls = input.shape[1]
    t = target._data
    valid = t != ignore_index
    if ((t[valid] < 0) | (t[valid] >= n_cls)).any():
        bad = t[valid][(t[valid] < 0) | (t[valid] >= n_cls)][0]
        raise IndexError(f"nll_loss: target {int(bad)} is out of bounds for {n_cls} classes")
    safe = np.where(valid, t, 0).astype(np.int64)
    picked = M.neg(input.gather(1, Tensor._make(safe[:, None], target._device)).squeeze(1))   # (N, ...)
    w = _class_weights(weight, safe, valid, input)
    loss = picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction, "nll_loss")


def _class_weights(weight, safe, valid, like):
    """Per-element weight w[target] (0 where ignored), as a constant tensor."""
    xp = np if isinstance(safe, np.ndarray) else __import__("cupy")
    w = weight.detach()._data[safe] if weight is not None else xp.ones(safe.shape, dtype=like._data.dtype)
    w = xp.where(valid, w, 0).astype(like._data.dtype)
    return Tensor._make(w, like._device)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0) -> Tensor:
    """log_softmax over dim 1 then nll_loss; also class-probability targets and label smoothing.

    >>> round(F.cross_entropy(ember.zeros(2, 4), ember.tensor([0, 3])).item(), 4)   # log(4)
    1.3863
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, dim)
    n_cls = input.shape[dim]
    wshape = (n_cls,) + (1,) * (input.ndim - dim - 1)
    if target.dtype.is_floating_point:   # class probabilities, same shape as input
        _same_shape(input, target, "cross_entropy")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_cls
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(wshape)
        loss = -terms.sum(dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // n_cls) if input.numel() else loss.sum()
        return _reduce(loss, reduction, "cross_entropy")
    _class_target(input, target, "cross_entropy")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return nll
    # smoothing term: -sum_c w_c logp_c per element, masked like nll
    terms = logp * weight.reshape(wshape) if weight is not None else logp
    smooth = -terms.sum(dim)
    t = target._data
    valid = t != ignore_index
    smooth = smooth * Tensor._make(valid.astype(input._data.dtype), input._device)
    if reduction == "mean":
        if weight is not None:
            safe = np.where(valid, t, 0).astype(np.int64)
            denom = _class_weights(weight, safe, valid, input).sum()
        else:
            denom = float(valid.sum())
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_cls)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) on probabilities p; the logs are clamped at -100, as torch."""
    _same_shape(input, target, "binary_cross_entropy")
    a = np.asarray(input.detach().cpu()._data)
    if a.size and ((a < 0) | (a > 1)).any():
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    log_p = M.clamp(M.log(input), min=-100.0)
    log_1mp = M.clamp(M.log(1 - input), min=-100.0)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable expression; pos_weight scales the positive term."""
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    # log(1 + exp(-x)) computed as log1p(exp(-|x|)) + max(-x, 0): never overflows
    softplus_neg = M.log1p(M.exp(-M.abs(input))) + M.relu(-input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False) -> Tensor:
    """target * (log target - input), input being log-probabilities; reduction 'batchmean' divides by N."""
    _same_shape(input, target, "kl_div")
    if log_target:
        loss = M.exp(target) * (target - input)
    else:
        # xlogy(t, t) - t * input: 0 log 0 counts as 0
        safe = M.where(target > 0, target, 1.0)
        loss = M.where(target > 0, target * M.log(safe), 0.0) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction, "kl_div")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean") -> Tensor:
    """Multi-class hinge: sum_{i != y} max(0, margin - x[y] + x[i])^p / C (times weight[y])."""
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got {p}")
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    _class_target(input, target, "multi_margin_loss")
    n_cls = input.shape[1]
    t = Tensor._make(target._data.astype(np.int64)[:, None], target._device)
    x_y = input.gather(1, t)                                       # (N, 1)
    z = M.relu(margin - x_y + input)
    if p == 2:
        z = z * z
    not_y = Tensor._make((np.arange(n_cls)[None, :] != target._data[:, None]).astype(input._data.dtype),
                         input._device)
    z = z * not_y
    if weight is not None:
        z = z * weight.detach()[target].unsqueeze(1)
    loss = z.sum(1) / n_cls
    return _reduce(loss, reduction, "multi_margin_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean") -> Tensor:
    _same_shape(input1, target, "margin_ranking_loss")
    _same_shape(input2, target, "margin_ranking_loss")
    return _reduce(M.relu(-target * (input1 - input2) + margin), reduction, "margin_ranking_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1; max(0, cos - margin) where it is -1."""
    if input1.shape != input2.shape:
        raise ValueError(f"cosine_embedding_loss: input shapes {tuple(input1.shape)} and "
                         f"{tuple(input2.shape)} differ")
    if tuple(target.shape) != tuple(input1.shape[:-1]):
        raise ValueError(f"cosine_embedding_loss: target shape {tuple(target.shape)} should be "
                         f"{tuple(input1.shape[:-1])} for inputs {tuple(input1.shape)}")
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    mag = M.sqrt(((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps))
    cos = dot / mag
    pos = 1 - cos
    neg = M.relu(cos - margin)
    loss = M.where(target == 1, pos, 0.0) + M.where(target == -1, neg, 0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean") -> Tensor:
    if not (anchor.shape == positive.shape == negative.shape):
        raise ValueError(f"triplet_margin_loss: anchor {tuple(anchor.shape)}, positive "
                         f"{tuple(positive.shape)} and negative {tuple(negative.shape)} must have one shape")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = M.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(M.relu(d_ap - d_an + margin), reduction, "triplet_margin_loss")
