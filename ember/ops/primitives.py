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
from ..autograd.grad_mode import STATE
from ..backends import array_module
from ..backends.cpu import rows_sum as _rows_sum
from ._attr_types import AXES, AXIS, DEVICE, DTYPE, INTS, KEY, NUMBER, OPT_NUMBER, SHAPE
from ._infer import (_acc_dtype, _broadcast, _broadcast_shape, _concatenated, _einsum_shape, _indexed, _matmul_shape,
                     _reduced, _reshaped, _same)


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
    attrs = {}
    def forward(self, x): return -x
    def backward(self, g): return (-g,)
    def infer(self, x): return _same(x)


class Exp(Primitive):
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).exp(x)
    def backward(self, g): return (g * self.saved_output(),)
    def infer(self, x): return _same(x)


class Log(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).log(x)
    def backward(self, g): return (g / self.saved_tensors[0],)
    def infer(self, x): return _same(x)


class Log1p(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).log1p(x)
    def backward(self, g): return (g / (self.saved_tensors[0] + 1),)
    def infer(self, x): return _same(x)


class Expm1(Primitive):
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).expm1(x)
    def backward(self, g): return (g * (self.saved_output() + 1),)
    def infer(self, x): return _same(x)


class Sin(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).sin(x)
    def backward(self, g): return (g * self.saved_tensors[0].cos(),)
    def infer(self, x): return _same(x)


class Cos(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).cos(x)
    def backward(self, g): return (-g * self.saved_tensors[0].sin(),)
    def infer(self, x): return _same(x)


class Tan(Primitive):
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).tan(x)
    def backward(self, g):
        y = self.saved_output()
        return (g * (1 + y * y),)
    def infer(self, x): return _same(x)


class Tanh(Primitive):
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).tanh(x)
    def backward(self, g):
        y = self.saved_output()
        return (g * (1 - y * y),)
    def infer(self, x): return _same(x)


class Sigmoid(Primitive):
    attrs = {}
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
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).sqrt(x)
    def backward(self, g): return (g / (2 * self.saved_output()),)
    def infer(self, x): return _same(x)


class Abs(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).abs(x)
    def backward(self, g): return (g * self.saved_tensors[0].sign(),)
    def infer(self, x): return _same(x)


class Erf(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x):
        from .layers import _erf
        return _erf(array_module(x), x)
    def backward(self, g):
        x = self.saved_tensors[0]
        return (g * (2 / math.sqrt(math.pi)) * (-(x * x)).exp(),)
    def infer(self, x): return _same(x)


class Erfc(Primitive):
    """1 - erf(x), computed directly (the backend's erfc): 1 - erf(x) is 0 in float32 from x = 4 on,
    and loses its digits in float64 from x = 6 on, where erfc(6) = 2.2e-17."""
    attrs = {}
    saves_inputs = True
    def forward(self, x):
        from .. import backends
        xp = array_module(x)
        be = backends.get("cpu" if xp.__name__ == "numpy" else "cuda")
        if x.dtype.itemsize == 2:   # no half-precision loop in SciPy/CuPy: compute in float32, as torch
            return be.erfc(x.astype(np.float32)).astype(x.dtype)
        return be.erfc(x).astype(x.dtype, copy=False)
    def backward(self, g):
        x = self.saved_tensors[0]
        return (g * (-2 / math.sqrt(math.pi)) * (-(x * x)).exp(),)
    def infer(self, x): return _same(x)


class Erfinv(Primitive):
    """The inverse of erf on (-1, 1) (+-inf at +-1, nan outside); its derivative is
    sqrt(pi)/2 * exp(erfinv(x)^2), from the saved output."""
    attrs = {}
    saves_output = True
    def forward(self, x):
        from .. import backends
        xp = array_module(x)
        if x.dtype.itemsize == 2:   # no half-precision loop in SciPy/CuPy: compute in float32, as torch
            return backends.get("cpu" if xp.__name__ == "numpy" else "cuda").erfinv(x.astype(np.float32)).astype(x.dtype)
        return backends.get("cpu" if xp.__name__ == "numpy" else "cuda").erfinv(x)
    def backward(self, g):
        y = self.saved_output()
        return (g * (math.sqrt(math.pi) / 2) * (y * y).exp(),)
    def infer(self, x): return _same(x)


class Relu(Primitive):
    attrs = {}
    saves_output = True
    def forward(self, x): return array_module(x).maximum(x, 0)
    def backward(self, g):
        # torch's threshold_backward: 0 where y <= 0, else g (a NaN input passes its gradient, and an
        # inf or NaN gradient where y <= 0 gives 0; g * (y > 0) gave NaN there)
        y = self.saved_output()
        return (Where.apply(y <= 0, g.new_zeros(()), g),)
    def infer(self, x): return _same(x)


class Clamp(Primitive):
    """Clamp with scalar bounds; the gradient passes where lo <= x <= hi, as in torch."""
    attrs = {"lo": OPT_NUMBER, "hi": OPT_NUMBER}
    saves_inputs = True
    def forward(self, x):
        xp = array_module(x)
        if self.hi is None and self.lo is not None and x.dtype.kind == "f":   # clamp(min=0): maximum is one ufunc call, clip wraps more
            return xp.maximum(x, self.lo)
        return xp.clip(x, self.lo, self.hi).astype(x.dtype, copy=False)
    def backward(self, g):
        x, = self.saved_tensors
        keep = None
        if self.lo is not None:
            keep = Compare.apply(x, x.new_full((), self.lo), op="ge")
        if self.hi is not None:
            le = Compare.apply(x, x.new_full((), self.hi), op="le")
            keep = le if keep is None else Logic.apply(keep, le, op="logical_and")
        return (Where.apply(keep, g, g.new_zeros(())),)
    def infer(self, x): return _same(x)


# Forwards are pure: a primitive whose backward needs only its inputs' shapes or dtypes records them
# in save_for_backward (run by apply when it records a node; `saves_inputs` asks for that call) and
# keeps no tensor.
class Cast(Primitive):
    attrs = {"dtype": DTYPE}
    keeps_dtype = False
    saves_inputs = True
    def forward(self, x): return x.astype(self.dtype)
    def save_for_backward(self, x): self.src = x._data.dtype
    def backward(self, g): return (Cast.apply(g, dtype=self.src),)
    def infer(self, x):
        self.src = x.dtype
        return x.shape, np.dtype(self.dtype)


class ToDevice(Primitive):
    attrs = {"_src_device": DEVICE, "dst": DEVICE}
    def forward(self, x):
        from .. import backends
        host = backends.get(self._src_device.type).to_host(x)
        return backends.get(self.dst.type).to_device(host, self.dst) if self.dst.type != "cpu" else host
    def backward(self, g):
        from .shape import to_device
        return (to_device(g, self._src_device),)

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
    attrs = {}
    def forward(self, x): return x.copy()
    def backward(self, g): return (g,)
    def infer(self, x): return _same(x)


# ---------------------------------------------------------------- elementwise, binary
# Binary primitives get operands of one dtype and device (the ops layer promotes); shapes broadcast.
class Add(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, a, b): return a + b
    def save_for_backward(self, a, b): self.shapes = (a.shape, b.shape)
    def backward(self, g):
        sa, sb = self.shapes
        return sum_to(g, sa), sum_to(g, sb)
    def infer(self, a, b):
        self.shapes = (a.shape, b.shape)
        return _broadcast(self, a, b)


class Sub(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, a, b): return a - b
    def save_for_backward(self, a, b): self.shapes = (a.shape, b.shape)
    def backward(self, g):
        sa, sb = self.shapes
        return sum_to(g, sa), sum_to(-g, sb)
    def infer(self, a, b):
        self.shapes = (a.shape, b.shape)
        return _broadcast(self, a, b)


class Mul(Primitive):
    attrs = {}
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
    attrs = {}
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
    """`a ** b`; integers to negative integer powers as torch (`_int_pow`)."""
    attrs = {}
    saves_inputs = True
    def forward(self, a, b):
        if b.dtype.kind == "i" and a.dtype.kind in "iu":
            return _int_pow(a, b)
        return a ** b
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


def _int_pow(a, b):
    """Integer a ** b with torch's rule for negative exponents (NumPy refuses them): 1 ** -n is 1,
    (-1) ** -n is +-1 by n's parity, every other base gives 0 (the integer part of 1 / a ** n)."""
    xp = array_module(a)
    neg = b < 0
    r = a ** xp.maximum(b, 0).astype(b.dtype)
    inv = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(neg, inv, r).astype(r.dtype)


class Maximum(Primitive):
    """max(a, b) elementwise; on ties each side gets half the gradient (as torch)."""
    attrs = {}
    saves_inputs = True
    def forward(self, a, b): return array_module(a).maximum(a, b)
    def backward(self, g):
        # torch's: g to a unless a < b, to b unless a > b, halved on ties; so where either is NaN (no
        # comparison holds) both sides get all of g. Selected, not multiplied: an inf g gives 0, not NaN
        a, b = self.saved_tensors
        zero = g.new_zeros(())
        shared = Where.apply(a == b, g * 0.5, g)
        ga = sum_to(Where.apply(a < b, zero, shared), a.shape) if self.needs_input_grad[0] else None
        gb = sum_to(Where.apply(a > b, zero, shared), b.shape) if self.needs_input_grad[1] else None
        return ga, gb
    def infer(self, a, b): return _broadcast(self, a, b)


class Where(Primitive):
    """where(cond, a, b); the boolean condition is an input without gradient."""
    attrs = {}
    saves_inputs = True
    def forward(self, cond, a, b):
        return array_module(a).where(cond, a, b)
    def save_for_backward(self, cond, a, b):
        self.shapes = (a.shape, b.shape)
        super().save_for_backward(cond)
    def backward(self, g):
        cond, = self.saved_tensors
        sa, sb = self.shapes
        zero = g.new_zeros(())
        ga = sum_to(Where.apply(cond, g, zero), sa) if self.needs_input_grad[1] else None
        gb = sum_to(Where.apply(cond, zero, g), sb) if self.needs_input_grad[2] else None
        return None, ga, gb
    def infer(self, cond, a, b):
        return _broadcast(self, cond, a, b)[0], np.result_type(a.dtype, b.dtype)


# ---------------------------------------------------------------- reductions
def _half_acc(x):
    """float32 for 2-byte floats (torch's cumsum and cumprod of float16/bfloat16 run in float32: a bfloat16
    cumsum of 4096 values in [0, 1) was 87% off in bfloat16), else None (the input's own); apply casts
    the result back to the input's dtype. (Not prod: torch's multiplies in the input's dtype.)"""
    return np.float32 if x.itemsize == 2 and x.dtype.kind in "fV" else None


class Sum(Primitive):
    attrs = {"axis": AXES, "keepdims": bool}
    saves_inputs = True
    def save_for_backward(self, x): self.shape = x.shape
    def forward(self, x):
        dt = getattr(self, "dtype", None)
        if dt is None and x.itemsize == 2 and x.dtype.kind in "fV":
            dt = np.float32   # float16/bfloat16 accumulate in float32 (as torch); apply casts back
        if dt is None and x.__class__ is np.ndarray:
            s = _rows_sum(x, self.axis, self.keepdims)   # bias gradients: one BLAS call (backends/cpu.py)
            if s is not None:
                return s
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
    """Max (or min, with `neg`) over axes; the gradient is shared evenly among ties (as torch.amax).
    Where the result is NaN no element equals it, and torch.amax's gradient is NaN there (g / 0 * 0);
    with `nan_ties` the NaN elements share it instead (torch.max()'s, and the inf-norm's)."""
    attrs = {"axis": AXES, "keepdims": bool, "neg": bool, "nan_ties": bool}
    nan_ties = False
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
        mask = x == y
        if self.nan_ties:
            mask = mask | (x.isnan() & y.isnan())
        mask = mask.to(g.dtype)
        return (g * mask / mask.sum(self.axis, keepdim=True),)
    def infer(self, x): return _reduced(x.shape, self.axis, self.keepdims), x.dtype


class Prod(Primitive):
    attrs = {"axis": AXES, "keepdims": bool}
    saves_inputs = True
    saves_output = True
    def forward(self, x): return x.prod(axis=self.axis, keepdims=self.keepdims)
    def backward(self, g):
        x, = self.saved_tensors
        y = self.saved_output()
        if not self.keepdims and self.axis is not None:
            shp = _keepdim_shape(x.shape, self.axis)
            y, g = y.reshape(shp), g.reshape(shp)
        # the product of the others (exclusive cumprods from both ends): defined where x has zeros too
        axes = tuple(range(x.ndim)) if self.axis is None else self.axis
        nd = len(axes)
        flat = x.movedim(axes, tuple(range(-nd, 0))) if axes else x
        shp = flat.shape
        flat = flat.reshape(shp[:flat.ndim - nd] + (-1,))
        one = flat.new_ones(flat.shape[:-1] + (1,))
        left = Cumprod.apply(Cat.apply(one, flat[..., :-1], axis=-1), axis=-1)
        right = Flip.apply(Cumprod.apply(Flip.apply(Cat.apply(flat[..., 1:], one, axis=-1), axes=(-1,)),
                                         axis=-1), axes=(-1,))
        others = (left * right).reshape(shp)
        if axes:
            others = others.movedim(tuple(range(-nd, 0)), axes)
        return (g * others,)
    def infer(self, x): return _reduced(x.shape, self.axis, self.keepdims), _acc_dtype(x.dtype)


class Cumsum(Primitive):
    attrs = {"axis": int}
    elementwise = True
    def forward(self, x): return array_module(x).cumsum(x, axis=self.axis, dtype=_half_acc(x))
    def backward(self, g):
        return (Flip.apply(Cumsum.apply(Flip.apply(g, axes=(self.axis,)), axis=self.axis),
                           axes=(self.axis,)),)
    def infer(self, x): return x.shape, _acc_dtype(x.dtype)


class Cumprod(Primitive):
    attrs = {"axis": int}
    elementwise = True
    saves_inputs = True
    saves_output = True
    def forward(self, x): return array_module(x).cumprod(x, axis=self.axis, dtype=_half_acc(x))
    def backward(self, g):
        # torch's cumprod_backward: dx_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j
        x, = self.saved_tensors
        if STATE.enabled:   # create_graph: the O(n^2) form, whose own derivative is right at zeros too
            return (_cumprod_grad_omitted(x, g, self.axis),)
        # Before a slice's first zero z: sum_{i <= k < z} g_k y_k / x_i. At z: prod(x[:z]) times
        # sum_{z <= k < z2} g_k prod(x[z+1:k+1]), z2 the second zero. After z: 0 (every product has x_z)
        y = self.saved_output()
        ax = self.axis
        is_zero = x == 0
        seen = Cumsum.apply(is_zero.to(np.int32), axis=ax)   # zeros so far, this one included
        before, one_seen = seen == 0, seen == 1
        first = is_zero & one_seen
        one, zero = x.new_ones(()), x.new_zeros(())
        rev = Flip.apply(Cumsum.apply(Flip.apply(Where.apply(before, g * y, zero), axes=(ax,)), axis=ax),
                         axes=(ax,))
        before_z = rev / Where.apply(before, x, one)
        between = Cumprod.apply(Where.apply(one_seen & ~is_zero, x, one), axis=ax)   # x[z+1:k+1] products
        at_z = Sum.apply(Where.apply(one_seen, g, zero) * between, axis=(ax,), keepdims=True) * \
            Prod.apply(Where.apply(before, x, one), axis=(ax,), keepdims=True)
        return (Where.apply(before, before_z, Where.apply(first, at_z, zero)),)
    def infer(self, x): return x.shape, _acc_dtype(x.dtype)


def _cumprod_grad_omitted(x, g, axis):
    """dx_i = sum_{k >= i} g_k prod_{j < i} x_j prod_{i < j <= k} x_j, the products built explicitly
    ((..., n, n) along `axis`), as torch's cumprod_backward in grad mode: no division, so its own
    derivative is right where x has zeros."""
    from .creation import arange
    xm, gm = x.movedim(axis, -1), g.movedim(axis, -1)                  # (..., n)
    n = xm.shape[-1]
    pos = arange(n, device=x._device)
    after_i = pos > pos.unsqueeze(-1)                                    # (n, n): j > i
    from_i = pos >= pos.unsqueeze(-1)                                    # (n, n): k >= i
    one, zero = x.new_ones(()), x.new_zeros(())
    rows = xm.unsqueeze(-2).expand(xm.shape[:-1] + (n, n))              # (..., i, j): x_j
    from_next = Cumprod.apply(Where.apply(after_i, rows, one), axis=-1)  # (..., i, k): prod_{i < j <= k} x_j
    until = Cumprod.apply(Cat.apply(xm.new_ones(xm.shape[:-1] + (1,)), xm[..., :-1], axis=-1), axis=-1)   # prod_{j < i}
    terms = Where.apply(from_i, gm.unsqueeze(-2) * (until.unsqueeze(-1) * from_next), zero)
    return Sum.apply(terms, axis=(-1,), keepdims=False).movedim(-1, axis)


def _keepdim_shape(shape, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes}
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


# ---------------------------------------------------------------- movement (views where possible)
class Reshape(Primitive):
    attrs = {"shape": SHAPE}
    saves_inputs = True
    def forward(self, x): return x.reshape(self.shape)
    def save_for_backward(self, x): self.src = x.shape
    def backward(self, g): return (Reshape.apply(g, shape=self.src),)
    def infer(self, x):
        self.src = x.shape
        return _reshaped(x.shape, self.shape), x.dtype


def _inverse_permutation(dims):
    return tuple(sorted(range(len(dims)), key=lambda i: dims[i]))


class Permute(Primitive):
    attrs = {"dims": INTS}
    def forward(self, x): return x.transpose(self.dims)
    def backward(self, g): return (Permute.apply(g, dims=_inverse_permutation(self.dims)),)
    def infer(self, x): return tuple(x.shape[d] for d in self.dims), x.dtype


class Expand(Primitive):
    attrs = {"shape": SHAPE, "fill": bool}
    saves_inputs = True
    def save_for_backward(self, x): self.src = x.shape
    def forward(self, x):
        if x.ndim == 0 and getattr(self, "fill", False):   # the backward of a full sum: a plain filled
            return array_module(x).full(self.shape, x, dtype=x.dtype)   # array is cheaper than a view
        return array_module(x).broadcast_to(x, self.shape)
    def backward(self, g): return (sum_to(g, self.src),)
    def infer(self, x):
        self.src = x.shape
        return _broadcast_shape("expand", x.shape, tuple(self.shape), to=True), x.dtype


class Flip(Primitive):
    attrs = {"axes": INTS}
    def forward(self, x): return array_module(x).flip(x, self.axes)
    def backward(self, g): return (Flip.apply(g, axes=self.axes),)
    def infer(self, x): return _same(x)


class Roll(Primitive):
    attrs = {"shifts": INTS, "axes": INTS}
    elementwise = True
    def forward(self, x): return array_module(x).roll(x, self.shifts, self.axes)
    def backward(self, g):
        return (Roll.apply(g, shifts=tuple(-s for s in self.shifts), axes=self.axes),)
    def infer(self, x): return _same(x)


class _Slot:
    """Marks, in an index key, where the next index-array input goes (index arrays are inputs)."""
    __slots__ = ()
    def __repr__(self): return "<index>"
    def __reduce__(self): return "SLOT"


SLOT = _Slot()


def _fill(key, idx):
    """The NumPy key: `key` with its SLOTs replaced by the index arrays `idx`, in order."""
    if not idx:
        return key
    it = iter(idx)
    return tuple(next(it) if k is SLOT else k for k in key)


class Index(Primitive):
    """x[key] for any NumPy-style key (ints, slices, None, Ellipsis); integer/boolean index arrays
    are the inputs after x, placed at the key's SLOTs."""
    attrs = {"key": KEY}
    saves_inputs = True
    def forward(self, x, *idx):
        return x[_fill(self.key, idx)]
    def save_for_backward(self, x, *idx):
        self.src = x.shape
        super().save_for_backward(*idx)
    def backward(self, g):
        idx = self.saved_tensors
        return (IndexAddInto.apply(g, *idx, key=self.key, shape=self.src),) + (None,) * len(idx)
    def infer(self, x, *idx): return _indexed(x.shape, _fill(self.key, idx)), x.dtype


class IndexAddInto(Primitive):
    """zeros(shape) with g added at `key` (repeated indices accumulate): the adjoint of Index."""
    attrs = {"key": KEY, "shape": SHAPE}
    saves_inputs = True
    def forward(self, g, *idx):
        xp = array_module(g)
        key = _fill(self.key, idx)
        out = xp.zeros(self.shape, dtype=g.dtype)
        if _is_basic(key):
            out[key] = g
        else:
            _add_at(xp, out, key, g)
        return out
    def save_for_backward(self, g, *idx):
        super().save_for_backward(*idx)
    def backward(self, gg):
        idx = self.saved_tensors
        return (Index.apply(gg, *idx, key=self.key),) + (None,) * len(idx)
    def infer(self, g, *idx): return tuple(self.shape), g.dtype


class IndexPut(Primitive):
    """x with x[key] = v (or += v with `accumulate`): __setitem__ and index_put."""
    attrs = {"key": KEY, "accumulate": bool}
    saves_inputs = True
    def forward(self, x, v, *idx):
        xp = array_module(x)
        key = _fill(self.key, idx)
        out = x.copy()
        if self.accumulate:
            _add_at(xp, out, key, xp.broadcast_to(v, out[key].shape))
        else:
            out[key] = v
        return out
    def save_for_backward(self, x, v, *idx):
        self.vshape = v.shape
        super().save_for_backward(*idx)
    def backward(self, g):
        idx = self.saved_tensors
        gx = g
        if not self.accumulate:
            gx = IndexPut.apply(g, g.new_zeros(()), *idx, key=self.key, accumulate=False)
        gv = sum_to(Index.apply(g, *idx, key=self.key), self.vshape) if self.needs_input_grad[1] else None
        return (gx, gv) + (None,) * len(idx)
    def infer(self, x, v, *idx): return _same(x)


def _is_basic(key):
    if not isinstance(key, tuple):
        key = (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer)) for k in key)


def _add_at(xp, out, key, v):
    from .. import backends
    backends.get("cpu" if xp is np else "cuda").scatter_add(out, key, v)


class Cat(Primitive):
    attrs = {"axis": int}
    saves_inputs = True
    def save_for_backward(self, *xs): self.sizes = [x.shape[self.axis] for x in xs]
    def forward(self, *xs):
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
    attrs = {"pads": tuple, "value": NUMBER}
    def forward(self, x):
        return array_module(x).pad(x, self.pads, mode="constant", constant_values=self.value)
    def backward(self, g):
        key = tuple(slice(b, g.shape[i] - a) for i, (b, a) in enumerate(self.pads))
        return (Index.apply(g, key=key),)
    def infer(self, x): return tuple(s + b + a for s, (b, a) in zip(x.shape, self.pads)), x.dtype


class Gather(Primitive):
    """take_along_axis(x, index, axis): torch.gather (index: an int64 input without gradient)."""
    attrs = {"axis": int}
    saves_inputs = True
    def forward(self, x, index):
        _check_in_range(index, x.shape[self.axis] if x.ndim else 1, self.axis)
        return array_module(x).take_along_axis(x, index, axis=self.axis)
    def save_for_backward(self, x, index):
        self.src = x.shape
        super().save_for_backward(index)
    def backward(self, g):
        index, = self.saved_tensors
        return ScatterAdd.apply(g.new_zeros(self.src), g, index, axis=self.axis), None
    def infer(self, x, index): return tuple(index.shape), x.dtype


class ScatterAdd(Primitive):
    """x with src added at positions `index` along `axis`: torch.scatter_add."""
    attrs = {"axis": int}
    saves_inputs = True
    def forward(self, x, src, index):
        _check_in_range(index, x.shape[self.axis] if x.ndim else 1, self.axis)
        xp = array_module(x)
        out = x.copy()
        _add_at(xp, out, _scatter_key(xp, index, self.axis), src[_prefix(index.shape)])
        return out
    def save_for_backward(self, x, src, index):
        super().save_for_backward(index)
    def backward(self, g):
        index, = self.saved_tensors
        gs = Gather.apply(g, index, axis=self.axis) if self.needs_input_grad[1] else None
        return g, gs, None
    def infer(self, x, src, index): return _same(x)


class Scatter(Primitive):
    """x with src written at positions `index` along `axis`: torch.scatter."""
    attrs = {"axis": int}
    saves_inputs = True
    def forward(self, x, src, index):
        _check_in_range(index, x.shape[self.axis] if x.ndim else 1, self.axis)
        xp = array_module(x)
        out = x.copy()
        out[_scatter_key(xp, index, self.axis)] = src[_prefix(index.shape)]
        return out
    def save_for_backward(self, x, src, index):
        super().save_for_backward(index)
    def backward(self, g):
        index, = self.saved_tensors
        # zeros of index's shape: index may be longer than x along axis (torch allows it)
        gx = Scatter.apply(g, g.new_zeros(index.shape), index, axis=self.axis) if self.needs_input_grad[0] else None
        gs = Gather.apply(g, index, axis=self.axis) if self.needs_input_grad[1] else None
        return gx, gs, None
    def infer(self, x, src, index): return _same(x)


def _check_in_range(index, n, axis):
    """torch's bounds check of a gather/scatter index: NumPy would wrap a negative index, CuPy any."""
    if index.size:
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= n:
            raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for dimension {axis} with size {n}")


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
    attrs = {}
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
    attrs = {"eq": str}
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


# ---------------------------------------------------------------- non-differentiable primitives
# Comparisons, logic, rounding, argmax-like and index-valued results: their outputs carry no gradient
# (`differentiable = False`: apply records no node), but they are primitives all the same, so that a
# dispatch mode sees them and a replayed log recomputes them from its inputs.
def _bcast(*specs):
    return np.broadcast_shapes(*(s.shape for s in specs))


_BOOL = np.dtype(np.bool_)
_INT64 = np.dtype(np.int64)


class Compare(Primitive):
    """a `op` b elementwise, a bool result: op in eq, ne, lt, le, gt, ge, isclose (rtol, atol, equal_nan)."""
    attrs = {"op": str, "rtol": float, "atol": float, "equal_nan": bool}
    differentiable = False
    keeps_dtype = False
    rtol, atol, equal_nan = 1e-05, 1e-08, False

    def forward(self, a, b):
        op = self.op
        if op == "isclose":
            return array_module(a).isclose(a, b, self.rtol, self.atol, self.equal_nan)
        if a.dtype.kind == "V" and op not in ("eq", "ne"):
            with np.errstate(invalid="ignore"):   # bfloat16's ordering ufuncs warn at NaN; torch is silent
                return _order(op, a, b)
        return (a == b if op == "eq" else a != b if op == "ne" else _order(op, a, b))

    def infer(self, a, b): return _bcast(a, b), _BOOL


def _order(op, a, b):
    return a < b if op == "lt" else a <= b if op == "le" else a > b if op == "gt" else a >= b


class Logic(Primitive):
    """logical_and/or/xor/not (bool results) and bitwise_and/or/xor/not (the operands' dtype)."""
    attrs = {"op": str}
    differentiable = False
    keeps_dtype = False

    def forward(self, a, b=None):
        xp = array_module(a)
        kind, op = self.op.split("_")
        if kind == "logical":
            return getattr(xp, "logical_" + op)(a) if b is None else getattr(xp, "logical_" + op)(a, b)
        return ~a if b is None else a & b if op == "and" else a | b if op == "or" else a ^ b

    def infer(self, *specs):
        return _bcast(*specs), _BOOL if self.op.startswith("logical") else specs[0].dtype


class Rounding(Primitive):
    """floor, ceil, trunc, round (to `decimals`), sign: piecewise constant, so no gradient
    (the ops add `x * 0` to keep a zero gradient where torch gives one)."""
    attrs = {"op": str, "decimals": int}
    differentiable = False
    decimals = 0

    def forward(self, x):
        xp = array_module(x)
        if self.op == "round":
            return xp.round(x, self.decimals)
        if x.dtype.kind in "biu" and (self.op != "sign" or x.dtype == np.bool_):
            return x.copy()
        if self.op == "sign":   # torch's sign(nan) is 0, NumPy's nan
            return xp.where(x != x, xp.zeros((), x.dtype), xp.sign(x))
        return getattr(xp, self.op)(x)

    def infer(self, x): return x.shape, x.dtype


class Predicate(Primitive):
    """isnan, isinf, isfinite: bool results."""
    attrs = {"op": str}
    differentiable = False
    keeps_dtype = False

    def forward(self, x): return getattr(array_module(x), self.op)(x)
    def infer(self, x): return x.shape, _BOOL


class DivMod(Primitive):
    """Integer-style division of one dtype: floor_divide, remainder (Python's %), fmod (C's), and
    trunc_div (a / b rounded toward zero, in a's dtype). The ops build the gradients torch gives."""
    attrs = {"op": str}
    differentiable = False

    def forward(self, a, b):
        xp = array_module(a)
        if self.op == "trunc_div":
            with np.errstate(divide="ignore", invalid="ignore"):
                return xp.trunc(a / b).astype(a.dtype)
        return getattr(xp, self.op)(a, b)

    def infer(self, a, b): return _bcast(a, b), a.dtype


class AnyAll(Primitive):
    """all/any over `axis` (None: every element): bool, uint8 for uint8 input (as torch)."""
    attrs = {"op": str, "axis": AXES, "keepdims": bool}
    differentiable = False
    keeps_dtype = False

    def forward(self, x):
        xp = array_module(x)
        a = x.astype(bool)
        out = xp.asarray(a.all(axis=self.axis, keepdims=self.keepdims) if self.op == "all"
                         else a.any(axis=self.axis, keepdims=self.keepdims))
        return out.astype(np.uint8) if x.dtype == np.uint8 else out

    def infer(self, x):
        return _reduced(x.shape, self.axis, self.keepdims), np.dtype(np.uint8) if x.dtype == np.uint8 else _BOOL


class ArgReduce(Primitive):
    """argmax/argmin over one `axis` (None: of the flattened input), int64."""
    attrs = {"op": str, "axis": AXIS, "keepdims": bool}
    differentiable = False
    keeps_dtype = False

    def forward(self, x):
        xp = array_module(x)
        if self.axis is None or x.ndim == 0:
            i = xp.asarray(x.argmax() if self.op == "argmax" else x.argmin(), dtype=np.int64)
            return i.reshape((1,) * x.ndim) if self.keepdims else i
        i = x.argmax(axis=self.axis, keepdims=self.keepdims) if self.op == "argmax" else \
            x.argmin(axis=self.axis, keepdims=self.keepdims)
        return xp.asarray(i, dtype=np.int64)

    def infer(self, x):
        return _reduced(x.shape, None if not x.shape else self.axis, self.keepdims), _INT64


class ArgSort(Primitive):
    """Stable argsort along `axis`, ascending or `descending` (ties keep their order), int64."""
    attrs = {"axis": int, "descending": bool}
    differentiable = False
    keeps_dtype = False

    def forward(self, x):
        xp = array_module(x)
        if x.ndim == 0:
            return xp.zeros((), np.int64)
        if x.dtype.kind == "V":   # bfloat16: its own sort misplaces NaN (and everything after it)
            x = x.astype(np.float32)
        if not self.descending:
            return xp.argsort(x, axis=self.axis, kind="stable").astype(np.int64)   # NaN last, as torch
        key = ~x if x.dtype == np.bool_ else -x
        if x.dtype.kind == "u":   # -x wraps: sort the reversed order instead
            key = xp.iinfo(x.dtype).max - x
        order = xp.argsort(key, axis=self.axis, kind="stable")
        if x.dtype.kind == "f" and (xp is not np or xp.isnan(x).any()):
            # descending, NaN counts as the largest value (torch): the NaNs, last so far, go first
            nan_last = xp.isnan(xp.take_along_axis(x, order, axis=self.axis))
            order = xp.take_along_axis(order, xp.argsort(~nan_last, axis=self.axis, kind="stable"), axis=self.axis)
        return order.astype(np.int64)

    def infer(self, x): return x.shape, _INT64


class Nonzero(Primitive):
    """The (n, ndim) int64 coordinates of the non-zero elements, in C order (shape depends on data)."""
    attrs = {}
    differentiable = False
    keeps_dtype = False

    def forward(self, x):
        xp = array_module(x)
        if x.ndim == 0:   # NumPy refuses a 0-d input; torch gives one (0, 0) or (1, 0) row
            return xp.zeros((int(bool(x)), 0), np.int64)
        return xp.stack(xp.nonzero(x), axis=1).astype(np.int64)

    def infer(self, x):
        raise NotImplementedError("nonzero: the output shape depends on the data")


class Unique(Primitive):
    """One `part` of xp.unique(x, axis): 'values' (sorted), 'inverse' (int64, x's shape, or x.shape[axis]
    with an axis) or 'counts' (int64). Shapes depend on the data."""
    attrs = {"part": str, "axis": AXIS}
    differentiable = False
    keeps_dtype = False

    def forward(self, x):
        xp = array_module(x)
        dtype = x.dtype
        if dtype.kind == "V":   # bfloat16's own sort misplaces NaN: in float32 (exact), back at the end
            x = x.astype(np.float32)
        kw = {"equal_nan": False} if x.dtype.kind == "f" else {}   # each NaN its own value, as torch
        if self.part == "values":
            return xp.unique(x, axis=self.axis, **kw).astype(dtype, copy=False)
        if self.part == "counts":
            return xp.unique(x, return_counts=True, axis=self.axis, **kw)[1].astype(np.int64)
        inv = xp.unique(x, return_inverse=True, axis=self.axis, **kw)[1]
        return inv.reshape(x.shape if self.axis is None else -1).astype(np.int64)

    def infer(self, x):
        raise NotImplementedError("unique: the output shape depends on the data")


class SearchSorted(Primitive):
    """For each of `values`, where it goes in the sorted last axis of `seq` (`side` 'left' or 'right'),
    int64; a 1-D seq serves every value, else rows of seq and values pair up."""
    attrs = {"side": str}
    differentiable = False
    keeps_dtype = False

    def forward(self, seq, values):
        xp = array_module(seq)
        if seq.ndim == 1:
            return xp.searchsorted(seq, values, self.side).astype(np.int64)
        rows = [xp.searchsorted(s, v, self.side) for s, v in zip(seq.reshape(-1, seq.shape[-1]),
                                                                  values.reshape(-1, values.shape[-1]))]
        return xp.stack(rows).reshape(values.shape).astype(np.int64)

    def infer(self, seq, values): return values.shape, _INT64


class BitCast(Primitive):
    """The same bytes read as `dtype` (a view; a different element size rescales the last dim)."""
    attrs = {"dtype": DTYPE}
    differentiable = False
    keeps_dtype = False

    def forward(self, x): return x.view(self.dtype)

    def infer(self, x):
        dt = np.dtype(self.dtype)
        shape = x.shape if not x.shape or dt.itemsize == x.dtype.itemsize else \
            x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // dt.itemsize,)
        return shape, dt


class ClassTarget(Primitive):
    """Class-index targets for nll_loss / cross_entropy, in one call: (safe, valid, bad) with
    valid = target != ignore_index, safe = target where valid else 0 (int64, a gather index), and
    bad = how many valid entries are not classes in [0, n_cls) (0-d int64; the loss raises if any)."""
    attrs = {"ignore_index": int, "n_cls": int}
    differentiable = False
    keeps_dtype = False
    multi_output = True

    def forward(self, t):
        xp = array_module(t)
        valid = t != self.ignore_index
        bad = (valid & ((t < 0) | (t >= self.n_cls))).sum(dtype=np.int64)
        return xp.where(valid, t, 0).astype(np.int64), valid, xp.asarray(bad, dtype=np.int64)

    def infer(self, t):
        return (tuple(t.shape), _INT64), (tuple(t.shape), _BOOL), ((), _INT64)


# A compiled select for Where on the CPU (numba; NumPy's where branches per element): cpu_kernels.py
from ..backends import cpu_kernels as _cpu_kernels  # noqa: E402

_cpu_kernels.install({Where: "where", Add: "add"})
