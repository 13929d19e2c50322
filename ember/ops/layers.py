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
from ._infer import _meta, _same, _shape_error

__all__ = ["Conv", "ConvInputGrad", "ConvWeightGrad", "MaxPoolIndex", "windows", "out_size"]


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


def _cols(x, k, stride, dilation, groups):
    """im2col: (G, N*L, Cg*K) rows of windows, and the output spatial shape."""
    N, C = x.shape[:2]
    nd = len(k)
    win = windows(x, k, stride, dilation)                          # (N, C, *out, *k)
    out = win.shape[2:2 + nd]
    win = win.reshape((N, groups, C // groups) + win.shape[2:])    # (N, G, Cg, *out, *k)
    perm = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    cols = win.transpose(perm).reshape(groups, N * math.prod(out), (C // groups) * math.prod(k))
    return cols, out


def _g_rows(g, groups):
    """(N, O, *out) -> (G, N*L, Og)."""
    N, O = g.shape[:2]
    L = math.prod(g.shape[2:])
    return g.reshape(N, groups, O // groups, L).transpose(1, 0, 3, 2).reshape(groups, N * L, O // groups)


class Conv(Primitive):
    """Cross-correlation of x (N, C, *S) with w (O, C/groups, *k), no padding."""
    attrs = {"stride": INTS, "dilation": INTS, "groups": int}
    saves_inputs = True

    def forward(self, x, w):
        G = self.groups
        N, O, k = x.shape[0], w.shape[0], w.shape[2:]
        cols, out = _cols(x, k, self.stride, self.dilation, G)      # (G, N*L, Cg*K)
        wm = w.reshape(G, O // G, -1).transpose(0, 2, 1)              # (G, Cg*K, Og)
        y = cols @ wm                                                 # (G, N*L, Og)
        y = y.reshape((G, N) + out + (O // G,))
        nd = len(out)
        y = y.transpose((1, 0, 2 + nd) + tuple(range(2, 2 + nd)))    # (N, G, Og, *out)
        return y.reshape((N, O) + out)

    def backward(self, g):
        x, w = self.saved_tensors
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups)
        gx = ConvInputGrad.apply(g, w, x_shape=x.shape, **p) if self.needs_input_grad[0] else None
        gw = ConvWeightGrad.apply(x, g, w_shape=w.shape, **p) if self.needs_input_grad[1] else None
        return gx, gw

    def infer(self, x, w):
        out = tuple(out_size(n, k, s, d) for n, k, s, d in zip(x.shape[2:], w.shape[2:], self.stride, self.dilation))
        return (x.shape[0], w.shape[0]) + out, x.dtype


class ConvInputGrad(Primitive):
    """col2im: scatter g (N, O, *out) through w back onto an input of shape `x_shape`."""
    attrs = {"x_shape": SHAPE, "stride": INTS, "dilation": INTS, "groups": int}
    saves_inputs = True

    def forward(self, g, w):
        xp = array_module(g)
        G = self.groups
        N, C = self.x_shape[:2]
        O, k = w.shape[0], w.shape[2:]
        out = g.shape[2:]
        nd = len(k)
        dcols = _g_rows(g, G) @ w.reshape(G, O // G, -1)              # (G, N*L, Cg*K)
        dcols = dcols.reshape((G, N) + out + (C // G,) + k)
        # (N, G, Cg, *k, *out): one strided add per kernel offset
        dcols = dcols.transpose((1, 0, 2 + nd) + tuple(range(3 + nd, 3 + 2 * nd)) + tuple(range(2, 2 + nd)))
        gx = xp.zeros((N, G, C // G) + tuple(self.x_shape[2:]), dtype=dcols.dtype)  # float32 for bfloat16
        for off in itertools.product(*(range(kk) for kk in k)):
            dst = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                        for o, d, s, n in zip(off, self.dilation, self.stride, out))
            gx[(slice(None),) * 3 + dst] += dcols[(slice(None),) * 3 + off]
        return gx.reshape(self.x_shape)

    def backward(self, gg):
        g, w = self.saved_tensors
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups)
        d_g = Conv.apply(gg, w, **p) if self.needs_input_grad[0] else None
        d_w = ConvWeightGrad.apply(gg, g, w_shape=w.shape, **p) if self.needs_input_grad[1] else None
        return d_g, d_w

    def infer(self, g, w): return tuple(self.x_shape), g.dtype


class ConvWeightGrad(Primitive):
    """The weight gradient of Conv: sum over batch and positions of g times the windows of x."""
    attrs = {"w_shape": SHAPE, "stride": INTS, "dilation": INTS, "groups": int}
    saves_inputs = True

    def forward(self, x, g):
        G = self.groups
        k = self.w_shape[2:]
        cols, _ = _cols(x, k, self.stride, self.dilation, G)         # (G, N*L, Cg*K)
        gw = _g_rows(g, G).transpose(0, 2, 1) @ cols                  # (G, Og, Cg*K)
        return gw.reshape(self.w_shape)

    def backward(self, gg):
        x, g = self.saved_tensors
        p = dict(stride=self.stride, dilation=self.dilation, groups=self.groups)
        d_x = ConvInputGrad.apply(g, gg, x_shape=x.shape, **p) if self.needs_input_grad[0] else None
        d_g = Conv.apply(x, gg, **p) if self.needs_input_grad[1] else None
        return d_x, d_g

    def infer(self, x, g): return tuple(self.w_shape), x.dtype


class MaxPoolIndex(Primitive):
    """Where the max of each window of x (N, C, *S) (already padded with -inf) is: (N, C, *out) int64
    flat indices into x's spatial dims, or, with `pads` ((before, after) per spatial dim), into the
    unpadded input's (torch's return_indices). Ties go to the first maximum. The pooled values are a
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
        arg = win.reshape(win.shape[:2 + nd] + (-1,)).argmax(-1)      # (N, C, *out) offset in window
        offs = xp.unravel_index(arg, k)
        pos = []
        for i in range(nd):
            base = (xp.arange(out[i]) * self.stride[i]).reshape((-1,) + (1,) * (nd - 1 - i))
            pos.append(base + offs[i] * self.dilation[i])
        spatial = x.shape[2:]
        if self.pads is not None:
            pos = [p - b for p, (b, _) in zip(pos, self.pads)]
            spatial = tuple(n - b - a for n, (b, a) in zip(spatial, self.pads))
        return xp.ravel_multi_index(pos, spatial).astype(np.int64)

    def infer(self, x):
        out = tuple(out_size(n, k, s, d) for n, k, s, d in zip(x.shape[2:], self.kernel, self.stride,
                                                               self.dilation))
        return x.shape[:2] + out, np.dtype(np.int64)


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
        return np.copysign(poly, x, out=poly)
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

    def infer(self, x):
        self.rstd = _meta(tuple(x.shape[:len(x.shape) - self.n]) + (1,) * self.n, x.dtype)
        return _same(x)


class Embedding(Primitive):
    """weight[idx] for an integer index tensor `idx` (rows of the table)."""
    attrs = {"padding_idx": OPT_INT}
    saves_inputs = True

    def forward(self, w, idx):
        return w[idx]

    def save_for_backward(self, w, idx):
        self.num = w.shape[0]
        super().save_for_backward(idx)

    def backward(self, g):
        idx, = self.saved_tensors
        return EmbeddingGrad.apply(g, idx, num=self.num, padding_idx=self.padding_idx), None

    def infer(self, w, idx): return tuple(idx.shape) + tuple(w.shape[1:]), w.dtype


class EmbeddingGrad(Primitive):
    """The adjoint of Embedding: sum the rows of g that share an index (sort + reduceat, not add.at);
    the padding_idx row gets nothing."""
    attrs = {"num": int, "padding_idx": OPT_INT}

    saves_inputs = True

    def forward(self, g, idx):
        xp = array_module(g)
        flat = idx.reshape(-1)
        vals = g.reshape(flat.size, -1)
        out = xp.zeros((self.num, vals.shape[1]), dtype=g.dtype)
        if flat.size and xp is np:
            order = np.argsort(flat, kind="stable")
            s = flat[order]
            starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
            out[s[starts]] = np.add.reduceat(vals[order], starts, axis=0)
        elif flat.size:
            from .primitives import _add_at
            _add_at(xp, out, flat, vals)
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

    def backward(self, g):
        from .primitives import MatMul, Sum
        saved = self.saved_tensors
        x, w = saved[0], saved[1]
        need = self.needs_input_grad
        gx = MatMul.apply(g, w) if need[0] else None
        gw = MatMul.apply(g.mT, x) if need[1] else None
        if len(saved) == 2:
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
            gb = sum_to(g, b.shape) if need[2] else None
            if not need[1]:
                return (LayerNormGrad.apply(x, g, w, n=self.n, eps=self.eps) if need[0] else None), None, gb
            # dx and dw from one pass: rows of dx with dw as one more row
            packed = LayerNormGrad.apply(x, g, w, n=self.n, eps=self.eps, with_w=True)   # (R + 1, D)
            gw = packed[-1].reshape(w.shape)
            gx = packed[:-1].reshape(x.shape) if need[0] else None
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
    (R = leading elements, D = normalised elements), then dw. Used only outside create_graph (LayerNorm's
    backward builds a differentiable composite there), so it has no gradient of its own."""
    attrs = {"n": int, "eps": float, "with_w": bool}
    elementwise = True
    with_w = False

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
        out = xp.empty((gx.size // max(d, 1) + 1, d), dtype=gx.dtype)
        xp.multiply(gx, rstd, out=out[:-1].reshape(gx.shape))   # dx straight into its rows (a view)
        xc *= ga
        xc.reshape(-1, d).sum(axis=0, out=out[-1])
        return out

    def backward(self, gg):
        raise RuntimeError("layer_norm: the fused first-order gradient is not differentiable; use "
                           "create_graph=True in the first backward to differentiate it again")

    def infer(self, x, g, w=None):
        if not self.with_w:
            return x.shape, x.dtype
        d = math.prod(x.shape[len(x.shape) - self.n:])
        return (math.prod(x.shape) // max(d, 1) + 1, d), x.dtype


# Compiled CPU kernels for the fused layer primitives (numba, on first use; these NumPy forwards run
# where numba is absent, for float64, and for a softmax over another axis): backends/cpu_kernels.py
from ..backends import cpu_kernels as _cpu_kernels  # noqa: E402

_cpu_kernels.install({Gelu: "gelu", GeluGrad: "gelu_grad", Softmax: "softmax", SoftmaxGrad: "softmax_grad",
                      LogSoftmax: "log_softmax", Normalize: "normalize", LayerNorm: "layer_norm",
                      LayerNormGrad: "layer_norm_grad"})
