"""Small convolutions on the CPU: stride 1, dilation 1, one group, float32, outside Winograd's range
(few channels: W4's 1 -> 16 and 16 -> 32 layers, a VGG's 3 -> 64 first layer, LeNet's 5x5s).

`layers.Conv` lays the whole im2col matrix out and makes one GEMM of it. For few channels that copy is
as long as the GEMM (W4's second layer: 7.2 MB), it runs from and to memory rather than cache, and
only the GEMM uses a second core (OpenBLAS's threads): on two cores the layer ran 1.1x faster than on
one, where torch's direct convolutions run 1.65x faster. Here the output rows are cut into tiles of
about `TILE_BYTES` of columns; each tile's im2col stays in the core's L2 cache for its GEMM right
after, and the tiles are shared out to the threads (the BLAS thread count, `ember.set_num_threads`),
each running single-threaded BLAS on its own tiles. A 3x3 kernel over one input channel needs no
im2col at all: one numba loop (`_numba_conv.direct3x3`).

The three primitives: `conv` (Conv, with the bias and, from the fused `Conv+Relu` of a compiled graph,
ReLU applied to each tile while it is in cache), `conv_input_grad` (ConvInputGrad: at stride 1 the
input gradient is the full correlation of g with the flipped, transposed kernel, a conv of this same
kind) and `conv_weight_grad` (ConvWeightGrad: a sum over tiles of cols^T g, one partial sum per
thread). The results are those of the NumPy forwards up to float32 rounding (the order of the sums).
Anything else returns None and the caller runs the primitive's forward.

Threads: Python threads (`_Team`) running nogil numba loops and NumPy's matmul, which release the GIL.
OpenBLAS's own pool is set to one thread while the team works (its threaded GEMMs would serialise on
its level-3 lock when two threads call it at once) and restored after. A forked child starts a team
of its own (the parent's threads do not exist there).
"""
from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

TILE_BYTES = 256 * 1024   # columns per tile: well inside a core's L2 (1 MB on Zen 4/5, 2 MB on Sapphire Rapids)
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
    C, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    pads = _pads(node)
    if C > MAX_CHANNELS or any(p >= k for (b, a), k in zip(pads, (kh, kw)) for p in (b, a)):
        return False   # a padding of k or more: the input gradient's padding k - 1 - p would be negative
    return not (L.WINOGRAD and L._winograd_ok(x, w, node.stride, node.dilation, node.groups, node.padding))


def _host(*arrays) -> bool:
    return all(a.__class__ is np.ndarray and a.dtype == np.float32 for a in arrays)


# ---- the team of threads -------------------------------------------------------------------------------

class _Blas:
    """NumPy's OpenBLAS thread count (get/set through its exported functions), or nothing to set."""
    get = set = None

    @classmethod
    def load(cls):
        from threadpoolctl import threadpool_info
        for pool in threadpool_info():
            if pool["user_api"] == "blas" and pool["internal_api"] == "openblas":
                lib = ctypes.CDLL(pool["filepath"])
                prefix = pool.get("prefix", "openblas")
                for suffix in ("64_", ""):
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                    set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    if get is not None and set_ is not None:
                        get.restype, set_.argtypes = ctypes.c_int, [ctypes.c_int]
                        cls.get, cls.set = get, set_
                        return


class _Team:
    """threads - 1 worker threads; `run(fn, n)` calls fn(part, lo, hi) on `threads` parts of range(n)
    at once, part 0 in the calling thread."""
    pool: ThreadPoolExecutor | None = None
    size = 0
    pid = 0
    lock = threading.Lock()
    loaded = False

    @classmethod
    def threads(cls) -> int:
        if not cls.loaded:
            with cls.lock:
                if not cls.loaded:
                    _Blas.load()
                    cls.loaded = True
        return _Blas.get() if _Blas.get is not None else 1

    @classmethod
    def run(cls, fn, n):
        T = min(cls.threads(), n)
        if T < 2:
            fn(0, 0, n)
            return
        pool = cls.pool
        if pool is None or cls.size < T - 1 or cls.pid != os.getpid():
            with cls.lock:
                cls.pool = pool = ThreadPoolExecutor(T - 1, thread_name_prefix="ember-conv")
                cls.size, cls.pid = T - 1, os.getpid()
        threads = _Blas.get()
        _Blas.set(1)
        try:
            bounds = [n * i // T for i in range(T + 1)]
            futures = [pool.submit(fn, i, bounds[i], bounds[i + 1]) for i in range(1, T)]
            fn(0, bounds[0], bounds[1])
            for f in futures:
                f.result()
        finally:
            _Blas.set(threads)


_scratch = threading.local()


def _tile(name, shape):
    """A float32 array private to this thread, one per name and shape (a tile's columns: a network's
    layers alternate, and a fresh 256 KB array is a fresh mmap, page faults included)."""
    d = _scratch.__dict__
    a = d.get((name, shape))
    if a is None:
        a = d[(name, shape)] = np.empty(shape, np.float32)
    return a


# ---- the kernels ---------------------------------------------------------------------------------------

def _padded(x, pads):
    """x (N, C, H, W) as a zero-bordered channels-last copy (N, H + pt + pb, W + pl + pr, C); the copy
    of each image happens in the team's parts (`_fill`)."""
    (pt, pb), (pl, pr) = pads
    N, C, H, W = x.shape
    xp = np.empty((N, H + pt + pb, W + pl + pr, C), np.float32)
    if pt or pb or pl or pr:   # the border only: the inside is copied over
        xp[:, :pt] = 0
        xp[:, H + pt:] = 0
        xp[:, :, :pl] = 0
        xp[:, :, W + pl:] = 0
    return xp


def _fill(K, x, xp, pads, n0, n1):
    xl = x.transpose(0, 2, 3, 1)
    (K.pad_rows if xl.flags.c_contiguous else K.pad)(xl, xp, pads[0][0], pads[1][0], n0, n1)


def _lines_per_tile(OW, K):
    return max(1, TILE_BYTES // (OW * K * 4))


def _forward(x, wmat, b, relu, pads, kh, kw):
    """Rows (N * OH * OW, O) of the stride-1 conv of x (N, C, H, W) with wmat (kh * kw * C, O)."""
    K = _k()
    N, C, H, W = x.shape
    (pt, pb), (pl, pr) = pads
    OH, OW = H + pt + pb - kh + 1, W + pl + pr - kw + 1
    O = wmat.shape[1]
    xp = _padded(x, pads)
    y = np.empty((N * OH * OW, O), np.float32)
    bias = b if b is not None else np.empty(0, np.float32)
    step = _lines_per_tile(OW, kh * kw * C)

    def part(t, n0, n1):
        _fill(K, x, xp, pads, n0, n1)
        for l0 in range(n0 * OH, n1 * OH, step):
            l1 = min(l0 + step, n1 * OH)
            out = y[l0 * OW:l1 * OW]
            if C == 1 and kh == kw == 3:
                K.direct3x3(xp, wmat, OH, OW, bias, relu, out, l0, l1)
                continue
            cols = _tile("cols", (step * OW, kh * kw * C))[:out.shape[0]]
            K.im2col(xp, kh, kw, OH, OW, cols, l0, l1)
            np.matmul(cols, wmat, out=out)
            if bias.size or relu:
                K.bias_act(out, bias, relu)
    _Team.run(part, N)
    return y.reshape(N, OH, OW, O)


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
    """ConvInputGrad at stride 1: the conv of g with w flipped and transposed, padding k - 1 - p."""
    from ..ops.layers import _Spec
    if not (_host(g, w) and w.shape[1] >= 8 and takes(_Spec(node.x_shape, g.dtype), w, node)):
        return None   # fewer input channels: GEMMs (rows, k * k * O) x (., C) of a few columns, slower than layers
    O, C, kh, kw = w.shape
    (pt, pb), (pl, pr) = _pads(node)
    flipped = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1)).reshape(kh * kw * O, C)
    dpads = ((kh - 1 - pt, kh - 1 - pb), (kw - 1 - pl, kw - 1 - pr))
    return _forward(g, flipped, None, False, dpads, kh, kw).transpose(0, 3, 1, 2)


def conv_weight_grad(node, x, g):
    """ConvWeightGrad: sum over tiles of cols^T g, one partial sum per thread, or None."""
    from ..ops.layers import _Spec
    if not (_host(x, g) and takes(x, _Spec(node.w_shape, x.dtype), node)):
        return None
    K = _k()
    O, C, kh, kw = node.w_shape
    pads = _pads(node)
    N, OH, OW = g.shape[0], g.shape[2], g.shape[3]
    g2 = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).reshape(-1, O)   # rows (N * OH * OW, O)
    xp = _padded(x, pads)
    Kc = kh * kw * C
    parts = np.zeros((max(1, min(_Team.threads(), N)), Kc, O), np.float32)
    step = _lines_per_tile(OW, Kc)

    def part(t, n0, n1):
        _fill(K, x, xp, pads, n0, n1)
        acc = parts[t]
        if C == 1 and kh == kw == 3:
            K.direct3x3_weight_grad(xp, g2[n0 * OH * OW:n1 * OH * OW], OH, OW, acc, n0 * OH, n1 * OH)
            return
        prod = _tile("prod", (Kc, O))
        for l0 in range(n0 * OH, n1 * OH, step):
            l1 = min(l0 + step, n1 * OH)
            cols = _tile("cols", (step * OW, Kc))[:(l1 - l0) * OW]
            K.im2col(xp, kh, kw, OH, OW, cols, l0, l1)
            np.matmul(cols.T, g2[l0 * OW:l1 * OW], out=prod)
            acc += prod
    _Team.run(part, N)
    gw = parts.sum(axis=0) if len(parts) > 1 else parts[0]               # (kh * kw * C, O)
    return np.ascontiguousarray(gw.reshape(kh, kw, C, O).transpose(3, 2, 0, 1))


def scratch(which, attrs, ins, out) -> int:
    """Bytes beyond inputs and output at the busiest moment (the planner's count): the padded
    channels-last copy of the convolved input, each thread's tile of columns, and for the weight
    gradient g's rows (when g is not channels-last: counted always) and the per-thread partial sums."""
    a, b = ins[0], ins[1]
    (pt, pb), (pl, pr) = attrs.get("padding") or ((0, 0), (0, 0))
    if which == "input":    # the conv of g (N, O, OH, OW) with the flipped kernel, padding k - 1 - p
        kh, kw = b.shape[2], b.shape[3]
        pt, pb, pl, pr = kh - 1 - pt, kh - 1 - pb, kw - 1 - pl, kw - 1 - pr
    else:
        kh, kw = (b.shape if which == "conv" else attrs["w_shape"])[2:]
    N, C, H, W = a.shape
    Hp, Wp = H + pt + pb, W + pl + pr
    OH, OW = Hp - kh + 1, Wp - kw + 1
    threads = max(1, min(_Team.threads(), N))
    K = kh * kw * C
    lines = -(-N // threads) * OH                       # the lines of the largest part
    tile = 0 if (C == 1 and kh == kw == 3) else min(_lines_per_tile(OW, K), lines) * OW * K * 4
    extra = threads * tile
    if which == "weight":
        extra += b.nbytes + threads * out.nbytes + (threads > 1) * out.nbytes
    return N * Hp * Wp * C * 4 + extra
