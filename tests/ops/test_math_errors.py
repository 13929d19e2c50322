"""ember/ops/math.py's errors, whole: the type, every word of the message and the user's line.

The tests in test_math.py match a message's start; these pin all of it (`raises_exactly`), so that a
changed op name, operand description or hint is noticed. Out-of-memory paths are reached by lowering
Ember's memory limit (or by a primitive that raises MemoryError) on small arrays.
"""
import numpy as np
import pytest
import torch

import ember
from ember import _memory
from ember.ops import primitives as P
from helpers import raises_exactly

BC = "{}: shapes (2,) and (3,) cannot be broadcast together"


def _unlocated(call, exc, message):
    """An error raised before any op runs (no user line): exactly this type and text."""
    with pytest.raises(Exception) as e:
        call()
    assert type(e.value) is exc and str(e.value) == message, f"{type(e.value).__name__}: {e.value}"


def test_broadcast_errors_name_the_op():
    i2, i3 = ember.tensor([1, 2]), ember.tensor([1, 2, 3])
    f2, f3 = ember.ones(2), ember.ones(3)
    cases = {
        "add": [lambda: ember.add(f2, f3), lambda: ember.add(f2, f3, alpha=2), lambda: ember.add(i2, i3, alpha=-1)],
        "sub": [lambda: ember.sub(f2, f3), lambda: ember.sub(f2, f3, alpha=2), lambda: f2 - f3],
        "mul": [lambda: ember.mul(f2, f3), lambda: i2 * i3],
        "div": [lambda: ember.div(f2, f3), lambda: ember.div(i2, i3), lambda: ember.true_divide(i2, f3),
                lambda: ember.div(f2, f3, rounding_mode="trunc"), lambda: ember.div(i2, i3, rounding_mode="trunc")],
        "floor_divide": [lambda: ember.floor_divide(i2, i3), lambda: ember.div(f2, f3, rounding_mode="floor")],
        "remainder": [lambda: ember.remainder(f2, f3), lambda: ember.remainder(i2, i3)],
        "fmod": [lambda: ember.fmod(f2, f3), lambda: ember.fmod(i2, i3)],
        "pow": [lambda: ember.pow(f2, f3)],
        "maximum": [lambda: ember.maximum(i2, i3)],
        "minimum": [lambda: ember.minimum(f2, f3), lambda: ember.minimum(i2, i3)],
        "isclose": [lambda: ember.isclose(f2, f3)],
    }
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                 "bitwise_and", "bitwise_or", "bitwise_xor"):
        cases[name] = [lambda name=name: getattr(ember, name)(i2, i3)]
    for name, calls in cases.items():
        for call in calls:
            raises_exactly(call, RuntimeError, BC.format(name))


def test_argument_errors_exactly():
    i2, f2 = ember.tensor([1, 2]), ember.ones(2)
    mask = i2 > 0
    sub_bool = ("sub: subtraction, the `-` operator, with a bool tensor is not supported; to invert a mask use "
                "the `~` or `logical_not()` operator instead")
    for call in (lambda: ember.sub(mask, mask), lambda: ember.sub(f2, mask), lambda: ember.sub(f2, True),
                 lambda: ember.sub(False, f2), lambda: mask - 1, lambda: i2.clone().sub_(mask),
                 lambda: i2.clone().sub_(True), lambda: mask.clone().sub_(1)):   # sub_: the no-graph path too
        raises_exactly(call, RuntimeError, sub_bool)
    for call in (lambda: -mask, lambda: mask.neg(), lambda: ember.neg(mask)):
        raises_exactly(call, RuntimeError, "neg: negation, the `-` operator, on a bool tensor is not supported; "
                                           "to invert a mask use the `~` or `logical_not()` operator instead")
        with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
            -torch.tensor([True])
    raises_exactly(lambda: ember.add(i2, f2 > 0, alpha=0.5), RuntimeError,
                   "add: for integral input tensors, argument alpha must not be a floating point number, got "
                   "alpha=0.5 for (2,) int64 cpu and (2,) int64 cpu")
    raises_exactly(lambda: ember.sub(i2, 1, alpha=ember.tensor(2.5)), RuntimeError,
                   "sub: for integral input tensors, argument alpha must not be a floating point number, got "
                   "alpha=2.5 for (2,) int64 cpu and () int64 cpu")
    raises_exactly(lambda: ember.add(f2, f2, alpha=True), RuntimeError,
                   "add: boolean alpha only supported for boolean results, got (2,) float32 cpu")
    raises_exactly(lambda: ember.relu(mask), RuntimeError, "relu: boolean inputs are not supported")
    for op in ("argmax", "argmin"):
        raises_exactly(lambda: getattr(ember, op)(mask, 0), RuntimeError,
                       f"{op}: does not support bool input; convert it with .int() first")
    for mode in ("Floor", "", "true"):
        _unlocated(lambda: ember.div(i2, i2, rounding_mode=mode), ValueError,
                   f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")
    _unlocated(lambda: ember.clamp(f2), ValueError, "clamp: at least one of 'min' or 'max' must not be None")
    _unlocated(lambda: ember.clamp(f2, None, None), ValueError,
               "clamp: at least one of 'min' or 'max' must not be None")
    u8 = ember.tensor([1, 2], dtype=ember.uint8)
    raises_exactly(lambda: ember.clamp(u8, 0, 300), RuntimeError,
                   "clamp: value 300 cannot be converted to type uint8 without overflow")
    raises_exactly(lambda: ember.clamp(u8, 256), RuntimeError,
                   "clamp: value 256 cannot be converted to type uint8 without overflow")
    raises_exactly(lambda: ember.where(mask, u8, 300), RuntimeError,
                   "where: value 300 cannot be converted to type uint8 without overflow")
    raises_exactly(lambda: ember.where(mask, -300, ember.tensor([1, 2], dtype=ember.int8)), RuntimeError,
                   "where: value -300 cannot be converted to type int8 without overflow")


def test_division_by_an_integer_zero_exactly():
    i2, z = ember.tensor([1, 2]), ember.tensor([1, 0], dtype=ember.int32)
    for name, call in {"div": lambda: ember.div(i2, z, rounding_mode="trunc"),
                       "floor_divide": lambda: ember.div(i2, z, rounding_mode="floor"),
                       "remainder": lambda: ember.remainder(i2, z), "fmod": lambda: ember.fmod(i2, z)}.items():
        raises_exactly(call, RuntimeError,
                       f"{name}: ZeroDivisionError: integer division by zero (divisor (2,) int64 cpu)")
    raises_exactly(lambda: ember.floor_divide(z, 0), RuntimeError,
                   "floor_divide: ZeroDivisionError: integer division by zero (divisor () int32 cpu)")
    raises_exactly(lambda: ember.remainder(7, ember.tensor(False)), RuntimeError,
                   "remainder: ZeroDivisionError: integer division by zero (divisor () int64 cpu)")


def test_an_empty_dividend_divides_by_zero_quietly_as_torch():
    e = ember.ones(0, 3, dtype=ember.int64)
    for out in (ember.div(e, 0, rounding_mode="floor"), ember.div(e, 0, rounding_mode="trunc"),
                ember.remainder(e, ember.zeros(3, dtype=ember.int64)), ember.fmod(e, 0)):
        assert out.shape == (0, 3) and out.dtype == ember.int64


def test_roll_shifts_and_dims_must_align_as_in_torch():
    x = ember.arange(6.0).reshape(2, 3)
    # NumPy pairs them up by broadcasting: (shifts [1, 2], dims [0]) rolled dim 0 by 3, silently
    for shifts, dims, n in (([1, 2], [0], (2, 1)), ([1, 2], None, (2, 0)), (1, [0, 1], (1, 2))):
        raises_exactly(lambda: ember.roll(x, shifts, dims), RuntimeError,
                       f"roll: shifts and dimensions must align. shifts: {n[0]}, dims: {n[1]}")
    raises_exactly(lambda: x.roll((), ()), RuntimeError, "roll: `shifts` required")
    assert ember.roll(ember.ones(0, 2), 1, 5).shape == (0, 2)        # empty: torch checks no dim


def test_reduction_errors_exactly():
    e = ember.ones(0, 3)
    i2 = ember.tensor([1, 2])
    for op in ("amax", "amin", "argmax", "argmin"):
        raises_exactly(lambda: getattr(ember, op)(e), RuntimeError,
                       f"{op}: Expected reduction dim to be specified for input.numel() == 0 (the input has shape "
                       f"(0, 3)); specify the reduction dim with the 'dim' argument")
        raises_exactly(lambda: getattr(ember, op)(e, 0), IndexError,
                       f"{op}: Expected reduction dim 0 to have non-zero size (input shape (0, 3))")
        raises_exactly(lambda: getattr(ember, op)(ember.ones(3, 0, 2), -2), IndexError,
                       f"{op}: Expected reduction dim 1 to have non-zero size (input shape (3, 0, 2))")
    for op in ("max", "min"):
        raises_exactly(lambda: getattr(ember, op)(e), RuntimeError,
                       f"{op}: operation does not have an identity: the input is empty")
        raises_exactly(lambda: getattr(ember, op)(ember.ones(3, 0), 1), IndexError,
                       f"{op}: Expected reduction dim 1 to have non-zero size (input shape (3, 0))")
    raises_exactly(lambda: ember.amax(ember.ones(2, 0), (0, 1)), IndexError,
                   "amax: Expected reduction dim 1 to have non-zero size (input shape (2, 0))")
    raises_exactly(lambda: ember.mean(i2), RuntimeError,
                   "mean: could not infer output dtype: input dtype must be floating point, got int64; use "
                   ".float() first")
    raises_exactly(lambda: ember.mean(ember.ones(2), dtype=ember.int32), RuntimeError,
                   "mean: could not infer output dtype: input dtype must be floating point, got int32; use "
                   ".float() first")
    for op, call in {"var": lambda: ember.var(i2), "std": lambda: ember.std(i2, 0),
                     "var ": lambda: ember.var_mean(i2 > 0), "std ": lambda: ember.std_mean(i2)}.items():
        got = "(2,) bool cpu" if op == "var " else "(2,) int64 cpu"
        raises_exactly(call, RuntimeError,
                       f"{op.strip()}: std and var only support floating point dtypes, got {got}")
    for op in ("softmax", "log_softmax"):
        raises_exactly(lambda: getattr(ember, op)(i2, 0), RuntimeError,
                       f"{op}: expected a floating point input, got int64; pass dtype= or call .float() first")
        raises_exactly(lambda: getattr(ember, op)(ember.ones(2), 0, dtype=ember.int16), RuntimeError,
                       f"{op}: expected a floating point input, got int16; pass dtype= or call .float() first")
    raises_exactly(lambda: ember.norm(i2, 1, dim=0), RuntimeError,
                   "norm: expected a floating point input, got (2,) int64 cpu")
    raises_exactly(lambda: ember.norm(ember.ones(2), dtype=ember.int32), RuntimeError,
                   "norm: expected a floating point input, got (2,) int32 cpu")


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "var", "std", "amax", "amin", "max", "min", "argmax",
                                "argmin", "all", "any", "count_nonzero", "logsumexp", "softmax", "log_softmax",
                                "cumsum", "cumprod", "norm", "var_mean", "std_mean"])
def test_a_bad_dim_names_the_op(op):
    x = ember.ones(2, 3)
    call = (lambda: ember.norm(x, dim=5)) if op == "norm" else (lambda: getattr(ember, op)(x, 5))
    name = op.split("_")[0] if op.endswith("_mean") else op
    raises_exactly(call, IndexError, f"{name}: Dimension out of range (expected to be in range of [-2, 1], but "
                                     f"got 5); the tensor has 2 dims")


def test_linear_algebra_errors_exactly(fake_cuda):
    a, b = ember.ones(2, 3), ember.ones(4, 2)
    _unlocated(lambda: ember.matmul([1.0], a), TypeError, "matmul: expected Tensors, got list and Tensor")
    _unlocated(lambda: ember.mm(a, 1.0), TypeError, "mm: expected Tensors, got Tensor and float")
    _unlocated(lambda: ember.bmm(2, a), TypeError, "bmm: expected Tensors, got int and Tensor")
    raises_exactly(lambda: ember.mm(a, ember.ones(3, 2, device="cuda")), RuntimeError,
                   "mm: expected both operands on the same device, got (2, 3) float32 cpu and (3, 2) float32 cuda:0")
    raises_exactly(lambda: ember.matmul(a, ember.ones(3, dtype=ember.float64)), RuntimeError,
                   "matmul: expected both operands to have the same dtype, got (2, 3) float32 cpu and (3,) float64 "
                   "cpu; convert one with .to(dtype)")
    raises_exactly(lambda: ember.bmm(a, ember.tensor(2.0)), RuntimeError,
                   "bmm: both arguments need at least 1 dimension, got shapes (2, 3) and ()")
    raises_exactly(lambda: ember.mm(a, b), RuntimeError, "mm: shapes (2, 3) and (4, 2) cannot be multiplied (3 != 4)")
    raises_exactly(lambda: ember.matmul(ember.ones(4), b.T), RuntimeError,
                   "matmul: shapes (4,) and (2, 4) cannot be multiplied (4 != 2)")
    raises_exactly(lambda: ember.matmul(ember.ones(2), ember.ones(3)), RuntimeError,
                   "matmul: shapes (2,) and (3,) cannot be multiplied (2 != 3)")
    raises_exactly(lambda: ember.matmul(ember.ones(2, 2, 3), ember.ones(3, 3, 2)), RuntimeError,
                   "matmul: batch shapes of (2, 2, 3) and (3, 3, 2) cannot be broadcast together")
    raises_exactly(lambda: ember.mm(ember.ones(3), ember.ones(3, 2)), RuntimeError,
                   "mm: expected 2-D tensors, got shapes (3,) and (3, 2)")
    raises_exactly(lambda: ember.mm(a, ember.ones(1, 3, 2)), RuntimeError,
                   "mm: expected 2-D tensors, got shapes (2, 3) and (1, 3, 2)")
    for x, y in (((2, 3), (3, 2)), ((1, 2, 3), (3, 3)), ((3, 3), (1, 3, 2)), ((3, 3), (3, 3, 2)), ((3, 2, 3), (3, 3)),
                 ((2, 2, 3), (3, 3, 2))):
        raises_exactly(lambda: ember.bmm(ember.ones(*x), ember.ones(*y)), RuntimeError,
                       f"bmm: expected 3-D tensors with the same batch size, got shapes {x} and {y}")
    raises_exactly(lambda: ember.dot(ember.ones(3), a), RuntimeError,
                   "dot: 1D tensors expected, but got 1D and 2D tensors")
    raises_exactly(lambda: ember.vdot(ember.ones(2), ember.ones(3)), RuntimeError,
                   "dot: inconsistent tensor size, expected tensor (2,) and src (3,) to have the same number of "
                   "elements")
    raises_exactly(lambda: ember.inner(a, ember.ones(2, 2)), RuntimeError,
                   "inner: last dimensions differ: (2, 3) and (2, 2)")
    raises_exactly(lambda: ember.inner(ember.ones(2), a), RuntimeError,
                   "inner: last dimensions differ: (2,) and (2, 3)")


def test_einsum_errors_exactly(fake_cuda):
    f2, f3 = ember.ones(2), ember.ones(3)
    raises_exactly(lambda: ember.einsum("....i", f2), RuntimeError,
                   "einsum: found '.' for operand 0 for which an ellipsis was already found")
    raises_exactly(lambda: ember.einsum("i,i->", f2), RuntimeError, "einsum: equation 'i,i->' names 2 operands, got 1")
    raises_exactly(lambda: ember.einsum("i, j", [f2, f2, f2]), RuntimeError,
                   "einsum: equation 'i, j' names 2 operands, got 3")
    raises_exactly(lambda: ember.einsum("ij->", f2), RuntimeError,
                   "einsum: subscripts 'ij' do not match operand of shape (2,)")
    raises_exactly(lambda: ember.einsum("i,jk", f2, f2), RuntimeError,
                   "einsum: subscripts 'jk' do not match operand of shape (2,)")
    raises_exactly(lambda: ember.einsum("i,i->", f2, f3), RuntimeError,
                   "einsum: operands could not be broadcast together with remapped shapes [original->remapped]: "
                   "(2,)->(2,) (3,)->(3,) ; operand shapes [(2,), (3,)]")
    raises_exactly(lambda: ember.tensordot(f2, f3, 1), RuntimeError,
                   "tensordot: contracted dimensions need to match, but first has size 2 in dim -1 and second has "
                   "size 3 in dim 0 (shapes (2,) and (3,))")
    raises_exactly(lambda: ember.einsum("i,i->", f2, ember.ones(2, device="cuda")), RuntimeError,
                   "einsum: expected all tensors to be on the same device, but found at least two devices, cpu and "
                   "cuda:0")


def test_device_errors_exactly(fake_cuda):
    c, f = ember.ones(2, device="cuda"), ember.ones(2)
    two = "expected all tensors to be on the same device, but found at least two devices"
    for name, call, devs in (("add", lambda: c + f, "cuda:0 and cpu"), ("mul", lambda: f * c, "cpu and cuda:0"),
                             ("lt", lambda: ember.lt(f, c), "cpu and cuda:0"),
                             ("isclose", lambda: ember.isclose(c, f), "cuda:0 and cpu"),
                             ("clamp", lambda: ember.clamp(c, f), "cuda:0 and cpu"),
                             ("clamp", lambda: ember.clamp(f, None, c), "cpu and cuda:0"),
                             ("sub", lambda: ember.sub(c, f, alpha=2), "cuda:0 and cpu"),
                             ("minimum", lambda: ember.minimum(f.long(), c.long()), "cpu and cuda:0")):
        raises_exactly(call, RuntimeError, f"{name}: {two}, {devs}")
    raises_exactly(lambda: ember.where(f > 0, c, 0.0), RuntimeError,
                   f"where: {two}, cuda:0 and cpu (input (2,) float32 cuda:0, condition (2,) bool cpu)")
    raises_exactly(lambda: ember.where(c > 0, f, f), RuntimeError,
                   f"where: {two}, cpu and cuda:0 (input (2,) float32 cpu, condition (2,) bool cuda:0)")
    # a 0-d CPU tensor joins the other operands' device, also as a condition or a clamp bound
    assert ember.where(ember.tensor(False), c, 3.0).device.type == "cuda"
    out = ember.clamp(c, ember.tensor(1.5))
    assert out.device.type == "cuda" and out.tolist() == [1.5, 1.5]
    out = ember.tensor(3.0) - c
    assert out.device.type == "cuda" and out.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------ out of memory
def _oom(op, nbytes, human, dtype, shape, limit=20):
    return (f"{op}: not enough memory: you tried to allocate {nbytes} bytes ({human}) for a {dtype} tensor of "
            f"shape {shape}; the limit is {limit} bytes ({limit} bytes, set EMBER_MEMORY_LIMIT to change it)")


def test_temporaries_over_the_memory_limit_name_the_op(monkeypatch):
    x = ember.ones(2, 3)
    xi = ember.tensor([[1, 2, 3]], dtype=ember.int32)
    monkeypatch.setattr(_memory, "_LIMIT", 20)
    f32 = ("24 bytes", "float32", "(2, 3)")
    for op, call in (("var", lambda: ember.var(x)), ("var", lambda: ember.var_mean(x, 1)),
                     ("std", lambda: ember.std(x, 0)), ("std", lambda: ember.std_mean(x)),
                     ("logsumexp", lambda: ember.logsumexp(x, 1)), ("cumsum", lambda: ember.cumsum(x, 0)),
                     ("cumprod", lambda: ember.cumprod(x, 1)), ("norm", lambda: ember.norm(x)),
                     ("norm", lambda: ember.norm(x, 3, dim=1))):
        raises_exactly(call, _memory.OutOfMemoryError, _oom(op, 24, *f32))
    # integer scans accumulate in int64: the check counts 8 bytes an element
    for op, call in (("cumsum", lambda: ember.cumsum(xi, 1)), ("cumprod", lambda: ember.cumprod(xi > 1, 0)),
                     ("cumsum", lambda: ember.cumsum(xi, 0, dtype=ember.float64))):
        raises_exactly(call, _memory.OutOfMemoryError, _oom(op, 24, "24 bytes", "int64", "(1, 3)"))
    monkeypatch.setattr(_memory, "_LIMIT", 12)
    assert ember.logsumexp(xi, 1).tolist() == pytest.approx([3.4076059644443806])   # 12 bytes: fits
    assert ember.cumsum(xi.float(), 1).tolist() == [[1.0, 3.0, 6.0]]


def test_a_cast_of_a_large_operand_checks_the_memory_limit(monkeypatch):
    n = 1 << 20
    ints, more = ember.ones(n, dtype=ember.int32), ember.ones(n + 1, dtype=ember.int32)
    monkeypatch.setattr(_memory, "_LIMIT", 20)
    assert (ints + 0.5).shape == (n,)   # up to 2**20 elements the cast is not checked
    f32 = _oom("{}", 4 * (n + 1), "4.00 MiB", "float32", f"({n + 1},)")
    raises_exactly(lambda: more + 0.5, _memory.OutOfMemoryError, f32.format("add"))
    raises_exactly(lambda: 0.5 * more, _memory.OutOfMemoryError, f32.format("mul"))
    raises_exactly(lambda: ember.maximum(more, ember.tensor(0.5)), _memory.OutOfMemoryError, f32.format("maximum"))
    raises_exactly(lambda: ember.mul(more, ember.ones(1, dtype=ember.int64)), _memory.OutOfMemoryError,
                   _oom("mul", 8 * (n + 1), "8.00 MiB", "int64", f"({n + 1},)"))


def test_memory_errors_of_primitives_name_the_op(monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError("no room")
    x, i = ember.tensor([1.5, -2.5]), ember.tensor([[3, 4]])
    for prim in (P.Rounding, P.DivMod, P.Compare):
        monkeypatch.setattr(prim, "apply", no_memory)
    for op, call in (("floor", lambda: ember.floor(x)), ("round", lambda: ember.round(x, decimals=1)),
                     ("sign", lambda: x.sign())):
        raises_exactly(call, _memory.OutOfMemoryError, f"{op}: not enough memory (no room); inputs (2,) float32")
    for op, call in (("floor_divide", lambda: ember.floor_divide(i, x.long())),
                     ("div", lambda: ember.div(i, x.long(), rounding_mode="trunc")),
                     ("fmod", lambda: ember.fmod(i, x.long())), ("lt", lambda: ember.lt(i, x.long())),
                     ("isclose", lambda: ember.isclose(i, x.long()))):
        raises_exactly(call, _memory.OutOfMemoryError,
                       f"{op}: not enough memory (no room); inputs (1, 2) int64, (2,) int64")


def test_scalars_that_do_not_fit_a_float_dtype():
    h = ember.ones(2, dtype=ember.float16)
    raises_exactly(lambda: ember.clamp(h, 70000), RuntimeError,
                   "clamp: value 70000 cannot be converted to type float16 without overflow")
    raises_exactly(lambda: ember.clamp(h, None, -1e5), RuntimeError,
                   "clamp: value -100000.0 cannot be converted to type float16 without overflow")
    raises_exactly(lambda: ember.clamp(ember.ones(2, dtype=ember.int8), -200, 0), RuntimeError,
                   "clamp: value -200 cannot be converted to type int8 without overflow")


def test_where_with_one_operand_is_refused(fake_cuda):
    c = ember.tensor([True, False])
    for call in (lambda: ember.where(c, ember.ones(2)), lambda: ember.where(c, None, 1.0)):
        _unlocated(call, TypeError, "where: expected both input and other, or neither (nonzero)")
    assert [t.tolist() for t in ember.where(c)] == [[0]]
    raises_exactly(lambda: ember.where(c, ember.ones(2, device="cuda"), ember.ones(2)), RuntimeError,
                   "where: expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
                   "cpu")


def test_division_ops_name_themselves_in_device_errors(fake_cuda):
    c, f = ember.tensor([4, 6], device="cuda"), ember.tensor([2, 3])
    two = "expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu"
    for name, call in (("div", lambda: ember.div(c, f)), ("div", lambda: ember.div(c.float(), f)),
                       ("div", lambda: ember.div(c, f, rounding_mode="trunc")),
                       ("floor_divide", lambda: ember.floor_divide(c, f)),
                       ("floor_divide", lambda: ember.div(c, f, rounding_mode="floor")),
                       ("remainder", lambda: ember.remainder(c, f)), ("fmod", lambda: ember.fmod(c.float(), f))):
        raises_exactly(call, RuntimeError, f"{name}: {two}")
    # a list condition goes to the operands' device
    out = ember.where([True, False], c, c * 0)
    assert out.device.type == "cuda" and out.tolist() == [4, 0]


def test_addcmul_computes_in_the_promoted_dtype_and_addcdiv_refuses_integer_division():
    x, t = ember.zeros(3, dtype=ember.float64), ember.tensor([254, 3, 2], dtype=ember.uint8)
    assert ember.addcmul(x, t, t).tolist() == [64516.0, 9.0, 4.0]     # was 254 * 254 wrapped in uint8: 4
    assert x.clone().addcmul_(t, t, value=2).tolist() == [129032.0, 18.0, 8.0]
    raises_exactly(lambda: ember.addcdiv(x, t, t), RuntimeError,
                   "addcdiv: Integer division with addcdiv is no longer supported: use (input + value * tensor1 / "
                   "tensor2) for a true division, or (input + value * trunc(tensor1 / tensor2)).to(input.dtype)")


def test_bfloat16_order_comparisons_at_nan_are_silent_as_torch():
    # ml_dtypes' bfloat16 `<` warns "invalid value encountered" at NaN; torch (and float32) do not
    x = ember.tensor([float("nan"), 1.0, 2.0], dtype=ember.bfloat16)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [(x < 1).tolist(), (x >= 1).tolist(), (1 > x).tolist(), ember.where(x > 0, x, 0.0).tolist()]
    assert got == [[False, False, False], [False, True, True], [False, False, False], [0.0, 1.0, 2.0]]
