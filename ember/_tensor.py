"""`ember.Tensor`: an n-d array on a device, with autograd.

A Tensor holds a raw array (`_data`: NumPy on CPU, CuPy on CUDA) and its device. Tensors computed
from others that require grad point at the graph node that made them (`grad_fn`). Views share a
version counter with their base, so autograd can tell when a saved value was changed in place.

Most methods are the functions of `ember.ops` bound here; see `ember/ops/`.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _dtype
from .backends import host
from ._device import device as _device_cls, CPU

__all__ = ["Tensor"]

# The trace (jit/capture.py) running now, 0 when none: a tensor made while it runs is stamped `_born`
# with it, so that the capture can tell a tensor the traced call created (`out = ember.zeros(n)`) from
# one that existed before it, when both are still alive after the call.
TRACE_EPOCH = 0

# The number of inference_mode blocks open now in any thread (grad_mode.inference_mode keeps it): while
# it is 0, making a tensor does not read the thread-local inference flag (see Tensor.is_inference).
INFERENCE_OPEN = 0


def _in_inference_mode() -> bool:
    from .autograd.grad_mode import STATE
    return STATE.inference


if TYPE_CHECKING:
    # the methods ember/_tensor_methods.py binds at import time, declared for type checkers only
    # (generated: scripts/tensor_stub.py); at run time Tensor's base is object
    from ._tensor_bound import TensorBoundMethods as _BoundMethods
else:
    _BoundMethods = object


_WARNED_FLOAT: list = []   # float() of a tensor that requires grad warned already (torch: once)


class Tensor(_BoundMethods):
    # defaults live on the class so that making a tensor sets only what differs (a hot path)
    requires_grad = False
    grad: Tensor | None = None
    _node = None
    _out_idx = 0
    _vc = None            # version counter: a one-element list shared with views, made on demand
    _base = None          # the tensor this one is a view of
    _hooks = None
    _post_acc_hooks = None
    _retains_grad = False
    _custom_view = None   # (Function name, output index, several outputs): an input a custom Function returned
    _wrapped_number = False   # made from a Python number by an op (x * 2): torch saves it as a scalar, no hooks
    _is_param = False
    _born = 0             # TRACE_EPOCH when made
    _inference = False    # made under inference_mode
    __array_priority__ = 1000  # numpy scalars/arrays defer to our reflected operators

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        """torch.Tensor's legacy constructor: `Tensor(data)` copies data as the default float dtype,
        `Tensor(2, 3)` allocates a (2, 3) tensor (zero-filled). Prefer `ember.tensor` / `ember.zeros`."""
        from .ops.creation import _to_array
        dtype = dtype if dtype is not None else _dtype.get_default_dtype()
        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            data = host.zeros(args, _dtype.to_dtype(dtype).np)
        else:
            if len(args) > 1:
                raise TypeError(f"Tensor: expected data or integer sizes, got {len(args)} arguments")
            data = args[0] if args else []
        arr, dev = _to_array(data, dtype, device)
        self._data, self._device = arr, dev
        if TRACE_EPOCH:
            self._born = TRACE_EPOCH
        if INFERENCE_OPEN and _in_inference_mode():
            self._inference = True
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make(arr, device, requires_grad=False, node=None, idx=0):
        t = Tensor.__new__(Tensor)
        t._data = arr
        t._device = device
        if TRACE_EPOCH:
            t._born = TRACE_EPOCH
        if INFERENCE_OPEN and _in_inference_mode():
            t._inference = True
        if requires_grad:
            t.requires_grad = True
            t._node = node
            t._out_idx = idx
        return t

    # --- metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._data.shape

    def size(self, dim: int | None = None):
        return self._data.shape if dim is None else self._data.shape[dim]

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_np(self._data.dtype)

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    # torch's device, layout and storage predicates Ember has no such device or layout for: always False
    is_xpu = is_mps = is_mtia = is_ipu = is_maia = is_vulkan = is_xla = property(lambda self: False)
    is_mkldnn = is_sparse = is_sparse_csr = is_quantized = is_nested = property(lambda self: False)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return self._node

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_inference(self) -> bool:
        """Whether this tensor was made inside `ember.inference_mode()` (torch's inference tensors).

        >>> with ember.inference_mode():
        ...     y = ember.ones(2) * 2
        >>> y.is_inference(), ember.ones(2).is_inference()
        (True, False)
        """
        return self._inference

    def stride(self, dim: int | None = None):
        s = tuple(st // self._data.itemsize for st in self._data.strides)
        return s if dim is None else s[dim]

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def data_ptr(self) -> int:
        if isinstance(self._data, np.ndarray):
            return self._data.ctypes.data
        return self._data.data.ptr

    @property
    def _version(self) -> int:
        return self._vc[0] if self._vc else 0

    def _get_vc(self):
        if self._vc is None:
            self._vc = [0]
        return self._vc

    def _bump_version(self, op: str | None = None) -> None:
        """Count an in-place change; `op` (e.g. 'add_') is kept so autograd's error can name it."""
        vc = self._get_vc()
        vc[0] += 1
        if op is not None:
            vc[1:] = [op]

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    # --- autograd -------------------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_: you can only change requires_grad flags of leaf "
                               "variables; use detach() to get a tensor that does not require grad")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(f"requires_grad_: only Tensors of floating point dtype can require "
                               f"gradients, got {self.dtype.name}")
        self.requires_grad = requires_grad
        return self

    def detach(self) -> "Tensor":
        """A tensor sharing this one's data, cut from the graph."""
        t = Tensor._make(self._data, self._device)
        t._vc = self._get_vc()
        t._base = self._base if self._base is not None else self
        return t

    def detach_(self) -> "Tensor":
        self._node = None
        self.requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        return self.detach()

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data
        self._device = value._device

    def retain_grad(self) -> None:
        if self._node is None:
            return
        if self._node._retained is None:
            self._node._retained = {}
        self._node._retained[self._out_idx] = weakref.ref(self)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new grad."""
        if not self.requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                               "require gradient")
        if self._node is not None:
            self._node._add_hook(self._out_idx, hook)
            hooks, key = self._node._hooks[self._out_idx], hook
        else:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            hooks, key = self._hooks, hook
        return _RemovableHandle(hooks, key)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(self)` during backward as soon as this leaf's `.grad` is final (accumulated),
        while backward goes on with the rest of the graph (data-parallel training starts its
        all-reduce there). The hook returns None; it may change `self.grad` in place. As torch's."""
        if not self.requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on a tensor "
                               "that doesn't require gradient")
        if self._node is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks cannot be "
                               "registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return _RemovableHandle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (see ember.autograd.backward)."""
        _autograd.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    # --- conversion -------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self.requires_grad and not force:
            raise RuntimeError("numpy: can't call numpy() on a Tensor that requires grad; "
                               "use tensor.detach().numpy()")
        if self._device.type != "cpu":
            if not force:
                raise TypeError(f"numpy: can't convert {self._device} tensor to numpy; "
                                f"use tensor.cpu() to copy it to host memory first")
            return self.cpu()._data
        if READ_HOOKS:
            _value_read(self, "numpy", self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self.detach().cpu()._data
        if READ_HOOKS:
            _value_read(self, "numpy", a)
        return a if dtype is None else a.astype(dtype)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"item: a Tensor with {self._data.size} elements cannot be converted "
                               f"to a Python scalar")
        v = self.cpu()._data.reshape(()).item() if self._device.type != "cpu" \
            else self._data.reshape(()).item()
        if READ_HOOKS:
            _value_read(self, "item", v)
        return v

    def tolist(self):
        v = host.asarray(self.detach().cpu()._data).tolist() if self.dtype.name != "bfloat16" \
            else self.detach().cpu()._data.astype(np.float32).tolist()
        if READ_HOOKS:
            _value_read(self, "tolist", v)
        return v

    def __float__(self):
        if self.requires_grad and not _WARNED_FLOAT:   # torch 2.13 warns once per process (not for item())
            import warnings
            _WARNED_FLOAT.append(True)
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                          "behavior.\nConsider using tensor.detach() first.", UserWarning, stacklevel=2)
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} elements is ambiguous")
        return bool(self.item())

    def __index__(self):
        if self.dtype.category != 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __dlpack__(self, stream=None, **kwargs):
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __repr__(self):
        from ._print import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return object.__format__(self, "") if not spec else format(repr(self), spec)

    def __reduce_ex__(self, protocol):
        # pickling (for DataLoader workers): the data, as a host array, and the flags
        return (_rebuild, (self.detach().cpu()._data, str(self._device), self.requires_grad))

    def share_memory_(self) -> "Tensor":
        """Move this CPU tensor's data into shared memory, in place (a no-op if it is there already, or if the
        tensor is not on the CPU); returns self. A process forked after this, or one that receives the tensor
        through `ember.multiprocessing`, reads and writes the same memory (torch's Hogwild pattern).

        >>> t = ember.zeros(3)
        >>> t.share_memory_() is t, t.is_shared()
        (True, True)
        """
        from .utils.data._shm import share_tensor_
        return share_tensor_(self)

    def is_shared(self) -> bool:
        """Whether this tensor's data lives in shared memory (`share_memory_`, or received through
        `ember.multiprocessing`). CUDA tensors answer False (torch: True; Ember cannot send them between
        processes without a copy)."""
        if self._device.type != "cpu":
            return False
        from .utils.data._shm import shared_map_of
        return shared_map_of(self._data) is not None

    def pin_memory(self) -> "Tensor":
        from . import backends
        if self._device.type != "cpu":
            raise RuntimeError(f"pin_memory: cannot pin '{self._device}' memory, only CPU tensors")
        return Tensor._make(backends.get("cpu").pin_memory(self._data), self._device)

    def is_pinned(self) -> bool:
        from . import backends
        return self._device.type == "cpu" and backends.get("cpu").is_pinned(self._data)


from . import autograd as _autograd  # noqa: E402
from .autograd import function as _function  # noqa: E402

_function._make_fn = Tensor._make


def _rebuild(arr, dev, requires_grad):
    if dev == "cpu":
        t = Tensor._make(arr, CPU)
    else:
        from .ops.creation import tensor
        t = tensor(arr, device=dev)
    if requires_grad:
        t.requires_grad = True
    return t


class _RemovableHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


# Value reads (item, tolist, numpy, __array__; bool/int/float go through item): each hook is called as
# hook(tensor, kind, value). The compiler's tracer records them as guards (ember/jit/capture.py).
READ_HOOKS: list = []


def _value_read(t, kind, value):
    for hook in READ_HOOKS:
        hook(t, kind, value)
