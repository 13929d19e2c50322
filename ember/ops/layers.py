"""Primitives of nn layers: convolution and pooling (any number of spatial dims), and fused kernels
for the hottest layer math (Linear, GELU, softmax, log_softmax, normalisation, embedding lookup).

Convolution is im2col + one batched matmul: a strided view gives every window of the (already
padded) input, one copy lays the windows out as rows, and a matmul per group does the rest. Its
three bilinear maps close under differentiation, so every backward is again one of them:

    Conv(x, w)            = y
    ConvInputGrad(g, w)   = the adjoint of x -> Conv(x, w), applied to g  (col2im; ConvTranspose)
    ConvWeightGrad(x, g)  = the adjoint of w -> Conv(x, w), applied to g

Padding is not done here: callers pad with the differentiable `Pad` primitive first.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..autograd.function import Primitive
from ..backends import array_module
from ._attr_types import INTS, NONE, OPT_INT, SHAPE
from ._infer import _same, _shape_error

__all__ = ["Conv", "ConvInputGrad", "ConvWeightGrad", "MaxPool", "MaxPoolGrad", "MaxPoolIndex", "BatchNorm", "BatchNormGrad", "windows", "out_size"]


def out_size(size, k, stride, dilation):
    """Windows along one padded dim: floor((size - dilation*(k-1) - 1) / stride) + 1."""
    return (size - dilation * (k - 1) - 1) // stride + 1


def windows(x, k, stride, dilation):
    """A strided view (N, C, *out, *k) of every window of x (N, C, *spatial); no copy."""
    xp = array_module(x)
    nd = len(k)
    span = tuple(d * (kk - 1) + 1 for kk, d in zip(k, dilation))
    v = xp.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    key = (slice(None),) * 2 + tuple(slice(None, None, s) for s in stride) \
        + tuple(slice(None, None, d) for d in dilation)
    return v[key]


def _last(x):
    """(N, C, *S) -> (N, *S, C): the channels-last view of an array (no copy)."""
    nd = x.ndim - 2
    return x.transpose((0,) + tuple(range(2, 2 + nd)) + (1,))


def _first(y):
    """(N, *S, C) -> (N, C, *S): the API's channel-first view of channels-last memory (no copy)."""
    nd = y.ndim - 2
    return y.transpose((0, nd + 1) + tuple(range(1, nd + 1)))


def _has_pad(padding):
    return padding is not None and any(b or a for b, a in padding)


def _padded_last(x, padding):
    """x (N, C, *S) as channels-last (N, *S', C) with zero `padding` ((before, after) per spatial dim):
    a view when there is none, else one copy that also lays x out channels-last."""
    xl = _last(x)
    if not _has_pad(padding):
        return xl
    xp = array_module(x)
    shape = (xl.shape[0],) + tuple(n + b + a for n, (b, a) in zip(xl.shape[1:-1], padding)) + (xl.shape[-1],)
    out = xp.zeros(shape, dtype=x.dtype)
    out[(slice(None),) + tuple(slice(b, b + n) for n, (b, _) in zip(xl.shape[1:-1], padding))] = xl
    return out


def _taps(xl, k, stride, dilation):
    """A strided view (N, *out, C, *k) of every window of channels-last xl (N, *S, C); no copy."""
    xp = array_module(xl)
    nd = len(k)
    span = tuple(d * (kk - 1) + 1 for kk, d in zip(k, dilation))
    v = xp.lib.stride_tricks.sliding_window_view(xl, span, axis=tuple(range(1, 1 + nd)))
    key = (slice(None),) + tuple(slice(None, None, s) for s in stride) + (slice(None),) \
        + tuple(slice(None, None, d) for d in dilation)
    return v[key]


def _tap(xl, off, out, stride, dilation):
    """The (N, *out, C) view of channels-last xl under kernel offset `off`."""
    return xl[(slice(None),) + tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                                     for o, d, s, n in zip(off, dilation, stride, out))]


def _offsets(k):
    return itertools.product(*(range(kk) for kk in k))


def _cols(xl, k, stride, dilation, groups):
    """im2col, channels-last: rows (M, G, K*Cg) for M = N * output positions, each row a window with the
    kernel offset major and the channel minor, so the copy moves runs of contiguous channels. A 1x1
    stride-1 convolution of contiguous channels-last data needs no copy at all."""
    N, C = xl.shape[0], xl.shape[-1]
    nd = len(k)
    win = _taps(xl, k, stride, dilation)                              # (N, *out, C, *k)
    out = win.shape[1:1 + nd]
    if C == 1:   # one channel (a first layer): one copy per kernel offset moves whole rows, 3x faster
        xp = array_module(xl)
        cols = xp.empty((N * math.prod(out), 1, math.prod(k)), dtype=xl.dtype)
        dst = cols.reshape((N,) + tuple(out) + (math.prod(k),))
        for i, off in enumerate(_offsets(k)):
            dst[..., i] = _tap(xl, off, out, stride, dilation)[..., 0]
        return cols, out
    win = win.reshape(win.shape[:1 + nd] + (groups, C // groups) + tuple(k))   # (N, *out, G, Cg, *k)
    perm = tuple(range(2 + nd)) + tuple(range(3 + nd, 3 + 2 * nd)) + (2 + nd,)
    cols = win.transpose(perm).reshape(N * math.prod(out), groups, (C // groups) * math.prod(k))
    return cols, out


def _wmat(w, groups):
    """w (O, Cg, *k) -> (G, K*Cg, Og): each group's weights as the right operand of the im2col GEMM, a
    transposed view of (G, Og, K*Cg) memory (BLAS takes a transposed operand as is). Only each filter's
    (Cg, *k) -> (*k, Cg) is copied: laying out (K*Cg, Og) took 4.4 ms at 512 channels, this 1 ms."""
    O, Cg, k = w.shape[0], w.shape[1], w.shape[2:]
    nd = len(k)
    w = w.reshape((groups, O // groups, Cg) + tuple(k))
    w = w.transpose((0, 1) + tuple(range(3, 3 + nd)) + (2,))          # (G, Og, *k, Cg)
    return w.reshape(groups, O // groups, -1).transpose(0, 2, 1)


def _gemm_groups(xp, a, b, out_cols):
    """(M, G, p) x (G, p, q) -> (M, G, q) as one 2-D GEMM per group (NumPy's stacked matmul does not
    reach BLAS for transposed operands: 200x slower at W4's shapes)."""
    G = b.shape[0]
    if G == 1:
        return (a[:, 0] @ b[0])[:, None, :]
    y = xp.empty((a.shape[0], G, out_cols), dtype=xp.result_type(a.dtype, b.dtype))
    for i in range(G):
        y[:, i] = a[:, i] @ b[i]
    return y


def _depthwise(w, groups):
    """One input channel per group (depthwise, MobileNet's): done as a sum over kernel offsets of
    elementwise products, with no im2col matrix; w (O, 1, *k) -> (*k, G, Og)."""
    O, k = w.shape[0], w.shape[2:]
    nd = len(k)
    return w.reshape((groups, O // groups) + tuple(k)).transpose(tuple(range(2, 2 + nd)) + (0, 1))


# Winograd F(2x2, 3x3) (Lavin & Gray 2016): a 3x3 stride-1 convolution as 16 GEMMs on transformed 4x4
# input tiles, 2.25x fewer multiplications than im2col. y_tile = A^T [(G w G^T) * (B^T d B)] A.
# False: every conv through im2col (for tests and comparisons)
WINOGRAD = True
_WG = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
_WGG = tuple(tuple(_WG[u][a] * _WG[v][b] for a in range(3) for b in range(3)) for u in range(4) for v in range(4))


# the weight gradient's Winograd needs more tiles than the forward's: they are the inner dim of its 16
# GEMMs (at 32 tiles, ResNet-18's 512-channel layers, it was no faster than im2col)
WGRAD_TILES = 128


class _Spec:
    """The shape and dtype of a weight not at hand (ConvWeightGrad's), for _winograd_ok."""
    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.ndim = tuple(shape), dtype, len(shape)


def _winograd_ok(x, w, stride, dilation, groups, padding):
    """Where Winograd pays and keeps float accuracy: 2-D, 3x3, stride 1, no dilation or groups, float32/64.
    Its tile transforms cost O(C + O) per tile against O(C * O) of GEMM, and the weight transform is a
    fixed cost. Measured (CPU time, one thread, since the weight transform needs no transposed copy) on
    the layers of VGG16 (batch 1) and ResNet-18 (64x64, batch 32): 1.1x-1.7x faster than im2col from 64
    input and output channels on (64 channels at 224 pixels, 512 at 14 or at 2 with batch 32), even at
    32 channels or 16 tiles, slower at 16 -> 32 channels (W4)."""
    if not (w.ndim == 4 and tuple(w.shape[2:]) == (3, 3) and stride == (1, 1) and dilation == (1, 1)
            and groups == 1 and x.dtype in (np.float32, np.float64) and w.dtype == x.dtype):
        return False
    O, C = w.shape[0], w.shape[1]
    (pt, pb), (pl, pr) = padding or ((0, 0), (0, 0))
    oh, ow = x.shape[2] + pt + pb - 2, x.shape[3] + pl + pr - 2
    tiles = x.shape[0] * -(-oh // 2) * -(-ow // 2)
    return C * O >= 32 * (C + O) and tiles >= 32


def _winograd_input(x, pt, pl, th, tw):
    """V (16, N, th, tw, C): the input transform B^T d B of every 4x4 tile d (stride 2) of x (N, C, H, W)
    zero-padded by pt, pl before and up to 2*th + 2, 2*tw + 2 after, channels-last."""
    xp = array_module(x)
    N, C, H, W = x.shape
    # padded channels-last input covering every tile: (N, 2*th + 2, 2*tw + 2, C)
    xl = _padded_last(x, ((pt, 2 * th + 2 - H - pt), (pl, 2 * tw + 2 - W - pl)))
    V = _cpu_kernels.winograd_input(xl, th, tw)                       # one numba pass (or None)
    if V is not None:
        return V
    # rows of each tile, then columns
    r = [xl[:, a:a + 2 * th:2] for a in range(4)]                     # (N, th, 2tw+2, C)
    rows = (r[0] - r[2], r[1] + r[2], r[2] - r[1], r[1] - r[3])
    V = xp.empty((16, N, th, tw, C), dtype=x.dtype)
    for u, t in enumerate(rows):
        c = [t[:, :, b:b + 2 * tw:2] for b in range(4)]               # (N, th, tw, C)
        xp.subtract(c[0], c[2], out=V[4 * u])
        xp.add(c[1], c[2], out=V[4 * u + 1])
        xp.subtract(c[2], c[1], out=V[4 * u + 2])
        xp.subtract(c[1], c[3], out=V[4 * u + 3])
    return V


def _winograd_weight_grad(x, g, padding):
    """dW (O, C, 3, 3) of the 3x3 stride-1 conv of x (N, C, H, W) whose output gradient is g (N, O, oh, ow):
    Winograd F(3x3, 2x2), the dual of the forward's F(2x2, 3x3). Each 2x2 tile of g meets the 4x4 tile
    of x under it: dW = G^T [sum over tiles of (A g A^T) * (B^T d B)] G, the sum over tiles inside 16
    GEMMs (O, tiles) @ (tiles, C): 2.25x fewer multiplications than im2col."""
    xp = array_module(x)
    N, C = x.shape[:2]
    O, oh, ow = g.shape[1], g.shape[2], g.shape[3]
    (pt, _), (pl, _) = padding or ((0, 0), (0, 0))
    th, tw = -(-oh // 2), -(-ow // 2)
    Mt = N * th * tw
    V = _winograd_input(x, pt, pl, th, tw).reshape(16, Mt, C)
    gl = _last(g)                                                      # (N, oh, ow, O)
    if oh % 2 or ow % 2:                                               # zero rows/columns: whole tiles
        gl = _padded_last(g, ((0, oh % 2), (0, ow % 2)))
    # g transform A g A^T, A = [[1, 0], [1, 1], [1, -1], [0, -1]]: rows, then columns
    r0, r1 = gl[:, 0::2], gl[:, 1::2]                                  # (N, th, 2tw, O)
    rows = (r0, r0 + r1, r0 - r1, -r1)
    U = xp.empty((16, N, th, tw, O), dtype=g.dtype)
    for u, t in enumerate(rows):
        c0, c1 = t[:, :, 0::2], t[:, :, 1::2]                          # (N, th, tw, O)
        U[4 * u] = c0
        xp.add(c0, c1, out=U[4 * u + 1])
        xp.subtract(c0, c1, out=U[4 * u + 2])
        xp.negative(c1, out=U[4 * u + 3])
    U = U.reshape(16, Mt, O)
    Mo = xp.empty((16, O, C), dtype=xp.result_type(x.dtype, g.dtype))
    for i in range(16):
        xp.matmul(U[i].T, V[i], out=Mo[i])
    # output transform G^T m G, G^T = [[1, 1/2, 1/2, 0], [0, 1/2, -1/2, 0], [0, 1/2, 1/2, 1]]
    m = Mo.reshape(4, 4, O, C)
    h = (m[1] + m[2]) * 0.5
    p = (m[0] + h, (m[1] - m[2]) * 0.5, h + m[3])                      # over u: 3 x (4, O, C)
    dw = xp.empty((O, C, 3, 3), dtype=Mo.dtype)
    for a, q in enumerate(p):
        h = (q[1] + q[2]) * 0.5
        dw[:, :, a, 0] = q[0] + h
        dw[:, :, a, 1] = (q[1] - q[2]) * 0.5
        dw[:, :, a, 2] = h + q[3]
    return dw


def _winograd(x, w, padding, transposed=False):
    """y (N, oh, ow, O) channels-last (a view) of the 3x3 stride-1 conv of x (N, C, H, W) with w (O, C, 3, 3);
    `transposed`: with the flipped, transposed kernel instead, w (C, O, 3, 3) (ConvInputGrad's)."""
    xp = array_module(x)
    N, C, H, W = x.shape
    O = w.shape[0] if not transposed else w.shape[1]
    (pt, pb), (pl, pr) = padding or ((0, 0), (0, 0))
    oh, ow = H + pt + pb - 2, W + pl + pr - 2
    th, tw = -(-oh // 2), -(-ow // 2)
    V = _winograd_input(x, pt, pl, th, tw)                             # (16, N, th, tw, C)
    # weight transform G w G^T, one GEMM over w as stored: T (16, w.shape[0], w.shape[1]); U[i] (C, O) is
    # T[i].T (a transposed operand BLAS takes as is; laying it out cost 5 ms at 512 channels), or T[i]
    # itself for the transposed kernel, whose flip reverses the 9 taps: GG's columns
    GG = xp.asarray(_WGG, dtype=x.dtype)                               # (16, 9): kron(G, G)
    if transposed:
        GG = GG[:, ::-1]
    T = (GG @ w.reshape(-1, 9).T).reshape(16, w.shape[0], w.shape[1])
    U = T if transposed else T.transpose(0, 2, 1)                      # (16, C, O)
    Mt = N * th * tw
    Vm = V.reshape(16, Mt, C)
    Mo = xp.empty((16, Mt, O), dtype=x.dtype)
    for i in range(16):
        xp.matmul(Vm[i], U[i], out=Mo[i])
    # output transform A^T m A
    m = Mo.reshape(4, 4, Mt, O)
    p0 = m[0] + m[1] + m[2]                                           # (4, Mt, O), over v
    p1 = m[1] - m[2] - m[3]
    y = xp.empty((N, 2 * th, 2 * tw, O), dtype=x.dtype)
    for a, p in enumerate((p0, p1)):
        ya = p[0] + p[1] + p[2]
        y[:, a::2, 0::2] = ya.reshape(N, th, tw, O)
        xp.subtract(p[1], p[2], out=ya)
        ya -= p[3]
        y[:, a::2, 1::2] = ya.reshape(N, th, tw, O)
    return y[:, :oh, :ow]


class Conv(Primitive):
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *k), zero `padding` ((before, after) per
    spatial dim, None: none) and an optional bias b (O,). Computed channels-last: one im2col copy and one
    GEMM per group; the output is an (N, O, *out) view of channels-last memory, which elementwise ops
    keep and the next Conv reads without a transpose copy (torch's channels_last memory format)."""
    attrs = {"stride": INTS, "dilation": INTS, "groups": int, "padding": (tuple, NONE)}
    saves_inputs = True
    padding = None

    def forward(self, x, w, b=None):
        xp = array_module(x)
        G, k = self.groups, w.shape[2:]
        N, O = x.shape[0], w.shape[0]
        if WINOGRAD and _winograd_ok(x, w, self.stride, self.dilation, G, self.padding):
            y = _winograd(x, w, self.padding)                          # (N, oh, ow, O)
            if b is not None:
                y += b
            return _first(y)
        xl = _padded_last(x, self.padding)                           # (N, *S', C)
        if w.shape[1] == 1 and G > 1:
            out = tuple(out_size(n, kk, s, d) for n, kk, s, d in zip(xl.shape[1:-1], k, self.stride, self.dilation))
            wk = _depthwise(w, G)                                     # (*k, G, Og)
            y = None
            for off in _offsets(k):
                t = _tap(xl, off, out, self.stride, self.dilation)[..., None] * wk[off]   # (N, *out, G, Og)
                if y is None:
                    y = t
                else:
                    y += t
            y = y.reshape((N,) + out + (O,))
        else:
            cols, out = _cols(xl, k, self.stride, self.dilation, G)   # (M, G, K*Cg)
            y = _gemm_groups(xp, cols, _wmat(w, G), O // G).reshape((N,) + out + (O,))
        if b is not None:
            y += b
        return _first(y)

    def save_for_backward(self, x, w, b=None):
        super().save_for_backward(x, w)

    def backward(self, g):
        from .primitives import Sum
        x, w = self.saved_tensors
        need = self.needs_input_grad
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups, padding=self.padding)
        gx = ConvInputGrad.apply(g, w, x_shape=x.shape, **p) if need[0] else None
        gw = ConvWeightGrad.apply(x, g, w_shape=w.shape, **p) if need[1] else None
        if len(need) == 2:
            return gx, gw
        gb = Sum.apply(g, axis=(0,) + tuple(range(2, g.ndim)), keepdims=False) if need[2] else None
        return gx, gw, gb

    def infer(self, x, w, b=None):
        pads = self.padding or ((0, 0),) * (len(x.shape) - 2)
        out = tuple(out_size(n + pb + pa, k, s, d) for n, (pb, pa), k, s, d
                    in zip(x.shape[2:], pads, w.shape[2:], self.stride, self.dilation))
        return (x.shape[0], w.shape[0]) + out, x.dtype


class ConvInputGrad(Primitive):
    """col2im: scatter g (N, O, *out) through w back onto an input of shape `x_shape` (before
    `padding`, which is cropped off): one GEMM per group, then one strided add per kernel offset, all
    channels-last."""
    attrs = {"x_shape": SHAPE, "stride": INTS, "dilation": INTS, "groups": int, "padding": (tuple, NONE)}
    saves_inputs = True
    padding = None

    def forward(self, g, w):
        xp = array_module(g)
        G = self.groups
        N, C = self.x_shape[:2]
        O, k = w.shape[0], w.shape[2:]
        out = g.shape[2:]
        nd = len(k)
        pads = self.padding if _has_pad(self.padding) else ((0, 0),) * nd
        full = tuple(n + b + a for n, (b, a) in zip(self.x_shape[2:], pads))
        dpads = tuple((2 - b, 2 - a) for b, a in pads)
        if WINOGRAD and all(b >= 0 and a >= 0 for b, a in dpads) \
                and _winograd_ok(g, w, self.stride, self.dilation, G, dpads):
            # stride 1: the input gradient is the full correlation of g with the flipped, transposed
            # kernel, a 3x3 conv again (padding 2 - p on each side)
            return _first(_winograd(g, w, dpads, transposed=True))
        gl = _last(g)                                                 # (N, *out, O)
        wide = xp.result_type(g.dtype, w.dtype)
        if w.dtype.itemsize == 2:   # float32 accumulation for 2-byte floats, as torch's CPU kernels
            wide = np.float32
        gx = xp.zeros((N,) + full + (C,), dtype=wide)                 # (N, *S', C)
        if w.shape[1] == 1 and G > 1:                                 # depthwise: no col matrix
            wk = _depthwise(w, G)                                     # (*k, G, Og)
            gg = gl.reshape(gl.shape[:-1] + (G, O // G))
            for off in _offsets(k):
                t = (gg * wk[off]).sum(axis=-1) if O > G else gg[..., 0] * wk[off][:, 0]
                _tap(gx, off, out, self.stride, self.dilation)[...] += t
        else:
            # one GEMM per kernel offset (and group), each added into its strided tap of gx at once:
            # contiguous (M, Cg) products instead of a (M, K*Cg) col matrix read back in pieces
            Og, Cg = O // G, C // G
            M = N * math.prod(out)
            g3 = gl.reshape(M, G, Og)
            wk = xp.ascontiguousarray(w.reshape(G, Og, Cg, -1).transpose(3, 0, 1, 2))   # (K, G, Og, Cg)
            gx5 = gx.reshape(gx.shape[:-1] + (G, Cg))
            for i, off in enumerate(_offsets(k)):
                dst = _tap(gx5, off, out, self.stride, self.dilation)                 # (N, *out, G, Cg)
                for j in range(G):
                    dst[..., j, :] += (g3[:, j] @ wk[i, j]).reshape(dst.shape[:-2] + (Cg,))
        if _has_pad(self.padding):
            gx = gx[(slice(None),) + tuple(slice(b, b + n) for n, (b, _) in zip(self.x_shape[2:], pads))]
        return _first(gx)

    def backward(self, gg):
        g, w = self.saved_tensors
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups, padding=self.padding)
        d_g = Conv.apply(gg, w, **p) if self.needs_input_grad[0] else None
        d_w = ConvWeightGrad.apply(gg, g, w_shape=w.shape, **p) if self.needs_input_grad[1] else None
        return d_g, d_w

    def infer(self, g, w): return tuple(self.x_shape), g.dtype


class ConvWeightGrad(Primitive):
    """The weight gradient of Conv: sum over batch and positions of g times the windows of x: one
    im2col and one GEMM per group, channels-last."""
    attrs = {"w_shape": SHAPE, "stride": INTS, "dilation": INTS, "groups": int, "padding": (tuple, NONE)}
    saves_inputs = True
    padding = None

    def forward(self, x, g):
        xp = array_module(x)
        G = self.groups
        O, Cg, k = self.w_shape[0], self.w_shape[1], tuple(self.w_shape[2:])
        nd = len(k)
        if WINOGRAD and g.ndim == 4 and g.shape[0] * -(-g.shape[2] // 2) * -(-g.shape[3] // 2) >= WGRAD_TILES \
                and _winograd_ok(x, _Spec(self.w_shape, g.dtype), self.stride, self.dilation, G, self.padding):
            return _winograd_weight_grad(x, g, self.padding)
        xl = _padded_last(x, self.padding)                            # (N, *S', C)
        gl = _last(g)                                                 # (N, *out, O)
        out = g.shape[2:]
        if Cg == 1 and G > 1:                                         # depthwise
            gg = gl.reshape(gl.shape[:-1] + (G, O // G))
            axes = tuple(range(1 + nd))
            gw = xp.empty(k + (G, O // G), dtype=xp.result_type(x.dtype, g.dtype))
            for off in _offsets(k):
                gw[off] = (_tap(xl, off, out, self.stride, self.dilation)[..., None] * gg).sum(axis=axes)
            gw = gw.transpose((nd, nd + 1) + tuple(range(nd)))       # (G, Og, *k)
            return xp.ascontiguousarray(gw).reshape(self.w_shape)
        cols, _ = _cols(xl, k, self.stride, self.dilation, G)         # (M, G, K*Cg)
        g2 = gl.reshape(cols.shape[0], G, O // G)                    # (M, G, Og)
        if O // G >= 64:
            # many output channels: g.T @ cols is (Og, *k, Cg), the weight's order up to each filter's
            # (*k, Cg) -> (Cg, *k); cols.T @ g needs the whole (K*Cg, Og) transposed (6.3 ms at 512
            # channels, against 1.3 ms), and the two GEMMs run at the same speed at these shapes
            gw = xp.empty((G, O // G, cols.shape[2]), dtype=xp.result_type(x.dtype, g.dtype))
            for i in range(G):
                gw[i] = g2[:, i].T @ cols[:, i]                            # (Og, K*Cg)
            gw = gw.reshape((G, O // G) + k + (Cg,))                       # (G, Og, *k, Cg)
            gw = gw.transpose((0, 1, nd + 2) + tuple(range(2, nd + 2)))    # (G, Og, Cg, *k)
            return xp.ascontiguousarray(gw).reshape(self.w_shape)
        # cols.T @ g, not g.T @ cols: OpenBLAS runs the first 1.5x-10x faster at these shapes (few
        # output channels, many rows)
        gw = xp.empty((G, cols.shape[2], O // G), dtype=xp.result_type(x.dtype, g.dtype))
        for i in range(G):
            gw[i] = cols[:, i].T @ g2[:, i]                            # (K*Cg, Og)
        gw = gw.reshape((G,) + k + (Cg, O // G))                       # (G, *k, Cg, Og)
        gw = gw.transpose((0, nd + 2, nd + 1) + tuple(range(1, nd + 1)))   # (G, Og, Cg, *k)
        return xp.ascontiguousarray(gw).reshape(self.w_shape)

    def backward(self, gg):
        x, g = self.saved_tensors
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups, padding=self.padding)
        d_x = ConvInputGrad.apply(g, gg, x_shape=x.shape, **p) if self.needs_input_grad[0] else None
        d_g = Conv.apply(x, gg, **p) if self.needs_input_grad[1] else None
        return d_x, d_g

    def infer(self, x, g): return tuple(self.w_shape), x.dtype


class MaxPoolIndex(Primitive):
    """Where the max of each window of x (N, C, *S) (already padded with -inf) is: (N, C, *out) int64
    flat indices into x's spatial dims, or, with `pads` ((before, after) per spatial dim), into the
    unpadded input's (torch's return_indices). Ties go to the first maximum, a window holding NaN to its
    last NaN (as torch's CPU kernels). The pooled values are a
    Gather of x at these indices, so their gradient is Gather's."""
    attrs = {"kernel": INTS, "stride": INTS, "dilation": INTS, "pads": (tuple, NONE)}
    differentiable = False
    keeps_dtype = False
    pads = None

    def forward(self, x):
        xp = array_module(x)
        k, nd = self.kernel, len(self.kernel)
        win = windows(x, k, self.stride, self.dilation)               # (N, C, *out, *k)
        out = win.shape[2:2 + nd]
        flat = win.reshape(win.shape[:2 + nd] + (math.prod(k),))        # (N, C, *out, K)
        arg = flat.argmax(-1)                                             # (N, C, *out) offset in window
        best = xp.take_along_axis(flat, arg[..., None], -1)[..., 0]
        # a window holding NaN: torch's index is its last NaN (argmax gives the first)
        nan = xp.isnan(best)
        if nan.any():
            last = flat.shape[-1] - 1 - xp.isnan(flat[..., ::-1]).argmax(-1)
            arg = xp.where(nan, last, arg)
        # a window whose maximum is -inf: its first -inf inside the input, not a padding one before it
        if _has_pad(self.pads) and (ninf := best == -math.inf).any():
            inside = True
            for i in range(nd):
                p = xp.arange(out[i])[:, None] * self.stride[i] + xp.arange(k[i]) * self.dilation[i]
                ok = (p >= self.pads[i][0]) & (p < x.shape[2 + i] - self.pads[i][1])     # (out_i, k_i)
                shape = [1] * (2 * nd)
                shape[i], shape[nd + i] = out[i], k[i]
                inside = inside & ok.reshape(shape)                      # (*out, *k)
            arg = xp.where(ninf, inside.reshape(out + (-1,)).argmax(-1), arg)
        offs = xp.unravel_index(arg, k)
        pos = []
        for i in range(nd):
            base = (xp.arange(out[i]) * self.stride[i]).reshape((-1,) + (1,) * (nd - 1 - i))
            pos.append(base + offs[i] * self.dilation[i])
        spatial = x.shape[2:]
        if self.pads is not None:   # a window wholly in the padding (dilation > padding) has no input
            pos = [p - b for p, (b, _) in zip(pos, self.pads)]   # position: the nearest one (torch's is
            spatial = tuple(n - b - a for n, (b, a) in zip(spatial, self.pads))   # out of range)
            return xp.ravel_multi_index(pos, spatial, mode="clip").astype(np.int64)
        return xp.ravel_multi_index(pos, spatial).astype(np.int64)

    def infer(self, x):
        out = tuple(out_size(n, k, s, d) for n, k, s, d in zip(x.shape[2:], self.kernel, self.stride,
                                                               self.dilation))
        return x.shape[:2] + out, np.dtype(np.int64)


def _pool_padded(x, padding, value):
    """x (N, C, *S) padded with `value` on the spatial dims, in x's memory layout (channels-last stays
    channels-last); x itself when there is no padding."""
    if not _has_pad(padding):
        return x
    xp = array_module(x)
    shape = x.shape[:2] + tuple(n + b + a for n, (b, a) in zip(x.shape[2:], padding))
    out = xp.full_like(x, value, shape=shape)
    out[(slice(None),) * 2 + tuple(slice(b, b + n) for n, (b, _) in zip(x.shape[2:], padding))] = x
    return out


def _pool_tap(x, off, out, stride, dilation):
    """The (N, C, *out) view of x (N, C, *S) under window offset `off`."""
    return x[(slice(None),) * 2 + tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                                         for o, d, s, n in zip(off, dilation, stride, out))]


class MaxPool(Primitive):
    """Max over the windows of x (N, C, *S) padded with -inf by `padding` ((before, after) per spatial
    dim, or None): one elementwise maximum per window offset over strided views, so the output keeps
    x's memory layout. The gradient goes to the first maximum of each window (MaxPoolGrad), as torch's."""
    attrs = {"kernel": INTS, "stride": INTS, "dilation": INTS, "padding": (tuple, NONE)}
    saves_inputs = True
    saves_output = True
    padding = None

    def forward(self, x):
        xp = array_module(x)
        xpad = _pool_padded(x, self.padding, -math.inf)
        out = self.infer(x)[0][2:]
        taps = [_pool_tap(xpad, off, out, self.stride, self.dilation) for off in _offsets(self.kernel)]
        if len(taps) == 1:
            return taps[0].copy(order="K")
        y = xp.maximum(taps[0], taps[1])
        for t in taps[2:]:
            xp.maximum(y, t, out=y)
        return y

    def backward(self, g):
        x, = self.saved_tensors
        return (MaxPoolGrad.apply(x, self.saved_output(), g, kernel=self.kernel, stride=self.stride,
                                  dilation=self.dilation, padding=self.padding),)

    def infer(self, x):
        pads = self.padding or ((0, 0),) * (len(x.shape) - 2)
        out = tuple(out_size(n + b + a, k, s, d) for n, (b, a), k, s, d
                    in zip(x.shape[2:], pads, self.kernel, self.stride, self.dilation))
        return tuple(x.shape[:2]) + out, x.dtype


class MaxPoolGrad(Primitive):
    """The gradient of MaxPool: g (N, C, *out) sent to the first position of each window of x where x
    equals the pooled y (to the last NaN of a window holding NaN); zero elsewhere. Its gradient in g picks gg at those positions (a Gather at
    MaxPoolIndex); in x and y it is zero (piecewise constant)."""
    attrs = {"kernel": INTS, "stride": INTS, "dilation": INTS, "padding": (tuple, NONE)}
    saves_inputs = True
    padding = None

    def forward(self, x, y, g):
        xp = array_module(x)
        # NaN padding: no padding position equals y, so a window whose maximum is -inf sends its gradient
        # to its first -inf inside x, as torch's
        xpad = _pool_padded(x, self.padding, math.nan)
        out = y.shape[2:]
        gx = xp.zeros_like(xpad)
        g = g.astype(gx.dtype, copy=False)
        # windows that do not overlap write their taps directly; overlapping ones add
        disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(self.kernel, self.stride, self.dilation))
        offsets = list(_offsets(self.kernel))
        taken = None
        for i, off in enumerate(offsets):
            hit = _pool_tap(xpad, off, out, self.stride, self.dilation) == y
            if taken is not None:
                hit = xp.greater(hit, taken, out=hit)       # hit and not taken: the first maximum only
            if i < len(offsets) - 1:
                taken = hit.copy() if taken is None else xp.logical_or(taken, hit, out=taken)
            dst = _pool_tap(gx, off, out, self.stride, self.dilation)
            # g where hit, not g * hit: an inf or NaN in g reaches only the maximum, as in torch
            if disjoint:
                xp.copyto(dst, g, where=hit)
            else:
                dst += xp.where(hit, g, 0)
        nan = xp.isnan(y)   # (a pass over the pooled y, not x)
        if nan.any():       # a window holding NaN sends its gradient to its last NaN, as torch's
            xpad = _pool_padded(x, self.padding, 0)
            for off in reversed(offsets):
                hit = xp.isnan(_pool_tap(xpad, off, out, self.stride, self.dilation))
                xp.logical_and(hit, nan, out=hit)
                xp.greater(nan, hit, out=nan)               # that window is done
                _pool_tap(gx, off, out, self.stride, self.dilation)[...] += xp.where(hit, g, 0)
        if _has_pad(self.padding):
            gx = gx[(slice(None),) * 2 + tuple(slice(b, b + n) for n, (b, _) in zip(x.shape[2:], self.padding))]
        return gx

    def save_for_backward(self, x, y, g):
        super().save_for_backward(x)

    def backward(self, gg):
        from .primitives import Gather, Pad
        x, = self.saved_tensors
        N, C = x.shape[:2]
        pads = self.padding or ((0, 0),) * (x.ndim - 2)
        xpad = Pad.apply(x.detach(), pads=((0, 0), (0, 0)) + tuple(pads), value=-math.inf)
        idx = MaxPoolIndex.apply(xpad, kernel=self.kernel, stride=self.stride, dilation=self.dilation,
                                 pads=tuple(pads))                    # (N, C, *out) into x's positions
        dg = Gather.apply(gg.reshape(N, C, -1), idx.reshape(N, C, -1), axis=2).reshape(idx.shape)
        return None, None, dg

    def infer(self, x, y, g): return tuple(x.shape), x.dtype


# ---------------------------------------------------------------- fused kernels of nn layers
# One node instead of five to ten for the hottest layer math. Each forward is plain `xp` code. A
# backward is either the textbook formula in Tensor ops on saved tensors, or a fused gradient primitive
# (GeluGrad, SoftmaxGrad: their own backward is again in Tensor ops, so double backward works;
# LayerNormGrad: first order only, LayerNorm builds a Tensor-op composite under create_graph).
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _blocks(xp, fn, *arrays):
    """fn over cache-sized blocks on the CPU (see backends.cpu.blockwise: ~25% faster for GELU's
    dozen ufunc passes over activations larger than L2), in one call elsewhere."""
    if xp is np:
        from ..backends.cpu import blockwise
        return blockwise(fn, *arrays)
    return fn(*arrays)


def _wide(x):
    """x in float32 if it is a 2-byte float (float16, bfloat16): the fused kernels compute there, as
    torch's CPU kernels do, and Primitive.apply casts the output back to the input's dtype."""
    return x.astype(np.float32) if x.itemsize == 2 and x.dtype.kind in "fV" else x


def _erf(xp, x):
    """erf; float32 on the CPU uses Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, about one float32 ulp),
    a few NumPy ufuncs that run ~4x faster than scipy's erf; everything else goes to the backend's erf."""
    from .. import backends
    if xp.__name__ == "numpy" and x.dtype == np.float32:
        shape = x.shape
        x = x.reshape(-1)   # a 0-d array's ufunc results are NumPy scalars, which `out=` refuses
        # in place on two temporaries: at this size the ufuncs are memory-bound
        a = np.abs(x)
        t = a * np.float32(0.3275911)
        t += 1.0
        np.reciprocal(t, out=t)
        poly = t * np.float32(1.061405429)
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            poly += np.float32(c)
            poly *= t
        np.multiply(a, a, out=a)
        np.negative(a, out=a)
        np.exp(a, out=a)
        poly *= a
        np.subtract(np.float32(1.0), poly, out=poly)
        return np.copysign(poly, x, out=poly).reshape(shape)
    return backends.get("cpu" if xp.__name__ == "numpy" else "cuda").erf(x).astype(x.dtype, copy=False)


def _gelu_cdf(xp, x):
    return 0.5 * (1.0 + _erf(xp, x * _INV_SQRT2))


class Gelu(Primitive):
    """x * Phi(x) (the exact, erf form); the gradient is GeluGrad."""
    attrs = {}
    elementwise = True
    saves_inputs = True

    def forward(self, x):
        xp = array_module(x)
        return _blocks(xp, lambda xb: xb * _gelu_cdf(xp, xb), _wide(x).reshape(-1)).reshape(x.shape)

    def backward(self, g):
        x, = self.saved_tensors
        return (GeluGrad.apply(x, g),)

    def infer(self, x): return _same(x)


class GeluGrad(Primitive):
    """g * GELU'(x) = g * (Phi(x) + x phi(x)); its own gradient: d/dg = GELU'(x),
    d/dx = g * GELU''(x) = g * phi(x) * (2 - x^2)."""
    attrs = {}
    elementwise = True
    saves_inputs = True

    def forward(self, x, g):
        xp = array_module(x)

        def dgelu(xb, gb):
            d = xb * xb
            d *= -0.5
            xp.exp(d, out=d)
            d *= _INV_SQRT_2PI
            d *= xb
            d += _gelu_cdf(xp, xb)
            d *= gb
            return d
        return _blocks(xp, dgelu, _wide(x).reshape(-1), _wide(g).reshape(-1)).reshape(x.shape)

    def backward(self, gg):
        x, g = self.saved_tensors
        dx = dg = None
        if self.needs_input_grad[0]:
            pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
            dx = gg * g * pdf * (2 - x * x)
        if self.needs_input_grad[1]:
            dg = GeluGrad.apply(x, gg)
        return dx, dg

    def infer(self, x, g): return x.shape, x.dtype


class Softmax(Primitive):
    """exp(x - max) / sum over `axis`; backward y * (g - sum(g * y))."""
    attrs = {"axis": int}
    elementwise = True
    saves_output = True

    def forward(self, x):
        xp = array_module(x)
        x = _wide(x)
        e = xp.exp(x - x.max(axis=self.axis, keepdims=True))
        e /= e.sum(axis=self.axis, keepdims=True)
        return e

    def backward(self, g):
        return (SoftmaxGrad.apply(self.saved_output(), g, axis=self.axis),)

    def infer(self, x): return _same(x)


class SoftmaxGrad(Primitive):
    """y * (g - sum(g * y)) over `axis`, y a softmax output. Its own gradient: d/dg is SoftmaxGrad(y, gg);
    d/dy = gg * (g - sum(g * y)) - g * sum(gg * y)."""
    attrs = {"axis": int}
    elementwise = True
    saves_inputs = True

    def forward(self, y, g):
        gy = _wide(g) * y
        gy -= y * gy.sum(axis=self.axis, keepdims=True)
        return gy

    def backward(self, gg):
        y, g = self.saved_tensors
        dy = dg = None
        if self.needs_input_grad[0]:
            dy = gg * (g - (g * y).sum(self.axis, keepdim=True)) - g * (gg * y).sum(self.axis, keepdim=True)
        if self.needs_input_grad[1]:
            dg = SoftmaxGrad.apply(y, gg, axis=self.axis)
        return dy, dg

    def infer(self, y, g): return y.shape, y.dtype


class LogSoftmax(Primitive):
    """x - logsumexp(x) over `axis`; backward g - softmax(x) * sum(g)."""
    attrs = {"axis": int}
    elementwise = True
    saves_output = True

    def forward(self, x):
        xp = array_module(x)
        x = _wide(x)
        s = x - x.max(axis=self.axis, keepdims=True)
        return s - xp.log(xp.exp(s).sum(axis=self.axis, keepdims=True))

    def backward(self, g):
        y = self.saved_output()
        return (g - y.exp() * g.sum(self.axis, keepdim=True),)

    def infer(self, x): return _same(x)


class Normalize(Primitive):
    """(x - mean) / sqrt(var + eps) over the trailing `n` dims (LayerNorm without its affine part).

    With y the output and r = 1/sqrt(var + eps): dx = r * (g - mean(g) - y * mean(g * y)).
    """
    attrs = {"n": int, "eps": float}
    elementwise = True
    saves_inputs = True
    saves_output = True

    def forward(self, x):
        xp = array_module(x)
        axes = tuple(range(-self.n, 0))
        dt, x = x.dtype, _wide(x)
        xc = x - x.mean(axis=axes, keepdims=True)
        rstd = (1.0 / xp.sqrt((xc * xc).mean(axis=axes, keepdims=True) + self.eps)).astype(dt, copy=False)
        return xc * rstd

    def backward(self, g):
        from ..autograd.grad_mode import STATE
        x, = self.saved_tensors
        if not STATE.enabled:   # first order: one fused primitive
            return (LayerNormGrad.apply(x, g, n=self.n, eps=self.eps),)
        # create_graph: r as a function of x
        axes = tuple(range(-self.n, 0))
        y = self.saved_output()
        xc = x - x.mean(axes, keepdim=True)
        r = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        return (r * (g - g.mean(axes, keepdim=True) - y * (g * y).mean(axes, keepdim=True)),)

    def infer(self, x): return _same(x)


class Embedding(Primitive):
    """weight[idx] for an integer index tensor `idx` (rows of the table); with `freq`, each row's
    gradient is divided by how often its index occurs in idx (torch's scale_grad_by_freq)."""
    attrs = {"padding_idx": OPT_INT, "freq": bool}
    saves_inputs = True
    freq = False

    def forward(self, w, idx):
        return w[idx]

    def save_for_backward(self, w, idx):
        self.num = w.shape[0]
        super().save_for_backward(idx)

    def backward(self, g):
        idx, = self.saved_tensors
        extra = {"freq": True} if self.freq else {}
        return EmbeddingGrad.apply(g, idx, num=self.num, padding_idx=self.padding_idx, **extra), None

    def infer(self, w, idx): return tuple(idx.shape) + tuple(w.shape[1:]), w.dtype


class EmbeddingGrad(Primitive):
    """The adjoint of Embedding: sum the rows of g that share an index (sort + reduceat, not add.at),
    divided by the index's count with `freq`; the padding_idx row gets nothing. Its own gradient in g
    looks the rows up again, without the counts (as torch's: the scaled gradient is not a derivative)."""
    attrs = {"num": int, "padding_idx": OPT_INT, "freq": bool}
    freq = False

    saves_inputs = True

    def forward(self, g, idx):
        xp = array_module(g)
        flat = idx.reshape(-1)
        vals = g.reshape(flat.size, math.prod(g.shape[idx.ndim:]))   # not -1: no indices is no rows
        out = xp.zeros((self.num, vals.shape[1]), dtype=g.dtype)
        if flat.size and xp is np:
            order = np.argsort(flat, kind="stable")
            s = flat[order]
            starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
            out[s[starts]] = np.add.reduceat(vals[order], starts, axis=0)
        elif flat.size:
            from .primitives import _add_at
            _add_at(xp, out, flat, vals)
        if self.freq and flat.size:
            counts = xp.bincount(flat, minlength=self.num)
            out /= xp.maximum(counts, 1).astype(out.dtype)[:, None]
        if self.padding_idx is not None:
            out[self.padding_idx] = 0
        return out.reshape((self.num,) + g.shape[idx.ndim:])

    def save_for_backward(self, g, idx):
        super().save_for_backward(idx)

    def backward(self, gg):
        from .primitives import Compare, Where
        idx, = self.saved_tensors
        out = Embedding.apply(gg, idx, padding_idx=None)
        if self.padding_idx is not None:
            keep = Compare.apply(idx, idx.new_full((), self.padding_idx), op="ne")
            out = Where.apply(keep.reshape(keep.shape + (1,) * (out.ndim - keep.ndim)), out, out.new_zeros(()))
        return out, None

    def infer(self, g, idx): return (self.num,) + g.shape[len(idx.shape):], g.dtype


class Linear(Primitive):
    """x @ w.T (+ b) for 2-D x (N, in), w (out, in), b (out,): one node instead of transpose, matmul, add."""
    attrs = {}
    saves_inputs = True

    def forward(self, x, w, b=None):
        y = x @ w.T
        if b is not None:
            y += b
        return y

    def save_for_backward(self, x, w, b=None):
        # as torch's addmm: x only for w's gradient, w only for x's (saved-tensor hooks see the same tensors)
        need = self.needs_input_grad
        super().save_for_backward(x if need[1] else None, w if need[0] else None)

    def backward(self, g):
        from .primitives import MatMul, Sum
        x, w = self.saved_tensors
        need = self.needs_input_grad
        gx = MatMul.apply(g, w) if need[0] else None
        gw = MatMul.apply(g.mT, x) if need[1] else None
        if len(need) == 2:
            return gx, gw
        gb = Sum.apply(g, axis=(0,), keepdims=False) if need[2] else None
        return gx, gw, gb

    def infer(self, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise _shape_error("linear", f"x {x.shape} and weight {w.shape} do not align: {x.shape[-1]} != {w.shape[-1]}")
        return tuple(x.shape[:-1]) + (w.shape[0],), x.dtype


class LayerNorm(Primitive):
    """(x - mean) / sqrt(var + eps) * w + b over the trailing `n` dims, w and b of that shape.

    With xhat the normalised x, r = 1/sqrt(var + eps) and h = g * w:
    dx = r * (h - mean(h) - xhat * mean(h * xhat)), dw = sum(g * xhat), db = sum(g).
    """
    attrs = {"n": int, "eps": float}
    elementwise = True
    saves_inputs = True

    def forward(self, x, w, b):
        xp = array_module(x)
        axes = tuple(range(-self.n, 0))
        x = _wide(x)   # xhat and rstd stay in float32 for 2-byte floats
        xc = x - x.mean(axis=axes, keepdims=True)
        rstd = (1.0 / xp.sqrt((xc * xc).mean(axis=axes, keepdims=True) + self.eps)).astype(x.dtype, copy=False)
        xc *= rstd
        return xc * _wide(w) + _wide(b)

    def backward(self, g):
        from ..autograd.grad_mode import STATE
        from .primitives import sum_to
        x, w, b = self.saved_tensors
        axes = tuple(range(-self.n, 0))
        need = self.needs_input_grad
        if not STATE.enabled:   # first order: fused primitives
            if not need[1]:
                gb = sum_to(g, b.shape) if need[2] else None
                return (LayerNormGrad.apply(x, g, w, n=self.n, eps=self.eps) if need[0] else None), None, gb
            # dx, dw (and db) from one pass: rows of dx with dw and db as one more row each
            with_b = bool(need[2])
            packed = LayerNormGrad.apply(x, g, w, n=self.n, eps=self.eps, with_w=True, with_b=with_b)
            rows = packed.shape[0] - 1 - with_b   # (R + 1 [+ 1], D)
            gw = packed[rows].reshape(w.shape)
            gb = packed[rows + 1].reshape(b.shape) if with_b else None
            gx = packed[:rows].reshape(x.shape) if need[0] else None
            return gx, gw, gb
        # create_graph: xhat and r as functions of x
        xc = x - x.mean(axes, keepdim=True)
        r = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        xhat = xc * r
        h = g * w
        gx = r * (h - h.mean(axes, keepdim=True) - xhat * (h * xhat).mean(axes, keepdim=True)) if need[0] else None
        gw = sum_to(g * xhat, w.shape) if need[1] else None
        gb = sum_to(g, b.shape) if need[2] else None
        return gx, gw, gb

    def infer(self, x, w, b): return _same(x)

class LayerNormGrad(Primitive):
    """First-order gradients of LayerNorm / Normalize over the trailing `n` dims, xhat and r recomputed
    from x. (x, g[, w]): dx = r * (h - mean(h) - xhat * mean(h * xhat)) with h = g * w (h = g without w).
    `with_w`: also dw = sum of g * xhat over the leading dims, packed as (R + 1, D): R rows of dx
    (R = leading elements, D = normalised elements), then dw; `with_b` (with `with_w` only) adds
    db = sum of g as one more row, (R + 2, D). Used only outside create_graph (LayerNorm's backward
    builds a differentiable composite there), so it has no gradient of its own."""
    attrs = {"n": int, "eps": float, "with_w": bool, "with_b": bool}
    elementwise = True
    with_w = False
    with_b = False

    def forward(self, x, g, w=None):
        xp = array_module(x)
        axes = tuple(range(-self.n, 0))
        dt, x, ga = x.dtype, _wide(x), _wide(g)
        xc = x - x.mean(axis=axes, keepdims=True)
        rstd = (1.0 / xp.sqrt((xc * xc).mean(axis=axes, keepdims=True) + self.eps)).astype(dt, copy=False)
        xc *= rstd                                          # xhat
        h = ga * _wide(w) if w is not None else ga.copy()
        gx = h - h.mean(axis=axes, keepdims=True)
        h *= xc
        gx -= xc * h.mean(axis=axes, keepdims=True)
        if not self.with_w:
            gx *= rstd
            return gx
        d = math.prod(x.shape[x.ndim - self.n:])
        rows = gx.size // max(d, 1)
        out = xp.empty((rows + 1 + self.with_b, d), dtype=gx.dtype)
        xp.multiply(gx, rstd, out=out[:rows].reshape(gx.shape))   # dx straight into its rows (a view)
        if self.with_b:
            ga.reshape(-1, d).sum(axis=0, out=out[rows + 1])
        xc *= ga
        xc.reshape(-1, d).sum(axis=0, out=out[rows])
        return out

    def backward(self, gg):
        raise RuntimeError("layer_norm: the fused first-order gradient is not differentiable; use "
                           "create_graph=True in the first backward to differentiate it again")

    def infer(self, x, g, w=None):
        if self.with_b and not self.with_w:
            raise ValueError("LayerNormGrad: with_b needs with_w")
        if not self.with_w:
            return x.shape, x.dtype
        d = math.prod(x.shape[len(x.shape) - self.n:])
        return (math.prod(x.shape) // max(d, 1) + 1 + self.with_b, d), x.dtype


def _bn_dot(xp, a, b):
    """Per-channel sum of a * b over every dim but 1; einsum (no product temporary) where NumPy's einsum
    takes the dtype (not bfloat16)."""
    if a.dtype in (np.float32, np.float64) and b.dtype == a.dtype:
        idx = "abcdefgh"[:a.ndim]
        return xp.einsum(f"{idx},{idx}->b", a, b)
    return (a * b).sum(axis=(0,) + tuple(range(2, a.ndim)))


class BatchNorm(Primitive):
    """Training-mode batch norm of x (N, C, *S) with weight w and bias b (C,): returns (y, mean, var),
    the batch statistics over every dim but 1 (var biased) for the running-stat update. Few passes over
    x, in x's memory layout: a mean, a centred copy, its mean square, then x * alpha + beta into it.
    The statistics outputs take no gradient (they feed only the running stats, under no_grad);
    the gradient of y is BatchNormGrad, or a Tensor-op composite under create_graph."""
    attrs = {"eps": float}
    multi_output = True
    saved_outputs = (1, 2)   # the batch statistics; backward does not read y
    saves_inputs = True
    _materialize = False   # the statistics' gradients stay None

    def forward(self, x, w, b):
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        xp = array_module(x)
        mean = x.mean(axis=axes, keepdims=True)
        xc = x - mean
        var = _bn_dot(xp, xc, xc).reshape(shape) / (x.size // max(x.shape[1], 1))
        # x * alpha + beta as torch's kernel (not (x - mean) * alpha + b): they differ where w or b is
        # infinite (inf - inf = NaN at x > mean for w = inf, b = 0)
        alpha = w.reshape(shape) * (1.0 / xp.sqrt(var + self.eps))
        beta = b.reshape(shape) - mean * alpha
        y = xp.multiply(x, alpha, out=xc)
        y += beta
        return y, mean.reshape(-1), var.reshape(-1)

    def save_for_backward(self, x, w, b):
        super().save_for_backward(x, w)

    def backward(self, g, g_mean=None, g_var=None):
        from ..autograd.grad_mode import STATE
        if g is None:
            return None, None, None
        x, w = self.saved_tensors
        need = self.needs_input_grad
        if not STATE.enabled:   # first order: one fused primitive
            gx, gw, gb = BatchNormGrad.apply(x, g, w, self.output(1).detach(), self.output(2).detach(),
                                             eps=self.eps)
            return (gx if need[0] else None), (gw if need[1] else None), (gb if need[2] else None)
        # create_graph: the textbook formula in Tensor ops, differentiable again
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        xc = x - x.mean(axes, keepdim=True)
        r = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        xhat = xc * r
        gb = g.sum(axes)
        gw = (g * xhat).sum(axes)
        n = x.numel() // max(x.shape[1], 1)
        gx = (w.reshape(shape) * r) * ((g - gb.reshape(shape) / n) - xhat * (gw.reshape(shape) / n))
        return (gx if need[0] else None), (gw if need[1] else None), (gb if need[2] else None)

    def infer(self, x, w, b):
        return (tuple(x.shape), x.dtype), ((x.shape[1],), x.dtype), ((x.shape[1],), x.dtype)


class BatchNormGrad(Primitive):
    """First-order gradients (dx, dw, db) of training-mode BatchNorm from x, g, w and the batch mean and
    (biased) var: with xhat = (x - mean) r, r = 1/sqrt(var + eps), n = elements per channel,
    db = sum(g), dw = sum(g xhat), dx = w r (g - db/n - xhat dw/n). About seven passes over x. First
    order only (BatchNorm builds a Tensor-op composite under create_graph)."""
    attrs = {"eps": float}
    multi_output = True
    differentiable = False

    def forward(self, x, g, w, mean, var):
        xp = array_module(x)
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        n = x.size // max(x.shape[1], 1)
        r = 1.0 / xp.sqrt(var.reshape(shape) + self.eps)
        xhat = x - mean.reshape(shape)
        xhat *= r
        gb = g.sum(axis=axes)
        gw = _bn_dot(xp, g, xhat)                                      # sum(g * xhat)
        xhat *= (gw / n).reshape(shape)
        gx = g - (gb / n).reshape(shape)   # then - xhat gw/n, torch's order: g - mean(g) is 0 where g is
        gx -= xhat                         # constant, so an infinite w gives +-inf, not 0 * inf = NaN
        gx *= w.reshape(shape) * r
        return gx, gw, gb

    def infer(self, x, g, w, mean, var):
        return (tuple(x.shape), x.dtype), ((x.shape[1],), x.dtype), ((x.shape[1],), x.dtype)


# Compiled CPU kernels for the fused layer primitives (numba, on first use; these NumPy forwards run
# where numba is absent, for float64, and for a softmax over another axis): backends/cpu_kernels.py
from ..backends import cpu_kernels as _cpu_kernels  # noqa: E402

_cpu_kernels.install({Gelu: "gelu", GeluGrad: "gelu_grad", Softmax: "softmax", SoftmaxGrad: "softmax_grad",
                      LogSoftmax: "log_softmax", Normalize: "normalize", LayerNorm: "layer_norm",
                      LayerNormGrad: "layer_norm_grad", BatchNorm: "batch_norm", BatchNormGrad: "batch_norm_grad"})
_cpu_kernels.install({Conv: "conv", ConvInputGrad: "conv_input_grad", ConvWeightGrad: "conv_weight_grad"})
_cpu_kernels.install({MaxPool: "max_pool", MaxPoolGrad: "max_pool_grad", MaxPoolIndex: "max_pool_index"})
_cpu_kernels.install({EmbeddingGrad: "embedding_grad", Linear: "linear"})
