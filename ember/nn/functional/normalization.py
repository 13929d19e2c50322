"""Batch, layer, group, RMS and local response normalisation."""
from __future__ import annotations

import numpy as np

from ..._errors import op_error, user_frame
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M
from ...ops.layers import Normalize
from ...ops.layers import BatchNorm as BatchNormPrim
from ..._dtype import float32, float64
from ...ops.layers import LayerNorm as LayerNormPrim


def _mixed(input, *params) -> bool:
    """torch's mixed-dtype CPU kernels: a float16/bfloat16 input with float32 parameters (autocast's
    bfloat16 Linear into a float32 LayerNorm) is normalised in float32 and returned in its own dtype."""
    return input.dtype.itemsize == 2 and input.dtype.is_floating_point and \
        any(p is not None and p.dtype is float32 for p in params)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5) -> Tensor:
    """Normalise over every dim but the channel dim (1); updates the running stats in training."""
    if _mixed(input, running_mean, running_var, weight, bias):
        return batch_norm(input.float(), running_mean, running_var, weight, bias, training, momentum,
                          eps).to(input.dtype)
    if input.ndim < 2:
        raise op_error("batch_norm", f"expected at least 2-D input (N, C, ...), got {tuple(input.shape)}",
                       ValueError)
    C_ = input.shape[1]
    shape = (1, C_) + (1,) * (input.ndim - 2)
    dims = (0,) + tuple(range(2, input.ndim))
    fused = training and input.dtype in (float32, float64) and all(
        t is None or t.dtype == input.dtype for t in (weight, bias))
    if fused:
        # one fused primitive (and one fused gradient, torch's formula: a composite's gradient is
        # inf - inf = NaN where torch's is +-inf at an infinite weight): statistics, normalisation, scale
        # and shift; a missing weight is ones, a missing bias zeros
        if weight is None:
            weight = input.new_ones(C_)
        if bias is None:
            bias = input.new_zeros(C_)
        n = input.numel() // max(C_, 1)
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{tuple(input.shape)} (at {user_frame()})")
        out, mean, var = BatchNormPrim.apply(input, weight, bias, eps=float(eps))
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean * momentum)
            if running_var is not None:
                # n and n - 1 as two constants, not momentum * n / (n - 1): under
                # ember.compile(dynamic=True) each is a count of the batch (jit/dynamic.py)
                running_var.mul_(1 - momentum).add_(var * n / (n - 1) * momentum)
        return out
    if not training and weight is not None and bias is not None:
        # eval: a per-channel scale and shift from the running stats, two passes over the input
        scale = weight * M.rsqrt(running_var + eps)
        shift = bias - running_mean * scale
        return input * scale.reshape(shape) + shift.reshape(shape)
    if training:
        n = input.numel() // C_
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{tuple(input.shape)} (at {user_frame()})")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.reshape(C_) * momentum)
        if running_var is not None:
            with no_grad():
                running_var.mul_(1 - momentum).add_(var.reshape(C_) * n / (n - 1) * momentum)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    # x * alpha + beta, as torch's kernels (they differ from (x - mean) * alpha + b at an infinite w or b)
    alpha = M.rsqrt(var + eps)
    if weight is not None:
        alpha = alpha * weight.reshape(shape)
    beta = -(mean * alpha) if bias is None else bias.reshape(shape) - mean * alpha
    return input * alpha + beta


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalise over the last len(normalized_shape) dims."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    nd = len(normalized_shape)
    if tuple(input.shape[-nd:]) != normalized_shape:
        raise op_error("layer_norm", f"expected input with trailing shape {normalized_shape}, got "
                       f"{tuple(input.shape)}")
    if _mixed(input, weight, bias):
        return layer_norm(input.float(), normalized_shape, weight, bias, eps).to(input.dtype)
    if weight is not None and bias is not None and weight.dtype == input.dtype == bias.dtype:
        return LayerNormPrim.apply(input, weight, bias, n=nd, eps=float(eps))
    out = Normalize.apply(input, n=nd, eps=float(eps))
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None) -> Tensor:
    """input / sqrt(mean(input^2) + eps) over the last len(normalized_shape) dims, times `weight`.

    As torch: float16 and bfloat16 are computed in float32 and the result has input's dtype; eps=None
    is the machine epsilon of that computation dtype (float32's for float16/bfloat16, not theirs).

    >>> F.rms_norm(ember.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    nd = len(normalized_shape)
    if nd == 0:
        raise op_error("rms_norm", "expected normalized_shape to have at least one element, got ()")
    if input.ndim < nd or tuple(input.shape[-nd:]) != normalized_shape:
        raise op_error("rms_norm", f"expected input with trailing shape {normalized_shape}, got "
                                   f"{tuple(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise op_error("rms_norm", f"expected weight of shape normalized_shape {normalized_shape}, got "
                                   f"{tuple(weight.shape)}")
    if not input.dtype.is_floating_point:
        raise op_error("rms_norm", f"expected a floating point input, got {input.dtype.name}")
    x = input.float() if input.dtype.itemsize == 2 else input   # float16/bfloat16: in float32, as torch
    if eps is None:
        eps = float(np.finfo(x.dtype.np).eps)
    dims = tuple(range(-nd, 0))
    out = x * M.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out if out.dtype is input.dtype else out.to(input.dtype)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0) -> Tensor:
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels)^beta (AlexNet's LRN).

    The window of channel c is c - size//2 .. c + (size-1)//2, zero beyond the channel ends, and the mean
    always divides by `size` (torch's avg_pool with count_include_pad).

    >>> F.local_response_norm(ember.ones(1, 3, 2), 2, alpha=1.0, beta=1.0, k=1.0)[0, :, 0]
    tensor([0.6667, 0.5000, 0.5000])
    """
    if input.ndim < 3:
        raise op_error("local_response_norm", f"expected 3D or higher dimensionality input (got {input.ndim} "
                                              f"dimensions, shape {tuple(input.shape)})", ValueError)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise op_error("local_response_norm", f"size must be a positive int, got {size!r}")
    if input.numel() == 0:
        return input
    from .vision import pad
    C_ = input.shape[1]
    sq = pad(input * input, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2))   # (N, C + size - 1, ...)
    window = sq[:, 0:C_]
    for i in range(1, size):
        window = window + sq[:, i:i + C_]
    div = (window * (alpha / size) + k) ** beta
    return input / div


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5) -> Tensor:
    if input.dtype.itemsize == 2 and input.dtype.is_floating_point:   # float16/bfloat16: in float32, as
        up = (lambda t: None if t is None else t.float())            # torch (half the error of bfloat16)
        return group_norm(input.float(), num_groups, up(weight), up(bias), eps).to(input.dtype)
    N, C_ = input.shape[:2]
    if C_ % num_groups:
        raise op_error("group_norm", f"{C_} channels are not divisible into {num_groups} groups")
    x = input.reshape(N, num_groups, input.numel() // max(N * num_groups, 1))   # not -1: N may be 0
    mean = x.mean(-1, keepdim=True)                                      # (N, G, 1)
    var = x.var(-1, keepdim=True, correction=0)
    # x * alpha + beta per (sample, channel), as torch's kernel (it differs from (x - mean) * alpha + b
    # where w or b is infinite); two passes over x
    alpha = M.rsqrt(var + eps)                                           # (N, G, 1)
    if weight is not None:
        alpha = alpha * weight.reshape(1, num_groups, C_ // num_groups)  # (N, G, C/G)
    beta = -(mean * alpha) if bias is None else bias.reshape(1, num_groups, C_ // num_groups) - mean * alpha
    shape = (N, C_) + (1,) * (input.ndim - 2)
    if alpha.shape[-1] == 1:   # no weight: one scale per group
        return (x * alpha + beta).reshape(input.shape)
    return input * alpha.reshape(shape) + beta.reshape(shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims, as torch: batch_norm on the input seen as
    (1, N*C, ...), with the running stats and the affine parameters repeated N times; the running
    stats then take the mean of their N updated copies."""
    if input.ndim < 3:
        raise op_error("instance_norm", f"expected (N, C, *spatial) input, got {tuple(input.shape)}", ValueError)
    N, C_ = input.shape[:2]
    if use_input_stats and input.numel() // max(N * C_, 1) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{tuple(input.shape)} (at {user_frame()})")
    rep = (lambda t: None if t is None else t.repeat(N))
    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(input.reshape((1, N * C_) + tuple(input.shape[2:])), rm, rv, rep(weight), rep(bias),
                     use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            for mine, copies in ((running_mean, rm), (running_var, rv)):
                if mine is not None and copies is not None:   # None together
                    mine.copy_(copies.reshape(N, C_).mean(0))
    return out.reshape(input.shape)

