"""Linear-algebra primitives for `ember.linalg`: forward on raw arrays through `xp.linalg` (NumPy or CuPy),
backward in Tensor ops (so double backward works), each formula next to its forward.

Decompositions with several outputs (eigh, qr, svd) are `MultiOutput` primitives: one node, one output
tensor per factor, each differentiable. Batched inputs (..., m, n) are handled by `xp.linalg` itself.
Inputs are validated by `ember/linalg.py`; here they are trusted.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .. import _debug
from ..autograd import anomaly
from ..autograd.function import Primitive
from ..autograd.grad_mode import STATE
from ..backends import array_module
from .primitives import sum_to


def _eye(n, like):
    from .creation import eye
    return eye(n, dtype=like.dtype, device=like.device)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    return v.unsqueeze(-1) * _eye(v.shape[-1], v)


def _copyltu(x):
    """The lower triangle mirrored onto the upper one: tril(x) + tril(x, -1)^T."""
    return x.tril() + x.tril(-1).mT


class MultiOutput(Primitive):
    """A primitive whose forward returns a tuple of arrays: one node, `n_out` output tensors. The backward
    receives one gradient per output (zeros for an unused one) and reads the outputs with `output(i)`."""

    @classmethod
    def apply(cls, *inputs, **params):
        node = cls.__new__(cls)
        node.__dict__.update(params)
        outs = node.forward(*[t._data for t in inputs])
        outs = tuple(o if o.dtype == inputs[0]._data.dtype else o.astype(inputs[0]._data.dtype) for o in outs)
        device = inputs[0]._device
        if not (STATE.enabled and any(t.requires_grad for t in inputs)):
            return tuple(Tensor._make(o, device) for o in outs)
        node.parents = [((t._node, t._out_idx) if t._node is not None else (t, -1)) if t.requires_grad else None
                        for t in inputs]
        node.needs_input_grad = [t.requires_grad for t in inputs]
        node._device = device
        node.n_out = len(outs)
        node._out_meta = [(o.shape, inputs[0].dtype) for o in outs]
        node._outs = outs
        if cls.saves_inputs:
            node.save_for_backward(*inputs)
        if anomaly.ENABLED or _debug.LEVEL >= 2:
            anomaly.record(node)
        return tuple(Tensor._make(o, device, True, node, i) for i, o in enumerate(outs))

    def output(self, i):
        """Output i as a Tensor whose grad_fn is this node (differentiable again, no reference cycle)."""
        return Tensor._make(self._outs[i], self._device, requires_grad=bool(self.parents), node=self, idx=i)

    def release(self):
        super().release()
        self._outs = None


# ---------------------------------------------------------------- solve, inverse, determinant
class Solve(Primitive):
    """X = A^-1 B for A (..., n, n), B (..., n, k); batch dims broadcast.
    gB = A^-T g, gA = -gB X^T (each summed back over broadcast batch dims)."""
    saves_inputs = True
    saves_output = True

    def forward(self, a, b):
        xp = array_module(a)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))

    def backward(self, g):
        a, b = self.saved_tensors
        gb = Solve.apply(a.mT, g)
        ga = -(gb @ self.saved_output().mT)
        return sum_to(ga, a.shape), sum_to(gb, b.shape)


class Inv(Primitive):
    """Y = A^-1; gA = -Y^T g Y^T."""
    saves_output = True

    def forward(self, a):
        return array_module(a).linalg.inv(a)

    def backward(self, g):
        yt = self.saved_output().mT
        return (-(yt @ g @ yt),)


class LogAbsDet(Primitive):
    """log|det A|; its gradient is g A^-T (the sign has none)."""
    saves_inputs = True

    def forward(self, a):
        return array_module(a).linalg.slogdet(a)[1]

    def backward(self, g):
        a, = self.saved_tensors
        return (g.unsqueeze(-1).unsqueeze(-1) * Inv.apply(a).mT,)


# ---------------------------------------------------------------- decompositions
class Cholesky(Primitive):
    """A = L L^T (lower L). gA = sym(L^-T phi(L^T gL) L^-1), phi: the lower triangle with its diagonal halved,
    sym(X) = (X + X^T) / 2: only A's symmetric part matters."""
    saves_output = True

    def forward(self, a):
        return array_module(a).linalg.cholesky(a)

    def backward(self, g):
        l = self.saved_output()
        p = (l.mT @ g).tril()
        p = p - 0.5 * _diag_embed(p.diagonal(0, -2, -1))
        linv = Inv.apply(l)
        s = linv.mT @ p @ linv
        return (0.5 * (s + s.mT),)


class Eigh(MultiOutput):
    """A = V diag(L) V^T for symmetric A (lower triangle read), eigenvalues ascending.
    gA = V (diag(gL) + skew(V^T gV) / E) V^T, E_ij = L_j - L_i off the diagonal, skew(X) = (X - X^T) / 2."""

    def forward(self, a):
        w, v = array_module(a).linalg.eigh(a, UPLO=self.UPLO)
        return w, v

    def backward(self, gl, gv):
        lam, v = self.output(0), self.output(1)
        n = lam.shape[-1]
        eye = _eye(n, lam)
        vtgv = v.mT @ gv
        e = lam.unsqueeze(-2) - lam.unsqueeze(-1) + eye          # E_ij = L_j - L_i; 1 on the diagonal
        inner = 0.5 * (vtgv - vtgv.mT) / e * (1 - eye) + _diag_embed(gl)
        return (v @ inner @ v.mT,)


class Qr(MultiOutput):
    """A = Q R, reduced, for m >= n. With M = R gR^T - gQ^T Q: gA = (gQ + Q copyltu(M)) R^-T."""

    def forward(self, a):
        q, r = array_module(a).linalg.qr(a, mode="reduced")
        return q, r

    def backward(self, gq, gr):
        q, r = self.output(0), self.output(1)
        m = r @ gr.mT - gq.mT @ q
        b = gq + q @ _copyltu(m)
        return (Solve.apply(r, b.mT).mT,)                  # b R^-T = (R^-1 b^T)^T


class Svd(MultiOutput):
    """A = U diag(S) Vh, reduced (k = min(m, n)). With E_jk = S_k^2 - S_j^2 (1 on the diagonal),
    J = (skew(U^T gU) S_row + S_col skew(V^T gV)) / E + diag(gS), where skew(X) = X - X^T:
    gA = U J Vh, plus (I - U U^T) gU S^-1 Vh when m > k, or U S^-1 gV^T (I - V V^T) when n > k."""

    def forward(self, a):
        u, s, vh = array_module(a).linalg.svd(a, full_matrices=False)
        return u, s, vh

    def backward(self, gu, gs, gvh):
        u, s, vh = self.output(0), self.output(1), self.output(2)
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        v, gv = vh.mT, gvh.mT
        eye = _eye(k, s)
        s2 = s * s
        e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye
        utgu, vtgv = u.mT @ gu, v.mT @ gv
        j = ((utgu - utgu.mT) * s.unsqueeze(-2) + s.unsqueeze(-1) * (vtgv - vtgv.mT)) / e * (1 - eye) \
            + _diag_embed(gs)
        ga = u @ j @ vh
        if m > k:
            gu_sinv = gu / s.unsqueeze(-2)
            ga = ga + (gu_sinv - u @ (u.mT @ gu_sinv)) @ vh
        elif n > k:
            gv_sinv = gv / s.unsqueeze(-2)
            ga = ga + u @ (gv_sinv.mT - (gv_sinv.mT @ v) @ vh)
        return (ga,)
