"""`Parameter`: a Tensor that a Module registers as one of its weights; `UninitializedParameter` and
`UninitializedBuffer`: placeholders of lazy modules (nn.LazyLinear ...) whose shape is not known yet."""
from __future__ import annotations

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin",
           "is_lazy"]



def to_args(args, kwargs):
    """(dtype, device) from the arguments of `.to(...)`: a tensor (its dtype and device), a dtype, a
    device, or `dtype=` / `device=` keywords; None for what is not given."""
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif a is not None:
            device = a
    return dtype, device

class Parameter(Tensor):
    """A leaf Tensor that requires grad (by default) and that Modules collect in `parameters()`.

    >>> p = ember.nn.Parameter(ember.zeros(2))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """
    _is_param = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        p = Tensor.__new__(cls)
        p._data, p._device = data._data, data._device   # shares memory with `data`, as torch does
        p._vc = data._get_vc()
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_param, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._make(self._data.copy(), self._device), self.requires_grad)
        if self.grad is not None:
            p.grad = Tensor._make(self.grad._data.copy(), self.grad._device)
        memo[id(self)] = p
        return p


def _rebuild_param(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # `isinstance(t, Buffer)` holds for the tensors Buffer(...) marked: they stay plain Tensors
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a buffer: assigned to a Module attribute, it is registered as one (in `buffers()`,
    and in `state_dict()` unless `persistent=False`), as torch.nn.Buffer. The result is a plain Tensor
    sharing `data`'s memory (detached, keeping its requires_grad), with `persistent` set on it.

    >>> m = nn.Module()
    >>> m.steps = nn.Buffer(ember.zeros(1))
    >>> m.cache = nn.Buffer(ember.zeros(2), persistent=False)
    >>> [n for n, _ in m.named_buffers()], list(m.state_dict())
    (['steps', 'cache'], ['steps'])
    """
    persistent: bool    # set on the tensors Buffer(...) returns, which isinstance(t, Buffer) then accepts
    _is_buffer: bool

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent  # type: ignore[attr-defined]  # a plain Tensor marked as a Buffer (_BufferMeta)
        t._is_buffer = True  # type: ignore[attr-defined]
        return t


class UninitializedTensorMixin:
    """A tensor with a dtype and a device but no shape yet: `materialize(shape)` gives it data, in place, and
    turns it into `cls_to_become` (so an optimizer made before keeps the same object, as torch's).

    The empty array it holds lives in `__dict__["_data"]`, behind the `_data` property below: every op
    reads `_data`, so using the tensor before it is materialized raises torch's error instead of computing
    on an empty array. After `materialize` the class is the plain one, whose `_data` is the instance's."""
    cls_to_become: type = Tensor
    _device: _device_cls
    requires_grad: bool

    @property
    def _data(self):
        raise ValueError(f"Attempted to use an uninitialized parameter ({type(self).__name__}). This error "
                         f"happens when you are using a `LazyModule` or explicitly manipulating "
                         f"`ember.nn.{type(self).__name__}` objects. When using LazyModules Call `forward` "
                         f"with a dummy batch to initialize the parameters before calling ember functions")

    @_data.setter
    def _data(self, value):
        self.__dict__["_data"] = value

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_np(self.__dict__["_data"].dtype)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor data of `shape` (uninitialised memory; the module's reset_parameters fills it)
        on its device and dtype (or those given), and make it a `cls_to_become`."""
        from ..ops.creation import empty
        arr = empty(*tuple(shape), device=self._device if device is None else device,
                    dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become
        self._data, self._device = arr._data, arr._device

    def _converted(self, **kw):
        """A new uninitialized tensor of this class on another device or dtype (Module.to on a lazy module)."""
        raw = Tensor._make(self.__dict__["_data"], self._device).to(**kw)
        return type(self)(self.requires_grad, raw.device, raw.dtype)

    def to(self, *args, **kwargs):
        dtype, device = to_args(args, kwargs)
        kw = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
        return self._converted(**kw) if kw else self

    def float(self):
        return self.to(_dtype.float32)

    def double(self):
        return self.to(_dtype.float64)

    def half(self):
        return self.to(_dtype.float16)

    def bfloat16(self):
        return self.to(_dtype.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad, str(self._device), self.dtype))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self._device, self.dtype)
        return memo[id(self)]


def is_lazy(t) -> bool:
    """Whether `t` is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(t, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers at its first forward; it has a dtype and a device,
    and using it before raises (run a forward with a dummy batch first).

    >>> p = ember.nn.UninitializedParameter()
    >>> p
    <UninitializedParameter>
    >>> p.materialize((2, 3)); type(p).__name__, p.shape
    ('Parameter', (2, 3))
    """
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from ..ops.creation import empty
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer (a lazy BatchNorm's running_mean) whose shape is inferred at the first forward; becomes a
    plain Tensor when materialized.

    >>> b = ember.nn.UninitializedBuffer()
    >>> b.materialize((4,)); type(b).__name__, b.shape
    ('Tensor', (4,))
    """
    cls_to_become = Tensor
    persistent: bool

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        from ..ops.creation import empty
        data = empty(0, device=device, dtype=dtype)
        t = Tensor.__new__(cls)
        t._data, t._device = data._data, data._device
        t.persistent = persistent
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass
