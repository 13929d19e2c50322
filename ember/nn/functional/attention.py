"""Scaled dot-product attention."""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._errors import check_same_device, op_error
from ..._tensor import Tensor
from ...backends import array_module
from ...ops import math as M
from ...ops.attention import Attention
from .activation import softmax
from .dropout import dropout


_CAUSAL = {}


def _fits_one_node(q, k, v):
    """Whether q, k, v take the one-primitive path (ops/attention.py): floats of one dtype on one device,
    (..., L, E), (..., S, E), (..., S, Ev) with the same leading dims. Anything else (broadcast batch
    dims, mixed dtypes) runs the composite below, which also gives the errors."""
    if not (q.dtype is k.dtype is v.dtype) or not q.dtype.is_floating_point or q.ndim < 2:
        return False
    if k.ndim != q.ndim or v.ndim != q.ndim or q._device != k._device or q._device != v._device:
        return False
    qs, ks, vs = q.shape, k.shape, v.shape
    return qs[:-2] == ks[:-2] == vs[:-2] and qs[-1] == ks[-1] and ks[-2] == vs[-2] \
        and q.numel() > 0 and k.numel() > 0 and v.numel() > 0


def _causal_bias(L, S_, like):
    """A constant (L, S) additive mask, -inf above the diagonal; cached (the same one every step)."""
    key = (L, S_, like._data.dtype.str, str(like.device))
    bias = _CAUSAL.get(key)
    if bias is None:
        if like._device.type == "meta":   # shapes only: no values to fill (the planner's dry runs)
            from ...backends import meta
            m = meta.allocate((L, S_), like._data.dtype)
        else:
            xp = array_module(like)
            m = xp.triu(xp.full((L, S_), -np.inf, dtype=like._data.dtype), 1)
        bias = _CAUSAL[key] = Tensor._make(m, like._device)
    return bias


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over (..., L, E) queries and (..., S, E) keys/values.

    A boolean `attn_mask` marks with True the positions that take part; a float one is added.
    """
    L, S_ = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if attn_mask is None and dropout_p == 0.0 and _fits_one_node(query, key, value):
        return Attention.apply(query, key, value, scale=float(scale), causal=bool(is_causal))[0]
    attn = M.matmul(query * scale, key.transpose(-2, -1))        # (..., L, S); scaling q is the cheaper side
    if is_causal:
        if attn_mask is not None:
            raise op_error("scaled_dot_product_attention", "pass either attn_mask or is_causal, not both",
                           ValueError)
        attn = attn + _causal_bias(L, S_, attn)
    elif attn_mask is not None:
        check_same_device("scaled_dot_product_attention", query, attn_mask, "attn_mask", "query")
        if attn_mask.dtype is _dtype.bool:
            attn = attn.masked_fill(M.logical_not(attn_mask), -math.inf)
        else:
            attn = attn + attn_mask
    # torch: a row whose scores are all -inf (every key masked) attends to nothing and gives zeros (and
    # zero gradients), not softmax's 0/0 = NaN; its scores are zeroed before the softmax so that the
    # softmax's backward stays finite there too
    dead = M.eq(attn.detach().amax(-1, keepdim=True), -math.inf)          # (..., L, 1)
    attn = softmax(M.where(dead, 0.0, attn), -1)
    attn = M.where(dead, 0.0, attn)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return M.matmul(attn, value)
