"""Linear-algebra primitives for `ember.linalg`: forward on raw arrays through `xp.linalg` (NumPy or CuPy),
backward in Tensor ops (so double backward works), each formula next to its forward.

Decompositions with several outputs (eigh, qr, svd) are multi-output primitives (`multi_output = True`): one node, one output
tensor per factor, each differentiable. Batched inputs (..., m, n) are handled by `xp.linalg` itself.
Inputs are validated by `ember/linalg/` (the package); here they are trusted.
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
    mode = "reduced"   # or "complete" (differentiable only where it equals reduced; ember/linalg/_basic.py checks)

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
    full_matrices = False   # True: not differentiable on a non-square input (ember/linalg/_basic.py refuses it)

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


def _count(shape):
    """The number of matrices in a batch of shape `shape`."""
    out = 1
    for s in shape:
        out *= s
    return out


def _lu_kernel(xp, a):
    """LAPACK getrf on each matrix of a (batch, m, n): partial pivoting (the first largest |value| of the
    column), the multipliers below U's diagonal, 1-based int32 row swaps, and info: 0, or the 1-based index
    of the first exactly-zero pivot (the factorisation goes on past it, as LAPACK's)."""
    lu = a.copy()
    count, m, n = lu.shape
    k = min(m, n)
    pivots = xp.zeros((count, k), dtype=np.int32)
    info = xp.zeros(count, dtype=np.int32)
    rows = xp.arange(count)
    for j in range(k):
        p = j + xp.argmax(xp.abs(lu[:, j:, j]), axis=1)                 # the pivot row of each matrix
        pivots[:, j] = p + 1
        top = lu[rows, j, :].copy()
        lu[rows, j, :] = lu[rows, p, :]
        lu[rows, p, :] = top
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1:, j] = xp.where(zero[:, None], lu[:, j + 1:, j], lu[:, j + 1:, j] / xp.where(zero, 1, pivot)[:, None])
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu, pivots, info


def lu_permutation(xp, pivots, m):
    """The row order perm (batch, m) with A[perm] = L U, from getrf's 1-based swaps (batch, k)."""
    count, k = pivots.shape
    perm = xp.broadcast_to(xp.arange(m), (count, m)).copy()
    rows = xp.arange(count)
    for j in range(k):
        p = pivots[:, j].astype(np.int64) - 1
        top = perm[:, j].copy()
        perm[:, j] = perm[rows, p]
        perm[rows, p] = top
    return perm


def _unpack(lu):
    """(L (..., m, k) unit lower, U (..., k, n) upper) from the packed factor (..., m, n)."""
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    from .creation import eye
    L = lu[..., :, :k].tril(-1) + eye(m, k, dtype=lu.dtype, device=lu.device)
    return L, lu[..., :k, :].triu()


class LuFactor(Primitive):
    """A = P L U with partial pivoting (LAPACK getrf): (LU packed (..., m, n), pivots (..., k) int32 1-based,
    info (...) int32). With k = min(m, n), gL = g[..., :k], gU = g[..., :k, :] and (square case)
    gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T; the wide and tall cases as torch's linalg_lu_backward."""
    attrs = {}
    multi_output = True
    saved_outputs = (0, 1)   # LU and pivots; not the info code

    def forward(self, a):
        xp = array_module(a)
        *batch, m, n = a.shape
        lu, pivots, info = _lu_kernel(xp, a.reshape((_count(batch), m, n)))
        batch = tuple(batch)
        return lu.reshape(a.shape), pivots.reshape(batch + (min(m, n),)), info.reshape(batch)

    def infer(self, a):
        *batch, m, n = a.shape
        batch = tuple(batch)
        return (tuple(a.shape), a.dtype), (batch + (min(m, n),), np.dtype(np.int32)), (batch, np.dtype(np.int32))

    def backward(self, g, g_pivots=None, g_info=None):
        lu, pivots = self.output(0), self.output(1)
        m, n = lu.shape[-2], lu.shape[-1]
        k = min(m, n)
        L, U = _unpack(lu)
        gL, gU = g[..., :, :k], g[..., :k, :]
        if m == n:
            ga = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
            ga = Solve.apply(L.mT, Solve.apply(U, ga.mT).mT)          # L^-T (.) U^-T
        elif m < n:                                                  # wide: U = [U1 | U2], L square
            from .shape import cat
            U1 = U[..., :k]
            ga = (L.mT @ gL - gU.triu() @ U.mT).tril(-1)
            ga = Solve.apply(U1, ga.mT).mT                           # (.) U1^-T
            ga = cat([ga + gU[..., :k].triu(), gU[..., k:]], -1)
            ga = Solve.apply(L.mT, ga)
        else:                                                        # tall: L = [L1; L2], U square
            from .shape import cat
            L1 = L[..., :k, :]
            ga = (gU @ U.mT - L.mT @ gL.tril(-1)).triu()
            ga = Solve.apply(L1.mT, ga)                              # L1^-T (.)
            ga = cat([ga + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
            ga = Solve.apply(U, ga.mT).mT
        return (_permute_rows_back(ga, pivots),)


def _permute_rows_back(x, pivots):
    """P x for A = P L U: row i of x goes to row perm[i] (x (..., m, n), pivots (..., k))."""
    from .._tensor import Tensor
    from .shape import gather
    m = x.shape[-2]
    piv = pivots.detach()._data
    xp = array_module(piv)
    perm = lu_permutation(xp, piv.reshape((_count(piv.shape[:-1]), piv.shape[-1])), m)
    inverse = xp.argsort(perm, axis=-1).reshape(tuple(piv.shape[:-1]) + (m, 1))
    index = Tensor._make(xp.broadcast_to(inverse, tuple(x.shape[:-1]) + (1,)), x._device)
    return gather(x, -2, index.expand(tuple(x.shape)))


# ---------------------------------------------------------------- LDL^T (Bunch-Kaufman), as LAPACK's sytf2 / sytrs
_BK_ALPHA = (1 + 17 ** 0.5) / 8


def _ldl_kernel(xp, a):
    """LAPACK sytf2 (lower) on each matrix of a (batch, n, n): Bunch-Kaufman diagonal pivoting, A = L D L^T
    with D of 1x1 and 2x2 blocks. Returns (LD packed as LAPACK's, lower triangle only; pivots (batch, n) int32:
    k for a 1x1 block whose row k was swapped in, -k (twice) for a 2x2 block; info: 0, or the 1-based index
    of the first exactly-zero 1x1 block (D singular))."""
    out = xp.tril(a).copy()
    count, n = a.shape[0], a.shape[-1]
    pivots = xp.zeros((count, n), dtype=np.int32)
    info = xp.zeros(count, dtype=np.int32)
    for b in range(count):
        A = out[b]
        k = 0
        while k < n:
            step = 1
            absakk = abs(float(A[k, k]))
            if k < n - 1:
                imax = k + 1 + int(xp.argmax(xp.abs(A[k + 1:, k])))
                colmax = abs(float(A[imax, k]))
            else:
                imax, colmax = k, 0.0
            if max(absakk, colmax) == 0 or absakk != absakk:
                if info[b] == 0:
                    info[b] = k + 1
                kp = k
            else:
                if absakk >= _BK_ALPHA * colmax:
                    kp = k
                else:
                    rowmax = float(xp.max(xp.abs(A[imax, k:imax])))            # row imax, left of the diagonal
                    if imax < n - 1:
                        rowmax = max(rowmax, float(xp.max(xp.abs(A[imax + 1:, imax]))))
                    if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                        kp = k
                    elif abs(float(A[imax, imax])) >= _BK_ALPHA * rowmax:
                        kp = imax
                    else:
                        kp, step = imax, 2
                kk = k + step - 1
                if kp != kk:   # swap rows and columns kk and kp of the trailing (lower-stored) matrix
                    below = A[kp + 1:, kk].copy()
                    A[kp + 1:, kk] = A[kp + 1:, kp]
                    A[kp + 1:, kp] = below
                    middle = A[kk + 1:kp, kk].copy()
                    A[kk + 1:kp, kk] = A[kp, kk + 1:kp]
                    A[kp, kk + 1:kp] = middle
                    A[[kk, kp], [kk, kp]] = A[[kp, kk], [kp, kk]]
                    if step == 2:
                        A[[k + 1, kp], k] = A[[kp, k + 1], k]
                if step == 1:
                    if k < n - 1:
                        x, d11 = A[k + 1:, k].copy(), 1 / A[k, k]
                        A[k + 1:, k + 1:] -= xp.tril(xp.outer(x, d11 * x))
                        A[k + 1:, k] = d11 * x
                elif k < n - 2:
                    d21 = A[k + 1, k]
                    d11 = A[k + 1, k + 1] / d21
                    d22 = A[k, k] / d21
                    d21 = (1 / (d11 * d22 - 1)) / d21
                    wk = d21 * (d11 * A[k + 2:, k] - A[k + 2:, k + 1])
                    wkp1 = d21 * (d22 * A[k + 2:, k + 1] - A[k + 2:, k])
                    A[k + 2:, k + 2:] -= xp.tril(xp.outer(A[k + 2:, k], wk) + xp.outer(A[k + 2:, k + 1], wkp1))
                    A[k + 2:, k] = wk
                    A[k + 2:, k + 1] = wkp1
            if step == 1:
                pivots[b, k] = kp + 1
            else:
                pivots[b, k] = pivots[b, k + 1] = -(kp + 1)
            k += step
    return out, pivots, info


def _ldl_solve_kernel(xp, ld, pivots, rhs):
    """LAPACK sytrs (lower): X with A X = B for each matrix, A given by _ldl_kernel's (LD, pivots)."""
    out = rhs.copy()
    count, n = ld.shape[0], ld.shape[-1]
    for b in range(count):
        A, piv, B = ld[b], pivots[b], out[b]

        def swap(i, j):
            if i != j:
                B[[i, j]] = B[[j, i]]
        k = 0
        while k < n:                              # solve L D Y = P^T B
            if piv[k] > 0:
                swap(k, int(piv[k]) - 1)
                B[k + 1:] -= xp.outer(A[k + 1:, k], B[k])
                B[k] /= A[k, k]
                k += 1
            else:
                swap(k + 1, -int(piv[k]) - 1)
                B[k + 2:] -= xp.outer(A[k + 2:, k], B[k]) + xp.outer(A[k + 2:, k + 1], B[k + 1])
                akm1k = A[k + 1, k]
                akm1, ak = A[k, k] / akm1k, A[k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1
                bkm1, bk = B[k] / akm1k, B[k + 1] / akm1k
                B[k], B[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:                             # then L^T, undoing the interchanges
            if piv[k] > 0:
                B[k] -= A[k + 1:, k] @ B[k + 1:]
                swap(k, int(piv[k]) - 1)
                k -= 1
            else:
                B[k] -= A[k + 1:, k] @ B[k + 1:]
                B[k - 1] -= A[k + 1:, k - 1] @ B[k + 1:]
                swap(k, -int(piv[k]) - 1)
                k -= 2
    return out
