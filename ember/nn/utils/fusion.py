"""Fold an eval-mode BatchNorm into the conv or linear layer before it (torch.nn.utils.fusion)."""
from __future__ import annotations

import copy

from ..._tensor import Tensor
from ...ops import creation as C
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None, transpose: bool = False):
    """(weight, bias) Parameters of the conv that computes bn(conv(x)) with bn's running statistics."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = C.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = C.ones_like(bn_rm)
    if bn_b is None:
        bn_b = C.zeros_like(bn_rm)
    rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)   # out channels: dim 1 if transposed
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` whose output equals bn(conv(x)) in eval mode (one layer instead of two at inference).

    >>> conv, bn = ember.nn.Conv2d(3, 4, 3).eval(), ember.nn.BatchNorm2d(4).eval()
    >>> x = ember.randn(1, 3, 5, 5)
    >>> bool(ember.allclose(ember.nn.utils.fuse_conv_bn_eval(conv, bn)(x), bn(conv(x)), atol=1e-6))
    True
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval: the BatchNorm has no running statistics "
                             "(track_running_stats=False)")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w: Tensor, bn_b: Tensor):
    """(weight, bias) Parameters of the Linear that computes bn(linear(x)) with bn's running statistics."""
    if linear_b is None:
        linear_b = C.zeros_like(bn_rm)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` whose output equals bn(linear(x)) in eval mode."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or bn.num_features must "
                             "be 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_linear_bn_eval: the BatchNorm has no running statistics")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
