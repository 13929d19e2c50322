"""More elementwise math, as torch: inverse trigonometric and hyperbolic functions, atan2, hypot,
logaddexp, copysign, and the checks signbit / isposinf / isneginf / nan_to_num.

The functions with no good composite are primitives here (forward one ufunc against `xp`, backward in
Tensor ops next to it); the rest are composites. Re-exported by `ember` and bound as Tensor methods
(with their `_` in-place forms and torch's `arc*` aliases) by `ember/_tensor_methods.py`.
"""
from __future__ import annotations

import math as _math

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..autograd.function import Primitive
from ..backends import array_module
from . import math as M
from . import primitives as P
from ._infer import _same, _broadcast

__all__ = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
           "arcsinh", "arccosh", "arctanh", "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign",
           "deg2rad", "rad2deg", "signbit", "isposinf", "isneginf", "nan_to_num"]


class Asin(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arcsin(x)
    def backward(self, g): return (g * M.rsqrt(1 - self.saved_tensors[0] ** 2),)
    def infer(self, x): return _same(x)


class Acos(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arccos(x)
    def backward(self, g): return (-g * M.rsqrt(1 - self.saved_tensors[0] ** 2),)
    def infer(self, x): return _same(x)


class Atan(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arctan(x)
    def backward(self, g): return (g / (1 + self.saved_tensors[0] ** 2),)
    def infer(self, x): return _same(x)


class Sinh(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).sinh(x)
    def backward(self, g): return (g * cosh(self.saved_tensors[0]),)
    def infer(self, x): return _same(x)


class Cosh(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).cosh(x)
    def backward(self, g): return (g * sinh(self.saved_tensors[0]),)
    def infer(self, x): return _same(x)


class Asinh(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arcsinh(x)
    def backward(self, g): return (g * M.rsqrt(self.saved_tensors[0] ** 2 + 1),)
    def infer(self, x): return _same(x)


class Acosh(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arccosh(x)
    def backward(self, g): return (g * M.rsqrt(self.saved_tensors[0] ** 2 - 1),)
    def infer(self, x): return _same(x)


class Atanh(Primitive):
    attrs = {}
    saves_inputs = True
    def forward(self, x): return array_module(x).arctanh(x)
    def backward(self, g): return (g / (1 - self.saved_tensors[0] ** 2),)
    def infer(self, x): return _same(x)


class Atan2(Primitive):
    """atan2(a, b), the angle of (b, a): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)."""
    attrs = {}
    saves_inputs = True
    def forward(self, a, b): return array_module(a).arctan2(a, b)
    def infer(self, a, b): return _broadcast(self, a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        r = g / (a * a + b * b)
        return P.sum_to(r * b, a.shape), P.sum_to(-r * a, b.shape)


asin = M._unary(Asin, "asin")
acos = M._unary(Acos, "acos")
atan = M._unary(Atan, "atan")
sinh = M._unary(Sinh, "sinh")
cosh = M._unary(Cosh, "cosh")
asinh = M._unary(Asinh, "asinh")
acosh = M._unary(Acosh, "acosh")
atanh = M._unary(Atanh, "atanh")
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], elementwise (broadcasting)."""
    a, b = M._float_operands(input, other, "atan2")
    return M._binary(Atan2, a, b, "atan2")


arctan2 = atan2


def hypot(input, other):
    """sqrt(input^2 + other^2), elementwise."""
    a, b = M._float_operands(input, other, "hypot")
    return M.sqrt(a * a + b * b)


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow: max + log1p(exp(-|input - other|))."""
    a, b = M._float_operands(input, other, "logaddexp")
    return M.maximum(a, b) + M.log1p(M.exp(-M.abs(a - b)))


def logaddexp2(input, other):
    """log2(2^input + 2^other), computed as logaddexp in natural units."""
    a, b = M._float_operands(input, other, "logaddexp2")
    return logaddexp(a * _math.log(2), b * _math.log(2)) / _math.log(2)


def copysign(input, other):
    """|input| with the sign of other (a signed zero's sign counts, as torch)."""
    a, b = M._float_operands(input, other, "copysign")
    neg = signbit(b)
    return M.where(neg, -M.abs(a), M.abs(a))


def deg2rad(input):
    return (input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())) * (_math.pi / 180)


def rad2deg(input):
    return (input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())) * (180 / _math.pi)


def signbit(input):
    """True where the sign bit is set (also for -0.0)."""
    return Tensor._make(array_module(input).signbit(input._data), input._device)


def isposinf(input):
    return Tensor._make(array_module(input).isposinf(input._data), input._device)


def isneginf(input):
    return Tensor._make(array_module(input).isneginf(input._data), input._device)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN to `nan`, +inf/-inf to `posinf`/`neginf` (default: the dtype's largest/lowest finite value)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    try:
        info = np.finfo(input._data.dtype)
    except ValueError:   # bfloat16 (an ml_dtypes type)
        import ml_dtypes
        info = ml_dtypes.finfo(input._data.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = M.where(M.isnan(input), nan, input)
    out = M.where(isposinf(input), posinf, out)
    return M.where(isneginf(input), neginf, out)
