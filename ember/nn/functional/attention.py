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
from ...amp import autocast_op
from ...autograd.function import Function

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_CAUSAL: dict[tuple, Tensor] = {}


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


class _ZeroDeadRows(Function):
    """where(dead, 0, scores) whose gradient passes unchanged (where's is 0 at the rows it replaced): a
    dead row's scores are all -inf, and no composite maps them to finite values with a gradient that
    reaches them (-inf * 0 is NaN)."""

    @staticmethod
    def forward(ctx, scores, dead):
        return M.where(dead, 0.0, scores)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


@autocast_op("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over (..., L, E) queries and (..., S, E) keys/values.

    A boolean `attn_mask` marks with True the positions that take part; a float one is added.
    `enable_gqa`: keys and values with fewer heads (dim -3) than the queries serve groups of them.
    """
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3 \
            and (key.shape[-3] != query.shape[-3] or value.shape[-3] != query.shape[-3]):
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise op_error("scaled_dot_product_attention", f"Number of heads in key and value must divide the number "
                           f"of heads in query (query {tuple(query.shape)}, key {tuple(key.shape)}, value "
                           f"{tuple(value.shape)})")
        key = key.repeat_interleave(hq // hk, -3)
        value = value.repeat_interleave(hq // hv, -3)
    L, S_ = query.shape[-2], key.shape[-2]
    if scale is None:   # E = 0: every score is an empty sum, 0 at any scale (torch's 1/sqrt(0) never multiplies)
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
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
    # torch: a row whose scores are all -inf (every key masked, or -inf from the inputs) attends to nothing
    # and gives zeros, not softmax's 0/0 = NaN. Its scores are zeroed before the softmax (uniform there, so
    # its backward stays finite) and its weights multiplied by 0 after: the row's score gradient is then
    # softmax's backward on weights 0, 0 * (g - sum(g p)) as torch's, 0 unless g is NaN or infinite there
    # (a NaN value it reads; where() in place of either step would give 0 whatever g)
    dead = M.eq(attn.detach().amax(-1, keepdim=True), -math.inf)          # (..., L, 1)
    attn = softmax(_ZeroDeadRows.apply(attn, dead), -1)
    attn = attn * M.logical_not(dead).to(attn.dtype)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return M.matmul(attn, value)


def _additive_mask(mask, dtype):
    """A boolean mask (True = may NOT attend, torch's MHA convention) as 0 / -inf; float masks pass."""
    if mask is None:
        return None
    if mask.dtype is _dtype.bool:
        from ...ops import creation as C
        return C.zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)
    return mask.to(dtype)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """nn.MultiheadAttention's computation as a function of its weights (torch's signature).

    Sequence-first: query (L, N, E), key/value (S, N, Ek/Ev), or unbatched (L, E), (S, E). Masks: `attn_mask`
    (L, S) or (N*num_heads, L, S), `key_padding_mask` (N, S); True (bool) means "do not attend", float masks
    are added to the scores. `static_k`/`static_v` (N*num_heads, S, head_dim) replace the projected keys or
    values. Returns the output (L, N, E) and, with `need_weights`, the attention weights (N, L, S) averaged
    over heads (or (N, num_heads, L, S)); `is_causal` is a hint that `attn_mask` is causal (it is required).

    >>> E, H = 4, 2
    >>> x = ember.randn(3, 1, E)
    >>> out, w = F.multi_head_attention_forward(x, x, x, E, H, ember.randn(3 * E, E), ember.zeros(3 * E),
    ...                                         None, None, False, 0.0, ember.randn(E, E), ember.zeros(E))
    >>> out.shape, w.shape
    ((3, 1, 4), (1, 3, 3))
    """
    from ...ops import creation as C, shape as S
    from .linear import linear
    from .vision import pad
    op = "multi_head_attention_forward"
    batched = query.ndim == 3
    if query.ndim not in (2, 3):
        raise op_error(op, f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                           f"query tensor of shape {tuple(query.shape)}", AssertionError)
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise op_error(op, f"query, key and value must all be {query.ndim}-D, got shapes {tuple(query.shape)}, "
                           f"{tuple(key.shape)} and {tuple(value.shape)}", AssertionError)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if E != embed_dim_to_check:
        raise op_error(op, f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}", AssertionError)
    if E % num_heads:
        raise op_error(op, f"embed_dim {E} not divisible by num_heads {num_heads}", AssertionError)
    if key.shape[:2] != value.shape[:2]:
        raise op_error(op, f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                           f"{tuple(value.shape[:2])}", AssertionError)
    if is_causal and attn_mask is None:
        raise op_error(op, "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    H, hd = num_heads, E // num_heads
    # the input projections: (L, N, E), (S, N, E), (S, N, E)
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias[:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:]
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise op_error(op, "use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                               "v_proj_weight is None", AssertionError)
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise op_error(op, "use_separate_proj_weight is False but in_proj_weight is None", AssertionError)
        wq, wk, wv = in_proj_weight[:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:]
    if not use_separate_proj_weight and query is key and key is value:   # self-attention: one GEMM
        q, k, v = S.chunk(linear(query, in_proj_weight, in_proj_bias), 3, -1)
    else:
        q = linear(query, wq, bq)
        k = linear(key, wk, bk) if static_k is None else None
        v = linear(value, wv, bv) if static_v is None else None
    if attn_mask is not None:
        want = (L, key.shape[0]) if attn_mask.ndim == 2 else (N * H, L, key.shape[0])
        if attn_mask.ndim not in (2, 3) or tuple(attn_mask.shape) != want:
            raise op_error(op, f"The shape of the {attn_mask.ndim}D attn_mask is {tuple(attn_mask.shape)}, but "
                               f"should be {want}.")
    mask = _additive_mask(attn_mask, q.dtype)
    kpm = _additive_mask(key_padding_mask, q.dtype)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise op_error(op, "bias cannot be added to static key or value", AssertionError)
        k = S.cat([k, bias_k.expand(1, N, E)], 0)
        v = S.cat([v, bias_v.expand(1, N, E)], 0)
        mask = pad(mask, (0, 1)) if mask is not None else None
        kpm = pad(kpm, (0, 1)) if kpm is not None else None
    elif (bias_k is None) != (bias_v is None):
        raise op_error(op, "bias_k and bias_v must both be given or both be None", AssertionError)
    # (L, N, E) -> (N, H, L, hd); static keys and values come as (N*H, S, hd)
    q = q.reshape(L, N, H, hd).permute(1, 2, 0, 3)
    k = _heads(k, static_k, N, H, hd, "static_k", op)
    v = _heads(v, static_v, N, H, hd, "static_v", op)
    if add_zero_attn:
        k = S.cat([k, C.zeros(N, H, 1, hd, dtype=k.dtype, device=k.device)], 2)
        v = S.cat([v, C.zeros(N, H, 1, hd, dtype=v.dtype, device=v.device)], 2)
        mask = pad(mask, (0, 1)) if mask is not None else None
        kpm = pad(kpm, (0, 1)) if kpm is not None else None
    Sk = k.shape[2]
    if kpm is not None and tuple(kpm.shape) != (N, Sk):
        raise op_error(op, f"expecting key_padding_mask shape of {(N, Sk)}, but got {tuple(key_padding_mask.shape)}",
                       AssertionError)
    if mask is not None and mask.ndim == 3:                                # (N*H, L, S) -> (N, H, L, S)
        mask = mask.reshape(N, H, L, Sk)
    if kpm is not None:
        kpm = kpm.reshape(N, 1, 1, Sk)
        mask = kpm if mask is None else mask + kpm
    scores = M.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))      # (N, H, L, S)
    if mask is not None:
        scores = scores + mask
    attn = softmax(scores, -1)
    if dropout_p > 0.0 and training:
        attn = dropout(attn, dropout_p, True)
    out = M.matmul(attn, v)                                                # (N, H, L, hd)
    out = linear(out.permute(2, 0, 1, 3).reshape(L, N, E), out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = attn.mean(1) if average_attn_weights else attn               # (N, L, S) or (N, H, L, S)
    return out, (weights if batched else weights.squeeze(0))


def _heads(t, static, N, H, hd, name, op):
    """Projected keys or values (S, N, H*hd), or the given static ones (N*H, S, hd), as (N, H, S, hd)."""
    if static is None:
        return t.reshape(t.shape[0], N, H, hd).permute(1, 2, 0, 3)
    if static.ndim != 3 or static.shape[0] != N * H or static.shape[2] != hd:
        raise op_error(op, f"expecting {name} of shape ({N * H}, S, {hd}), but got {tuple(static.shape)}",
                       AssertionError)
    return static.reshape(N, H, static.shape[1], hd)
