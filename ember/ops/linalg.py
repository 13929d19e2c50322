"""Linear-algebra primitives for `ember.linalg`: forward on raw arrays through `xp.linalg` (NumPy or CuPy),
backward in Tensor ops (so double backward works), each formula next to its forward.

Decompositions with several outputs (eigh, qr, svd) are multi-output primitives (`multi_output = True`): one node, one output
tensor per factor, each differentiable. Batched inputs (..., m, n) are handled by `xp.linalg` itself.
Inputs are validated by `ember/linalg.py`; here they are trusted.
"""
from __future__ import annotations

import numpy as np

from ..autograd.function import Primitive
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


class Solve(Primitive):
    """X = A^-1 B for A (..., n, n), B (..., n, k); batch dims broadcast.
    gB = A^-T g, gA = -gB X^T (each summed back over broadcast batch dims)."""
    attrs = {}
    saves_inputs = True
    saves_output = True

    def forward(self, a, b):
        xp = array_module(a)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))

    def infer(self, a, b):
        return tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) + tuple(b.shape[-2:]), a.dtype

    def backward(self, g):
        a, b = self.saved_tensors
        gb = Solve.apply(a.mT, g)
        ga = -(gb @ self.saved_output().mT)
        return sum_to(ga, a.shape), sum_to(gb, b.shape)


class Inv(Primitive):
    """Y = A^-1; gA = -Y^T g Y^T."""
    attrs = {}
    saves_output = True

    def forward(self, a):
        return array_module(a).linalg.inv(a)

    def infer(self, a):
        return tuple(a.shape), a.dtype

    def backward(self, g):
        yt = self.saved_output().mT
        return (-(yt @ g @ yt),)


class LogAbsDet(Primitive):
    """log|det A|; its gradient is g A^-T (the sign has none)."""
    attrs = {}
    saves_inputs = True

    def forward(self, a):
        return array_module(a).linalg.slogdet(a)[1]

    def infer(self, a):
        return tuple(a.shape[:-2]), a.dtype

    def backward(self, g):
        a, = self.saved_tensors
        return (g.unsqueeze(-1).unsqueeze(-1) * Inv.apply(a).mT,)


# ---------------------------------------------------------------- decompositions
class SlogdetSign(Primitive):
    """The sign of det A (its log|det| is LogAbsDet): not differentiable."""
    attrs = {}
    differentiable = False

    def forward(self, a):
        return array_module(a).linalg.slogdet(a)[0].astype(a.dtype, copy=False)

    def infer(self, a):
        return tuple(a.shape[:-2]), a.dtype


class Cholesky(Primitive):
    """A = L L^T (lower L). gA = sym(L^-T phi(L^T gL) L^-1), phi: the lower triangle with its diagonal halved,
    sym(X) = (X + X^T) / 2: only A's symmetric part matters."""
    attrs = {}
    saves_output = True

    def forward(self, a):
        return array_module(a).linalg.cholesky(a)

    def infer(self, a):
        return tuple(a.shape), a.dtype

    def backward(self, g):
        l = self.saved_output()
        p = (l.mT @ g).tril()
        p = p - 0.5 * _diag_embed(p.diagonal(0, -2, -1))
        linv = Inv.apply(l)
        s = linv.mT @ p @ linv
        return (0.5 * (s + s.mT),)


class Eigh(Primitive):
    """A = V diag(L) V^T for symmetric A (lower triangle read), eigenvalues ascending.
    gA = V (diag(gL) + skew(V^T gV) / E) V^T, E_ij = L_j - L_i off the diagonal, skew(X) = (X - X^T) / 2."""
    attrs = {"UPLO": str}
    multi_output = True

    def forward(self, a):
        w, v = array_module(a).linalg.eigh(a, UPLO=self.UPLO)
        return w, v

    def infer(self, a):
        return (tuple(a.shape[:-1]), a.dtype), (tuple(a.shape), a.dtype)

    def backward(self, gl, gv):
        lam, v = self.output(0), self.output(1)
        n = lam.shape[-1]
        eye = _eye(n, lam)
        vtgv = v.mT @ gv
        e = lam.unsqueeze(-2) - lam.unsqueeze(-1) + eye          # E_ij = L_j - L_i; 1 on the diagonal
        inner = 0.5 * (vtgv - vtgv.mT) / e * (1 - eye) + _diag_embed(gl)
        return (v @ inner @ v.mT,)


class Qr(Primitive):
    """A = Q R, reduced, for m >= n. With M = R gR^T - gQ^T Q: gA = (gQ + Q copyltu(M)) R^-T."""
    attrs = {"mode": str}
    multi_output = True
    mode = "reduced"   # or "complete" (differentiable only where it equals reduced; ember/linalg.py checks)

    def forward(self, a):
        q, r = array_module(a).linalg.qr(a, mode=self.mode)
        return q, r

    def infer(self, a):
        *batch, m, n = a.shape
        k = m if self.mode == "complete" else min(m, n)
        return (tuple(batch) + (m, k), a.dtype), (tuple(batch) + (k, n), a.dtype)

    def backward(self, gq, gr):
        q, r = self.output(0), self.output(1)
        m = r @ gr.mT - gq.mT @ q
        b = gq + q @ _copyltu(m)
        return (Solve.apply(r, b.mT).mT,)                  # b R^-T = (R^-1 b^T)^T


class Svd(Primitive):
    """A = U diag(S) Vh, reduced (k = min(m, n)). With E_jk = S_k^2 - S_j^2 (1 on the diagonal),
    J = (skew(U^T gU) S_row + S_col skew(V^T gV)) / E + diag(gS), where skew(X) = X - X^T:
    gA = U J Vh, plus (I - U U^T) gU S^-1 Vh when m > k, or U S^-1 gV^T (I - V V^T) when n > k."""
    attrs = {"full_matrices": bool}
    multi_output = True
    full_matrices = False   # True: not differentiable on a non-square input (ember/linalg.py refuses it)

    def forward(self, a):
        u, s, vh = array_module(a).linalg.svd(a, full_matrices=self.full_matrices)
        return u, s, vh

    def infer(self, a):
        *batch, m, n = a.shape
        k, batch = min(m, n), tuple(batch)
        ku, kv = (m, n) if self.full_matrices else (k, k)
        return (batch + (m, ku), a.dtype), (batch + (k,), a.dtype), (batch + (kv, n), a.dtype)

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
