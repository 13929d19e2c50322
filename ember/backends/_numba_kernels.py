"""The numba-compiled loops behind `cpu_kernels` (float32, C-contiguous arrays; callers prepare them).

Imported only on the first call of a CPU kernel (numba is the optional `ember[jit]` extra). Compiled
machine code is cached on disk (`cache=True`: next to this file when it is writable, else numba's
per-user cache directory, or `NUMBA_CACHE_DIR`), so only the first process ever pays the compile.

numba has no vector math library here (no SVML), so a loop that calls `math.exp` or `math.erf` runs one
element at a time. `_exp` and `_erf` below are written in multiplies, adds and one divide, which LLVM
vectorises (AVX2/AVX-512): exp is Cephes' expf (range reduction to [-ln2/2, ln2/2], a degree-6
polynomial, 2^n built from its bits), erf is the rational approximation of Eigen/XLA on [-4, 4]
(|error| < 5e-7, a few float32 ulp). Elementwise loops allow only FMA contraction; reductions also
allow reassociation, which is what lets LLVM vectorise a float sum (the order then differs from NumPy's
pairwise sum by float32 rounding, as torch's does).
"""
import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_ELEM: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
_RED: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract", "reassoc"})

f32 = np.float32
_LOG2E = f32(1.44269504088896341)
_LN2_HI = f32(0.693359375)
_LN2_LO = f32(-2.12194440e-4)
_EXP_HI = f32(88.72283905206835)
_EXP_LO = f32(-87.3365478515625)   # below: the result is under float32's smallest normal, returned as 0
_P0, _P1, _P2 = f32(1.9875691500e-4), f32(1.3981999507e-3), f32(8.3334519073e-3)
_P3, _P4, _P5 = f32(4.1665795894e-2), f32(1.6666665459e-1), f32(5.0000001201e-1)
_ONE, _HALF, _ZERO = f32(1.0), f32(0.5), f32(0.0)
_A = [f32(c) for c in (-1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04,
                       -5.69250639462346e-05, -2.10102402082508e-06, 2.77068142495902e-08,
                       -2.72614225801306e-10)]
_A1, _A3, _A5, _A7, _A9, _A11, _A13 = _A
_B0, _B2, _B4, _B6, _B8 = [f32(c) for c in (-1.42647390514189e-02, -7.37332916720468e-03,
                                             -1.68282697438203e-03, -2.13374055278905e-04,
                                             -1.45660718464996e-05)]
_FOUR = f32(4.0)
_INV_SQRT2 = f32(1.0 / math.sqrt(2.0))
_INV_SQRT_2PI = f32(1.0 / math.sqrt(2.0 * math.pi))
_NEG_HALF = f32(-0.5)
_NEG_INF = f32(-np.inf)


@intrinsic
def _f32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the low 32 bits of the integer `bits` (no conversion)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        if bits.bitwidth > 32:
            v = builder.trunc(v, ir.IntType(32))
        elif bits.bitwidth < 32:
            v = builder.sext(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())
    return types.float32(bits), codegen


@njit(inline="always", **_ELEM)
def _exp(x):
    """exp of a float32: Cephes expf, ~1 ulp; 0 below -87.34 (float32's smallest normal), inf above
    88.72, NaN stays NaN."""
    c = min(max(x, _EXP_LO), _EXP_HI)
    n = np.floor(c * _LOG2E + _HALF)
    r = c - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _P0
    p = p * r + _P1
    p = p * r + _P2
    p = p * r + _P3
    p = p * r + _P4
    p = p * r + _P5
    p = p * r * r + r + _ONE
    ni = np.int32(n)                     # in [-126, 128]: 2^n as two normal factors, 2^n1 * 2^n2
    n1 = ni >> np.int32(1)
    y = p * _f32_from_bits((n1 + np.int32(127)) << np.int32(23)) \
        * _f32_from_bits((ni - n1 + np.int32(127)) << np.int32(23))
    if x < _EXP_LO:
        y = _ZERO
    if x > _EXP_HI:
        y = f32(np.inf)
    if x != x:
        y = x
    return y


@njit(inline="always", **_ELEM)
def _erf(x):
    """erf of a float32: Eigen's rational approximation on [-4, 4] (|error| < 5e-7); NaN stays NaN."""
    c = min(max(x, -_FOUR), _FOUR)
    c2 = c * c
    p = _A13
    p = p * c2 + _A11
    p = p * c2 + _A9
    p = p * c2 + _A7
    p = p * c2 + _A5
    p = p * c2 + _A3
    p = p * c2 + _A1
    p = p * c
    q = _B8
    q = q * c2 + _B6
    q = q * c2 + _B4
    q = q * c2 + _B2
    q = q * c2 + _B0
    y = p / q
    if x != x:
        y = x
    return y


# ---- a + b (one IEEE add per element: NumPy's values) ----------------------------------------------

@njit(cache=True, nogil=True, error_model="numpy")
def add(a, b, out):
    for i in range(a.size):
        out[i] = a[i] + b[i]


# ---- GELU (exact, erf form) ----------------------------------------------------------------------

@njit(**_ELEM)
def gelu(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v * (_HALF + _HALF * _erf(v * _INV_SQRT2))


@njit(**_ELEM)
def gelu_grad(x, g, out):
    """g * (Phi(x) + x phi(x))."""
    for i in range(x.size):
        v = x[i]
        cdf = _HALF + _HALF * _erf(v * _INV_SQRT2)
        pdf = _exp(_NEG_HALF * v * v) * _INV_SQRT_2PI
        out[i] = g[i] * (cdf + v * pdf)


# ---- softmax over the last axis of (rows, n) -----------------------------------------------------

@njit(inline="always", **_ELEM)
def _row_max(row, n, scale):
    """max(row[:n] * scale) over eight running maxima: one `max` chain waits on the previous compare
    (its latency) for every element; eight chains overlap (1.5x faster softmax rows at W5's shapes)."""
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = _NEG_INF
    j = 0
    while j + 8 <= n:
        m0 = max(m0, row[j] * scale)
        m1 = max(m1, row[j + 1] * scale)
        m2 = max(m2, row[j + 2] * scale)
        m3 = max(m3, row[j + 3] * scale)
        m4 = max(m4, row[j + 4] * scale)
        m5 = max(m5, row[j + 5] * scale)
        m6 = max(m6, row[j + 6] * scale)
        m7 = max(m7, row[j + 7] * scale)
        j += 8
    for k in range(j, n):
        m0 = max(m0, row[k] * scale)
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


@njit(**_RED)
def softmax(x, out):
    rows, n = x.shape
    for r in range(rows):
        xr, orow = x[r], out[r]
        m = _row_max(xr, n, _ONE)
        s = _ZERO
        for j in range(n):
            e = _exp(xr[j] - m)
            orow[j] = e
            s += e
        for j in range(n):
            orow[j] = orow[j] / s


@njit(**_RED)
def log_softmax(x, out):
    rows, n = x.shape
    for r in range(rows):
        xr, orow = x[r], out[r]
        m = _row_max(xr, n, _ONE)
        s = _ZERO
        for j in range(n):
            s += _exp(xr[j] - m)
        lse = f32(math.log(s))
        for j in range(n):
            orow[j] = (xr[j] - m) - lse


@njit(**_RED)
def softmax_grad(y, g, out):
    """y * (g - sum(g * y)) per row."""
    rows, n = y.shape
    for r in range(rows):
        yr, gr, orow = y[r], g[r], out[r]
        d = _ZERO
        for j in range(n):
            d += gr[j] * yr[j]
        for j in range(n):
            orow[j] = gr[j] * yr[j] - yr[j] * d


# ---- attention's probabilities and their gradient, over (batch, L, S) -----------------------------
# With `causal`, row i keeps its first n = min(i + 1, S) entries. The loops still run over all S with
# the mask as a select: a loop of the row's own length ends in a scalar remainder of up to 15 elements,
# which cost more than the masked half saves (W5: 290 -> 195 us for the forward pass over the scores).

@njit(**_RED)
def attention_softmax(s, scale, causal):
    """In place: each row of s (batch, L, S) becomes softmax(s * scale); with `causal`, row i over its
    first i + 1 entries (min(i + 1, S)), the rest 0."""
    nb, L, S = s.shape
    for b in range(nb):
        for i in range(L):
            row = s[b, i]
            n = min(i + 1, S) if causal else S
            m = _row_max(row, n, scale)
            m = _ZERO if m == -np.inf else m   # every score -inf: the row attends to nothing (zeros, as torch)
            t = _ZERO
            for j in range(S):
                e = _exp(row[j] * scale - m)
                e = e if j < n else _ZERO
                row[j] = e
                t += e
            r = _ONE / t if t != _ZERO else _ZERO
            for j in range(S):
                row[j] *= r


@njit(**_RED)
def attention_softmax_grad(p, dp, scale, causal):
    """In place: dp (batch, L, S) becomes p * (dp - rowsum(p * dp)) * scale (0 where p is masked)."""
    nb, L, S = p.shape
    for b in range(nb):
        for i in range(L):
            pr, dr = p[b, i], dp[b, i]
            n = min(i + 1, S) if causal else S
            d = _ZERO
            for j in range(S):
                d += pr[j] * dr[j] if j < n else _ZERO
            for j in range(S):
                dr[j] = pr[j] * (dr[j] - d) * scale if j < n else _ZERO


# ---- LayerNorm over the last axis of (rows, n) ---------------------------------------------------

@njit(**_RED)
def _row_stats(xr, eps):
    n = xr.size
    s = _ZERO
    for j in range(n):
        s += xr[j]
    mean = s / f32(n)
    v = _ZERO
    for j in range(n):
        d = xr[j] - mean
        v += d * d
    rstd = _ONE / f32(math.sqrt(v / f32(n) + eps))
    return mean, rstd


@njit(**_RED)
def layer_norm(x, w, b, out, eps, affine):
    """(x - mean) * rstd (* w + b when `affine`) per row; float32 sums, as torch's CPU kernel."""
    rows, n = x.shape
    for r in range(rows):
        xr, orow = x[r], out[r]
        mean, rstd = _row_stats(xr, eps)
        if affine:
            for j in range(n):
                orow[j] = (xr[j] - mean) * rstd * w[j] + b[j]
        else:
            for j in range(n):
                orow[j] = (xr[j] - mean) * rstd


@njit(**_RED)
def layer_norm_grad(x, g, w, dx, dw, db, eps, has_w, with_w, with_b):
    """dx = rstd * (h - mean(h) - xhat * mean(h * xhat)), h = g * w (g without `has_w`); with `with_w`,
    dw (zeroed by the caller) += g * xhat summed over rows; with `with_b`, db (zeroed) += g."""
    rows, n = x.shape
    inv_n = _ONE / f32(n)
    for r in range(rows):
        xr, gr, dxr = x[r], g[r], dx[r]
        mean, rstd = _row_stats(xr, eps)
        sh = _ZERO
        shx = _ZERO
        for j in range(n):
            h = gr[j] * w[j] if has_w else gr[j]
            xhat = (xr[j] - mean) * rstd
            sh += h
            shx += h * xhat
        mh = sh * inv_n
        mhx = shx * inv_n
        for j in range(n):
            h = gr[j] * w[j] if has_w else gr[j]
            xhat = (xr[j] - mean) * rstd
            dxr[j] = rstd * (h - mh - xhat * mhx)
        if with_w:
            for j in range(n):
                dw[j] += gr[j] * ((xr[j] - mean) * rstd)
        if with_b:
            for j in range(n):
                db[j] += gr[j]


LN_GRAD_BLOCK = 64   # rows per block of LayerNorm's weight/bias gradient sums


@njit(**_RED)
def layer_norm_grad_blocks(x, g, w, dx, parts, eps, has_w, with_w, with_b, b_lo, b_hi):
    """layer_norm_grad over the row blocks [b_lo, b_hi) of LN_GRAD_BLOCK rows, block b's dw and db sums
    into parts[b, 0] and parts[b, 1] (zeroed by the caller): blocks are independent, so any split of
    them over threads gives the same sums, which `add_blocks` then adds in block order."""
    rows = x.shape[0]
    for b in range(b_lo, b_hi):
        r0 = b * LN_GRAD_BLOCK
        r1 = min(rows, r0 + LN_GRAD_BLOCK)
        layer_norm_grad(x[r0:r1], g[r0:r1], w, dx[r0:r1], parts[b, 0], parts[b, 1], eps, has_w, with_w, with_b)


@njit(**_RED)
def add_blocks(parts, out):
    """out[j] = parts[0, j] + parts[1, j] + ... in block order (out zeroed by the caller)."""
    for b in range(parts.shape[0]):
        for j in range(out.shape[0]):
            out[j] += parts[b, j]


# ---- Adam / AdamW step, in place -------------------------------------------------------------------
# The operations and their order are AdamStep.forward's (torch's), one element at a time: no fastmath
# (no FMA contraction), so the result is bit for bit the NumPy forward's.

@njit(cache=True, nogil=True, error_model="numpy")
def adam_step(p, g, m, v, vmax, decay, wd, w1, small_w1, c2, beta2, step_size, bc2_sqrt, eps,
              decoupled, maximize, amsgrad):
    """decay: 1 - lr * wd (applied when decoupled and wd != 0); wd: L2 weight decay (applied when not
    decoupled and wd != 0); w1 = 1 - beta1 when `small_w1` (w1 < 0.5), else beta1; c2 = 1 - beta2."""
    for i in range(p.size):
        pi = p[i]
        if decoupled and wd != 0:
            pi = pi * decay
        gi = -g[i] if maximize else g[i]
        if not decoupled and wd != 0:
            gi = gi + pi * wd
        diff = gi - m[i]
        if small_w1:
            mi = m[i] + diff * w1
        else:
            mi = gi - diff * w1
        m[i] = mi
        vi = v[i] * beta2 + (gi * c2) * gi
        v[i] = vi
        if amsgrad:
            vm = vmax[i]
            if not (vi > vm or vi != vi):
                vi = vm
            vmax[i] = vi
        denom = np.sqrt(vi) / bc2_sqrt + eps   # float32 sqrt (math.sqrt would round through float64)
        p[i] = pi - (mi * step_size) / denom


# ---- training-mode batch norm, forward and gradient, per channel ------------------------------------
# Two layouts of x (N, C, *S): "ncs", C-contiguous (N, C, S); "mc", channels-last, seen as (M, C) with
# M = N * S. Sums run in float64 (a channel's count reaches 10^5-10^6 elements), elementwise math in
# float32, as BatchNorm.forward / BatchNormGrad.forward compute it.

@njit(**_RED)
def batch_norm_ncs(x, w, b, eps, y, mean, var):
    N, C, S = x.shape
    cnt = N * S
    for c in range(C):
        s = 0.0
        for n in range(N):
            for j in range(S):
                s += x[n, c, j]
        m = f32(s / cnt)
        v = 0.0
        for n in range(N):
            for j in range(S):
                d = x[n, c, j] - m
                v += d * d
        vc = f32(v / cnt)
        scale = w[c] * (_ONE / f32(math.sqrt(vc + eps)))   # x * alpha + beta, as BatchNorm.forward
        sh = b[c] - m * scale
        for n in range(N):
            for j in range(S):
                y[n, c, j] = x[n, c, j] * scale + sh
        mean[c] = m
        var[c] = vc


@njit(**_RED)
def batch_norm_mc(x, w, b, eps, y, mean, var):
    M, C = x.shape
    s = np.zeros(C, np.float64)
    for i in range(M):
        for c in range(C):
            s[c] += x[i, c]
    for c in range(C):
        mean[c] = f32(s[c] / M)
        s[c] = 0.0
    for i in range(M):
        for c in range(C):
            d = x[i, c] - mean[c]
            s[c] += d * d
    scale = np.empty(C, np.float32)
    shift = np.empty(C, np.float32)
    for c in range(C):
        var[c] = f32(s[c] / M)
        scale[c] = w[c] * (_ONE / f32(math.sqrt(var[c] + eps)))
        shift[c] = b[c] - mean[c] * scale[c]
    for i in range(M):
        for c in range(C):
            y[i, c] = x[i, c] * scale[c] + shift[c]


@njit(**_RED)
def batch_norm_grad_ncs(x, g, w, mean, var, eps, gx, gw, gb):
    """gb = sum(g), gw = sum(g * xhat), gx = w r (g - gb/n - xhat gw/n), xhat = (x - mean) r."""
    N, C, S = x.shape
    cnt = N * S
    for c in range(C):
        m = mean[c]
        r = _ONE / f32(math.sqrt(var[c] + eps))
        sg = 0.0
        sgx = 0.0
        for n in range(N):
            for j in range(S):
                gv = g[n, c, j]
                sg += gv
                sgx += gv * ((x[n, c, j] - m) * r)
        bc = f32(sg)
        wc = f32(sgx)
        gb[c] = bc
        gw[c] = wc
        k = w[c] * r
        mb = bc / f32(cnt)
        mw = wc / f32(cnt)
        for n in range(N):
            for j in range(S):
                gx[n, c, j] = (g[n, c, j] - mb - ((x[n, c, j] - m) * r) * mw) * k


@njit(**_RED)
def batch_norm_grad_mc(x, g, w, mean, var, eps, gx, gw, gb):
    M, C = x.shape
    r = np.empty(C, np.float32)
    for c in range(C):
        r[c] = _ONE / f32(math.sqrt(var[c] + eps))
    sg = np.zeros(C, np.float64)
    sgx = np.zeros(C, np.float64)
    for i in range(M):
        for c in range(C):
            gv = g[i, c]
            sg[c] += gv
            sgx[c] += gv * ((x[i, c] - mean[c]) * r[c])
    k = np.empty(C, np.float32)
    mb = np.empty(C, np.float32)
    mw = np.empty(C, np.float32)
    for c in range(C):
        gb[c] = f32(sg[c])
        gw[c] = f32(sgx[c])
        k[c] = w[c] * r[c]
        mb[c] = gb[c] / f32(M)
        mw[c] = gw[c] / f32(M)
    for i in range(M):
        for c in range(C):
            gx[i, c] = (g[i, c] - mb[c] - ((x[i, c] - mean[c]) * r[c]) * mw[c]) * k[c]
# ---- 2-D max pooling, channels-last (N, H, W, C) ---------------------------------------------------
# float32 or float64 (one compiled version each); the caller passes C-contiguous channels-last arrays
# (an NCHW-contiguous array is the channels-last array (N*C, H, W, 1)). Padding is implicit: positions
# outside x count as -inf, as in the NumPy forwards' -inf-padded copy. Each loop handles one output row
# at a time, taps in the forwards' order (a, b), then the row's windows j, then channels c: the inner
# loops run over contiguous channels with selects instead of branches, which LLVM vectorises (per-pixel
# state of C = 16 floats was too short for its vector loop and ran scalar, 3x slower).

@njit(inline="always", **_ELEM)
def _inside(OW, W, sw, pw, b, dw):
    """The range [lo, hi) of output columns j whose tap b (column j * sw - pw + b * dw) lies inside
    0 <= column < W (a bounds test inside the loop over j kept LLVM from vectorising: 5x slower)."""
    off = b * dw - pw
    lo = 0 if off >= 0 else (-off + sw - 1) // sw
    hi = 0 if W - off <= 0 else (W - off + sw - 1) // sw
    return min(lo, OW), max(min(hi, OW), min(lo, OW))


@njit(**_ELEM)
def max_pool2d(x, out, kh, kw, sh, sw, dh, dw, ph, pw):
    """out[n, i, j, c] = max over the window of (i, j) of x[n, ., ., c]; NaN propagates (np.maximum)."""
    N, H, W, C = x.shape
    OH, OW = out.shape[1], out.shape[2]
    ninf = -np.inf
    for n in range(N):
        for i in range(OH):
            m = out[n, i]
            for j in range(OW):
                for c in range(C):
                    m[j, c] = ninf
            for a in range(kh):
                h = i * sh - ph + a * dh
                if h < 0 or h >= H:
                    continue
                xrow = x[n, h]
                for b in range(kw):
                    lo, hi = _inside(OW, W, sw, pw, b, dw)
                    for j in range(lo, hi):
                        xr, mr = xrow[j * sw - pw + b * dw], m[j]
                        for c in range(C):
                            v = xr[c]
                            mc = mr[c]
                            mr[c] = v if (v > mc or v != v) and mc == mc else mc


@njit(**_ELEM)
def max_pool2d_grad(x, y, g, gx, left, kh, kw, sh, sw, dh, dw, ph, pw, disjoint):
    """gx gets g at the first position of each window (in kernel-offset order, padding skipped) where
    x == y; `left` (OW, C) holds each window's gradient until its first maximum takes it. Windows that do
    not overlap write their positions (the caller zeroes gx where no window covers it); overlapping ones
    add, with the output rows in reverse: then every position sums its windows' gradients in ascending
    kernel offset, the order of MaxPoolGrad.forward's passes (bit for bit the same values). Returns
    whether y holds a NaN: those windows' gradients are not placed, the caller runs the NumPy forward."""
    N, H, W, C = x.shape
    OH, OW = y.shape[1], y.shape[2]
    zero = g.dtype.type(0)
    nan = False
    for n in range(N):
        for ii in range(OH):
            i = ii if disjoint else OH - 1 - ii
            yrow = y[n, i]
            grow = g[n, i]
            for j in range(OW):
                for c in range(C):
                    left[j, c] = grow[j, c]
                    nan |= yrow[j, c] != yrow[j, c]
            for a in range(kh):
                h = i * sh - ph + a * dh
                if h < 0 or h >= H:
                    continue
                xrow, gxrow = x[n, h], gx[n, h]
                for b in range(kw):
                    lo, hi = _inside(OW, W, sw, pw, b, dw)
                    for j in range(lo, hi):
                        yr, lr = yrow[j], left[j]
                        w = j * sw - pw + b * dw
                        xr, gxr = xrow[w], gxrow[w]
                        if disjoint:
                            for c in range(C):
                                hit = xr[c] == yr[c]
                                gxr[c] = lr[c] if hit else zero
                                lr[c] = zero if hit else lr[c]
                        else:
                            for c in range(C):
                                hit = xr[c] == yr[c]
                                gxr[c] += lr[c] if hit else zero
                                lr[c] = zero if hit else lr[c]
    return nan


@njit(**_ELEM)
def max_pool2d_index(x, out, kh, kw, sh, sw, dh, dw, ph, pw, W0):
    """out[n, i, j, c]: the flat index (row * W0 + col, in the unpadded input of width W0) of the first
    maximum of each window of x (already padded: ph, pw are its leading pads), of its last NaN where it
    holds NaN (as torch's, and MaxPoolIndex.forward). Returns whether some window's maximum is -inf:
    the caller then runs the NumPy forward (with padding, a padded -inf must not win the tie)."""
    N, H, W, C = x.shape
    OH, OW = out.shape[1], out.shape[2]
    best = np.empty((OW, C), x.dtype)
    ninf = False
    for n in range(N):
        for i in range(OH):
            o = out[n, i]
            for a in range(kh):
                h = i * sh + a * dh
                xrow = x[n, h]
                for b in range(kw):
                    k = (h - ph) * W0 + (b * dw - pw)
                    for j in range(OW):
                        xr, bj, oj = xrow[j * sw + b * dw], best[j], o[j]
                        kj = k + j * sw
                        if a == 0 and b == 0:
                            for c in range(C):
                                bj[c] = xr[c]
                                oj[c] = kj
                            continue
                        for c in range(C):
                            v = xr[c]
                            bc = bj[c]
                            take = v > bc or v != v
                            bj[c] = v if take else bc
                            oj[c] = kj if take else oj[c]
            for j in range(OW):
                for c in range(C):
                    ninf |= best[j, c] == -np.inf
    return ninf


# ---- Winograd F(2x2, 3x3) input transform (conv layers) ---------------------------------------------
# Adds and subtracts only, no fastmath: bit for bit layers._winograd_input's NumPy passes.

@njit(inline="always", cache=True, nogil=True, error_model="numpy")
def _wg_row(u, a0, a1, a2, a3):
    """Row u of B^T d for the column values a0..a3 (rows 0-3 of the tile)."""
    if u == 0:
        return a0 - a2
    if u == 1:
        return a1 + a2
    if u == 2:
        return a2 - a1
    return a1 - a3


@njit(cache=True, nogil=True, error_model="numpy")
def winograd_input(xl, V, th, tw):
    """V[4u + v, n, i, j, c] = (B^T d B)[u, v] of the 4x4 tile d = xl[n, 2i:2i+4, 2j:2j+4, c] of the padded
    channels-last xl; V is (16, N, th, tw, C). Rows first (r0 - r2, r1 + r2, r2 - r1, r1 - r3), then
    columns, as the NumPy forward. One loop over the channels per output (one store stream: LLVM
    vectorises it; sixteen stores in one loop it did not)."""
    N, C = xl.shape[0], xl.shape[3]
    for n in range(N):
        for i in range(th):
            x0, x1, x2, x3 = xl[n, 2 * i], xl[n, 2 * i + 1], xl[n, 2 * i + 2], xl[n, 2 * i + 3]
            for j in range(tw):
                w = 2 * j
                for u in range(4):
                    o0, o1, o2, o3 = V[4 * u, n, i, j], V[4 * u + 1, n, i, j], V[4 * u + 2, n, i, j], \
                        V[4 * u + 3, n, i, j]
                    for c in range(C):
                        ra = _wg_row(u, x0[w, c], x1[w, c], x2[w, c], x3[w, c])
                        rc = _wg_row(u, x0[w + 2, c], x1[w + 2, c], x2[w + 2, c], x3[w + 2, c])
                        o0[c] = ra - rc
                    for c in range(C):
                        rb = _wg_row(u, x0[w + 1, c], x1[w + 1, c], x2[w + 1, c], x3[w + 1, c])
                        rc = _wg_row(u, x0[w + 2, c], x1[w + 2, c], x2[w + 2, c], x3[w + 2, c])
                        o1[c] = rb + rc
                    for c in range(C):
                        rb = _wg_row(u, x0[w + 1, c], x1[w + 1, c], x2[w + 1, c], x3[w + 1, c])
                        rc = _wg_row(u, x0[w + 2, c], x1[w + 2, c], x2[w + 2, c], x3[w + 2, c])
                        o2[c] = rc - rb
                    for c in range(C):
                        rb = _wg_row(u, x0[w + 1, c], x1[w + 1, c], x2[w + 1, c], x3[w + 1, c])
                        rd = _wg_row(u, x0[w + 3, c], x1[w + 3, c], x2[w + 3, c], x3[w + 3, c])
                        o3[c] = rb - rd


@njit(cache=True, nogil=True, error_model="numpy")
def embedding_grad(idx, vals, out, pad):
    """out[idx[i]] += vals[i] for each row i in order (out zeroed; the row `pad` left at zero, -1: none).
    Rows that share an index are added one after the other, in their order."""
    n, d = vals.shape
    for i in range(n):
        r = idx[i]
        if r == pad:
            continue
        for j in range(d):
            out[r, j] += vals[i, j]


# ---- where: a select, not a branch ----------------------------------------------------------------
# NumPy's where branches per element: on a random mask (relu's gradient, dropout, masked_fill) it runs
# ~10x slower than a multiply (3.2 ms for 800K float32 on Zen 4). These loops compile to a blend.

@njit(**_ELEM)
def where_select(c, a, b, out):
    """out = a if c else b, over flat arrays of one size."""
    for i in range(out.size):
        out[i] = a[i] if c[i] else b[i]


@njit(**_ELEM)
def where_select_a(c, a, b, out):
    """out = a if c else b with a scalar a."""
    for i in range(out.size):
        out[i] = a if c[i] else b[i]


@njit(**_ELEM)
def where_select_b(c, a, b, out):
    """out = a if c else b with a scalar b."""
    for i in range(out.size):
        out[i] = a[i] if c[i] else b
