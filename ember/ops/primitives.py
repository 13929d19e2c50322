"""The primitives: every computation in Ember bottoms out in one of these.

Each primitive has a forward on raw arrays, written once against `xp` (NumPy or CuPy), and a
backward written in Tensor ops right next to it, so gradients are differentiable again (double
backward). Everything else (softmax, losses, var, norm, ...) is a composite of these and has no
backward of its own. Backward functions return one gradient per input (None where not needed).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Primitive
from ..backends import array_module
from ._infer import (_acc_dtype, _broadcast, _broadcast_shape, _concatenated, _einsum_shape, _indexed, _matmul_shape,
                     _meta, _reduced, _reshaped, _same)


def sum_to(g, shape):
    """Sum a broadcast gradient back to `shape` (the reverse of broadcasting)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = Sum.apply(g, axis=axes, keepdims=True)
    return Reshape.apply(g, shape=shape) if g.shape != shape else g


# ---------------------------------------------------------------- elementwise, unary
class Neg(Primitive):
    def forward(self, x): return -x
    def backward(self, g): return (-g,)
    def infer(self, x): return _same(x)


class Exp(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).exp(x)
    def backward(self, g): return (g * self.saved_output(),)
    def infer(self, x): return _same(x)


class Log(Primitive):
    saves_inputs = True
    def forward(self, x): return array_module(x).log(x)
    def backward(self, g): return (g / self.saved_tensors[0],)
    def infer(self, x): return _same(x)


class Log1p(Primitive):
    saves_inputs = True
    def forward(self, x): return array_module(x).log1p(x)
    def backward(self, g): return (g / (self.saved_tensors[0] + 1),)
    def infer(self, x): return _same(x)


class Expm1(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).expm1(x)
    def backward(self, g): return (g * (self.saved_output() + 1),)
    def infer(self, x): return _same(x)


class Sin(Primitive):
    saves_inputs = True
    def forward(self, x): return array_module(x).sin(x)
    def backward(self, g): return (g * self.saved_tensors[0].cos(),)
    def infer(self, x): return _same(x)


class Cos(Primitive):
    saves_inputs = True
    def forward(self, x): return array_module(x).cos(x)
    def backward(self, g): return (-g * self.saved_tensors[0].sin(),)
    def infer(self, x): return _same(x)


class Tan(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).tan(x)
    def backward(self, g):
        y = self.saved_output()
        return (g * (1 + y * y),)
    def infer(self, x): return _same(x)


class Tanh(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).tanh(x)
    def backward(self, g):
        y = self.saved_output()
        return (g * (1 - y * y),)
    def infer(self, x): return _same(x)


class Sigmoid(Primitive):
    saves_output = True
    def forward(self, x):
        xp = array_module(x)
        # exp of -|x| never overflows: sigmoid(x) = 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
    def backward(self, g):
        y = self.saved_output()
        return (g * y * (1 - y),)
    def infer(self, x): return _same(x)


class Sqrt(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).sqrt(x)
    def backward(self, g): return (g / (2 * self.saved_output()),)
    def infer(self, x): return _same(x)


class Abs(Primitive):
    saves_inputs = True
    def forward(self, x): return array_module(x).abs(x)
    def backward(self, g): return (g * self.saved_tensors[0].sign(),)
    def infer(self, x): return _same(x)


class Erf(Primitive):
    saves_inputs = True
    def forward(self, x):
        from .. import backends
        xp = array_module(x)
        be = backends.get("cpu" if xp is np else "cuda")
        return be.erf(x).astype(x.dtype, copy=False)
    def backward(self, g):
        x = self.saved_tensors[0]
        return (g * (2 / math.sqrt(math.pi)) * (-(x * x)).exp(),)
    def infer(self, x): return _same(x)


class Relu(Primitive):
    saves_output = True
    def forward(self, x): return array_module(x).maximum(x, 0)
    def backward(self, g):
        y = self.saved_output()
        return (g * (y > 0),)
    def infer(self, x): return _same(x)


class Clamp(Primitive):
    """Clamp with scalar bounds; the gradient passes where lo <= x <= hi, as in torch."""
    def forward(self, x):
        xp = array_module(x)
        lo, hi = self.lo, self.hi
        self.mask = xp.ones(x.shape, dtype=bool)
        if lo is not None:
            self.mask &= x >= lo
        if hi is not None:
            self.mask &= x <= hi
        return xp.clip(x, lo, hi).astype(x.dtype, copy=False)
    def backward(self, g):
        from .._tensor import Tensor
        return (g * Tensor._make(self.mask, g._device),)
    def infer(self, x):
        self.mask = _meta(x.shape, np.bool_)   # what forward leaves for backward
        return _same(x)


class Cast(Primitive):
    keeps_dtype = False
    def forward(self, x):
        self.src = x.dtype
        return x.astype(self.dtype)
    def backward(self, g): return (Cast.apply(g, dtype=self.src),)
    def infer(self, x):
        self.src = x.dtype
        return x.shape, np.dtype(self.dtype)


class ToDevice(Primitive):
    def forward(self, x):
        from .. import backends
        self.src = self._src_device
        host = backends.get(self.src.type).to_host(x)
        return backends.get(self.dst.type).to_device(host, self.dst) if self.dst.type != "cpu" else host
    def backward(self, g):
        from .shape import to_device
        return (to_device(g, self.src),)

    @classmethod
    def apply(cls, x, dst, _src_device=None):
        out = super().apply(x, _src_device=x._device, dst=dst)
        out._device = dst
        if out._node is not None:
            out._node._device = dst
        return out
    def infer(self, x):
        if self.dst.type != "meta":   # on meta there is nothing to copy (torch says the same)
            from ..backends import meta
            meta.to_host(x)
        self.src = self._src_device
        return _same(x)


class Clone(Primitive):
    def forward(self, x): return x.copy()
    def backward(self, g): return (g,)
    def infer(self, x): return _same(x)


# ---------------------------------------------------------------- elementwise, binary
# Binary primitives get operands of one dtype and device (the ops layer promotes); shapes broadcast.
class Add(Primitive):
    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return a + b
    def backward(self, g):
        sa, sb = self.shapes
        return sum_to(g, sa), sum_to(g, sb)
    def infer(self, a, b):
        self.shapes = (a.shape, b.shape)
        return _broadcast(self, a, b)


class Sub(Primitive):
    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return a - b
    def backward(self, g):
        sa, sb = self.shapes
        return sum_to(g, sa), sum_to(-g, sb)
    def infer(self, a, b):
        self.shapes = (a.shape, b.shape)
        return _broadcast(self, a, b)


class Mul(Primitive):
    saves_inputs = True
    def forward(self, a, b): return a * b
    def save_for_backward(self, a, b):
        # as torch: keep a only for b's gradient and b only for a's, so that changing in place an
        # input whose partner needs no gradient is no error (h[:2] = h[2:] * 3)
        self.shapes = (a.shape, b.shape)
        super().save_for_backward(a if self.needs_input_grad[1] else None,
                                  b if self.needs_input_grad[0] else None)
    def backward(self, g):
        a, b = self.saved_tensors
        sa, sb = self.shapes
        ga = sum_to(g * b, sa) if self.needs_input_grad[0] else None
        gb = sum_to(g * a, sb) if self.needs_input_grad[1] else None
        return ga, gb
    def infer(self, a, b): return _broadcast(self, a, b)


class Div(Primitive):
    saves_inputs = True
    def forward(self, a, b): return a / b
    def save_for_backward(self, a, b):
        self.shapes = (a.shape, b.shape)   # a is needed only for b's gradient (see Mul)
        super().save_for_backward(a if self.needs_input_grad[1] else None, b)
    def backward(self, g):
        a, b = self.saved_tensors
        sa, sb = self.shapes
        ga = sum_to(g / b, sa) if self.needs_input_grad[0] else None
        gb = sum_to(-g * a / (b * b), sb) if self.needs_input_grad[1] else None
        return ga, gb
    def infer(self, a, b): return _broadcast(self, a, b)


class Pow(Primitive):
    saves_inputs = True
    def forward(self, a, b): return a ** b
    def backward(self, g):
        a, b = self.saved_tensors
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = sum_to(g * b * a ** (b - 1), a.shape)
        if self.needs_input_grad[1]:
            # d(a^b)/db = a^b log a; torch defines it as 0 where a == 0 and b >= 0
            from .math import where
            y = a ** b
            gb = sum_to(g * where((a == 0) & (b >= 0), 0.0, y * a.log()), b.shape)
        return ga, gb
    def infer(self, a, b): return _broadcast(self, a, b)


class Maximum(Primitive):
    """max(a, b) elementwise; on ties each side gets half the gradient (as torch)."""
    saves_inputs = True
    def forward(self, a, b): return array_module(a).maximum(a, b)
    def backward(self, g):
        a, b = self.saved_tensors
        w = ((a > b) + (a == b) * 0.5).to(g.dtype)
        return sum_to(g * w, a.shape), sum_to(g * (1 - w), b.shape)
    def infer(self, a, b): return _broadcast(self, a, b)


class Where(Primitive):
    """where(cond, a, b) with a constant boolean condition."""
    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return array_module(a).where(self.cond, a, b)
    def backward(self, g):
        sa, sb = self.shapes
        zero = g.new_zeros(())
        return sum_to(Where.apply(g, zero, cond=self.cond), sa), sum_to(Where.apply(zero, g, cond=self.cond), sb)
    def infer(self, a, b):
        self.shapes = (a.shape, b.shape)
        return _broadcast(self, self.cond, a, b)[0], np.result_type(a.dtype, b.dtype)


# ---------------------------------------------------------------- reductions
class Sum(Primitive):
    def forward(self, x):
        self.shape = x.shape
        dt = getattr(self, "dtype", None)
        if dt is None and x.itemsize == 2 and x.dtype.kind in "fV":
            dt = np.float32   # float16/bfloat16 accumulate in float32 (as torch); apply casts back
        return x.sum(axis=self.axis, keepdims=self.keepdims, dtype=dt)
    def backward(self, g):
        if not self.keepdims and self.axis is not None:
            g = Reshape.apply(g, shape=_keepdim_shape(self.shape, self.axis))
        return (Expand.apply(g, shape=self.shape, fill=g.ndim == 0),)
    def infer(self, x):
        self.shape = x.shape
        dt = getattr(self, "dtype", None)
        return _reduced(x.shape, self.axis, self.keepdims), np.dtype(dt) if dt is not None else _acc_dtype(x.dtype)


class Amax(Primitive):
    """Max (or min, with `neg`) over axes; the gradient is shared evenly among ties (as torch.amax)."""
    saves_inputs = True
    saves_output = True
    def forward(self, x):
        return x.max(axis=self.axis, keepdims=self.keepdims) if not self.neg else \
            x.min(axis=self.axis, keepdims=self.keepdims)
    def backward(self, g):
        x, = self.saved_tensors
        y = self.saved_output()
        if not self.keepdims and self.axis is not None:
            shp = _keepdim_shape(x.shape, self.axis)
            y, g = y.reshape(shp), g.reshape(shp)
        mask = (x == y).to(g.dtype)
        return (g * mask / mask.sum(self.axis, keepdim=True),)
    def infer(self, x): return _reduced(x.shape, self.axis, self.keepdims), x.dtype


class Prod(Primitive):
    saves_inputs = True
    saves_output = True
    def forward(self, x): return x.prod(axis=self.axis, keepdims=self.keepdims)
    def backward(self, g):
        from .._tensor import Tensor
        x, = self.saved_tensors
        y = self.saved_output()
        if not self.keepdims and self.axis is not None:
            shp = _keepdim_shape(x.shape, self.axis)
            y, g = y.reshape(shp), g.reshape(shp)
        xa = x._data
        if not (xa == 0).any():
            return (g * y / x,)
        # with zeros, y/x is undefined: the product of the others, computed directly (first order)
        xp = array_module(xa)
        axes = tuple(range(xa.ndim)) if self.axis is None else self.axis
        others = xp.empty_like(xa)
        flat = xp.moveaxis(xa, axes, tuple(range(-len(axes), 0))) if axes else xa
        shp = flat.shape
        flat = flat.reshape(shp[:flat.ndim - len(axes)] + (-1,))
        left = xp.cumprod(xp.concatenate([xp.ones_like(flat[..., :1]), flat[..., :-1]], -1), -1)
        right = xp.flip(xp.cumprod(xp.flip(xp.concatenate([flat[..., 1:], xp.ones_like(flat[..., :1])], -1),
                                           -1), -1), -1)
        others = xp.moveaxis((left * right).reshape(shp), tuple(range(-len(axes), 0)), axes)
        return (g * Tensor._make(others, g._device),)
    def infer(self, x): return _reduced(x.shape, self.axis, self.keepdims), _acc_dtype(x.dtype)


class Cumsum(Primitive):
    elementwise = True
    def forward(self, x): return array_module(x).cumsum(x, axis=self.axis)
    def backward(self, g):
        return (Flip.apply(Cumsum.apply(Flip.apply(g, axes=(self.axis,)), axis=self.axis),
                           axes=(self.axis,)),)
    def infer(self, x): return x.shape, _acc_dtype(x.dtype)


class Cumprod(Primitive):
    elementwise = True
    saves_inputs = True
    saves_output = True
    def forward(self, x): return array_module(x).cumprod(x, axis=self.axis)
    def backward(self, g):
        # d y_k / d x_i = y_k / x_i for k >= i (inputs assumed non-zero)
        x, = self.saved_tensors
        y = self.saved_output()
        rev = Flip.apply(Cumsum.apply(Flip.apply(g * y, axes=(self.axis,)), axis=self.axis),
                         axes=(self.axis,))
        return (rev / x,)
    def infer(self, x): return x.shape, _acc_dtype(x.dtype)


def _keepdim_shape(shape, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes}
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


# ---------------------------------------------------------------- movement (views where possible)
class Reshape(Primitive):
    def forward(self, x):
        self.src = x.shape
        return x.reshape(self.shape)
    def backward(self, g): return (Reshape.apply(g, shape=self.src),)
    def infer(self, x):
        self.src = x.shape
        return _reshaped(x.shape, self.shape), x.dtype


class Permute(Primitive):
    def forward(self, x): return x.transpose(self.dims)
    def backward(self, g): return (Permute.apply(g, dims=tuple(np.argsort(self.dims))),)
    def infer(self, x): return tuple(x.shape[d] for d in self.dims), x.dtype


class Expand(Primitive):
    def forward(self, x):
        self.src = x.shape
        if x.ndim == 0 and getattr(self, "fill", False):   # the backward of a full sum: a plain filled
            return array_module(x).full(self.shape, x, dtype=x.dtype)   # array is cheaper than a view
        return array_module(x).broadcast_to(x, self.shape)
    def backward(self, g): return (sum_to(g, self.src),)
    def infer(self, x):
        self.src = x.shape
        return _broadcast_shape("expand", x.shape, tuple(self.shape), to=True), x.dtype


class Flip(Primitive):
    def forward(self, x): return array_module(x).flip(x, self.axes)
    def backward(self, g): return (Flip.apply(g, axes=self.axes),)
    def infer(self, x): return _same(x)


class Roll(Primitive):
    elementwise = True
    def forward(self, x): return array_module(x).roll(x, self.shifts, self.axes)
    def backward(self, g):
        return (Roll.apply(g, shifts=tuple(-s for s in self.shifts), axes=self.axes),)
    def infer(self, x): return _same(x)


class Index(Primitive):
    """x[key] for any NumPy-style key (ints, slices, None, Ellipsis, integer/boolean arrays)."""
    def forward(self, x):
        self.src = x.shape
        return x[self.key]
    def backward(self, g): return (IndexAddInto.apply(g, key=self.key, shape=self.src),)
    def infer(self, x):
        self.src = x.shape
        return _indexed(x.shape, self.key), x.dtype


class IndexAddInto(Primitive):
    """zeros(shape) with g added at `key` (repeated indices accumulate): the adjoint of Index."""
    def forward(self, g):
        xp = array_module(g)
        out = xp.zeros(self.shape, dtype=g.dtype)
        if _is_basic(self.key):
            out[self.key] = g
        else:
            _add_at(xp, out, self.key, g)
        return out
    def backward(self, gg): return (Index.apply(gg, key=self.key),)
    def infer(self, g): return tuple(self.shape), g.dtype


class IndexPut(Primitive):
    """x with x[key] = v (or += v with `accumulate`): __setitem__ and index_put."""
    def forward(self, x, v):
        xp = array_module(x)
        self.vshape = v.shape
        out = x.copy()
        if self.accumulate:
            _add_at(xp, out, self.key, xp.broadcast_to(v, out[self.key].shape))
        else:
            out[self.key] = v
        return out
    def backward(self, g):
        gx = g
        if not self.accumulate:
            gx = IndexPut.apply(g, g.new_zeros(()), key=self.key, accumulate=False)
        gv = sum_to(Index.apply(g, key=self.key), self.vshape) if self.needs_input_grad[1] else None
        return gx, gv
    def infer(self, x, v):
        self.vshape = v.shape
        return _same(x)


def _is_basic(key):
    if not isinstance(key, tuple):
        key = (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer)) for k in key)


def _add_at(xp, out, key, v):
    from .. import backends
    backends.get("cpu" if xp is np else "cuda").scatter_add(out, key, v)


class Cat(Primitive):
    def forward(self, *xs):
        self.sizes = [x.shape[self.axis] for x in xs]
        return array_module(xs[0]).concatenate(xs, axis=self.axis)
    def backward(self, g):
        out, start = [], 0
        for s in self.sizes:
            key = (slice(None),) * (self.axis % g.ndim) + (slice(start, start + s),)
            out.append(Index.apply(g, key=key))
            start += s
        return tuple(out)
    def infer(self, *xs):
        self.sizes = [x.shape[self.axis] for x in xs]
        return _concatenated([x.shape for x in xs], self.axis), np.result_type(*[x.dtype for x in xs])


class Pad(Primitive):
    """Constant padding; `pads` is a tuple of (before, after) per axis."""
    def forward(self, x):
        return array_module(x).pad(x, self.pads, mode="constant", constant_values=self.value)
    def backward(self, g):
        key = tuple(slice(b, g.shape[i] - a) for i, (b, a) in enumerate(self.pads))
        return (Index.apply(g, key=key),)
    def infer(self, x): return tuple(s + b + a for s, (b, a) in zip(x.shape, self.pads)), x.dtype


class Gather(Primitive):
    """take_along_axis(x, index, axis): torch.gather."""
    def forward(self, x):
        self.src = x.shape
        return array_module(x).take_along_axis(x, self.index, axis=self.axis)
    def backward(self, g):
        return (ScatterAdd.apply(g.new_zeros(self.src), g, index=self.index, axis=self.axis),)
    def infer(self, x):
        self.src = x.shape
        return tuple(self.index.shape), x.dtype


class ScatterAdd(Primitive):
    """x with src added at positions `index` along `axis`: torch.scatter_add."""
    def forward(self, x, src):
        xp = array_module(x)
        out = x.copy()
        _add_at(xp, out, _scatter_key(xp, self.index, self.axis), src[_prefix(self.index.shape)])
        return out
    def backward(self, g):
        gs = Gather.apply(g, index=self.index, axis=self.axis) if self.needs_input_grad[1] else None
        return g, gs
    def infer(self, x, src): return _same(x)


class Scatter(Primitive):
    """x with src written at positions `index` along `axis`: torch.scatter."""
    def forward(self, x, src):
        xp = array_module(x)
        out = x.copy()
        out[_scatter_key(xp, self.index, self.axis)] = src[_prefix(self.index.shape)]
        return out
    def backward(self, g):
        zeros = g.new_zeros(g.shape)
        gx = Scatter.apply(g, zeros, index=self.index, axis=self.axis)
        gs = Gather.apply(g, index=self.index, axis=self.axis) if self.needs_input_grad[1] else None
        return gx, gs
    def infer(self, x, src): return _same(x)


def _prefix(shape):
    return tuple(slice(0, s) for s in shape)


def _scatter_key(xp, index, axis):
    """The advanced-index key that addresses out[i][index[i][j]][k] (for axis=1), torch's scatter."""
    # xp.indices(shape, sparse=True), which CuPy lacks: one arange per dim, broadcastable against the others
    nd = len(index.shape)
    grids = [xp.arange(n).reshape((1,) * k + (n,) + (1,) * (nd - k - 1)) for k, n in enumerate(index.shape)]
    grids[axis] = index
    return tuple(grids)


# ---------------------------------------------------------------- linear algebra
class MatMul(Primitive):
    """a @ b for operands of >= 2 dims with broadcast batch dims (the ops layer handles 1-D)."""
    saves_inputs = True
    def forward(self, a, b): return (a @ b).astype(a.dtype, copy=False)  # NumPy gives bfloat16 @ -> float32
    def backward(self, g):
        a, b = self.saved_tensors
        ga = sum_to(MatMul.apply(g, b.mT), a.shape) if self.needs_input_grad[0] else None
        gb = sum_to(MatMul.apply(a.mT, g), b.shape) if self.needs_input_grad[1] else None
        return ga, gb
    def infer(self, a, b): return _matmul_shape(a.shape, b.shape), a.dtype


class Einsum(Primitive):
    """einsum over explicit subscripts 'ij,jk->ik' (no repeated index within one operand)."""
    saves_inputs = True
    def forward(self, *xs):
        dt = xs[0].dtype
        if dt.kind == "V":   # bfloat16 (ml_dtypes): NumPy's einsum rejects it; compute in float32
            xs = [x.astype(np.float32) for x in xs]
        return array_module(xs[0]).einsum(self.eq, *xs).astype(dt, copy=False)
    def backward(self, g):
        from .math import einsum
        ins, out = self.eq.split("->")
        ins = ins.split(",")
        xs = self.saved_tensors
        grads = []
        for i, x in enumerate(xs):
            if not self.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [s for j, s in enumerate(ins) if j != i]
            avail = set(out).union(*others) if others else set(out)
            keep = "".join(c for c in ins[i] if c in avail)
            gi = einsum(",".join([out] + others) + "->" + keep, g, *[xs[j] for j in range(len(xs)) if j != i])
            if keep != ins[i]:  # indices only in this operand were summed: broadcast back
                shape = [x.shape[k] if c in keep else 1 for k, c in enumerate(ins[i])]
                gi = gi.reshape(shape).expand(x.shape)
            grads.append(gi)
        return tuple(grads)
    def infer(self, *xs): return _einsum_shape(self.eq, [x.shape for x in xs]), xs[0].dtype
