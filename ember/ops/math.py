"""Math ops: elementwise, comparison, reductions, linear algebra.

Public functions take Tensors or Python scalars, validate at this boundary (errors name the op, the
operands and the user's line), promote dtypes the way torch does, and call primitives. Composites
(softmax, var, logsumexp, norm, ...) are written here in Tensor ops and need no backward of their own.
"""
from __future__ import annotations

import builtins
import numbers
import collections
import math as _math

import numpy as np

from .. import _dtype, _memory
from .._dims import add_numpy_names, wrap_dim, wrap_dims
from .._errors import check_same_device, check_scalar_fits, op_error, describe, warn
from .._tensor import Tensor
from ..backends import host
from ..autograd.grad_mode import STATE
from . import primitives as P
from ..amp import autocast_op, active as autocast_active

__all__ = [  # the public ops, re-exported by `ember`
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "true_divide", "neg",
    "negative", "pow", "float_power", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
    "sigmoid", "sqrt", "erf", "erfinv", "log2", "log10", "exp2", "rsqrt", "reciprocal", "square", "abs",
    "absolute", "relu", "floor", "ceil", "trunc", "sign", "round", "frac", "clamp", "clip",
    "maximum", "minimum", "where", "lerp", "addcmul", "addcdiv", "eq", "ne", "lt", "le", "gt", "ge",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_not", "bitwise_not",
    "isnan", "isinf", "isfinite", "equal", "allclose", "isclose", "sum", "mean", "prod", "var",
    "std", "var_mean", "std_mean", "amax", "amin", "max", "min", "argmax", "argmin", "all", "any",
    "count_nonzero", "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "norm", "dist",
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "einsum",
    "tensordot",
]


# ------------------------------------------------------------------ operands


def _scalar_tensor(v, dtype, device):
    from .creation import _from_host
    try:
        arr = host.asarray(v, dtype=dtype.np)
    except OverflowError:   # -1 for a uint8 op: torch wraps it around (to 255), as a C cast does
        arr = host.asarray(v).astype(dtype.np)
    t = _from_host(arr, device)
    t._wrapped_number = True
    return t


def _as_tensor(x, dtype, device, op):
    if not isinstance(x, Tensor):
        if isinstance(x, (np.ndarray, list, tuple)):
            from .creation import tensor
            x = tensor(x, device=device)
        elif isinstance(x, (numbers.Number, np.generic)):
            return _scalar_tensor(x, dtype, device)
        else:   # None, a string, ...: NumPy would make NaN or an object array of it (torch's TypeError)
            raise op_error(op, f"expected a Tensor or a number as operand, got {type(x).__name__}", TypeError)
    if x._device is not device:
        if x._data.ndim == 0 and x._device.type == "cpu":   # a CPU scalar tensor may join any device
            from .shape import to_device
            x = to_device(x, device)
        else:
            raise op_error(op, f"expected all tensors to be on the same device, but found at least two "
                               f"devices, {device} and {x._device}")
    if x._data.dtype != dtype.np:
        x = cast_for(op, x, dtype.np)
    return x


def cast_for(op: str, x, dtype):
    """`x` cast to `dtype` (a NumPy dtype) as a step of `op`: an output too large for memory is reported
    as op's (the user called exp on an int tensor, not cast)."""
    if x._data.size > 1 << 20:
        _memory.check(op, x.shape, dtype)
    return P.Cast.apply(x, dtype=dtype)


def binary_operands(a, b, op):
    """(a, b) as Tensors of one dtype on one device, by torch's promotion rules."""
    if type(a) is Tensor and type(b) is Tensor and a._data.dtype == b._data.dtype \
            and a._device is b._device:
        return a, b
    dt = _dtype.result_type(a, b)
    dev = a._device if isinstance(a, Tensor) else b._device
    if isinstance(b, Tensor) and b._device is not dev and a._data.ndim == 0 and dev.type == "cpu":
        dev = b._device   # a CPU scalar tensor joins the other operand's device, also from the left
    return _as_tensor(a, dt, dev, op), _as_tensor(b, dt, dev, op)


def _binary(prim, a, b, op):
    a, b = binary_operands(a, b, op)
    try:
        return prim.apply(a, b)
    except ValueError as e:
        if "broadcast" in str(e):
            raise op_error(op, f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast "
                               f"together") from None
        raise


def _float_operands(a, b, op):
    """Operands for true division (and atan2, hypot, ...): integers become the default float dtype, each
    from its own value, as torch: `uint8_tensor / -1` is -6.0, not 6 / 255 (the integer promotion would
    first wrap the -1 into uint8, and `int8_tensor / 200` would divide by -56)."""
    floating = (isinstance(a, Tensor) and a.dtype.is_floating_point) or \
        (isinstance(b, Tensor) and b.dtype.is_floating_point)   # the usual case, without result_type
    if not floating and not _dtype.result_type(a, b).is_floating_point:
        f = _dtype.get_default_dtype()
        a, b = _as_float(a, f, op), _as_float(b, f, op)
    return binary_operands(a, b, op)


def _as_float(x, f, op):
    """An integer or bool operand (tensor or number) as float dtype `f`; anything else unchanged."""
    if isinstance(x, Tensor):
        return x if x.dtype.is_floating_point else cast_for(op, x, f.np)
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return float(x)
    return x


# ------------------------------------------------------------------ arithmetic
def _times_alpha(input, other, alpha, op):
    """(input, alpha * other) for add/sub, promoted as input and other alone (alpha never promotes, as
    in torch); integer products wrap around like torch's (uint8: 2 * -1 == 254)."""
    a, b = binary_operands(input, other, op)
    if isinstance(alpha, Tensor):
        alpha = alpha.item()
    if isinstance(alpha, float) and not a.dtype.is_floating_point:
        raise op_error(op, f"for integral input tensors, argument alpha must not be a floating point "
                           f"number, got alpha={alpha} for {describe(a)} and {describe(b)}")
    if isinstance(alpha, bool) and a.dtype.name != "bool":
        raise op_error(op, f"boolean alpha only supported for boolean results, got {describe(a)}")
    return a, _binary(P.Mul, b, _scalar_tensor(alpha, b.dtype, b._device), op)


def add(input, other, *, alpha=1):
    if alpha != 1 or isinstance(alpha, bool):   # alpha=True too: torch refuses it for non-bool results
        input, other = _times_alpha(input, other, alpha, "add")
    return _binary(P.Add, input, other, "add")


def sub(input, other, *, alpha=1):
    if builtins.any(isinstance(x, bool) or (isinstance(x, Tensor) and x.dtype.name == "bool")
                    for x in (input, other)):
        raise op_error("sub", "subtraction, the `-` operator, with a bool tensor is not supported; to "
                              "invert a mask use the `~` or `logical_not()` operator instead")
    if alpha != 1 or isinstance(alpha, bool):   # alpha=True too: torch refuses it for non-bool results
        input, other = _times_alpha(input, other, alpha, "sub")
    return _binary(P.Sub, input, other, "sub")


def mul(input, other):
    return _binary(P.Mul, input, other, "mul")


def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        a, b = _float_operands(input, other, "div")
        return _binary(P.Div, a, b, "div")   # for its broadcast error
    if rounding_mode == "trunc":
        if _is_float(input, other):
            return _binary(P.Div, input, other, "div").trunc()
        a, b = binary_operands(input, other, "div")
        _check_int_divisor(a, b, "div")   # torch raises; NumPy would give int64's minimum
        return _binary_nondiff(P.DivMod, a, b, "div", op="trunc_div")
    if rounding_mode == "floor":
        return floor_divide(input, other)
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def _is_float(*xs):
    return _dtype.result_type(*xs).is_floating_point


def _binary_nondiff(prim, a, b, name, **attrs):
    """A non-differentiable binary primitive on promoted operands, with the broadcast error."""
    try:
        return prim.apply(a, b, **attrs)
    except MemoryError as e:
        raise _memory.from_memory_error(name, e, (a._data, b._data)) from None
    except ValueError:
        raise op_error(name, f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast "
                             f"together") from None


def _check_int_divisor(a, b, op):
    """torch raises for integer division by zero (NumPy would warn and give 0); as torch, not when there
    is nothing to divide (an empty dividend: the output is empty, or the shapes do not broadcast)."""
    if b.dtype.category < 2 and a._data.size and not P.AnyAll.apply(b, op="all", axis=None, keepdims=False).item():
        raise op_error(op, f"ZeroDivisionError: integer division by zero (divisor {describe(b)})")


def floor_divide(input, other):
    a, b = binary_operands(input, other, "floor_divide")
    _check_int_divisor(a, b, "floor_divide")
    out = _binary_nondiff(P.DivMod, a, b, "floor_divide", op="floor_divide")
    if STATE.enabled:   # torch keeps the graph of a float floor division, with a zero gradient
        never = out.new_zeros((), dtype=_dtype.bool)
        for x in (a, b):
            if x.requires_grad:
                out = P.Where.apply(never, x, out)
    return out


def _modulo(input, other, name, xp_fn, rounding):
    """a - rounding(a / b) * b, computed exactly by `xp_fn`; gradients 1 and -rounding(a / b) (torch's)."""
    a, b = binary_operands(input, other, name)
    _check_int_divisor(a, b, name)
    out = _binary_nondiff(P.DivMod, a, b, name, op=xp_fn)
    if STATE.enabled and (a.requires_grad or b.requires_grad):
        with np.errstate(divide="ignore", invalid="ignore"):
            q = P.Rounding.apply(P.Div.apply(a.detach(), b.detach()), op=rounding)
        d = a - q * b                      # the same value, differentiable in a and b
        return out + (d - d.detach())
    return out


def remainder(input, other):
    """Python's modulo: the result has the sign of the divisor (`remainder(-7, 3) == 2`)."""
    return _modulo(input, other, "remainder", "remainder", "floor")


def fmod(input, other):
    """C's fmod: the result has the sign of the dividend (`fmod(-7, 3) == -1`, torch.fmod)."""
    return _modulo(input, other, "fmod", "fmod", "trunc")


def true_divide(input, other):
    return div(input, other)


def neg(input):
    if input.dtype.name == "bool":
        raise op_error("neg", "negation, the `-` operator, on a bool tensor is not supported; to invert "
                              "a mask use the `~` or `logical_not()` operator instead")
    return P.Neg.apply(input)


negative = neg


def pow(input, exponent):
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool) and isinstance(input, Tensor):
        if exponent == 1:
            return input * 1
        if exponent == 2 and input.dtype.is_floating_point:
            return input * input
        if exponent in (0.5, -0.5) and input.dtype.is_floating_point and input.dtype is not _dtype.float16:
            # torch's sqrt and rsqrt paths (not taken for float16): (-inf) ** +-0.5 is NaN, (-0.0) ** 0.5 is
            # -0.0 and (-0.0) ** -0.5 -inf, where C's pow gives inf, 0.0; 0.0 and inf
            return sqrt(input) if exponent == 0.5 else rsqrt(input)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and isinstance(exponent, float):
        input = input.float()
    if isinstance(input, Tensor) and input.dtype.category < 2 and isinstance(exponent, (int, np.integer)) \
            and not isinstance(exponent, bool) and exponent < 0:
        raise op_error("pow", f"integers to negative integer powers are not allowed: {describe(input)} "
                              f"** {exponent} (as torch; a tensor exponent gives torch's integer results)")
    return _binary(P.Pow, input, exponent, "pow")


def float_power(input, exponent):
    """pow in float64, whichever operand is the tensor (torch: `float_power(2, x)` is float64 too)."""
    if isinstance(input, Tensor):
        input = input.double()
    elif isinstance(exponent, Tensor):
        exponent = exponent.double()
    return pow(input, exponent)


def _unary(prim, name):
    def fn(input):
        if not input.dtype.is_floating_point:
            input = cast_for(name, input, _dtype.get_default_dtype().np)
        return prim.apply(input)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (integer inputs are computed in the default float dtype)."
    return fn


exp = _unary(P.Exp, "exp")
log = _unary(P.Log, "log")
log1p = _unary(P.Log1p, "log1p")
expm1 = _unary(P.Expm1, "expm1")
sin = _unary(P.Sin, "sin")
cos = _unary(P.Cos, "cos")
tan = _unary(P.Tan, "tan")
tanh = _unary(P.Tanh, "tanh")
sigmoid = _unary(P.Sigmoid, "sigmoid")
sqrt = _unary(P.Sqrt, "sqrt")
erf = _unary(P.Erf, "erf")
erfinv = _unary(P.Erfinv, "erfinv")


def log2(input):
    return log(input) / _math.log(2)


def log10(input):
    return log(input) / _math.log(10)


def exp2(input):
    return pow(2.0, input)


def rsqrt(input):
    return 1 / sqrt(input)


def reciprocal(input):
    return 1 / input


def square(input):
    if input.dtype.name == "bool":   # as torch: bool squares are int64
        input = cast_for("square", input, np.dtype(np.int64))
    return input * input


def abs(input):
    return P.Abs.apply(input)


absolute = abs


def relu(input):
    if input.dtype.name == "bool":
        raise op_error("relu", "boolean inputs are not supported")
    return P.Relu.apply(input)


def _rounding(input, name, **attrs):
    """Piecewise-constant ops: the gradient is zero everywhere it exists (as in torch)."""
    try:
        out = P.Rounding.apply(input, op=name, **attrs)
    except MemoryError as e:
        raise _memory.from_memory_error(name, e, (input._data,)) from None
    if STATE.enabled and input.requires_grad:
        # keeps the graph, with a zero gradient: out's values everywhere (input * 0 would be NaN at +-inf)
        never = input.new_zeros((), dtype=_dtype.bool)
        return P.Where.apply(never, input, out)
    return out


def floor(input):
    return _rounding(input, "floor")


def ceil(input):
    return _rounding(input, "ceil")


def trunc(input):
    return _rounding(input, "trunc")


def sign(input):
    return _rounding(input, "sign")


def round(input, *, decimals=0):
    return _rounding(input, "round", decimals=decimals)


def frac(input):
    return input - trunc(input)


def clamp(input, min=None, max=None):
    """Limit values to [min, max]; either bound may be None, a number or a Tensor."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max)
    dt = _dtype.result_type(input, *[b for b in (min, max) if b is not None])
    if dt.np != input._data.dtype:
        input = cast_for("clamp", input, dt.np)
    for v in (min, max):
        if v is not None:
            check_scalar_fits("clamp", v, dt)
    if not dt.is_floating_point:   # bounds wrap around into the dtype like torch's (-1 is 255 for uint8)
        min, max = [None if v is None else _scalar_tensor(v, dt, input._device).item() for v in (min, max)]
    return P.Clamp.apply(input, lo=min, hi=max)


clip = clamp


def _clamp_tensor(input, lo, hi):
    """clamp with a Tensor bound: min(max(x, lo), hi). Unlike maximum/minimum, a tie is no split: the
    gradient goes to x where lo <= x <= hi, to lo where x < lo < hi, to hi where x > hi or hi < lo
    (torch's clamp_backward_min_max)."""
    xs = [t for t in (input, lo, hi) if t is not None]
    dt = _dtype.result_type(*xs)
    dev = next(t._device for t in xs if isinstance(t, Tensor))
    x, lo, hi = (None if t is None else _as_tensor(t, dt, dev, "clamp") for t in (input, lo, hi))
    out = x.detach()
    if lo is not None:
        out = _extreme(out, lo.detach(), True)
    if hi is not None:
        out = _extreme(out, hi.detach(), False)
    if not (STATE.enabled and builtins.any(t.requires_grad for t in (x, lo, hi) if t is not None)):
        return out
    # out's values, taken from the operand that gets the gradient (each mask picks values equal to out's;
    # adding d - d.detach() instead would turn an infinite x into inf - inf = NaN)
    xd = x.detach()
    to_x = None
    if lo is not None:
        ld = lo.detach()
        to_x = ge(xd, ld)
        to_lo = lt(xd, ld) if hi is None else logical_and(lt(xd, ld), lt(ld, hi.detach()))
        out = where(to_lo, lo, out)
    if hi is not None:
        hd = hi.detach()
        to_x = le(xd, hd) if to_x is None else logical_and(to_x, le(xd, hd))
        to_hi = gt(xd, hd) if lo is None else logical_or(gt(xd, hd), lt(hd, lo.detach()))
        out = where(to_hi, hi, out)
    return where(to_x, x, out)     # torch's values, torch's gradients


def _extreme(a, b, is_max):
    """max(a, b) / min(a, b) values of one dtype, NaN-propagating, without a graph."""
    if a.dtype.is_floating_point:
        return P.Maximum.apply(a, b) if is_max else -P.Maximum.apply(-a, -b)
    return P.Where.apply(P.Compare.apply(a, b, op="ge" if is_max else "le"), a, b)


def maximum(input, other):
    return _binary(P.Maximum, input, other, "maximum")


def minimum(input, other):
    a, b = binary_operands(input, other, "minimum")
    if not a.dtype.is_floating_point:   # no gradient to keep, and negation would wrap unsigned ints
        try:
            return _extreme(a, b, False)
        except ValueError:
            raise op_error("minimum", f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast "
                                      f"together") from None
    return -_binary(P.Maximum, -a, -b, "minimum")


def where(condition, input=None, other=None):
    """Elements of input where condition holds, else of other. `where(cond)` is nonzero(as_tuple)."""
    if input is None and other is None:
        from .shape import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: expected both input and other, or neither (nonzero)")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):   # two numbers: on the condition's device
        if not isinstance(condition, Tensor):
            from .creation import tensor
            condition = tensor(condition)
        input = _scalar_tensor(input, _dtype.result_type(input, other), condition._device)
    a, b = binary_operands(input, other, "where")
    for v in (input, other):
        if not isinstance(v, Tensor) and not a.dtype.is_floating_point:   # torch checks integer types only
            check_scalar_fits("where", v, a.dtype)
    if isinstance(condition, Tensor) and condition._device is not a._device:
        if condition.ndim == 0 and condition._device.type == "cpu":   # a CPU scalar joins any device
            from .shape import to_device
            condition = to_device(condition, a._device)
        check_same_device("where", a, condition, "condition")
    if not isinstance(condition, Tensor):
        from .creation import tensor
        condition = tensor(condition, device=a._device)
    cond = condition
    if cond.dtype.name != "bool":
        cond = cast_for("where", cond, np.dtype(np.bool_))
    try:
        return P.Where.apply(cond, a, b)
    except ValueError:
        raise op_error("where", f"shapes {tuple(condition.shape)}, {tuple(a.shape)} and "
                                f"{tuple(b.shape)} cannot be broadcast together") from None


def lerp(input, end, weight):
    return input + weight * (end - input)


def _promoted(*xs):
    """The tensors among xs in their common result dtype (torch computes addcmul/addcdiv in it: two uint8
    factors of a float64 input are multiplied as float64, not wrapped in uint8)."""
    dt = _dtype.result_type(*xs)
    return [x.to(dt) if isinstance(x, Tensor) and x.dtype is not dt else x for x in xs]


def addcmul(input, tensor1, tensor2, *, value=1):
    input, tensor1, tensor2 = _promoted(input, tensor1, tensor2)
    if input.dtype.category < 2 and isinstance(value, (float, np.floating)):
        value = int(value)   # torch casts the scalar to the integer dtype: value=2.5 multiplies by 2
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    if builtins.all(isinstance(t, Tensor) and not t.dtype.is_floating_point for t in (tensor1, tensor2)):
        raise op_error("addcdiv", "Integer division with addcdiv is no longer supported: use "
                                  "(input + value * tensor1 / tensor2) for a true division, or "
                                  "(input + value * trunc(tensor1 / tensor2)).to(input.dtype)")
    input, tensor1, tensor2 = _promoted(input, tensor1, tensor2)
    return input + value * tensor1 / tensor2


# ------------------------------------------------------------------ comparison and logic
def _compare(name, prim):
    def op(input, other):
        a, b = binary_operands(input, other, name)
        return _binary_nondiff(prim, a, b, name, op=name)
    op.__name__ = name
    return op


eq = _compare("eq", P.Compare)
ne = _compare("ne", P.Compare)
lt = _compare("lt", P.Compare)
le = _compare("le", P.Compare)
gt = _compare("gt", P.Compare)
ge = _compare("ge", P.Compare)
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
logical_and = _compare("logical_and", P.Logic)
logical_or = _compare("logical_or", P.Logic)
logical_xor = _compare("logical_xor", P.Logic)
bitwise_and = _compare("bitwise_and", P.Logic)
bitwise_or = _compare("bitwise_or", P.Logic)
bitwise_xor = _compare("bitwise_xor", P.Logic)


def logical_not(input):
    return P.Logic.apply(input, op="logical_not")


def bitwise_not(input):
    return P.Logic.apply(input, op="bitwise_not")


def isnan(input):
    return P.Predicate.apply(input, op="isnan")


def isinf(input):
    return P.Predicate.apply(input, op="isinf")


def isfinite(input):
    return P.Predicate.apply(input, op="isfinite")


def equal(input, other) -> bool:
    return input.shape == other.shape and bool(all(eq(input, other)).item())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(all(isclose(input, other, rtol, atol, equal_nan)).item())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = binary_operands(input, other, "isclose")
    return _binary_nondiff(P.Compare, a, b, "isclose", op="isclose", rtol=float(rtol), atol=float(atol),
                           equal_nan=bool(equal_nan))


# ------------------------------------------------------------------ reductions
def _axes(dim, ndim, op):
    """NumPy axes for a reduction over `dim` (None: all dims), checked by the one dim helper."""
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return None
    axes = wrap_dims(dim, ndim, op)
    return axes if ndim else None


def _check_identity_free(op, input, axis):
    """max/min/argmax have no value over nothing: torch's errors for an empty reduced dim."""
    if input._data.size:
        return
    if axis is None:
        raise op_error(op, "Expected reduction dim to be specified for input.numel() == 0 (the input has "
                           f"shape {tuple(input.shape)}); specify the reduction dim with the 'dim' argument")
    for a in axis:
        if input.shape[a] == 0:
            raise op_error(op, f"Expected reduction dim {a} to have non-zero size (input shape "
                               f"{tuple(input.shape)})", IndexError)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    axis = _axes(dim, input.ndim, "sum")
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.category < 2:   # integer and bool sums accumulate in int64, as torch
        input = cast_for("sum", input, np.dtype(np.int64))
    return _keep_dtype(P.Sum.apply(input, axis=axis, keepdims=keepdim), input)


def _keep_dtype(out, input):
    """out in input's dtype: NumPy sums and multiplies small integers in (u)int64, torch in the dtype asked
    for (`sum(x, dtype=int32)` is int32, wrapped around the same way)."""
    if out._data.dtype != input._data.dtype:
        out = P.Cast.apply(out, dtype=input._data.dtype)
    return out


def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise op_error("mean", f"could not infer output dtype: input dtype must be floating point, "
                               f"got {input.dtype.name}; use .float() first")
    axis = _axes(dim, input.ndim, "mean")
    n = input._data.size if axis is None else _math.prod(input.shape[a] for a in axis)
    return P.Sum.apply(input, axis=axis, keepdims=keepdim) / builtins.max(n, 1) if n else \
        P.Sum.apply(input, axis=axis, keepdims=keepdim) * float("nan")


@autocast_op("fp32")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.category < 2:
        input = input.long()
    return _keep_dtype(P.Prod.apply(input, axis=_axes(dim, input.ndim, "prod"), keepdims=keepdim), input)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, _op="var", _caller=None):
    """Variance; `correction` (default 1: Bessel's) or the older `unbiased` flag."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    axis = _axes(dim, input.ndim, _op)
    if not input.dtype.is_floating_point:
        raise op_error(_op, f"std and var only support floating point dtypes, got {describe(input)}")
    if input.dtype in (_dtype.float16, _dtype.bfloat16):
        # in float32, rounded once (as torch): in float16 the mean of three 3.3s is not 3.3, and the
        # variance of a constant came out 5.7e-06 instead of 0
        return var(input.float(), dim, unbiased, keepdim, correction=correction, _op=_op,
                   _caller=_caller).to(input.dtype)
    _memory.check(_op, input.shape, input.dtype)   # the temporary input - mean, before the slow mean
    n = input._data.size if axis is None else _math.prod(input.shape[a] for a in axis)
    if n - correction <= 0:
        warn(_caller or _op, "degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
                  "(input numel divided by output numel).")
    mu = P.Sum.apply(input, axis=axis, keepdims=True) / builtins.max(n, 1)
    d = input - mu
    return P.Sum.apply(d * d, axis=axis, keepdims=keepdim) / builtins.max(n - correction, 0)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, _caller=None):
    # torch's gradient is 0 where the std is 0 (constant values), not sqrt's 0 * inf = NaN
    if input.dtype in (_dtype.float16, _dtype.bfloat16):   # the root in float32 too: one rounding
        return std(input.float(), dim, unbiased, keepdim, correction=correction, _caller=_caller).to(input.dtype)
    return _zero_safe_root(var(input, dim, unbiased, keepdim, correction=correction, _op="std", _caller=_caller), 2)


# (`_caller` names the function in the degrees-of-freedom warning only, as torch: errors stay var's and std's)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction, _caller="var_mean"), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(input, dim, unbiased, keepdim, correction=correction, _caller="std_mean"), mean(input, dim, keepdim)


def amax(input, dim=(), keepdim=False):
    axis = _axes(dim, input.ndim, "amax")
    _check_identity_free("amax", input, axis)
    return P.Amax.apply(input, axis=axis, keepdims=keepdim, neg=False)


def amin(input, dim=(), keepdim=False):
    axis = _axes(dim, input.ndim, "amin")
    _check_identity_free("amin", input, axis)
    return P.Amax.apply(input, axis=axis, keepdims=keepdim, neg=True)


_ValuesIndices = collections.namedtuple("_ValuesIndices", ["values", "indices"])


def _max_min(input, dim, keepdim, is_max, other, name):
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        return maximum(input, other) if is_max else minimum(input, other)
    if dim is None:
        if input._data.size == 0:
            raise op_error(name, "operation does not have an identity: the input is empty")
        return P.Amax.apply(input, axis=None, keepdims=False, neg=not is_max, nan_ties=True)
    ax = _axes(dim, input.ndim, name)[0] if input.ndim else None
    _check_identity_free(name, input, None if ax is None else (ax,))
    if input.ndim == 0:
        return _ValuesIndices(input * 1, P.ArgReduce.apply(input, op="argmax", axis=None, keepdims=False))
    idx_k = P.ArgReduce.apply(input.detach(), op="argmax" if is_max else "argmin", axis=ax, keepdims=True)
    values = P.Gather.apply(input, idx_k, axis=ax)
    if not keepdim:
        values, idx_k = values.squeeze(ax), idx_k.squeeze(ax)
    return _ValuesIndices(values, idx_k)


def max(input, dim=None, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, True, other, "max")


def min(input, dim=None, keepdim=False, *, other=None):
    return _max_min(input, dim, keepdim, False, other, "min")


def _arg_extreme(input, dim, keepdim, op):
    if input.dtype.name == "bool":
        raise op_error(op, "does not support bool input; convert it with .int() first")
    ax = None if dim is None else wrap_dim(dim, input.ndim, op)
    _check_identity_free(op, input, None if ax is None or not input.ndim else (ax,))
    return P.ArgReduce.apply(input, op=op, axis=ax, keepdims=keepdim)


def argmax(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, "argmin")


def _all_any(input, dim, keepdim, op):
    """all/any: bool results, except uint8 inputs which give uint8 (as torch)."""
    return P.AnyAll.apply(input, op=op, axis=_axes(dim, input.ndim, op), keepdims=keepdim)


def all(input, dim=None, keepdim=False):
    return _all_any(input, dim, keepdim, "all")


def any(input, dim=None, keepdim=False):
    return _all_any(input, dim, keepdim, "any")


def count_nonzero(input, dim=None):
    _axes(dim, input.ndim, "count_nonzero")
    return sum(input != 0, dim)


def logsumexp(input, dim, keepdim=False):
    axis = _axes(dim, input.ndim, "logsumexp")
    _memory.check("logsumexp", input.shape, input.dtype)   # exp(input - max), before the slow max
    if not input.dtype.is_floating_point:
        input = P.Cast.apply(input, dtype=_dtype.get_default_dtype().np)
    if input._data.size == 0:   # no max to subtract; the sum of nothing is 0 and its log -inf
        out = log(P.Sum.apply(exp(input), axis=axis, keepdims=True))
        return out if keepdim else out.squeeze(axis if axis is not None else tuple(range(input.ndim)))
    m = P.Amax.apply(input.detach(), axis=axis, keepdims=True, neg=False)
    m = where(isinf(m), 0.0, m)
    out = log(P.Sum.apply(exp(input - m), axis=axis, keepdims=True)) + m
    return out if keepdim else out.squeeze(axis if axis is not None else tuple(range(input.ndim)))


def _softmax_like(prim, op, input, dim, dtype):
    """softmax/log_softmax along `dim` with the fused primitive; empty inputs give empty outputs."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise op_error(op, f"expected a floating point input, got {input.dtype.name}; pass dtype= or "
                           f"call .float() first")
    axis = wrap_dim(dim, input.ndim, op)
    if input._data.size == 0:
        return P.Clone.apply(input)
    if input.ndim == 0:
        return prim.apply(input.reshape(1), axis=0).reshape(())
    return prim.apply(input, axis=axis)


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`.

    >>> ember.softmax(ember.zeros(2, 2), dim=1)[0].tolist()
    [0.5, 0.5]
    """
    from .layers import Softmax
    return _softmax_like(Softmax, "softmax", input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    from .layers import LogSoftmax
    return _softmax_like(LogSoftmax, "log_softmax", input, dim, dtype)


def _scan(prim, name, input, dim, dtype):
    """cumsum/cumprod: integer inputs accumulate in int64 (as torch); a 0-d tensor is its own scan."""
    axis = wrap_dim(dim, input.ndim, name)
    _memory.check(name, input.shape, np.dtype(np.int64) if input.dtype.category < 2 else input.dtype)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.category < 2:
        input = input.long()
    if input.ndim == 0:   # NumPy would return shape (1,)
        return P.Clone.apply(input)
    return _keep_dtype(prim.apply(input, axis=axis), input)


def cumsum(input, dim, *, dtype=None):
    return _scan(P.Cumsum, "cumsum", input, dim, dtype)


def cumprod(input, dim, *, dtype=None):
    return _scan(P.Cumprod, "cumprod", input, dim, dtype)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over `dim` (all elements by default); 'fro' over at most two dims is the 2-norm.
    As torch.norm, any other string p ('nuc', or 'fro' over more dims) is linalg.matrix_norm's."""
    if isinstance(p, str) and not (p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2)):
        from ..linalg import matrix_norm
        return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim, keepdim, dtype=dtype)
    if dtype is not None:
        input = input.to(dtype)
    _axes(dim, input.ndim, "norm")
    if not input.dtype.is_floating_point:
        raise op_error("norm", f"expected a floating point input, got {describe(input)}")
    _memory.check("norm", input.shape, input.dtype)   # |input|^p is a temporary of input's size
    if p == "fro" or p == 2:
        return _zero_safe_root(sum(input * input, dim, keepdim), 2)
    if p in (float("inf"), float("-inf")):
        # nan_ties: a NaN norm's gradient is 0 (sign(NaN) = 0), as torch's, not amax's NaN
        axis = _axes(dim if dim is not None else (), input.ndim, "norm")
        _check_identity_free("norm", input, axis)
        return P.Amax.apply(abs(input), axis=axis, keepdims=keepdim, neg=p < 0, nan_ties=True)
    if p == 1:
        return sum(abs(input), dim, keepdim)
    if p == 0:
        return sum((input != 0).to(input.dtype), dim, keepdim)
    # |x|^p with torch's gradient 0 at x == 0 (pow's would be 0 * inf = NaN for p < 1)
    a = abs(input)
    zero = eq(a, 0)
    powered = where(zero, 0.0 if p > 0 else float("inf"), pow(where(zero, 1.0, a), p))
    return _zero_safe_root(sum(powered, dim, keepdim), p)


def _zero_safe_root(s, p):
    """s ** (1/p) with torch's gradient 0 where s == 0 (a zero vector's norm), not 0 * inf = NaN."""
    zero = eq(s, 0)
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, sqrt(safe) if p == 2 else pow(safe, 1.0 / p))


def dist(input, other, p=2):
    return norm(input - other, p)


# ------------------------------------------------------------------ linear algebra
def _check_matmul(op, a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected Tensors, got {type(a).__name__} and {type(b).__name__}")
    if a._device is not b._device:
        raise op_error(op, f"expected both operands on the same device, got {describe(a)} and {describe(b)}")
    if a._data.dtype != b._data.dtype:
        raise op_error(op, f"expected both operands to have the same dtype, got {describe(a)} and "
                           f"{describe(b)}; convert one with .to(dtype)")
    if a.ndim == 0 or b.ndim == 0:
        raise op_error(op, f"both arguments need at least 1 dimension, got shapes {tuple(a.shape)} "
                           f"and {tuple(b.shape)}")
    k1 = a.shape[-1]
    k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k1 != k2:
        raise op_error(op, f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                           f"({k1} != {k2})")


@autocast_op("lower")
def matmul(input, other):
    """Matrix product with NumPy/torch semantics: 1-D operands, broadcast batch dims."""
    _check_matmul("matmul", input, other)
    a, b = input, other
    if a.ndim == 1 and b.ndim == 1:
        return sum(a * b)
    squeeze = []
    if a.ndim == 1:
        a = a.unsqueeze(0)
        squeeze.append(-2)
    if b.ndim == 1:
        b = b.unsqueeze(-1)
        squeeze.append(-1)
    try:
        out = P.MatMul.apply(a, b)
    except ValueError:
        raise op_error("matmul", f"batch shapes of {tuple(input.shape)} and {tuple(other.shape)} "
                                 f"cannot be broadcast together") from None
    for d in squeeze[::-1] if len(squeeze) == 1 else ():
        out = out.squeeze(d)
    return out


@autocast_op("lower")
def mm(input, mat2):
    _check_matmul("mm", input, mat2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise op_error("mm", f"expected 2-D tensors, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    return P.MatMul.apply(input, mat2)


@autocast_op("lower")
def bmm(input, mat2):
    _check_matmul("bmm", input, mat2)
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise op_error("bmm", f"expected 3-D tensors with the same batch size, got shapes "
                              f"{tuple(input.shape)} and {tuple(mat2.shape)}")
    return P.MatMul.apply(input, mat2)


@autocast_op("keep")
def mv(input, vec):
    return matmul(input, vec)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise op_error("dot", f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape != other.shape:
        raise op_error("dot", f"inconsistent tensor size, expected tensor {tuple(input.shape)} and src "
                              f"{tuple(other.shape)} to have the same number of elements")
    return sum(input * other)


vdot = dot


def inner(input, other):
    """Sum of products over the last axis of both: shape `input.shape[:-1] + other.shape[:-1]`."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise op_error("inner", f"last dimensions differ: {tuple(input.shape)} and {tuple(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def outer(input, vec2):
    return input.unsqueeze(-1) * vec2.unsqueeze(0)


ger = outer


def einsum(equation, *operands):
    """Einstein summation, e.g. einsum('bij,bjk->bik', a, b); '...' stands for the dims no letter names
    (broadcast across operands as torch: einsum('...ij,jk->...ik', a, b))."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) > 1 and autocast_active():   # a product (torch's bmm): autocast's lower precision
        return _einsum_product(equation, *operands)
    eq = equation.replace(" ", "")
    if "..." in eq:
        eq, operands = _einsum_ellipsis(eq, operands)
    if "->" not in eq:
        letters = eq.replace(",", "")
        eq = eq + "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = eq.split("->")[0].split(",")
    if len(ins) != len(operands):
        raise op_error("einsum", f"equation {equation!r} names {len(ins)} operands, got {len(operands)}")
    for s, t in zip(ins, operands):
        if len(s) != t.ndim:
            raise op_error("einsum", f"subscripts {s!r} do not match operand of shape {tuple(t.shape)}")
    dt = _dtype.result_type(*operands)
    ops = [_as_tensor(t, dt, operands[0]._device, "einsum") for t in operands]
    if builtins.any(len(set(s)) < len(s) for s in ins):   # a letter twice in one operand: take that diagonal first
        ins, ops = zip(*[_einsum_diagonals(k, s, t) for k, (s, t) in enumerate(zip(ins, ops))])
        eq = ",".join(ins) + "->" + eq.split("->")[1]
    try:
        return P.Einsum.apply(*ops, eq=eq)
    except ValueError as e:
        raise op_error("einsum", f"{e}; operand shapes {[tuple(t.shape) for t in operands]}") from None


_einsum_product = autocast_op("lower")(einsum)


def _einsum_ellipsis(eq, operands):
    """`eq` with each '...' replaced by letters it does not use, one per broadcast dim (right-aligned
    across operands, as torch), and the operands whose size-1 dims under '...' broadcast expanded."""
    import string
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise op_error("einsum", f"equation {eq!r} names {len(ins)} operands, got {len(operands)}")
    counts = []
    for k, (s, t) in enumerate(zip(ins, operands)):
        if "." in s.replace("...", "", 1):
            raise op_error("einsum", f"found '.' for operand {k} for which an ellipsis was already found")
        named = len(s) - 3 if "..." in s else len(s)
        if named > t.ndim:
            raise op_error("einsum", f"the number of subscripts in the equation ({named}) is more than the "
                                     f"number of dimensions ({t.ndim}) for operand {k}")
        counts.append(t.ndim - named if "..." in s else 0)
    m = builtins.max(counts)
    letters = "".join([c for c in string.ascii_letters if c not in eq][:m])
    sizes = [1] * m       # the broadcast size of each ellipsis dim, from the right
    for k, (s, t, n) in enumerate(zip(ins, operands, counts)):
        p = s.find("...")
        for j in range(n):
            size, r = t.shape[p + j], m - n + j
            if size != 1 and sizes[r] != 1 and size != sizes[r]:
                raise op_error("einsum", f"dimension {j} covered by ellipsis in operand {k} has size {size} which "
                                         f"does not broadcast with previously seen ellipsis with size {sizes[r]} "
                                         "for the respective dimension")
            if size != 1:
                sizes[r] = size
    new_ins, new_ops = [], []
    for s, t, n in zip(ins, operands, counts):
        if "..." in s:
            p = s.index("...")
            if t.shape[p:p + n] != tuple(sizes[m - n:]):
                t = t.expand(*t.shape[:p], *sizes[m - n:], *t.shape[p + n:])
            s = s.replace("...", letters[m - n:])
        new_ins.append(s)
        new_ops.append(t)
    if arrow:
        if "." in rhs.replace("...", "", 1):
            raise op_error("einsum", "found '.' for output but an ellipsis (...) was already found")
        out = rhs.replace("...", letters)
    else:   # implicit output: the ellipsis dims, then the letters named once, in alphabetical order
        named = lhs.replace("...", "").replace(",", "")
        out = letters + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    return ",".join(new_ins) + "->" + out, tuple(new_ops)


def _einsum_diagonals(k, s, t):
    """Operand `t` with subscripts `s` rewritten without repeated letters: 'ii' is t's diagonal, 'i'
    (torch's rule); Einsum's backward handles distinct letters only."""
    from .shape import diagonal
    while len(set(s)) < len(s):
        c = next(ch for ch in s if s.count(ch) > 1)
        p = s.index(c)
        q = s.index(c, p + 1)
        if t.shape[p] != t.shape[q]:
            raise op_error("einsum", f"subscript {c!r} is repeated for operand {k} but the sizes don't match, "
                                     f"{t.shape[p]} != {t.shape[q]}")
        t = diagonal(t, 0, p, q)        # the diagonal becomes the last dim
        s = s[:p] + s[p + 1:q] + s[q + 1:] + c
    return s, t


def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    if len(da) != len(db):
        raise op_error("tensordot", f"both dimension lists should have same length, got {len(da)} and {len(db)}")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise op_error("tensordot", f"contracted dimensions need to match, but first has size {a.shape[i]} "
                                        f"in dim {i - a.ndim if isinstance(dims, int) else i} and second has size {b.shape[j]} in dim {j} "
                                        f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
    letters = "abcdefghijklmnopqrstuvwxyz"
    sa = list(letters[:a.ndim])
    sb = list(letters[a.ndim:a.ndim + b.ndim])
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in da] + [c for j, c in enumerate(sb) if j not in db]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


# torch takes `axis=` for `dim=` and `keepdims=` for `keepdim=` wherever a function has a `dim`
add_numpy_names(globals(), __all__)
