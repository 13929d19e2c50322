"""Ember dtypes and torch's type-promotion rules.

A `dtype` is a small immutable object naming a NumPy dtype. bfloat16 comes from the
`ml_dtypes` package, imported the first time bfloat16 is used (so `import ember` stays light).
"""
from __future__ import annotations

import builtins as _b
import math as _math

import numpy as np

__all__ = ["dtype", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "bool", "get_default_dtype", "set_default_dtype", "promote_types", "finfo", "iinfo",
           "can_cast"]

_BOOL, _INT, _FLOAT = 0, 1, 2
_py_float, _py_int, _py_bool = _b.float, _b.int, _b.bool


class dtype:
    __slots__ = ("name", "_np", "category", "itemsize")

    def __init__(self, name: str, np_dtype, category: _b.int, itemsize: _b.int):
        self.name, self._np, self.category, self.itemsize = name, np_dtype, category, itemsize

    @property
    def np(self) -> np.dtype:
        """The NumPy dtype that stores this dtype."""
        if self._np is None:  # bfloat16, resolved on first use
            try:
                import ml_dtypes
            except ImportError:
                raise ImportError("bfloat16 needs the ml_dtypes package: pip install ml_dtypes") from None
            self._np = np.dtype(ml_dtypes.bfloat16)
            _BY_NP[self._np] = self
        return self._np

    @property
    def is_floating_point(self) -> _b.bool:
        return self.category == _FLOAT

    @property
    def is_signed(self) -> _b.bool:
        return self.name not in ("uint8", "bool")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


float16 = dtype("float16", np.dtype(np.float16), _FLOAT, 2)
bfloat16 = dtype("bfloat16", None, _FLOAT, 2)
float32 = dtype("float32", np.dtype(np.float32), _FLOAT, 4)
float64 = dtype("float64", np.dtype(np.float64), _FLOAT, 8)
int8 = dtype("int8", np.dtype(np.int8), _INT, 1)
int16 = dtype("int16", np.dtype(np.int16), _INT, 2)
int32 = dtype("int32", np.dtype(np.int32), _INT, 4)
int64 = dtype("int64", np.dtype(np.int64), _INT, 8)
uint8 = dtype("uint8", np.dtype(np.uint8), _INT, 1)
bool = dtype("bool", np.dtype(np.bool_), _BOOL, 1)  # noqa: A001 - torch's name

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001

_ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NP = {d._np: d for d in _ALL if d._np is not None}
_default = float32   # one for the whole process, as in torch (set in one thread, seen by all)


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_np(np_dtype) -> dtype:
    """The Ember dtype of a NumPy dtype (float64 arrays stay float64, as torch.from_numpy does)."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        np_dtype = np.dtype(np_dtype)
        d = _BY_NP.get(np_dtype)
        if d is None:
            if np_dtype.name == "bfloat16":
                return bfloat16 if bfloat16.np == np_dtype else _unsupported(np_dtype)
            return _unsupported(np_dtype)
    return d


def _unsupported(np_dtype):
    raise TypeError(f"dtype {np_dtype} is not supported by ember; supported: "
                    + ", ".join(d.name for d in _ALL))


def to_dtype(d) -> dtype:
    """Accept an ember dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(d, dtype):
        return d
    if d is _py_float:
        return _default
    if d is _py_int:
        return int64
    if d is _py_bool:
        return bool
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    return from_np(np.dtype(d))



def get_default_dtype() -> dtype:
    return _default


def set_default_dtype(d) -> None:
    global _default
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating point dtypes are allowed, got {d}")
    _default = d


_PROMOTE: dict = {}


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both a and b convert to without losing category."""
    key = (a, b)
    r = _PROMOTE.get(key)
    if r is None:
        if a is b:
            r = a
        elif {a.name, b.name} == {"bfloat16", "float16"}:
            r = float32
        elif a.category != b.category:
            r = a if a.category > b.category else b
        elif a is bfloat16 or b is bfloat16:
            r = b if a is bfloat16 else a  # bfloat16 with a wider float
        else:
            r = from_np(np.promote_types(a.np, b.np))
        _PROMOTE[key] = r
    return r


def scalar_dtype(x) -> dtype:
    """The dtype torch gives a Python scalar that takes part in an op."""
    if isinstance(x, _py_bool):
        return bool
    if isinstance(x, _py_int):
        return int64
    return _default


def _combine(higher, lower):
    # c10's combine_categories: a lower-priority operand matters only if of a higher category
    if higher is None:
        return lower
    if lower is None or higher.category == _FLOAT:
        return higher
    if higher is bool or lower.category == _FLOAT:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """torch.result_type for Tensors and Python scalars.

    Three priority groups: tensors with dims > 0-dim tensors > Python scalars (which count as the
    default dtype of their category). A lower group decides only when its category is higher.
    """
    groups: list[dtype | None] = [None, None, None]  # dim tensors, zero-dim tensors, scalars
    for x in operands:
        if hasattr(x, "_data"):
            d, g = x.dtype, (0 if x._data.ndim else 1)
        else:
            d, g = scalar_dtype(x), 2
        prev = groups[g]
        groups[g] = d if prev is None else promote_types(prev, d)
    return _combine(groups[0], _combine(groups[1], groups[2]))


class finfo:
    """Machine limits of a floating-point dtype (the default dtype when none is given), as torch.finfo:
    `bits`, `eps`, `max`, `min`, `tiny` (= `smallest_normal`), `resolution` and `dtype` (its name).

    >>> ember.finfo(ember.float16).max
    65504.0
    """

    def __init__(self, type=None):   # noqa: A002 (torch's name)
        d = _default if type is None else to_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"finfo: requires a floating point input type, got {d}; use ember.iinfo for it")
        if d is bfloat16:
            import ml_dtypes
            info = ml_dtypes.finfo(d.np)
        else:
            info = np.finfo(d.np)
        self.bits = d.itemsize * 8
        self.eps, self.max, self.min = _py_float(info.eps), _py_float(info.max), _py_float(info.min)
        self.tiny = self.smallest_normal = _py_float(info.tiny)
        self.resolution = 10.0 ** -_math.floor(-_math.log10(self.eps))   # NumPy's: 10 ** -decimal digits
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as torch.iinfo: `bits`, `max`, `min` and `dtype` (its name).

    >>> ember.iinfo(ember.uint8).max
    255
    """

    def __init__(self, type):   # noqa: A002 (torch's name)
        d = to_dtype(type)
        if d.category != _INT:
            raise TypeError(f"iinfo: requires an integer input type, got {d}; use ember.finfo for floats")
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = d.itemsize * 8, _py_int(info.max), _py_int(info.min), d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_, to) -> _b.bool:
    """Whether torch's casting rules allow `from_` to `to` in an op's output: not to a lower category
    (float to integer, or to bool).

    >>> ember.can_cast(ember.float32, ember.int32), ember.can_cast(ember.int64, ember.float16)
    (False, True)
    """
    return to_dtype(from_).category <= to_dtype(to).category
