"""A strict stand-in for CuPy, for testing the CUDA code paths on a machine without a GPU.

With `EMBER_FAKE_CUDA=1` the cuda backend stores `FakeArray`s: NumPy arrays behind a wrapper that
refuses, as CuPy does, to mix with host memory. What passes here and fails on a real GPU is a bug in
the fake, so the wrapper copies CuPy's rules where Ember's code could meet them:

- `np.asarray(fake)` / `np.array(fake)` raise CuPy's TypeError ("Implicit conversion to a NumPy array
  is not allowed..."); so does any NumPy function or ufunc called on a FakeArray (`np.exp(fake)`,
  `np.add.at(fake, ...)`, `np.sum(fake)`). Use `xp = array_module(x)` and `xp.exp(x)` instead.
- operators with a host `np.ndarray` raise (`Unsupported type <class 'numpy.ndarray'>`); with Python
  or NumPy scalars they work. Index arrays must be FakeArrays (or Python ints, slices, lists...).
- reductions return 0-d arrays, not NumPy scalars; `float()`, `int()`, `bool()` and `.item()` of a
  one-element array work (CuPy synchronises and copies).
- `.flags` has `c_contiguous`, `f_contiguous` and `owndata`, not `writeable`; `.get()` copies to host.

The module `xp` wraps NumPy's functions generically: FakeArray arguments are unwrapped, host arrays
refused (except by `xp.asarray`/`xp.array`, which copy host data in as `cupy.asarray` does), NumPy
results wrapped. What CuPy lacks and Ember might reach for is absent or raises
(`xp.indices(..., sparse=True)`, `xp.random.default_rng`).
"""
from __future__ import annotations

import numbers
import types
from typing import Callable

import numpy as np

__all__ = ["FakeArray", "xp", "scatter_add", "scatter_reduce"]

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
             "Please use `.get()` to construct a NumPy array explicitly.")


def _unsupported(x):
    return TypeError(f"Unsupported type {type(x)}")


def _unwrap(x):
    """A FakeArray's NumPy array; containers unwrapped element by element; host arrays refused."""
    if isinstance(x, FakeArray):
        return x._a
    if isinstance(x, np.ndarray):
        raise _unsupported(x)
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(r):
    """NumPy results as device arrays: arrays and NumPy scalars (CuPy returns 0-d arrays) wrapped."""
    if isinstance(r, np.ndarray):
        return FakeArray(r)
    if isinstance(r, np.generic):
        return FakeArray(np.asarray(r))
    if isinstance(r, tuple):
        items = [_wrap(v) for v in r]
        return type(r)._make(items) if hasattr(type(r), "_make") else tuple(items)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _operand(x):
    """The right-hand side of an operator: a FakeArray's array or a scalar, never host memory."""
    if isinstance(x, FakeArray):
        return x._a
    if isinstance(x, (numbers.Number, np.generic)):
        return x
    raise _unsupported(x)


def _index(k):
    if isinstance(k, FakeArray):
        return k._a
    if isinstance(k, tuple):
        return tuple(_index(v) for v in k)
    if isinstance(k, np.ndarray):
        raise _unsupported(k)
    if isinstance(k, list):
        for v in k:
            if isinstance(v, (FakeArray, np.ndarray)):
                raise _unsupported(v)
    return k


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = bool(a.flags.owndata)

    def __getitem__(self, name):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[name])


class _MemoryPointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class _Device:
    id = 0

    def synchronize(self):
        pass

    def __repr__(self):
        return "<CUDA Device 0>"


# ndarray methods that CuPy arrays share; each is called on the wrapped array with unwrapped arguments
_METHODS = frozenset("""
    all any argmax argmin argpartition argsort astype clip compress conj conjugate copy cumprod cumsum
    diagonal dot flatten max mean min nonzero partition prod ptp ravel repeat reshape round sort squeeze
    std sum swapaxes take trace transpose var view tobytes tolist item
""".split())


class FakeArray:
    """A device array of the fake CUDA device: a NumPy array that refuses to meet host memory."""
    __slots__ = ("_a", "__weakref__")
    # NumPy operators on a FakeArray defer to its reflected operators; NumPy ufuncs refuse it
    __array_ufunc__ = None

    def __init__(self, a: np.ndarray):
        self._a = a

    # --- what CuPy refuses ----------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"numpy.{func.__name__} was called on a device array (fake CUDA); "
                        f"use the array module of the data (xp = ember.backends.array_module(x))")

    # --- attributes -----------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: FakeArray(self._a.T))
    mT = property(lambda self: FakeArray(self._a.mT))
    real = property(lambda self: FakeArray(self._a.real))
    imag = property(lambda self: FakeArray(self._a.imag))
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: _Device())
    data = property(lambda self: _MemoryPointer(self._a.ctypes.data))

    @property
    def base(self):
        b = self._a.base
        return None if b is None else FakeArray(b) if isinstance(b, np.ndarray) else b

    def __getattr__(self, name):
        if name in _METHODS:
            method = getattr(self._a, name)

            def call(*args, **kwargs):
                return _wrap(method(*_unwrap(args), **_unwrap(kwargs)))
            return call
        raise AttributeError(f"'cupy.ndarray' (fake CUDA) object has no attribute {name!r}")

    def get(self, stream=None, order="C", out=None) -> np.ndarray:
        return np.array(self._a, copy=True, order=order)

    def set(self, arr, stream=None):
        self._a[...] = arr

    def fill(self, value):
        self._a.fill(_operand(value))

    # --- conversions CuPy allows on one element (it synchronises) ---------------------------
    def _scalar(self, kind):
        if self._a.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python scalars (got {self._a.size})"
                            if kind is not bool else
                            "The truth value of an array with more than one element is ambiguous.")
        return kind(self._a.reshape(()))

    def __float__(self): return self._scalar(float)
    def __int__(self): return self._scalar(int)
    def __complex__(self): return self._scalar(complex)
    def __bool__(self): return self._scalar(bool)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (FakeArray(self._a[i]) for i in range(len(self._a)))

    def __repr__(self):
        return "fake_cuda." + repr(self._a)

    def __str__(self):
        return str(self._a)

    def __copy__(self):
        return FakeArray(self._a.copy())

    def __deepcopy__(self, memo):
        return FakeArray(self._a.copy())

    def __reduce__(self):
        return (FakeArray, (self._a,))

    # --- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        if isinstance(value, np.ndarray):
            raise _unsupported(value)
        if isinstance(value, (list, tuple)):
            value = _unwrap(value)
        self._a[_index(key)] = value._a if isinstance(value, FakeArray) else value

    # --- operators ------------------------------------------------------------------------
    def __neg__(self): return FakeArray(-self._a)
    def __pos__(self): return FakeArray(+self._a)
    def __abs__(self): return FakeArray(abs(self._a))
    def __invert__(self): return FakeArray(~self._a)
    __hash__ = None  # type: ignore[assignment]  # unhashable, as an ndarray


def _binop(name):
    def op(self, other):
        if not isinstance(other, (FakeArray, numbers.Number, np.generic, np.ndarray)):
            return NotImplemented
        return _wrap(getattr(self._a, name)(_operand(other)))
    op.__name__ = name
    return op


def _inplace(name):
    def op(self, other):
        getattr(self._a, name)(_operand(other))
        return self
    op.__name__ = name
    return op


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
           "lshift", "rshift", "divmod"):
    setattr(FakeArray, f"__{_n}__", _binop(f"__{_n}__"))
    setattr(FakeArray, f"__r{_n}__", _binop(f"__r{_n}__"))
    if _n != "divmod":
        setattr(FakeArray, f"__i{_n}__", _inplace(f"__i{_n}__"))
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(FakeArray, f"__{_n}__", _binop(f"__{_n}__"))


# --- the array module ---------------------------------------------------------------------------

def _wrap_function(fn, name):
    def call(*args, **kwargs):
        return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)))
    call.__name__ = name
    call.__qualname__ = name
    call.__wrapped_numpy__ = fn
    return call


class _Ufunc:
    """A NumPy ufunc whose call and methods (reduce, accumulate, outer, at...) take device arrays."""
    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout = uf.nin, uf.nout

    def __call__(self, *args, **kwargs):
        return _wrap(self._uf(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name):
        attr = getattr(self._uf, name)
        return _wrap_function(attr, f"{self.__name__}.{name}") if callable(attr) else attr


class _Namespace(types.ModuleType):
    """NumPy (or one of its submodules) seen through the device: functions take and return FakeArrays."""
    _MISSING: frozenset = frozenset()

    def __init__(self, name, np_module, missing=()):
        super().__init__(name)
        self._np = np_module
        self._missing = frozenset(missing)

    def __getattr__(self, name):
        if name.startswith("__") or name in self._missing:
            raise AttributeError(f"module {self.__name__!r} (fake CuPy) has no attribute {name!r}")
        attr = getattr(self._np, name)
        if isinstance(attr, np.ufunc):
            out = _Ufunc(attr)
        elif isinstance(attr, type) or not callable(attr):
            out = attr        # dtypes, finfo/iinfo, constants pass through, as in CuPy
        else:
            out = _wrap_function(attr, name)
        setattr(self, name, out)
        return out


def _to_device(obj, dtype=None, copy=None, order=None, **kwargs):
    """cupy.asarray/array: device arrays pass (copied if asked), host data is copied to the device."""
    if isinstance(obj, FakeArray):
        a = obj._a.astype(dtype, copy=bool(copy)) if dtype is not None else (obj._a.copy() if copy else obj._a)
        return FakeArray(a)
    obj = _unwrap(obj) if isinstance(obj, (list, tuple)) else obj
    return FakeArray(np.array(obj, dtype=dtype, copy=True, order=order or "K"))


def _array(obj, dtype=None, copy=True, order="K", **kwargs):
    return _to_device(obj, dtype=dtype, copy=copy if copy is not None else True, order=order)


def _asnumpy(a, stream=None, order="C", out=None):
    if isinstance(a, FakeArray):
        return a.get(order=order)
    return np.asarray(a, order=order)


def _indices(dimensions, dtype=int, sparse=False):
    if sparse:
        raise TypeError("indices() got an unexpected keyword argument 'sparse' (CuPy has no sparse indices)")
    return FakeArray(np.indices(dimensions, dtype=dtype))


def _get_array_module(*args):
    return xp if any(isinstance(a, FakeArray) for a in args) else np


class _FakeCupy(_Namespace):
    """The fake `cupy` module: its own names below, the rest NumPy's through the device."""
    ndarray: type
    asarray: Callable
    asanyarray: Callable
    array: Callable
    asnumpy: Callable
    indices: Callable
    get_array_module: Callable
    linalg: _Namespace
    fft: _Namespace
    lib: types.SimpleNamespace
    random: _Namespace


xp = _FakeCupy("fake_cupy", np)
xp.ndarray = FakeArray
xp.asarray = _to_device
xp.asanyarray = _to_device
xp.array = _array
xp.asnumpy = _asnumpy
xp.indices = _indices
xp.get_array_module = _get_array_module
xp.linalg = _Namespace("fake_cupy.linalg", np.linalg)
xp.fft = _Namespace("fake_cupy.fft", np.fft)
xp.lib = types.SimpleNamespace(stride_tricks=_Namespace("fake_cupy.lib.stride_tricks", np.lib.stride_tricks))
# CuPy's random module is the legacy RandomState API; Ember draws random numbers on the host
xp.random = _Namespace("fake_cupy.random", np.random, missing=("default_rng", "Generator", "PCG64", "SeedSequence"))


def scatter_add(out: FakeArray, key, values) -> None:
    """`cupyx.scatter_add` (NumPy's `add.at`): out[key] += values, repeated indices accumulating."""
    np.add.at(out._a, _index(key), _operand(values) if not isinstance(values, FakeArray) else values._a)


def scatter_reduce(out: FakeArray, key, values, ufunc: str) -> None:
    """`cupyx.scatter_max` / `scatter_min` (NumPy's `maximum.at` / `minimum.at`), and `multiply.at`."""
    getattr(np, ufunc).at(out._a, _index(key), _operand(values))


def erf(x: FakeArray) -> FakeArray:
    from . import cpu
    return FakeArray(cpu.erf(x._a))


def erfc(x: FakeArray) -> FakeArray:
    from . import cpu
    return FakeArray(cpu.erfc(x._a))


def erfinv(x: FakeArray) -> FakeArray:
    from . import cpu
    return FakeArray(cpu.erfinv(x._a))


def _special(name, x, *args):
    """The CPU backend's special function `name` (SciPy's, else the NumPy fallback) on a FakeArray."""
    from . import cpu
    return FakeArray(getattr(cpu, name)(*args, x._a))


def lgamma(x: FakeArray) -> FakeArray:
    return _special("lgamma", x)


def digamma(x: FakeArray) -> FakeArray:
    return _special("digamma", x)


def polygamma(n: int, x: FakeArray) -> FakeArray:
    return _special("polygamma", x, n)


def i0(x: FakeArray) -> FakeArray:
    return _special("i0", x)


def i0e(x: FakeArray) -> FakeArray:
    return _special("i0e", x)


def i1(x: FakeArray) -> FakeArray:
    return _special("i1", x)


def i1e(x: FakeArray) -> FakeArray:
    return _special("i1e", x)


def erfcx(x: FakeArray) -> FakeArray:
    return _special("erfcx", x)


def ndtri(x: FakeArray) -> FakeArray:
    return _special("ndtri", x)


def gammainc(a: FakeArray, x: FakeArray) -> FakeArray:
    from . import cpu
    return FakeArray(cpu.gammainc(a._a, x._a))


def gammaincc(a: FakeArray, x: FakeArray) -> FakeArray:
    from . import cpu
    return FakeArray(cpu.gammaincc(a._a, x._a))
