"""The numba loops behind `cpu_conv` (float32; imported on the first small convolution).

Every index below is unsigned (`uint64`). With numba's signed indices each access carries a branch
for negative (wrap-around) indexing whenever LLVM cannot prove the index non-negative, which it cannot
for computed offsets; the branch kept the copy loops scalar. im2col of W4's second layer (7.2 MB): 1.07 ms
with signed indices, 0.09 ms unsigned, NumPy's strided copy 0.2 ms.

Layouts: `xp` is a zero-bordered channels-last copy (N, Hp, Wp, C) of the input, `cols` rows of
(kh, kw, C) windows (kernel offset major, channel minor), `y`/`g` rows (N * OH * OW, O). A range of
"lines" [l0, l1) is output rows (n, oh) in order: line l is image l // OH, output row l % OH.
"""
from typing import Any

import numpy as np
from numba import njit, uint64

_OPTS: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
_ZERO = np.float32(0.0)


@njit(**_OPTS)
def pad(x, xp, pt, pl, n0, n1):
    """xp[n, pt:pt+H, pl:pl+W, :] = x[n] for n in [n0, n1); x (N, H, W, C) of any strides (the border
    of xp is zeroed by the caller)."""
    _, H, W, C = x.shape
    for n in range(n0, n1):
        for h in range(H):
            for w in range(W):
                for c in range(C):
                    xp[n, h + pt, w + pl, c] = x[n, h, w, c]


@njit(**_OPTS)
def pad_rows(x, xp, pt, pl, n0, n1):
    """`pad` for a C-contiguous x (N, H, W, C): one run of W * C values per row (4x faster)."""
    _, H, W, C = x.shape
    _, Hp, Wp, _c = xp.shape
    src = x.reshape(-1)
    dst = xp.reshape(-1)
    run = uint64(W * C)
    for n in range(n0, n1):
        for h in range(H):
            s = uint64((n * H + h) * W * C)
            d = uint64(((n * Hp + h + pt) * Wp + pl) * C)
            for j in range(run):
                dst[d + j] = src[s + j]


@njit(**_OPTS)
def im2col(xp, kh, kw, OH, OW, cols, l0, l1):
    """cols[r] = the (kh, kw, C) window of output position r of lines [l0, l1), stride 1: per kernel row
    one contiguous run of kw * C values (the window's row in channels-last memory)."""
    _, Hp, Wp, C = xp.shape
    src = xp.reshape(-1)
    dst = cols.reshape(-1)
    run = uint64(kw * C)
    K = uint64(kh * kw * C)
    r = uint64(0)
    for line in range(l0, l1):
        n, h = line // OH, line % OH
        for w in range(OW):
            d = r * K
            for i in range(kh):
                s = uint64(((n * Hp + h + i) * Wp + w) * C)
                for j in range(run):
                    dst[d + j] = src[s + j]
                d += run
            r += uint64(1)


@njit(**_OPTS)
def col2im(dcols, kh, kw, OH, OW, gxp):
    """The adjoint of `im2col` over all lines: each row of dcols (N * OH * OW, kh * kw * C) added onto
    its window of gxp (N, Hp, Wp, C), zeroed by the caller; per kernel row one contiguous run."""
    N, Hp, Wp, C = gxp.shape
    src = dcols.reshape(-1)
    dst = gxp.reshape(-1)
    run = uint64(kw * C)
    r = uint64(0)
    for n in range(N):
        for h in range(OH):
            for w in range(OW):
                for i in range(kh):
                    d = uint64(((n * Hp + h + i) * Wp + w) * C)
                    for j in range(run):
                        dst[d + j] += src[r + j]
                    r += run


@njit(**_OPTS)
def bias_act(y, b, relu):
    """In place on rows y (M, O): y + b, then max(., 0) with `relu` (b of size 0: no bias). NaN stays NaN
    under relu, as torch's."""
    M, O = y.shape
    flat = y.reshape(-1)
    has_b = b.size > 0
    for r in range(M):
        base = uint64(r) * uint64(O)
        for o in range(O):
            v = flat[base + uint64(o)]
            if has_b:
                v += b[o]
            if relu and v < _ZERO:
                v = _ZERO
            flat[base + uint64(o)] = v


@njit(inline="always", **_OPTS)
def _taps3x3(src, s0, uW):
    """The nine values of the 3x3 window whose top-left is flat offset s0 of a one-channel padded
    image of row length uW (the loops below keep them in registers)."""
    one, two = uint64(1), uint64(2)
    s1 = s0 + uW
    s2 = s1 + uW
    return (src[s0], src[s0 + one], src[s0 + two], src[s1], src[s1 + one], src[s1 + two],
            src[s2], src[s2 + one], src[s2 + two])


@njit(**_OPTS)
def direct3x3(xp, wk, OH, OW, b, relu, y, l0, l1):
    """One input channel, a 3x3 kernel: row r of y = b + the nine taps x_t times wk[t] (wk (9, O)), then
    relu, for the output positions of lines [l0, l1) (y's rows counted from 0). No window copy: at one
    channel an im2col row is nine values and its GEMM (K = 9) ran at a third of BLAS's speed; the nine
    taps held in scalars make one pass over the O outputs (a loop over taps kept y in memory: 4x slower)."""
    _, Hp, Wp, _c = xp.shape
    O = y.shape[1]
    src = xp.reshape(-1)
    dst = y.reshape(-1)
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = wk[0], wk[1], wk[2], wk[3], wk[4], wk[5], wk[6], wk[7], wk[8]
    has_b = b.size > 0
    uO, uW = uint64(O), uint64(Wp)
    r = uint64(0)
    for line in range(l0, l1):
        n, h = line // OH, line % OH
        for w in range(OW):
            x0, x1, x2, x3, x4, x5, x6, x7, x8 = _taps3x3(src, uint64((n * Hp + h) * Wp + w), uW)
            d = r * uO
            for o in range(O):
                v = (x0 * w0[o] + x1 * w1[o] + x2 * w2[o] + x3 * w3[o] + x4 * w4[o] + x5 * w5[o]
                     + x6 * w6[o] + x7 * w7[o] + x8 * w8[o])
                if has_b:
                    v += b[o]
                if relu and v < _ZERO:
                    v = _ZERO
                dst[d + uint64(o)] = v
            r += uint64(1)


@njit(**_OPTS)
def direct3x3_weight_grad(xp, g, OH, OW, acc, l0, l1):
    """One input channel, a 3x3 kernel: acc (9, O) += the nine taps x_t times g's row, summed over the
    output positions of lines [l0, l1) (g's rows counted from 0)."""
    _, Hp, Wp, _c = xp.shape
    O = g.shape[1]
    src = xp.reshape(-1)
    gf = g.reshape(-1)
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7], acc[8]
    uO, uW = uint64(O), uint64(Wp)
    r = uint64(0)
    for line in range(l0, l1):
        n, h = line // OH, line % OH
        for w in range(OW):
            x0, x1, x2, x3, x4, x5, x6, x7, x8 = _taps3x3(src, uint64((n * Hp + h) * Wp + w), uW)
            d = r * uO
            for o in range(O):
                gv = gf[d + uint64(o)]
                a0[o] += x0 * gv
                a1[o] += x1 * gv
                a2[o] += x2 * gv
                a3[o] += x3 * gv
                a4[o] += x4 * gv
                a5[o] += x5 * gv
                a6[o] += x6 * gv
                a7[o] += x7 * gv
                a8[o] += x8 * gv
            r += uint64(1)


WG_LINES = 64   # lines per block of direct3x3_weight_grad_blocks


@njit(**_OPTS)
def direct3x3_weight_grad_blocks(xp, g, OH, OW, parts, b0, b1):
    """parts[k] (9, O) = direct3x3_weight_grad's sum over block k of WG_LINES lines, for the blocks
    [b0, b1) (g's rows counted from line 0). The caller adds the blocks in block order, so the gradient
    has the same value whichever threads ran the blocks."""
    L = xp.shape[0] * OH
    for k in range(b0, b1):
        acc = parts[k]
        acc[:] = _ZERO
        l0 = k * WG_LINES
        l1 = min(L, l0 + WG_LINES)
        direct3x3_weight_grad(xp, g[l0 * OW:l1 * OW], OH, OW, acc, l0, l1)
