"""Small convolutions on the CPU: stride 1, dilation 1, one group, float32, outside Winograd's range
(few channels: W4's 1 -> 16 and 16 -> 32 layers, a VGG's 3 -> 64 first layer, LeNet's 5x5s).

The NumPy forwards of `layers` spend as long outside the GEMM as in it at these shapes: NumPy's strided
im2col copy (0.2 ms for W4's second layer), the bias and the ReLU as passes of their own, the input
gradient as nine GEMMs and strided adds, and for one input channel a GEMM of K = 9 that runs at a
third of BLAS's speed. Here:
- `conv`: a padded channels-last copy and im2col in numba loops (`_numba_conv`, 0.09 ms), one GEMM,
  then the bias and, for a compiled graph's fused `Conv+Relu`, ReLU in one pass over the result.
  One input channel at 3x3: no im2col, one loop over the output (`direct3x3`).
- `conv_input_grad`: one GEMM gives every output position's window gradient, col2im adds them back.
- `conv_weight_grad`: im2col, then cols^T g (g^T cols from 64 output channels, as layers'); one loop
  for one input channel at 3x3.
W4's layers (bench/RESULTS.md, session 16): forward 0.84 -> 0.33 and 1.02 -> 0.71 ms, weight gradient
0.46 -> 0.34 and 0.82 -> 0.75, input gradient 1.08 -> 0.64 (two threads). The results equal the NumPy
forwards' up to float32 rounding (the order of the sums). Anything else returns None and the caller
runs the primitive's forward.

The loops run on the CPU pool's threads (cpu_pool.py, docs/design-cpu-threads.md), the GEMMs on
OpenBLAS's jobs there: padding, im2col, the direct 3x3 loop and bias+ReLU over ranges of lines, col2im
over ranges of images (each value computed as in one call), the one-channel weight gradient as sums per
block of 64 lines added in block order (the same value on one thread or several). W4's compiled step
went 3.98 -> 3.54 ms (paired A/B, session 19). (Splitting over Python threads, before the pool, lost
to OpenBLAS's spinning threads: 0.70 ms alone, 1.27 ms after a threaded BLAS call.)
"""
from __future__ import annotations

import numpy as np

from . import cpu_kernels, cpu_pool

MAX_CHANNELS = 64         # input channels (the columns' width is 9x that at 3x3)
_K = None


def _k():
    global _K
    if _K is None:
        from . import _numba_conv
        _K = _numba_conv
    return _K


# ---- which convolutions ------------------------------------------------------------------------------

def takes(x, w, node) -> bool:
    """Whether these loops run Conv(x, w) with node's attributes (see the module docstring); x and w
    are arrays or `layers._Spec`s (shape and dtype of one not at hand)."""
    from ..ops import layers as L
    if x.dtype != np.float32 or w.dtype != np.float32 or len(x.shape) != 4 or len(w.shape) != 4:
        return False
    if node.groups != 1 or tuple(node.stride) != (1, 1) or tuple(node.dilation) != (1, 1):
        return False
    if w.shape[1] > MAX_CHANNELS:
        return False
    return not (L.WINOGRAD and L._winograd_ok(x, w, node.stride, node.dilation, node.groups, node.padding))


def _host(*arrays) -> bool:
    return all(a.__class__ is np.ndarray and a.dtype == np.float32 for a in arrays)


# ---- the kernels ---------------------------------------------------------------------------------------

def _padded(K, x, pads):
    """x (N, C, H, W) as a zero-bordered channels-last copy (N, H + pt + pb, W + pl + pr, C)."""
    (pt, pb), (pl, pr) = pads
    N, C, H, W = x.shape
    xp = np.empty((N, H + pt + pb, W + pl + pr, C), np.float32)
    if pt or pb or pl or pr:   # the border only: the inside is copied over
        xp[:, :pt] = 0
        xp[:, H + pt:] = 0
        xp[:, :, :pl] = 0
        xp[:, :, W + pl:] = 0
    xl = x.transpose(0, 2, 3, 1)
    if not xl.flags.c_contiguous:
        K.pad(xl, xp, pt, pl, 0, N)
    elif not _split("conv_pad_job", xl.size, N, H, W, C, xp.shape[1], xp.shape[2], xl, xp, pt, pl):
        K.pad_rows(xl, xp, pt, pl, 0, N)
    return xp


def _cols(K, xp, kh, kw, OH, OW):
    """The im2col matrix (N * OH * OW, kh * kw * C) of the padded xp, one numba pass."""
    N, C = xp.shape[0], xp.shape[3]
    cols = np.empty((N * OH * OW, kh * kw * C), np.float32)
    if not _split("im2col_job", cols.size, N, *xp.shape[1:], kh, kw, OH, OW, xp, cols):
        K.im2col(xp, kh, kw, OH, OW, cols, 0, N * OH)
    return cols


def _split(job, work, *block):
    """Run `_numba_pool.<job>` on the CPU pool over `block` (ints, and C-contiguous float32 arrays passed
    by address); False where the caller runs the loop itself (one thread, or too little work). Every job
    cuts on lines or images, so each value is computed as in one call."""
    if work < cpu_pool.MIN_SPLIT:
        return False
    return cpu_pool.split(job, work, *(a.ctypes.data if isinstance(a, np.ndarray) else int(a) for a in block))


def _forward(x, wmat, b, relu, pads, kh, kw):
    """Rows (N * OH * OW, O) of the stride-1 conv of x (N, C, H, W) with wmat (kh * kw * C, O)."""
    K = _k()
    N, C, H, W = x.shape
    (pt, pb), (pl, pr) = pads
    OH, OW = H + pt + pb - kh + 1, W + pl + pr - kw + 1
    xp = _padded(K, x, pads)
    bias = np.ascontiguousarray(b) if b is not None else np.empty(0, np.float32)
    O = wmat.shape[1]
    if C == 1 and kh == kw == 3:
        y = np.empty((N * OH * OW, O), np.float32)
        if not _split("direct3x3_job", y.size, N, xp.shape[1], xp.shape[2], O, OH, OW, xp, wmat, bias,
                      bias.size, relu, y):
            K.direct3x3(xp, wmat, OH, OW, bias, relu, y, 0, N * OH)
    else:
        y = _cols(K, xp, kh, kw, OH, OW) @ wmat
        if (bias.size or relu) and not _split("bias_act_job", y.size, y.shape[0], O, y, bias, bias.size, relu):
            K.bias_act(y, bias, relu)
    return y.reshape(N, OH, OW, wmat.shape[1])


def _pads(node):
    return tuple(tuple(p) for p in (node.padding or ((0, 0), (0, 0))))


def conv(node, x, w, b=None, relu=False):
    """Conv (and ReLU after it, `relu`): the (N, O, OH, OW) view of channels-last rows, or None."""
    if not (_host(x, w) and (b is None or _host(b)) and takes(x, w, node)):
        return None
    O, C, kh, kw = w.shape
    wmat = np.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(kh * kw * C, O)   # (kh, kw, C) x O
    return _forward(x, wmat, b, relu, _pads(node), kh, kw).transpose(0, 3, 1, 2)


def conv_input_grad(node, g, w):
    """ConvInputGrad: the rows of g times w give each output position's window gradient (one GEMM,
    (N * OH * OW, O) x (O, kh * kw * C)), which col2im adds back onto a zeroed padded input; the
    padding is cropped off (a view, as layers')."""
    from ..ops.layers import _Spec
    if not (_host(g, w) and w.shape[1] >= 8 and takes(_Spec(node.x_shape, g.dtype), w, node)):
        return None   # fewer input channels: layers' per-offset GEMMs are faster
    K = _k()
    O, C, kh, kw = w.shape
    N, _, H, W = node.x_shape
    (pt, pb), (pl, pr) = _pads(node)
    OH, OW = g.shape[2], g.shape[3]
    g2 = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).reshape(-1, O)   # rows (N * OH * OW, O)
    wrows = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(O, kh * kw * C)
    gxp = np.zeros((N, H + pt + pb, W + pl + pr, C), np.float32)
    dcols = g2 @ wrows
    if not _split("col2im_job", dcols.size, N, *gxp.shape[1:], kh, kw, OH, OW, dcols, gxp):
        K.col2im(dcols, kh, kw, OH, OW, gxp)
    return gxp[:, pt:pt + H, pl:pl + W].transpose(0, 3, 1, 2)


def conv_weight_grad(node, x, g):
    """ConvWeightGrad: cols^T g (or g^T cols from 64 output channels, as layers'), or None."""
    from ..ops.layers import _Spec
    if not (_host(x, g) and takes(x, _Spec(node.w_shape, x.dtype), node)):
        return None
    K = _k()
    O, C, kh, kw = node.w_shape
    N, OH, OW = g.shape[0], g.shape[2], g.shape[3]
    g2 = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).reshape(-1, O)   # rows (N * OH * OW, O)
    xp = _padded(K, x, _pads(node))
    if C == 1 and kh == kw == 3:   # sums per block of lines, added in block order (one thread or several)
        nb = -(-N * OH // K.WG_LINES)
        parts = np.empty((nb, 9, O), np.float32)
        if not _split("direct3x3_weight_grad_job", g2.size, N, *xp.shape[1:3], O, OH, OW, xp, g2, parts, nb):
            K.direct3x3_weight_grad_blocks(xp, g2, OH, OW, parts, 0, nb)
        gw = np.zeros((9, O), np.float32)
        cpu_kernels._k().add_blocks(parts.reshape(nb, 9 * O), gw.reshape(9 * O))
    elif O < 64:
        gw = _cols(K, xp, kh, kw, OH, OW).T @ g2                            # (kh * kw * C, O)
    else:
        gwt = g2.T @ _cols(K, xp, kh, kw, OH, OW)                           # (O, kh * kw * C)
        return np.ascontiguousarray(gwt.reshape(O, kh, kw, C).transpose(0, 3, 1, 2))
    return np.ascontiguousarray(gw.reshape(kh, kw, C, O).transpose(3, 2, 0, 1))


def scratch(which, attrs, ins, out) -> int:
    """Bytes beyond inputs and output at the busiest moment (the planner's count): the padded
    channels-last copy of the convolved input and its im2col matrix (none for one channel at 3x3); for
    the input gradient the window gradients and the padded gx (the output is a view of it). A g that is
    not channels-last is copied once more (not counted: inside a network g comes channels-last)."""
    a, b = ins[0], ins[1]
    (pt, pb), (pl, pr) = attrs.get("padding") or ((0, 0), (0, 0))
    if which == "input":    # a is g (N, O, OH, OW)
        N, C, H, W = attrs["x_shape"]
        kh, kw = b.shape[2], b.shape[3]
        dcols = a.shape[0] * a.shape[2] * a.shape[3] * kh * kw * C * 4
        return dcols + N * (H + pt + pb) * (W + pl + pr) * C * 4 - out.nbytes
    kh, kw = (b.shape if which == "conv" else attrs["w_shape"])[2:]
    N, C, H, W = a.shape
    Hp, Wp = H + pt + pb, W + pl + pr
    cols = 0 if (C == 1 and kh == kw == 3) else N * (Hp - kh + 1) * (Wp - kw + 1) * kh * kw * C * 4
    return N * Hp * Wp * C * 4 + cols
