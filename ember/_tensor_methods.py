"""Binds the functions of `ember.ops` to `Tensor` as methods, operators and in-place `_` forms.

Kept apart from `_tensor.py` so the class reads as data + autograd, and the op list reads as a list.
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._tensor import Tensor
from ._errors import check_scalar_fits
from .autograd.grad_mode import STATE
from .ops import math as M, shape as S, creation as C
from .ops.inplace import assign, inplace, check_leaf, needs_graph, write_direct
from . import random as R

# ------------------------------------------------------------------ methods that are the functions
_METHODS = {
    M: """add sub mul div floor_divide remainder fmod true_divide neg negative pow float_power exp log
          log1p expm1 log2 log10 exp2 sin cos tan tanh sigmoid sqrt rsqrt erf erfinv reciprocal square abs
          absolute relu floor ceil trunc round frac sign clamp clip maximum minimum lerp addcmul addcdiv
          eq ne lt le gt ge greater greater_equal less less_equal not_equal logical_and logical_or
          logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not isnan isinf isfinite
          equal allclose isclose sum mean prod var std amax amin max min argmax argmin all any
          count_nonzero logsumexp softmax log_softmax cumsum cumprod norm dist matmul mm bmm mv dot
          vdot inner outer ger""",
    S: """reshape view contiguous clone permute transpose swapaxes swapdims t squeeze unsqueeze expand
          expand_as broadcast_to flatten unflatten ravel narrow split chunk tensor_split unbind flip
          fliplr flipud roll repeat tile repeat_interleave tril triu diagonal diag trace movedim
          moveaxis index_put index_select gather take_along_dim take scatter scatter_add index_add
          index_fill masked_fill masked_select masked_scatter nonzero argwhere sort argsort msort topk
          kthvalue unique""",
}
for _mod, _names in _METHODS.items():
    for _name in _names.split():
        setattr(Tensor, _name, getattr(_mod, _name))
Tensor.where = lambda self, condition, other: M.where(condition, self, other)
Tensor.__getitem__ = S.getitem
Tensor.__setitem__ = S.setitem
Tensor.T = property(lambda self: S.permute(self, tuple(range(self.ndim))[::-1]))
Tensor.mT = property(lambda self: S.transpose(self, -2, -1))
Tensor.H = property(lambda self: S.t(self))
Tensor.mH = Tensor.mT


# ------------------------------------------------------------------ in-place shape changes (t_, unsqueeze_, ...)
def _reshape_inplace(name, fn):
    """A method that gives this tensor the shape (and strides) of `fn(self, ...)`, a view of the same
    memory, as torch's in-place view ops: with history, the tensor's node becomes that view's node (so
    gradients flow through it), and the version is bumped (a graph that saved the old tensor refuses to
    use it, as torch's does)."""
    def method(self, *args, **kwargs) -> Tensor:
        check_leaf(self, name)
        if STATE.enabled and self.requires_grad:
            # run on a stand-in for the old `self`, so the view's node points at the old history
            src = Tensor._make(self._data, self._device, True, self._node, self._out_idx)
            out = fn(src, *args, **kwargs)
            self._node, self._out_idx = out._node, out._out_idx
        else:
            out = fn(Tensor._make(self._data, self._device), *args, **kwargs)
        self._data = out._data
        self._bump_version(name)
        return self
    method.__name__, method.__wrapped__ = name, fn   # __wrapped__: inspect.signature shows fn's parameters
    method.__doc__ = f"In-place {name[:-1]}: this tensor itself takes the new shape, a view of the same memory."
    return method


for _name in ("t", "transpose", "swapaxes", "swapdims", "unsqueeze", "squeeze"):
    setattr(Tensor, _name + "_", _reshape_inplace(_name + "_", getattr(S, _name)))


def get_device(self) -> int:
    """The device index: -1 on the CPU (and meta), the GPU's index for a CUDA tensor (torch's)."""
    return self._device.index if self._device.type == "cuda" else -1


Tensor.get_device = get_device


# ------------------------------------------------------------------ operators
def _r(fn):
    return lambda self, other: fn(other, self)


Tensor.__add__ = Tensor.__radd__ = M.add
Tensor.__sub__, Tensor.__rsub__ = M.sub, _r(M.sub)
Tensor.__mul__ = Tensor.__rmul__ = M.mul
Tensor.__truediv__, Tensor.__rtruediv__ = M.div, _r(M.div)
Tensor.__floordiv__, Tensor.__rfloordiv__ = M.floor_divide, _r(M.floor_divide)
Tensor.__mod__, Tensor.__rmod__ = M.remainder, _r(M.remainder)
Tensor.__pow__, Tensor.__rpow__ = M.pow, _r(M.pow)
Tensor.__matmul__, Tensor.__rmatmul__ = M.matmul, _r(M.matmul)
Tensor.__neg__ = M.neg


def _pos(self: Tensor) -> Tensor:
    return self


def _invert(self: Tensor):
    return M.logical_not(self) if self.dtype is _dtype.bool else M.bitwise_not(self)


Tensor.__pos__ = _pos
Tensor.__abs__ = M.abs
Tensor.__invert__ = _invert
Tensor.__and__ = Tensor.__rand__ = M.bitwise_and
Tensor.__or__ = Tensor.__ror__ = M.bitwise_or
Tensor.__xor__ = Tensor.__rxor__ = M.bitwise_xor


def _comparison(fn):
    """`t == x` for ==/!=: None, a str, a list ... are not values to compare (torch: t == None is False,
    t != None True), so Python's identity fallback answers; tensors, numbers and arrays compare."""
    def method(self, other):
        if other is None or isinstance(other, (str, list, tuple, dict, set)):
            return NotImplemented
        return fn(self, other)
    method.__name__, method.__wrapped__ = fn.__name__, fn
    return method


Tensor.__eq__, Tensor.__ne__ = _comparison(M.eq), _comparison(M.ne)
Tensor.__lt__, Tensor.__le__, Tensor.__gt__, Tensor.__ge__ = M.lt, M.le, M.gt, M.ge


# ------------------------------------------------------------------ in-place forms
def _make_inplace(name, fn):
    def method(self, *args, **kwargs) -> Tensor:
        return inplace(self, lambda s: fn(s, *args, **kwargs), name)
    method.__name__, method.__wrapped__ = name, fn
    method.__doc__ = f"In-place {name[:-1]}: writes into this tensor and returns it."
    return method


for _name in """add sub mul div pow neg exp log log1p expm1 sin cos tan tanh sigmoid sqrt rsqrt erf erfinv abs
                relu floor ceil trunc round sign clamp clip maximum minimum lerp addcmul addcdiv
                reciprocal square remainder fmod floor_divide masked_fill index_put index_add index_fill
                scatter scatter_add masked_scatter logical_not tril triu""".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))

def _fast_arith(name, ufunc_name):
    """add_/sub_/mul_/div_: a single ufunc into our memory when no graph is recorded (optimizers)."""
    generic = getattr(Tensor, name)

    def method(self, other, *args, **kwargs) -> Tensor:
        if kwargs and kwargs.get("alpha", None) == 1 and len(kwargs) == 1:
            kwargs = {}
        if args or kwargs or (name == "div_" and not self.dtype.is_floating_point) or needs_graph(self, other):
            if kwargs.get("alpha", 1) != 1 and not needs_graph(self, other) and not args:
                other = other * kwargs.pop("alpha")
                return write_direct(self, name, ufunc_name, other)
            return generic(self, other, *args, **kwargs)
        return write_direct(self, name, ufunc_name, other)
    method.__name__, method.__wrapped__ = name, generic
    method.__doc__ = generic.__doc__
    return method


for _name, _uf in (("add_", "add"), ("sub_", "subtract"), ("mul_", "multiply"), ("div_", "divide")):
    setattr(Tensor, _name, _fast_arith(_name, _uf))

Tensor.__iadd__ = lambda self, o: _view_safe(self, "add_", o)
Tensor.__isub__ = lambda self, o: _view_safe(self, "sub_", o)
Tensor.__imul__ = lambda self, o: _view_safe(self, "mul_", o)
Tensor.__itruediv__ = lambda self, o: _view_safe(self, "div_", o)
Tensor.__ipow__ = lambda self, o: _view_safe(self, "pow_", o)
Tensor.__imatmul__ = lambda self, o: self @ o


def _view_safe(self, name, other):
    # `x[i] += v` calls __iadd__ on the view x[i], then x.__setitem__(i, result). On a view of a tensor
    # that records history, compute out of place and let __setitem__ do the write.
    if STATE.enabled and self._base is not None and self._base.requires_grad:
        return getattr(Tensor, name[:-1])(self, other)
    return getattr(Tensor, name)(self, other)


def _write(self, arr_fn, name) -> Tensor:
    """In-place fill that records no graph (zero_, fill_, copy_, uniform_, ...), through `Assign`;
    `arr_fn()` gives a Python number, a Tensor on this device or a raw array. Version bumped."""
    check_leaf(self, name)
    if self._device.type != "meta":   # a meta tensor has no values to write (nor draw: arr_fn not run)
        v = arr_fn()
        if isinstance(v, Tensor):
            assign(self, v.detach(), name=name)
        elif isinstance(v, (int, float, bool, np.generic)):
            assign(self, value=v, name=name)
        else:
            assign(self, Tensor._make(v, self._device), name=name)
    if self._node is not None and STATE.enabled:   # overwritten: no longer depends on its history
        self._node, self.requires_grad = None, False
    return self


def zero_(self) -> Tensor:
    return _write(self, lambda: 0, "zero_")


def fill_(self, value) -> Tensor:
    if isinstance(value, Tensor):
        value = value.item()
    value = check_scalar_fits("fill_", value, self.dtype)
    return _write(self, lambda: value, "fill_")


def copy_(self, src, non_blocking=False) -> Tensor:
    src = src if isinstance(src, Tensor) else C.tensor(src)
    if STATE.enabled and src.requires_grad:
        return inplace(self, lambda s: s * 0 + S.to_device(src, self._device).to(self.dtype), "copy_")
    host = S.to_device(src.detach(), self._device)
    try:
        np.broadcast_shapes(host.shape, self.shape)
    except ValueError:
        from ._errors import op_error
        raise op_error("copy_", f"src shape {tuple(src.shape)} is not broadcastable to {tuple(self.shape)}")
    return _write(self, lambda: host, "copy_")


def _rand_(name, sampler):
    """An in-place sampler: values drawn on the tensor's device by ember.random, then written."""
    def method(self, *args, generator=None, **kwargs) -> Tensor:
        return _write(self, lambda: sampler(self, generator, *args, **kwargs)._data, name)
    method.__name__ = name
    return method


def _udt(self):
    """The float dtype uniforms for an in-place sampler are drawn in: the tensor's, or float64."""
    return self.dtype if self.dtype.is_floating_point else _dtype.float64


def _uniform(self, g, a=0.0, b=1.0):
    return R.rand(*self.shape, generator=g, dtype=_udt(self), device=self._device) * (b - a) + a


def _normal(self, g, mean=0.0, std=1.0):
    return R.randn(*self.shape, generator=g, dtype=_udt(self), device=self._device) * std + mean


def _bernoulli(self, g, p=0.5):
    if isinstance(p, Tensor):
        return R.bernoulli(self, p.to(_udt(self)), generator=g)
    return R._bernoulli_scalar(self.shape, float(p), self._data.dtype, self._device, g)


def _exponential(self, g, lambd=1.0):
    u = R.rand(*self.shape, generator=g, dtype=_dtype.float64, device=self._device)
    return -(-u).log1p() / lambd          # u in [0, 1): -log(1 - u) in [0, inf)


def _cauchy(self, g, median=0.0, sigma=1.0):
    u = R.rand(*self.shape, generator=g, dtype=_dtype.float64, device=self._device)
    return ((u - 0.5) * math.pi).tan() * sigma + median   # the inverse CDF of Cauchy(median, sigma)


def _geometric(self, g, p):
    u = R.rand(*self.shape, generator=g, dtype=_dtype.float64, device=self._device)
    return ((-u).log1p() / math.log1p(-p)).ceil().clamp(min=1)   # trials until the first success


def _log_normal(self, g, mean=1.0, std=2.0):
    return (R.randn(*self.shape, generator=g, dtype=_udt(self), device=self._device) * std + mean).exp()


Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.uniform_ = _rand_("uniform_", _uniform)
Tensor.normal_ = _rand_("normal_", _normal)
Tensor.bernoulli_ = _rand_("bernoulli_", _bernoulli)
Tensor.exponential_ = _rand_("exponential_", _exponential)
Tensor.geometric_ = _rand_("geometric_", _geometric)
Tensor.cauchy_ = _rand_("cauchy_", _cauchy)
Tensor.log_normal_ = _rand_("log_normal_", _log_normal)


def _random_(self, g, low=0, high=None):
    dtype = self._data.dtype
    # torch: without bounds, [0, 2**mantissa] for floats and [0, max] for integers
    if high is None:
        if low:
            low, high = 0, low
        elif dtype.kind in "iu":
            low, high = 0, int(np.iinfo(dtype).max) + 1
        elif dtype == np.bool_:
            low, high = 0, 2
        else:
            low, high = 0, 2 ** {2: 11, 4: 24, 8: 53}[dtype.itemsize] + 1
    return R._integers(low, high, self.shape, self._device, g)


Tensor.random_ = _rand_("random_", _random_)
Tensor.bernoulli = lambda self, p=None, *, generator=None: R.bernoulli(self, p, generator=generator)
Tensor.multinomial = lambda self, n, replacement=False, *, generator=None: \
    R.multinomial(self, n, replacement, generator=generator)


# ------------------------------------------------------------------ dtype, device, new tensors
def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False) -> Tensor:
    """Convert dtype and/or device: t.to(ember.float64), t.to('cuda'), t.to(0) (an accelerator index, as
    torch), t.to(other), t.to('cuda', ember.half)."""
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (_device_cls, str)) and not (isinstance(a, str) and a in _dtype._BY_NAME) or \
                isinstance(a, int) and not isinstance(a, bool):
            device = a
        elif a is not None:
            dtype = a
    out = self
    if device is not None:
        out = S.to_device(out, _device_cls(device))
    if dtype is not None:
        dt = _dtype.to_dtype(dtype)
        if out._data.dtype != dt.np:
            from .ops.primitives import Cast
            out = Cast.apply(out, dtype=dt.np)
    if copy and out is self:
        out = S.clone(self)
    return out


Tensor.to = to
Tensor.cpu = lambda self: S.to_device(self, "cpu")
Tensor.cuda = lambda self, device=None, non_blocking=False: \
    S.to_device(self, _device_cls("cuda", device if isinstance(device, int) else None) if not
                isinstance(device, (str, _device_cls)) else device)
Tensor.type_as = lambda self, other: to(self, other.dtype)
Tensor.view_as = lambda self, other: S.view(self, other.shape)
Tensor.reshape_as = lambda self, other: S.reshape(self, other.shape)
for _n, _d in [("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
               ("bfloat16", _dtype.bfloat16), ("long", _dtype.int64), ("int", _dtype.int32),
               ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8), ("bool", _dtype.bool)]:
    setattr(Tensor, _n, (lambda d: lambda self: to(self, d))(_d))



def _type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, torch's type string: 'torch.FloatTensor', 'torch.cuda.LongTensor' (torch's own
    strings, not 'ember.' ones, so that ported comparisons such as `x.type() == 'torch.FloatTensor'` hold).
    With a dtype, a legacy type (`ember.DoubleTensor`, `ember.cuda.FloatTensor`) or its name
    ('torch.DoubleTensor'), this tensor converted as `.to` does (itself when it is of that type already;
    differentiable). A legacy type also names the device: a CPU type brings a CUDA tensor back to the CPU.

    >>> x = ember.ones(2)
    >>> x.type()
    'torch.FloatTensor'
    >>> x.type('torch.LongTensor').type(), x.type(ember.float64).dtype
    ('torch.LongTensor', ember.float64)
    """
    from .ops import aliases
    if dtype is None:
        return aliases.type_name(self)
    if isinstance(dtype, _dtype.dtype):
        return to(self, dtype)
    if not isinstance(dtype, (str, type)):
        from ._errors import op_error
        raise op_error("type", f"dtype must be a type, str, or dtype object, got {type(dtype).__name__} "
                               f"{dtype!r}", TypeError)
    dt, kind = aliases.parse_type("type", dtype)
    if self._device.type != kind:
        return to(self, kind, dt)
    return to(self, dt)


Tensor.type = _type
Tensor.type.__name__ = "type"
Tensor.output_nr = property(lambda self: self._out_idx if self._node is not None else 0,
                            doc="The index of this tensor among the outputs of its grad_fn (0 for a leaf).")


def _map_elements(self, name, fn, others, names):
    """apply_/map_/map2_: `fn` called on each element (Python numbers) of self and of `others` broadcast to
    self's shape; the results written into self, cast to its dtype. CPU only, never with a tensor that
    requires grad (whatever the grad mode), as torch's."""
    from ._errors import op_error
    from .ops import aliases
    for k, t in enumerate(others):
        if not isinstance(t, Tensor):
            raise op_error(name, f"argument '{names[k]}' must be Tensor, not {type(t).__name__}", TypeError)
    if any(t.requires_grad for t in (self, *others)):
        raise op_error(name, f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                             f"instead.")
    if self._device.type != "cpu":
        raise op_error(name, f"{name} is only implemented on CPU tensors (got {self._device})", TypeError)
    for k, t in enumerate(others):
        if t.dtype is not self.dtype or t._device.type != "cpu":
            raise op_error(name, f"expected {aliases.type_name(self)} for argument '{names[k]}' (got "
                                 f"{aliases.type_name(t)})", TypeError)
    try:
        others = [S.broadcast_to(t, tuple(self.shape)) for t in others]
    except (RuntimeError, ValueError):
        raise op_error(name, f"the tensors {[tuple(t.shape) for t in others]} do not broadcast to this tensor's "
                             f"shape {tuple(self.shape)}") from None
    kind = float if self.dtype.is_floating_point else bool if self.dtype is _dtype.bool else int
    columns = [(to(t, _dtype.float64) if kind is float else t).reshape(-1).tolist() for t in [self, *others]]
    out = []
    for values in zip(*columns):
        r = fn(*values)
        if isinstance(r, Tensor):
            r = r.item()
        if not isinstance(r, (int, float, bool, np.number, np.bool_)):
            raise op_error(name, f"the callable must return a real number, got {type(r).__name__} {r!r}",
                           TypeError)
        out.append(kind(check_scalar_fits(name, kind(r), self.dtype)))
    result = C.tensor(out, dtype=self.dtype).reshape(self.shape)
    return _write(self, lambda: result, name)


def apply_(self, callable) -> Tensor:
    """Replace each element x by `callable(x)` (a Python number in, a number out), in place. CPU only, not
    for tensors that require grad, and slow: one Python call per element, as torch's.

    >>> ember.tensor([1.0, 2.0]).apply_(lambda x: x * 3).tolist()
    [3.0, 6.0]
    """
    return _map_elements(self, "apply_", callable, (), ())


def map_(self, tensor, callable) -> Tensor:
    """Replace each element x by `callable(x, y)`, y the matching element of `tensor` (same dtype,
    broadcast to this tensor's shape), in place; CPU only, not for tensors that require grad.

    >>> ember.tensor([1.0, 2.0]).map_(ember.tensor([10.0, 20.0]), lambda x, y: x + y).tolist()
    [11.0, 22.0]
    """
    return _map_elements(self, "map_", callable, (tensor,), ("other",))


def map2_(self, x, y, callable) -> Tensor:
    """map_ with two tensors: each element s becomes `callable(s, a, b)`.

    >>> ember.zeros(2).map2_(ember.ones(2), ember.tensor([1.0, 2.0]), lambda s, a, b: s + a * b).tolist()
    [1.0, 2.0]
    """
    return _map_elements(self, "map2_", callable, (x, y), ("x", "y"))


Tensor.apply_ = apply_
Tensor.map_ = map_
Tensor.map2_ = map2_

def _new(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad, **kw)
    return method


Tensor.new_zeros = _new(C.zeros)
Tensor.new_ones = _new(C.ones)
Tensor.new_empty = _new(C.empty)


def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return C.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def new_tensor(self: Tensor, data, *, dtype=None, device=None, requires_grad=False):
    return C.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


Tensor.new_full = new_full
Tensor.new_tensor = new_tensor


# ------------------------------------------------------------------ predicates (torch's is_* methods)
def is_nonzero(self) -> bool:
    """The truth value of a one-element tensor (torch's errors for more or fewer elements)."""
    if self._data.size != 1:
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with {'no values' if self._data.size == 0 else 'more than one value'} "
                           f"is ambiguous (shape {tuple(self.shape)})")
    return bool(self.item())


def is_set_to(self, tensor) -> bool:
    """True when both tensors view the same memory with the same shape and strides."""
    return (self._device is tensor._device and self.data_ptr() == tensor.data_ptr()
            and self.shape == tensor.shape and self._data.strides == tensor._data.strides)


def is_coalesced(self) -> bool:
    raise RuntimeError(f"is_coalesced expected sparse coordinate tensor layout but got Strided "
                       f"(Ember has no sparse tensors; input {tuple(self.shape)} {self.dtype.name})")


def is_signed(self: Tensor) -> bool:
    return self._data.dtype.kind in "fiV"   # bfloat16 is kind V; bool and uint8 are not


def is_same_size(self: Tensor, other: Tensor) -> bool:
    return tuple(self.shape) == tuple(other.shape)


Tensor.is_nonzero = is_nonzero
Tensor.is_set_to = is_set_to
Tensor.is_coalesced = is_coalesced
Tensor.is_signed = is_signed
Tensor.is_same_size = is_same_size
Tensor.is_complex = lambda self: False        # Ember has no complex dtypes
Tensor.is_conj = lambda self: False
Tensor.is_neg = lambda self: False
Tensor.is_distributed = lambda self: False


# ------------------------------------------------------------------ ember/ops/elementwise.py, and more in-place forms
from .ops import elementwise as _E  # noqa: E402

for _name in _E.__all__:
    setattr(Tensor, _name, getattr(_E, _name))
for _name in """asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh atan2
                arctan2 hypot copysign deg2rad rad2deg nan_to_num eq ne lt le gt ge greater greater_equal less
                less_equal not_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
                bitwise_not""".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))


def cumsum_(self: Tensor, dim, *, dtype=None):
    return inplace(self, lambda s: M.cumsum(s, dim, dtype=dtype), "cumsum_")


def cumprod_(self: Tensor, dim, *, dtype=None):
    return inplace(self, lambda s: M.cumprod(s, dim, dtype=dtype), "cumprod_")


Tensor.cumsum_ = cumsum_
Tensor.cumprod_ = cumprod_

from .ops import aliases as _A  # noqa: E402

for _name in _A.__all__:
    if _name not in _A.FUNCTIONS_ONLY:
        setattr(Tensor, _name, getattr(_A, _name))
for _name in "multiply divide subtract fix sgn clamp_min clamp_max".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))
Tensor.negative_ = Tensor.neg_
Tensor.absolute_ = Tensor.abs_
Tensor.true_divide_ = Tensor.div_
Tensor.ndimension = Tensor.dim

from .ops import reductions as _Red  # noqa: E402

for _name in _Red.__all__:
    if _name not in _Red.FUNCTIONS_ONLY:
        setattr(Tensor, _name, getattr(_Red, _name))
Tensor.sum_to_size = _Red.sum_to_size
Tensor.renorm_ = _make_inplace("renorm_", _Red.renorm)

from .ops import stacking as _St  # noqa: E402

for _name in ("hsplit", "vsplit", "dsplit", "rot90"):
    setattr(Tensor, _name, getattr(_St, _name))

from .ops import pointwise as _Pw  # noqa: E402

for _name in _Pw.__all__:
    setattr(Tensor, _name, getattr(_Pw, _name))
for _name in """gcd lcm heaviside ldexp nextafter bitwise_left_shift bitwise_right_shift logit xlogy sinc erfc
                exp2 log2 log10 frac""".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))
Tensor.__lshift__, Tensor.__rlshift__ = _Pw.bitwise_left_shift, _r(_Pw.bitwise_left_shift)
Tensor.__rshift__, Tensor.__rrshift__ = _Pw.bitwise_right_shift, _r(_Pw.bitwise_right_shift)
Tensor.__ilshift__ = lambda self, o: _view_safe(self, "bitwise_left_shift_", o)
Tensor.__irshift__ = lambda self, o: _view_safe(self, "bitwise_right_shift_", o)


def float_power_(self, exponent) -> Tensor:
    """In-place float_power: the result is float64, so this tensor must be float64 (as torch)."""
    if self.dtype is not _dtype.float64:
        from ._errors import op_error
        raise op_error("float_power_", f"the base given to float_power_ has dtype {self.dtype.name} but the "
                                       f"operation's result requires dtype float64")
    return inplace(self, lambda s: M.float_power(s, exponent), "float_power_")


Tensor.float_power_ = float_power_

from .ops import special as _Sp  # noqa: E402

Tensor.lgamma, Tensor.digamma, Tensor.i0 = _Sp.lgamma, _Sp.digamma, _Sp.i0


def polygamma(self, n):
    """polygamma(n, self): torch's method takes the order first, the tensor is self."""
    return _Sp.polygamma(n, self)


Tensor.polygamma = polygamma
Tensor.mvlgamma = _Sp.mvlgamma
Tensor.igamma, Tensor.igammac = _Sp.igamma, _Sp.igammac
for _name in "lgamma digamma polygamma i0 mvlgamma igamma igammac".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))

from .ops import indexing as _Ix  # noqa: E402

for _name in """select select_scatter slice_scatter diagonal_scatter index_copy index_reduce scatter_reduce put
                unique_consecutive diagflat split_with_sizes unfold fill_diagonal_""".split():
    setattr(Tensor, _name, getattr(_Ix, _name))
for _name in "index_copy index_reduce scatter_reduce put".split():
    setattr(Tensor, _name + "_", _make_inplace(_name + "_", getattr(Tensor, _name)))
from .ops import products as _Pr  # noqa: E402


def _product_inplace(name, fn):
    """addmm_ and kin: the result must have self's shape (torch's 'Bad in-place call')."""
    def same_shape(s, out):
        if tuple(out.shape) != tuple(s.shape):
            from ._errors import op_error
            raise op_error(name, f"Bad in-place call: input tensor size {list(s.shape)} and output tensor size "
                                 f"{list(out.shape)} should match")
        return out

    def method(self, *args, **kwargs) -> Tensor:
        return inplace(self, lambda s: same_shape(s, fn(s, *args, **kwargs)), name)
    method.__name__, method.__wrapped__ = name, fn
    method.__doc__ = f"In-place {name[:-1]}: writes into this tensor and returns it."
    return method


for _name in ("addmm", "addmv", "addr", "baddbmm", "addbmm", "kron", "cross", "diag_embed", "adjoint"):
    setattr(Tensor, _name, getattr(_Pr, _name))
for _name in ("addmm", "addmv", "addr", "baddbmm", "addbmm"):
    setattr(Tensor, _name + "_", _product_inplace(_name + "_", getattr(_Pr, _name)))

from . import linalg as _L  # noqa: E402

Tensor.cholesky_solve = _L.cholesky_solve
Tensor.cholesky_inverse = _L.cholesky_inverse
Tensor.geqrf, Tensor.orgqr, Tensor.ormqr = _L.geqrf, _L.householder_product, _L.ormqr
Tensor.matrix_power, Tensor.matrix_exp = _L.matrix_power, _L.matrix_exp


# ------------------------------------------------------------------ methods of ember.nn.functional (loaded on call)
def hardshrink(self, lambd=0.5):
    from .nn.functional import activation
    return activation.hardshrink(self, lambd)


def prelu(self, weight):
    from .nn.functional import activation
    return activation.prelu(self, weight)


Tensor.hardshrink = hardshrink
Tensor.prelu = prelu
