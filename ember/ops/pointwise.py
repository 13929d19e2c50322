"""Small elementwise ops of torch that Ember builds from its other ops: NaN-ignoring fmax/fmin, integer
gcd/lcm and shifts, heaviside, ldexp/frexp, nextafter, logit, xlogy, sinc, erfc.

All are composites (the integer-only ones run `DivMod` with a NumPy ufunc name, as remainder does),
so autograd, double backward and the graph compiler need nothing new. Re-exported by `ember` and bound
as Tensor methods, with torch's `_` in-place forms, by `ember/_tensor_methods.py`.
"""
from __future__ import annotations

import collections
import math as _math

import numpy as np

from .. import _dtype
from .._errors import describe, op_error
from .._tensor import Tensor
from ..backends import array_module
from . import math as M
from . import primitives as P

__all__ = ["fmax", "fmin", "gcd", "lcm", "heaviside", "ldexp", "frexp", "nextafter", "bitwise_left_shift",
           "bitwise_right_shift", "logit", "xlogy", "sinc", "erfc"]


def _tensors(op, input, other):
    """torch's `(Tensor, Tensor)` overloads: a number for either operand is a TypeError."""
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def fmax(input, other):
    """The larger of input and other, elementwise; where one of them is NaN, the other (unlike maximum).

    >>> ember.fmax(ember.tensor([1.0, float('nan')]), ember.tensor([float('nan'), 2.0])).tolist()
    [1.0, 2.0]
    """
    _tensors("fmax", input, other)
    a, b = M.binary_operands(input, other, "fmax")
    # torch's gradient: all of it to input where input >= other (ties too) or other is NaN, else to other
    return M.where(M.logical_or(M.ge(a, b), M.isnan(b)), a, b)


def fmin(input, other):
    """The smaller of input and other, elementwise; where one of them is NaN, the other (unlike minimum).

    >>> ember.fmin(ember.tensor([1.0, float('nan')]), ember.tensor([float('nan'), 2.0])).tolist()
    [1.0, 2.0]
    """
    _tensors("fmin", input, other)
    a, b = M.binary_operands(input, other, "fmin")
    return M.where(M.logical_or(M.le(a, b), M.isnan(b)), a, b)


def _integer_operands(op, input, other, kernel):
    """Promoted operands of an integer-only op (torch: NotImplementedError for floats and bools)."""
    a, b = M.binary_operands(input, other, op)
    if a.dtype.category != 1:
        raise op_error(op, f"\"{kernel}\" not implemented for '{a.dtype.name}' (operands {describe(input)} "
                           f"and {describe(other)}); it takes integer tensors", NotImplementedError)
    return a, b


def gcd(input, other):
    """Greatest common divisor, elementwise, of integer tensors (non-negative; gcd(0, 0) is 0).

    >>> ember.gcd(ember.tensor([4, -6, 0]), ember.tensor([6, 4, 3])).tolist()
    [2, 2, 3]
    """
    a, b = _integer_operands("gcd", input, other, "gcd_cpu")
    return M._binary_nondiff(P.DivMod, a, b, "gcd", op="gcd")


def lcm(input, other):
    """Least common multiple, elementwise, of integer tensors (non-negative; 0 when either is 0).

    >>> ember.lcm(ember.tensor([4, -6, 0]), ember.tensor([6, 4, 3])).tolist()
    [12, 12, 0]
    """
    a, b = _integer_operands("lcm", input, other, "lcm_cpu")
    return M._binary_nondiff(P.DivMod, a, b, "lcm", op="lcm")


def bitwise_left_shift(input, other):
    """input << other for integer tensors; a shift by the bit width or more (or, signed, by a negative
    amount) gives 0, as torch (C leaves it undefined).

    >>> ember.bitwise_left_shift(ember.tensor([1, 3]), 2).tolist()
    [4, 12]
    """
    a, b = _integer_operands("bitwise_left_shift", input, other, "lshift_cpu")
    bits = a._data.dtype.itemsize * 8
    out_of_range = M.logical_or(M.lt(b, 0), M.ge(b, bits))
    shifted = M._binary_nondiff(P.DivMod, a, M.where(out_of_range, 0, b), "bitwise_left_shift", op="left_shift")
    return M.where(out_of_range, 0, shifted)


def bitwise_right_shift(input, other):
    """input >> other for integer tensors (arithmetic: the sign fills in); a shift past the width (or,
    signed, by a negative amount) gives the sign, 0 or -1, as torch.

    >>> ember.bitwise_right_shift(ember.tensor([-8, 8]), ember.tensor([1, 100])).tolist()
    [-4, 0]
    """
    a, b = _integer_operands("bitwise_right_shift", input, other, "rshift_cpu")
    signed = a.dtype.name != "uint8"
    max_shift = a._data.dtype.itemsize * 8 - signed
    out_of_range = M.logical_or(M.lt(b, 0), M.ge(b, max_shift)) if signed else M.ge(b, max_shift)
    amount = M.where(out_of_range, max_shift if signed else 0, b)
    shifted = M._binary_nondiff(P.DivMod, a, amount, "bitwise_right_shift", op="right_shift")
    return shifted if signed else M.where(out_of_range, 0, shifted)


def heaviside(input, values):
    """The step function: 0 where input < 0 (and NaN), 1 where input > 0, `values` where input == 0.
    Not differentiable (as torch).

    >>> ember.heaviside(ember.tensor([-1.0, 0.0, 2.0]), ember.tensor([0.5])).tolist()
    [0.0, 0.5, 1.0]
    """
    _tensors("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise op_error("heaviside", f"heaviside is not yet implemented for tensors with different dtypes "
                                    f"({describe(input)} and values {describe(values)})")
    x, v = input.detach(), values.detach()
    return M.where(M.eq(x, 0), v, M.gt(x, 0).to(x.dtype))


def ldexp(input, other):
    """input * 2 ** other, in the operands' promoted dtype (the default float dtype for two integers).

    >>> ember.ldexp(ember.tensor([1.0, 3.0]), ember.tensor([3, -1])).tolist()
    [8.0, 1.5]
    """
    a, b = M._float_operands(input, other, "ldexp")
    return M.mul(a, M.pow(2.0, b))


_Frexp = collections.namedtuple("frexp", ["mantissa", "exponent"])  # type: ignore[name-match]  # torch's type name, shown in repr


def frexp(input):
    """(mantissa, exponent) with input == mantissa * 2 ** exponent, |mantissa| in [0.5, 1) (0, inf and
    NaN have exponent 0); the exponent is int32. The mantissa's gradient is g / 2 ** exponent.

    >>> m, e = ember.frexp(ember.tensor([8.0, -3.5]))
    >>> m.tolist(), e.tolist()
    ([0.5, -0.875], [4, 2])
    """
    if not input.dtype.is_floating_point:
        raise op_error("frexp", f"torch.frexp() only supports floating-point dtypes, got {describe(input)}")
    data = input._data
    if input.dtype is _dtype.bfloat16:   # NumPy's frexp has no bfloat16 loop; float32 holds it exactly
        data = data.astype(np.float32)
    exponent = Tensor._make(array_module(data).frexp(data)[1].astype(np.int32), input._device)
    # input * 2 ** -e in two halves: each factor stays in range (2 ** 148 overflows float32, and a
    # subnormal float32's exponent is -148); scaling by powers of two is exact
    e = exponent.to(input.dtype)
    half = M.trunc(e / 2)
    return _Frexp(input * M.pow(2.0, -half) * M.pow(2.0, half - e), exponent)


def nextafter(input, other):
    """The next floating-point value after input in the direction of other, elementwise.

    >>> ember.nextafter(ember.tensor([1.0]), ember.tensor([2.0])).item() > 1.0
    True
    """
    _tensors("nextafter", input, other)
    a, b = M.binary_operands(input.detach(), other.detach(), "nextafter")
    if not a.dtype.is_floating_point:
        raise op_error("nextafter", f"\"nextafter_cpu\" not implemented for '{a.dtype.name}' (operands "
                                    f"{describe(input)} and {describe(other)})", NotImplementedError)
    if a.dtype is _dtype.bfloat16:   # NumPy has no bfloat16 loop: step through bfloat16's bit pattern
        return _nextafter_bits(a, b)
    return M._binary_nondiff(P.DivMod, a, b, "nextafter", op="nextafter")


def _nextafter_bits(a, b):
    """nextafter for bfloat16: +-1 on the int16 bit pattern (signed magnitude), as C's nextafter."""
    from .shape import broadcast_tensors
    a, b = broadcast_tensors(a, b)
    bits = a.contiguous().view(_dtype.int16)
    away = M.ne(M.lt(a, b), M.lt(a, 0))   # moving away from zero increases the magnitude bits
    step = M.where(away, 1, -1).to(_dtype.int16)
    smallest = M.where(M.lt(b, 0), -(2 ** 15) + 1, 1).to(_dtype.int16)   # from +-0: the smallest subnormal
    moved = M.where(M.eq(a, 0), smallest, bits + step).view(_dtype.bfloat16)
    moved = M.where(M.eq(a, b), b, moved)
    return M.where(M.logical_or(M.isnan(a), M.isnan(b)), float("nan"), moved)


def logit(input, eps=None):
    """log(p / (1 - p)); with `eps`, p is first clamped to [eps, 1 - eps] (and the gradient is 0 outside).

    >>> round(ember.logit(ember.tensor([0.75])).item(), 4)
    1.0986
    """
    x = input if input.dtype.is_floating_point else M.cast_for("logit", input, _dtype.get_default_dtype().np)
    # torch's gradient g / (x (1 - x)): +-inf at 0 and 1 (log(x / (1 - x))'s backward gives inf * 0 = NaN
    # there), NaN at a NaN x, and 0 outside [eps, 1 - eps] (a where, not clamp, whose gradient at NaN is 0)
    if eps is not None:
        x = M.where(M.lt(x, eps), eps, M.where(M.gt(x, 1 - eps), 1 - eps, x))
        return M.log(x) - M.log1p(-x)
    outside = M.logical_or(M.lt(x, 0), M.gt(x, 1))   # torch: NaN and a NaN gradient
    return M.where(outside, M.where(outside, _math.nan, 1.0).to(x.dtype) * x, M.log(x) - M.log1p(-x))


def xlogy(input, other):
    """input * log(other), with 0 where input == 0 (also where other == 0), NaN where other is NaN.

    >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    x, y = M._float_operands(input, other, "xlogy")
    # torch's value is 0 where input == 0 (other not NaN); its gradients are g * log(other), but 0 where
    # input == 0 and other <= 0, and g * input / other, so NaN at input == other == 0 (0 / 0), which the
    # log of other itself gives (log's backward divides by other). At input == 0, other == inf the value
    # is 0 and the input's gradient g * log(inf) = inf (_inf_slope_at_zero).
    zero = M.logical_and(M.eq(x, 0), M.logical_or(M.le(y, 0), M.eq(y, _math.inf)))
    return x * M.where(zero, 0.0, M.log(y)) + _inf_slope_at_zero(x, y)


def _inf_slope_at_zero(x, y):
    """0, with gradient inf for x where x == 0 and y == inf (torch's g * log(y) of xlogy, xlog1py there):
    x ** (1/3) is 0 at 0 with slope inf. Only built when x needs a gradient."""
    if not x.requires_grad:
        return 0.0
    at = M.logical_and(M.eq(x, 0), M.eq(y, _math.inf))
    return M.where(at, M.where(at, x, 1.0) ** (1.0 / 3.0), 0.0)


def sinc(input):
    """sin(pi x) / (pi x), and 1 at x == 0 (where its gradient is 0).

    >>> ember.sinc(ember.tensor([0.0, 0.5])).tolist()[0]
    1.0
    """
    x = input if input.dtype.is_floating_point else M.cast_for("sinc", input, _dtype.get_default_dtype().np)
    zero = M.eq(x, 0)
    z = M.where(zero, 1.0, x) * _math.pi
    return M.where(zero, 1.0, M.sin(z) / z)


def erfc(input):
    """The complementary error function 1 - erf(x), computed directly: accurate in the tail, where
    1 - erf(x) is 0 (erfc(5) = 1.5e-12).

    >>> round(ember.erfc(ember.tensor([1.0])).item(), 4)
    0.1573
    """
    x = input if input.dtype.is_floating_point else M.cast_for("erfc", input, _dtype.get_default_dtype().np)
    return P.Erfc.apply(x)
