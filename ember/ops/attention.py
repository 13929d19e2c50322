"""Scaled dot-product attention as one primitive and its gradient (`F.scaled_dot_product_attention`
without a mask or dropout, causal or not).

    Attention(q, k, v)             = (o, p)          p = softmax(q @ k^T * scale [+ causal mask]),  o = p @ v
    AttentionGrad(q, k, v, p, g)   = (dq, dk, dv)    dv = p^T g,  ds = p * (g v^T - rowsum(p * g v^T)) * scale,
                                                     dq = ds k,   dk = ds^T q

q is (..., L, E), k (..., S, E), v (..., S, Ev) with the same leading dims. The causal mask is torch's
`is_causal`: query i sees keys j <= i (top-left aligned, so every row sees key 0). The probabilities p
are the second output, kept for the backward (the composite kept them too).

As a composite of MatMul, Mul, Add, Softmax and MatMul, attention is seven nodes forward and about
twelve backward, with copies between them; as one node the CPU kernel (backends/cpu_kernels.py) runs
the two products in BLAS with a fused scale/mask/softmax pass between them and writes o (and dq, dk,
dv) straight into the (..., L, H, E) layout a transformer reshapes them to next. Every other device
runs `forward` below (written once against `xp`).

Double backward: with `create_graph` the backward is built from Tensor ops (differentiable again);
the first-order backward is the `AttentionGrad` primitive, which is not differentiable.
"""
from __future__ import annotations

import numpy as np

from ..autograd.function import Primitive
from ..backends import array_module
from ._infer import _shape_error
from .layers import _wide   # 2-byte floats computed in float32; apply casts the outputs back

__all__ = ["Attention", "AttentionGrad", "AttentionGradPacked", "causal_mask"]


def causal_mask(xp, L, S):
    """Boolean (L, S), True where key j is hidden from query i (j > i): torch's `is_causal`."""
    return xp.triu(xp.ones((L, S), dtype=bool), 1)


class Attention(Primitive):
    """(o, p): p = softmax(q @ k^T * scale, masked above the diagonal when causal), o = p @ v."""
    attrs = {"scale": float, "causal": bool}
    multi_output = True
    saved_outputs = (1,)   # the softmax statistics; backward does not read the output
    saves_inputs = True
    _materialize = False   # backward gets None, not zeros, for p's gradient (p is not returned to users)

    def forward(self, q, k, v):
        xp = array_module(q)
        q, k, v = _wide(q), _wide(k), _wide(v)
        s = xp.matmul(q, xp.swapaxes(k, -1, -2))
        s *= s.dtype.type(self.scale)
        if self.causal:   # where, not a boolean-mask store: the same call on every array module
            s = xp.where(causal_mask(xp, s.shape[-2], s.shape[-1]), s.dtype.type(-np.inf), s)
        m = s.max(axis=-1, keepdims=True)
        s -= xp.where(m == -np.inf, 0, m)   # a row of -inf scores attends to nothing: zeros, as torch
        p = xp.exp(s, out=s)
        t = p.sum(axis=-1, keepdims=True)
        p /= xp.where(t == 0, 1, t)
        return xp.matmul(p, v), p

    def backward(self, g, gp=None):
        from ..autograd.grad_mode import STATE
        q, k, v = self.saved_tensors
        if not STATE.enabled:   # first order: one primitive
            dq, dk, dv = AttentionGrad.apply(q, k, v, self.output(1), g, scale=self.scale, causal=self.causal)
            return dq, dk, dv
        # create_graph: p recomputed from q and k with Tensor ops, so that these gradients have gradients
        from . import math as M
        from .layers import Softmax
        from .._dtype import bool as bool_
        s = M.matmul(q, k.mT) * self.scale
        if self.causal:   # the same mask as causal_mask, made by Tensor ops (so also on meta)
            from .creation import ones
            s = s.masked_fill(ones(*s.shape[-2:], dtype=bool_, device=s.device).triu(1), -np.inf)
        p = Softmax.apply(s, axis=-1)
        dv = M.matmul(p.mT, g)
        dp = M.matmul(g, v.mT)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * self.scale
        return M.matmul(ds, k), M.matmul(ds.mT, q), dv

    def infer(self, q, k, v):
        qs, ks, vs = tuple(q.shape), tuple(k.shape), tuple(v.shape)
        if len(qs) < 2 or len(ks) != len(qs) or len(vs) != len(qs) or qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2] \
                or qs[-1] != ks[-1] or ks[-2] != vs[-2]:
            raise _shape_error("scaled_dot_product_attention",
                               f"query {tuple(q.shape)}, key {tuple(k.shape)} and value {tuple(v.shape)} do not fit")
        lead = tuple(q.shape[:-1])
        return (lead + (v.shape[-1],), q.dtype), (lead + (k.shape[-2],), q.dtype)


class AttentionGrad(Primitive):
    """(dq, dk, dv) of Attention from its inputs, its probabilities p and the output's gradient g."""
    attrs = {"scale": float, "causal": bool}
    multi_output = True
    differentiable = False

    def forward(self, q, k, v, p, g):
        xp = array_module(q)
        q, k, v, g = _wide(q), _wide(k), _wide(v), _wide(g)
        dv = xp.matmul(xp.swapaxes(p, -1, -2), g)
        ds = xp.matmul(g, xp.swapaxes(v, -1, -2))
        ds -= (ds * p).sum(axis=-1, keepdims=True)
        ds *= p
        ds *= ds.dtype.type(self.scale)
        return xp.matmul(ds, k), xp.matmul(xp.swapaxes(ds, -1, -2), q), dv

    def infer(self, q, k, v, p, g):
        return (tuple(q.shape), q.dtype), (tuple(k.shape), k.dtype), (tuple(v.shape), v.dtype)


class AttentionGradPacked(Primitive):
    """AttentionGrad of (B, H, L, E) heads with its three gradients laid out as a GPT's fused q/k/v
    projection wants them: each as `transpose(1, 2).reshape(B, L, H * E)`, then concatenated on the
    last axis, (B, L, H * (2E + Ev)). The compiler makes it (jit/passes.py `pack_attention`) where
    that is what the graph does next; the CPU kernel writes the gradients straight into their columns
    instead of into three arrays a Cat then copies."""
    attrs = {"scale": float, "causal": bool}
    differentiable = False

    def forward(self, q, k, v, p, g):
        xp = array_module(q)
        grads = AttentionGrad.forward(self, q, k, v, p, g)
        return xp.concatenate([xp.swapaxes(t, 1, 2).reshape(t.shape[0], t.shape[2], -1) for t in grads], axis=-1)

    def infer(self, q, k, v, p, g):
        if len(q.shape) != 4 or tuple(k.shape[:3]) != tuple(q.shape[:3]) or tuple(v.shape[:3]) != tuple(q.shape[:3]):
            raise _shape_error("scaled_dot_product_attention",
                               f"packed gradients need (B, H, L, E) heads with as many keys as queries; "
                               f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}")
        B, H, L, E = q.shape
        return (B, L, H * (2 * E + v.shape[-1])), q.dtype


# The CPU kernels (BLAS products around one numba pass, outputs in the layout used next):
# backends/cpu_kernels.py
from ..backends import cpu_kernels as _cpu_kernels  # noqa: E402

_cpu_kernels.install({Attention: "attention", AttentionGrad: "attention_grad",
                      AttentionGradPacked: "attention_grad_packed"})
