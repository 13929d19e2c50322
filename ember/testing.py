"""`ember.testing`: torch.testing's `assert_close` (and `make_tensor`), so that tests written for torch
port with their import.

    ember.testing.assert_close(model(x), expected)        # dtype-aware default tolerances
    ember.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)

`assert_close(actual, expected)` walks both inputs together (tensors, NumPy arrays, Python numbers, and
sequences and mappings of those) and raises AssertionError with torch's messages: what differs
(shape, dtype, device, the keys of a mapping, a sequence's length) or how the values differ (how many
elements, the greatest absolute and relative differences and where), ending with the failing item's
path. Values match when |actual - expected| <= atol + rtol * |expected| (torch.isclose: infinities
must be equal, NaN only with `equal_nan`). The default tolerances depend on the dtype, as torch's:

    float16 (1e-3, 1e-5)   bfloat16 (1.6e-2, 1e-5)   float32 (1.3e-6, 1e-5)   float64 (1e-7, 1e-7)
    integers and bool: equality; Python floats as float64
"""
from __future__ import annotations

import collections.abc
import math

import numpy as np

from . import _dtype
from ._tensor import Tensor
from .backends import array_module, host

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# (rtol, atol) per float dtype; anything else is compared for equality
_PRECISION = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
              "float64": (1e-7, 1e-7)}


class _Mismatch(Exception):
    """A failed comparison: the exception type and message for the user, before the item's path."""

    def __init__(self, exc_type, message):
        super().__init__(message)
        self.exc_type, self.message = exc_type, message
        self.path = None   # the item it was found at, set by the innermost `_item`


def _attr_error(name, a, e):
    return _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.")


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISION.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_line(kind, diff, idx, tol, equality):
    text = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    return text if equality else f"{text} (up to {tol} allowed)"


def _message(what, extra, abs_diff, abs_idx, rel_diff, rel_idx, rtol, atol):
    equality = rtol == 0 and atol == 0
    return "\n".join([f"{what} are not {'equal' if equality else 'close'}!", "", extra,
                      _diff_line("absolute", abs_diff, abs_idx, atol, equality),
                      _diff_line("relative", rel_diff, rel_idx, rtol, equality)])


def _close(a, e, rtol, atol, equal_nan):
    """torch.isclose on host arrays: equal (infinities included), or finite and within tolerance."""
    xp = array_module(a)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = a == e
        if rtol or atol:
            finite = xp.isfinite(a) & xp.isfinite(e)
            ok |= finite & (xp.abs(a - e) <= atol + rtol * xp.abs(e))
        if equal_nan:
            ok |= xp.isnan(a) & xp.isnan(e)
    return ok


def _host(t):
    """A tensor's values as a NumPy array in a dtype NumPy computes in (bfloat16 as float32)."""
    arr = t.detach().cpu().numpy() if isinstance(t, Tensor) else host.asarray(t)
    return arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr


def _compare_arrays(a, e, dtype_name, rtol, atol, equal_nan):
    ok = _close(a, e, rtol, atol, equal_nan)
    if ok.all():
        return
    if a.ndim == 0:
        _compare_scalars(a.item(), e.item(), rtol, atol, equal_nan)
        return
    n, bad = ok.size, int(ok.size - ok.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    if a.dtype.kind in "biu":   # integers compared in int64, as torch, so a difference cannot wrap
        a, e = a.astype(np.int64), e.astype(np.int64)
    xp = array_module(a)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = xp.abs(a - e).ravel()
        abs_diff[ok.ravel()] = 0
        # torch divides in the tensor's dtype, and integers in the default float dtype
        wide = abs_diff.astype(np.float32) if a.dtype.kind in "biu" else abs_diff
        rel_diff = wide / xp.abs(e.ravel()).astype(wide.dtype)
        rel_diff[ok.ravel()] = 0
    if dtype_name == "bfloat16":   # torch subtracts and divides in bfloat16
        abs_diff, rel_diff = _round_bfloat16(abs_diff), _round_bfloat16(rel_diff)
    ai, ri = _argmax_nan(abs_diff), _argmax_nan(rel_diff)
    raise _Mismatch(AssertionError, _message(
        "Tensor-likes", extra, abs_diff[ai].item(), _index(ai, a.shape), rel_diff[ri].item(),
        _index(ri, a.shape), rtol, atol))


def _index(flat, shape):
    """The index tuple of element `flat` of a C-ordered array of `shape`."""
    idx = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        idx.append(i)
    return tuple(idx[::-1])


def _round_bfloat16(v):
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    xp = array_module(v)
    bits = v.astype(np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    return xp.where(xp.isnan(v), v, rounded.view(np.float32))


def _argmax_nan(v):
    """torch.max's index: a NaN is the greatest value (its first place), else the first maximum."""
    xp = array_module(v)
    nan = xp.flatnonzero(xp.isnan(v)) if v.dtype.kind == "f" else ()
    return int(nan[0]) if len(nan) else int(xp.argmax(v))


def _compare_scalars(a, e, rtol, atol, equal_nan):
    ok = a == e or (bool(rtol or atol) and math.isfinite(a) and math.isfinite(e)
                    and abs(a - e) <= atol + rtol * abs(e)) or (equal_nan and a != a and e != e)
    if ok:
        return
    abs_diff = abs(a - e)
    rel_diff = float("inf") if e == 0 else abs_diff / abs(e)
    raise _Mismatch(AssertionError, _message("Scalars", f"Expected {e} but got {a}.", abs_diff, None, rel_diff,
                                             None, rtol, atol))


def _dtype_name(x):
    if isinstance(x, Tensor):
        return x.dtype.name
    return host.asarray(x).dtype.name


def _compare_tensor_likes(a, e, rtol, atol, equal_nan, check_device, check_dtype, check_stride):
    if tuple(a.shape) != tuple(e.shape):
        raise _attr_error("shape", tuple(a.shape), tuple(e.shape))
    if isinstance(a, Tensor):
        if check_stride and a.stride() != e.stride():
            raise _attr_error("stride()", a.stride(), e.stride())
        if check_device and a.device != e.device:
            raise _attr_error("device", a.device, e.device)
        if check_dtype and a.dtype != e.dtype:
            raise _attr_error("dtype", a.dtype, e.dtype)
    elif check_dtype and a.dtype != e.dtype:
        raise _attr_error("dtype", a.dtype, e.dtype)
    names = [_dtype_name(a), _dtype_name(e)]
    rtol, atol = _tolerances(names, rtol, atol)
    x, y = _host(a), _host(e)
    if x.dtype != y.dtype:   # check_dtype=False: compared in the promoted dtype, as torch
        common = _dtype.promote_types(_dtype.to_dtype(names[0]), _dtype.to_dtype(names[1])).name
        common = "float32" if common == "bfloat16" else common
        x, y = x.astype(common), y.astype(common)
    _compare_arrays(x, y, names[0], rtol, atol, equal_nan)


_NUMBER = (bool, int, float)


def _compare(a, e, path, opts):
    """Raise _Mismatch (with the item's path appended by the caller) where `a` and `e` differ."""
    rtol, atol, equal_nan, check_device, check_dtype, check_stride = opts
    if isinstance(a, Tensor) or isinstance(e, Tensor) or isinstance(a, np.ndarray) or isinstance(e, np.ndarray):
        if type(a) is not type(e) and not (isinstance(a, Tensor) and isinstance(e, Tensor)):
            raise _no_pair(a, e)
        _compare_tensor_likes(a, e, rtol, atol, equal_nan, check_device, check_dtype, check_stride)
        return
    if isinstance(a, _NUMBER) and isinstance(e, _NUMBER):
        if check_dtype and type(a) is not type(e):
            raise _Mismatch(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.")
        kinds = ["float64" if isinstance(v, float) else "int64" for v in (a, e)]
        r, t = _tolerances(kinds, rtol, atol)
        _compare_scalars(a, e, r, t, equal_nan)
        return
    if a is None and e is None:
        return
    if isinstance(a, collections.abc.Mapping) and isinstance(e, collections.abc.Mapping):
        if set(a) != set(e):
            missing, extra = sorted(set(e) - set(a), key=repr), sorted(set(a) - set(e), key=repr)
            raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {missing}\n"
                                            f"Additional keys in the actual mapping: {extra}")
        for k in e:
            _item(a[k], e[k], path + [k], opts)
        return
    seq = (list, tuple)
    if isinstance(a, seq) and isinstance(e, seq):
        if len(a) != len(e):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(a)} != {len(e)}")
        for i, (x, y) in enumerate(zip(a, e)):
            _item(x, y, path + [i], opts)
        return
    raise _no_pair(a, e)


def _no_pair(a, e):
    def name(x):
        return "<class 'ember.Tensor'>" if isinstance(x, Tensor) else str(type(x))
    return _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {name(a)} and {name(e)}.")


def _item(a, e, path, opts):
    """_compare, noting on a mismatch where it was found (the innermost item)."""
    try:
        _compare(a, e, path, opts)
    except _Mismatch as exc:
        if exc.path is None:
            exc.path = path
        raise


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Raise AssertionError unless `actual` and `expected` are close (torch.testing.assert_close).

    >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.5]))
    Traceback (most recent call last):
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)

    `msg` replaces the message (a string, or a function of the generated one). Tensors must have
    the same shape, device and dtype (`check_device`, `check_dtype`; without the dtype check both
    are compared in their promoted dtype); `check_stride` compares strides too.
    """
    if (rtol is None) != (atol is None):
        _tolerances([], rtol, atol)   # raises: checked first, as torch, even for equal inputs
    try:
        _item(actual, expected, [], (rtol, atol, equal_nan, check_device, check_dtype, check_stride))
    except _Mismatch as exc:
        text = exc.message
        if exc.path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in exc.path)
        if msg is not None:
            text = msg(text) if callable(msg) else msg
        raise exc.exc_type(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing.assert_allclose (deprecated in torch): assert_close without the dtype check,
    NaNs equal by default, and Python numbers and sequences turned into tensors first."""
    from .ops.creation import tensor
    actual = actual if isinstance(actual, Tensor) else tensor(actual)
    expected = expected if isinstance(expected, Tensor) else tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A tensor of `shape` filled with uniform values in [low, high) (torch.testing.make_tensor):
    floats in [-9, 9) by default, integers in [-9, 10), unsigned from 0, bool at random.

    >>> ember.testing.make_tensor(2, 3, dtype=ember.float32, device="cpu").shape
    (2, 3)
    """
    from . import random as R
    from .ops.creation import tensor
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dt = _dtype.to_dtype(dtype)
    if low is not None and high is not None and low > high:
        raise ValueError(f"make_tensor: `low` must be less than or equal to `high`, but got {low} > {high}")
    if dt.name == "bool":
        out = R.randint(0, 2, shape, device=device).to(dt)
    elif dt.is_floating_point:
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        out = (R.rand(*shape, dtype=_dtype.float64, device=device) * (hi - lo) + lo).to(dt)
    else:
        info = np.iinfo(dt.name)
        lo = max(info.min, -9 if low is None else math.ceil(low))
        hi = min(info.max + 1, 10 if high is None else math.ceil(high) if high != low else high + 1)
        out = R.randint(lo, hi, shape, device=device).to(dt)
    if exclude_zero:
        fill = tensor(1 if not dt.is_floating_point else float(np.finfo(np.float32).tiny), dtype=dt, device=device)
        out = out.masked_fill(out == 0, fill.item()) if out.numel() else out
    if noncontiguous and out.numel() > 1:
        out = out.repeat_interleave(2, dim=-1)[..., ::2]
    if requires_grad:
        out.requires_grad_(True)
    return out
