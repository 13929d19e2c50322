"""Graph nodes.

`Node` is one recorded operation. It knows where gradients go (`parents`: one edge per input,
`(node, output_index)` for a computed input, `(leaf_tensor, -1)` for a leaf that requires grad,
None otherwise) and what backward needs (saved tensors, checked against in-place changes).

`Primitive` is a Node whose forward works on raw arrays (NumPy or CuPy) and whose backward is written
in Tensor ops, so that gradients are themselves differentiable (double backward). `Function` is the
public torch-style API: static forward(ctx, ...) and backward(ctx, ...) on Tensors.
"""
from __future__ import annotations

import functools
import re
import threading
from typing import Any, Callable

import numpy as np

from .grad_mode import STATE, OFF
from .dispatch import ACTIVE, check_attrs as _check_attrs, mode_open as _mode_open, to_mode as _to_mode
from . import anomaly
from .. import _debug, _memory
from ..backends import run as _backend_run
from ..backends.host import asarray as _host_asarray
from ..backends.meta import MetaArray

__all__ = ["Function", "FunctionCtx", "Node", "Primitive", "once_differentiable"]

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


def _by(vc):
    """' (add_)': the last in-place op recorded on a version counter, for error messages."""
    return f" ({vc[1]})" if vc is not None and len(vc) > 1 else ""


def _edge(t):
    if not t.requires_grad:
        return None
    node = t._node
    return (node, t._out_idx) if node is not None else (t, -1)


class _SavedHooks(threading.local):
    """This thread's `saved_tensors_hooks` (ember.autograd.graph): a stack of (pack, unpack) pairs, the
    innermost last, and the message `disable_saved_tensors_hooks` raises with (None: hooks allowed)."""
    stack: tuple = ()
    disabled: str | None = None


SAVED_HOOKS = _SavedHooks()
# One entry per saved_tensors_hooks block open in any thread: while it is empty (as almost always) saving
# reads this list only, not the threading.local (the trick grad_mode.OFF plays)
HOOKS_OPEN: list = []
_NONE = object()   # a None among the saved tensors, packed


class _Kept:
    """A saved tensor kept without the hooks (a wrapped Python number)."""
    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


def _unpacked(unpack, packed):
    t = unpack(packed)
    if not isinstance(t, _tensor_cls()):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(t).__name__}")
    return t


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


class _NodeName(str):
    """`grad_fn.name`: Ember's name of the op ('Mul'), a str as every message and tool reads it; calling
    it, `grad_fn.name()`, gives torch's style of name ('MulBackward0'), as torch's method does."""
    _torch = ""

    def __call__(self) -> str:
        return self._torch


def _node_name(name: str, torch_name: str) -> _NodeName:
    n = _NodeName(name)
    n._torch = torch_name
    return n


class Node:
    parents = ()
    needs_input_grad = ()
    n_out = 1
    _saved = ()
    _saved_versions = ()
    _out = None           # (array, version counter) of a saved output
    _freed = False
    _hooks = None         # {output index: [hook]} for non-leaf tensors' register_hook
    _post_hooks = None    # [hook(grad_inputs, grad_outputs)]: nn.Module.register_backward_hook's
    _retained = None      # {output index: weakref to the tensor} for retain_grad
    _where = None         # user's source line, recorded in anomaly mode
    _packed = None        # (unpack hook, packed saved tensors) when saved_tensors_hooks were open
    _out_packed = None    # (unpack hook, packed output) likewise, for `saves_output`
    _outs_packed = None   # (unpack hook, {output index: packed output}) likewise, for `multi_output`

    @property
    def name(self) -> _NodeName:
        """'Mul' (a str); `name()` gives torch's 'MulBackward0'."""
        n = type(self).__name__
        return _node_name(n, n + "Backward0")

    def __repr__(self):
        return f"<{self.name}Backward>"

    @property
    def next_functions(self):
        """One (node, output index) per input, as torch's: the node that made that input, an
        `AccumulateGrad` for a leaf that requires grad, or (None, 0) for an input that needs no gradient.
        Walking them from `loss.grad_fn` visits the whole recorded graph."""
        return tuple((None, 0) if e is None else (AccumulateGrad(e[0]), 0) if e[1] < 0 else e
                     for e in self.parents)

    # --- saving for backward -------------------------------------------------------------
    def save_for_backward(self, *tensors):
        if HOOKS_OPEN and SAVED_HOOKS.stack:
            self._pack(tensors)
            return
        self._saved = tensors
        self._saved_versions = tuple(t._vc[0] if t is not None and t._vc else 0 for t in tensors)

    def _pack(self, tensors):
        """Save `tensors` through the innermost saved_tensors_hooks: the node keeps what pack returns,
        not the tensors (as torch, no in-place check then: the hooks own the values)."""
        pack, unpack = SAVED_HOOKS.stack[-1]
        # a Python number an op made a tensor of (x * 2) is kept as it is: torch saves it as a scalar
        self._packed = (unpack, tuple(_NONE if t is None else _Kept(t) if t._wrapped_number else pack(t)
                                      for t in tensors))
        self._saved = ()

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(_FREED)
        if self._packed is not None:   # each read unpacks again, as torch's
            unpack, packed = self._packed
            return tuple(None if p is _NONE else p.tensor if p.__class__ is _Kept else _unpacked(unpack, p)
                         for p in packed)
        for t, v in zip(self._saved, self._saved_versions):
            if t is not None and (t._vc[0] if t._vc else 0) != v:
                if t._custom_view is not None:
                    from ..ops.inplace import custom_view_error
                    raise RuntimeError(custom_view_error(
                        t._custom_view, "its base or another view of its base has been modified inplace"))
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation{_by(t._vc)}: [{t.dtype.name} {tuple(t.shape)}], which is output of "
                    f"{t._node.name + 'Backward' if t._node else 'a leaf'}, is at version "
                    f"{t._vc[0]}; expected version {v} instead (it was saved by {self.name}). "
                    f"Hint: replace the in-place op (a method ending in '_', +=, x[...] = ) by its "
                    f"out-of-place form.")
        return self._saved

    def output(self, i):
        """Output i of a multi-output primitive as a Tensor whose grad_fn is this node (differentiable
        again, no reference cycle)."""
        from .._tensor import Tensor
        if self._freed:
            raise RuntimeError(_FREED)
        if self._outs_packed is not None:
            unpack, packed = self._outs_packed
            arr = _unpacked(unpack, packed[i])._data
        else:
            arr = self._outs[i]
        return Tensor._make(arr, self._device, requires_grad=bool(self.parents), node=self, idx=i)

    def saved_output(self):
        """The forward's output as a Tensor whose grad_fn is this node (no reference cycle)."""
        from .._tensor import Tensor
        if self._freed:
            raise RuntimeError(_FREED)
        if self._out_packed is not None:
            unpack, packed = self._out_packed
            arr = _unpacked(unpack, packed)._data
            return Tensor._make(arr, self._device, requires_grad=bool(self.parents), node=self, idx=0)
        arr, vc, v = self._out
        if vc[0] != v:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation{_by(vc)}: the output of {self.name} is at version {vc[0]}; expected version {v}. "
                f"Hint: use the out-of-place form of that op on this tensor.")
        return Tensor._make(arr, self._device, requires_grad=bool(self.parents), node=self, idx=0)

    def release(self):
        self._saved = ()
        self._packed = self._out_packed = self._outs_packed = None
        self._out = None
        self._outs = None
        self._freed = True

    # --- hooks on the node's outputs (non-leaf tensors) ------------------------------------
    def _add_hook(self, idx, hook):
        if self._hooks is None:
            self._hooks = {}
        self._hooks.setdefault(idx, []).append(hook)


class AccumulateGrad:
    """What `next_functions` shows for a leaf: the step that adds the leaf's gradient into `.grad`."""
    next_functions = ()
    name = _node_name("AccumulateGrad", "torch::autograd::AccumulateGrad")

    def __init__(self, variable):
        self.variable = variable

    def __eq__(self, other):
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)

    def __repr__(self):
        return "<AccumulateGrad>"


class Primitive(Node):
    """A primitive op: `forward(*arrays) -> array` and `backward(grad) -> tuple of grads`.

    Class flags say what backward needs: `saves_inputs` keeps the input Tensors,
    `saves_output` keeps the output array (re-wrapped by `saved_output()`). `elementwise` says the
    output has the broadcast shape of the inputs and the forward does work before it allocates that
    output (softmax reduces first, a scan or a roll walks a view): `apply` then checks that the output
    fits in memory before any work. A plain ufunc needs no flag: NumPy allocates its output first, and a
    MemoryError from any forward becomes Ember's OutOfMemoryError.
    """
    saves_inputs = False
    saves_output = False
    multi_output = False  # forward returns a tuple of arrays (infer: a tuple of (shape, dtype))
    # multi_output: the outputs backward reads with `output(i)` (None: all), what saved-tensor hooks pack
    saved_outputs: tuple[int, ...] | None = None
    differentiable = True
    keeps_dtype = True    # a float output has the first input's dtype (False: Cast)
    elementwise = False   # output has the inputs' broadcast shape: checked to fit before it is made
    cpu_kernel = None     # fn(node, *arrays) run instead of forward on host arrays (cpu.register_kernel)
    # name -> accepted type(s) of each attribute (ember.autograd.dispatch.check_attrs); every primitive
    # declares its own (an annotation only: the base class has none at run time)
    attrs: dict[str, type | tuple[type, ...]]

    @classmethod
    def apply(cls, *inputs, **params):
        """The dispatcher (`ember.autograd.dispatch.dispatch`): run this primitive on `inputs` with
        attributes `params`, recording a node when grad mode is on and an input requires grad."""
        if ACTIVE and _mode_open():   # a dispatch mode is open in this thread: it decides
            return _to_mode(cls, inputs, params)
        node = cls.__new__(cls)
        if params:
            if _debug.LEVEL:   # EMBER_DEBUG: check the attributes against the primitive's `attrs`
                _check_attrs(cls, params)
            node.__dict__.update(params)
        arrays = [t._data for t in inputs]
        if cls.elementwise:
            n = arrays[0].size << 3   # bytes of the output, at most (8 per element; bounds broadcasting)
            if len(arrays) > 1:
                for a in arrays[1:]:
                    n *= a.size
            if n > _memory._LIMIT and arrays[0].__class__ is _ndarray:
                _check_output_fits(node, arrays)
        try:
            if not arrays or arrays[0].__class__ is _ndarray:   # host arrays: one identity test
                kernel = cls.cpu_kernel   # None unless backends.cpu registered a kernel for this class
                if kernel is None:
                    out = node.forward(*arrays)   # the forward is NumPy: no call in between
                else:
                    out = kernel(node, *arrays)
            elif arrays[0].__class__ is _MetaArray:
                out = _infer_meta(node, inputs, arrays)   # device="meta": shape and dtype, no forward
            else:
                out = _backend_run(node, arrays)   # a device's array: its backend runs the primitive
        except MemoryError as e:   # NumPy's (or CuPy's) raw error, as Ember's: op, shape, bytes
            raise _memory.from_memory_error(node.op_name, e, arrays) from None
        if cls.multi_output:
            return _finish_multi(cls, node, inputs, arrays, out)
        if out.__class__ is not _ndarray and isinstance(out, np.generic):
            out = _host_asarray(out)   # NumPy returns scalars from 0-d results; keep arrays
        if arrays and out.dtype is not arrays[0].dtype and cls.keeps_dtype:
            out = _same_dtype(out, arrays[0].dtype)
        if _debug.LEVEL:
            _debug.op(node, arrays, out)
        device = inputs[0]._device
        make = _make_fn
        if (not OFF or STATE.enabled) and cls.differentiable:   # grad mode is on in this thread
            for t in inputs:
                if t.requires_grad:
                    break
            else:
                return make(out, device)
        else:
            return make(out, device)
        if out.dtype.kind not in "fcV":   # as torch: only floating tensors require grad (x.long(), x.bool());
            # "V": bfloat16's NumPy dtype
            return make(out, device)
        node.parents = [((t._node, t._out_idx) if t._node is not None else (t, -1)) if t.requires_grad
                        else None for t in inputs]
        node.needs_input_grad = [t.requires_grad for t in inputs]
        node._device = device
        if cls.saves_inputs:
            node.save_for_backward(*inputs)
        result = make(out, device, True, node, 0)
        if cls.saves_output:
            if HOOKS_OPEN and SAVED_HOOKS.stack:
                pack, unpack = SAVED_HOOKS.stack[-1]
                node._out_packed = (unpack, pack(result))
            else:
                result._vc = vc = [0]
                node._out = (out, vc, 0)
        if anomaly.ENABLED or _debug.LEVEL >= 2:
            anomaly.record(node)
        return result

    @property
    def op_name(self) -> str:
        """'log_softmax' for LogSoftmax: the name error messages give the primitive."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", type(self).__name__).lower()

    def infer(self, *specs):
        """(shape tuple, numpy dtype) of the output for inputs that have only `.shape` and `.dtype`
        (meta tensors, a planner); attributes are `self.<name>` as in forward. Every primitive has one."""
        raise NotImplementedError(f"{self.op_name}: primitive {type(self).__name__} has no infer(), so it "
                                  f"cannot run on device='meta'; add infer(self, *specs) -> (shape, dtype)")


_Assign = None   # ops.inplace.Assign, kept by add_into's first call (ops imports this module)


def add_into(dst, src) -> None:
    """`Assign(op='add')` of `src` into `dst` (the engine's `.grad` accumulation), through the dispatcher.

    The dispatcher's one fast path: with no dispatch mode open in any thread, no CPU kernel registered for
    Assign and two NumPy arrays of one dtype, it makes the same ufunc call `Assign.forward` would
    (`dst += src`) without building a node, which is a third of a small backward's accumulation cost.
    Anything else (a mode to see the call, a device or meta array, a dtype to cast) goes through
    `Assign.apply`."""
    global _Assign
    a, b = dst._data, src._data
    if not ACTIVE and a.__class__ is _ndarray and b.__class__ is _ndarray and a.dtype is b.dtype \
            and _Assign is not None and _Assign.cpu_kernel is None:
        a += b
    else:
        from ..ops.inplace import Assign
        _Assign = Assign
        Assign.apply(dst, src, op="add")


def _same_dtype(out, dt):
    """A float output in its float input's dtype, as torch gives it. NumPy upcasts bfloat16 (ml_dtypes)
    to float32 in matmul and with Python floats; a forward may also compute in float32 on purpose."""
    if out.dtype != dt and out.dtype.kind in "fV" and dt.kind in "fV":
        return out.astype(dt)
    return out


_ndarray = np.ndarray
_MetaArray = MetaArray


def _infer_meta(node, inputs, arrays):
    """The output of `node` on meta inputs: a MetaArray of the shape and dtype its `infer` gives.
    Every input must be on meta (a CPU 0-d scalar has been moved there by the ops layer)."""
    for t, a in zip(inputs, arrays):
        if a.__class__ is not _MetaArray:
            from .._errors import op_error, describe
            raise op_error(node.op_name, f"expected all tensors to be on the same device, but found at "
                                         f"least two devices, meta and {t._device} (inputs: "
                                         f"{', '.join(describe(x) for x in inputs)})")
    if node.multi_output:
        return tuple(_MetaArray(shape, np.dtype(dtype)) for shape, dtype in node.infer(*arrays))
    shape, dtype = node.infer(*arrays)
    dtype = np.dtype(dtype)
    if node.keeps_dtype and arrays:   # the rule apply applies to a forward's output (see _same_dtype)
        dt = arrays[0].dtype
        if dtype != dt and dtype.kind in "fV" and dt.kind in "fV":
            dtype = dt
    return _MetaArray(shape, dtype)


def _finish_multi(cls, node, inputs, arrays, outs):
    """The tensors of a multi-output primitive: one node, `n_out` outputs; the node keeps the output
    arrays (`node.output(i)` re-wraps one for backward). Float outputs take the first input's dtype."""
    dt = arrays[0].dtype if arrays else None
    if cls.keeps_dtype and dt is not None:
        outs = tuple(_same_dtype(o, dt) for o in outs)
    device = inputs[0]._device
    make = _make_fn
    if not (STATE.enabled and cls.differentiable and any(t.requires_grad for t in inputs)):
        return tuple(make(o, device) for o in outs)
    node.parents = [((t._node, t._out_idx) if t._node is not None else (t, -1)) if t.requires_grad else None
                    for t in inputs]
    node.needs_input_grad = [t.requires_grad for t in inputs]
    node._device = device
    node.n_out = len(outs)
    node._out_meta = [(o.shape, _dtype_of(o)) for o in outs]
    node._outs = outs
    if cls.saves_inputs:
        node.save_for_backward(*inputs)
    if anomaly.ENABLED or _debug.LEVEL >= 2:
        anomaly.record(node)
    # integer outputs (LU pivots, an info code) are data, never differentiable: as torch's, they require no grad
    results = tuple(make(o, device, o.dtype.kind in "fV", node, i) for i, o in enumerate(outs))
    if HOOKS_OPEN and SAVED_HOOKS.stack:   # the outputs backward reads go through the hooks instead
        pack, unpack = SAVED_HOOKS.stack[-1]
        read = range(len(outs)) if cls.saved_outputs is None else cls.saved_outputs
        node._outs_packed = (unpack, {i: pack(results[i]) for i in read})
        node._outs = None
    return results


def _dtype_of(a):
    from .. import _dtype
    return _dtype.to_dtype(a.dtype)


def _check_output_fits(node, arrays):
    """Raise OutOfMemoryError before an elementwise primitive allocates an output that cannot fit."""
    shape = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != shape:
            try:
                shape = np.broadcast_shapes(shape, a.shape)
            except ValueError:
                return   # forward raises the broadcast error
    _memory.check(node.op_name, shape, np.dtype(node.__dict__.get("dtype", arrays[0].dtype)))


_make_fn: Callable[..., Any] | None = None   # Tensor._make, set by ember._tensor once the class exists


class FunctionCtx(Node):
    """The `ctx` a custom Function's forward and backward receive (it is the graph node)."""

    def save_for_backward(self, *tensors):
        # kept as given: Function.apply packs them through saved_tensors_hooks once the node is recorded
        self._saved = tensors
        self._saved_versions = tuple(t._vc[0] if t is not None and t._vc else 0 for t in tensors)

    def mark_non_differentiable(self, *tensors):
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value: bool):
        self._materialize = value


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        if name == "Function" and not bases:
            return
        # each Function subclass gets its own node class so grad_fn names read well
        cls._backward_cls = type(name + "Backward", (_CustomNode,), {"_fn": cls})


class Function(metaclass=_FunctionMeta):
    """Define a differentiable operation with its own forward and backward.

    >>> class MyReLU(ember.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x.clamp(min=0)
    ...     @staticmethod
    ...     def backward(ctx, grad_y):
    ...         x, = ctx.saved_tensors
    ...         grad_input = grad_y.clone()
    ...         grad_input[x < 0] = 0
    ...         return grad_input
    >>> y = MyReLU.apply(ember.randn(3, requires_grad=True))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, ...)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """torch 2's split style: a Function that overrides this has a forward without ctx,
        `forward(*args)`, and saves what backward needs here (`inputs`: the forward's arguments, defaults
        filled in; `output`: what forward returned)."""
        raise NotImplementedError("setup_context is not implemented")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        from .grad_mode import no_grad
        ctx = cls._backward_cls() if hasattr(cls, "_backward_cls") else _CustomNode()
        split = cls.setup_context is not Function.setup_context
        if split:   # as torch: the arguments bound to forward's signature, defaults applied
            import inspect
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            if split:
                outs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outs)
            else:
                outs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outs, tuple)
        outs_t = (outs,) if single else outs
        if not (STATE.enabled and any(t.requires_grad for t in tensor_args)):
            return outs
        ctx.parents = tuple(_edge(a) if isinstance(a, Tensor) else None for a in args)
        ctx._device = tensor_args[0]._device if tensor_args else None
        ctx.n_out = len(outs_t)
        ctx._out_meta = [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else ((), None) for o in outs_t]
        non_diff = getattr(ctx, "_non_diff", ())
        dirty = {id(t) for t in getattr(ctx, "_dirty", ())}
        results, views, n_diff = [], [], 0
        for i, o in enumerate(outs_t):
            if not isinstance(o, Tensor):
                results.append(o)
                continue
            if id(o) in dirty:   # modified in place: the input itself now carries this node
                o._node, o._out_idx, o.requires_grad = ctx, i, True
                results.append(o)
                continue
            is_input = any(o is a for a in tensor_args)
            if is_input or o._node is not None:  # returned an input or a tracked tensor: wrap a view
                src, o = o, Tensor._make(o._data, o._device)
                if is_input:   # a view of the input, as torch's: one version counter for both
                    o._vc = src._get_vc()
            if id(outs_t[i]) in non_diff or not o.dtype.is_floating_point:
                results.append(o)
                continue
            o.requires_grad, o._node, o._out_idx = True, ctx, i
            n_diff += 1
            if is_input:
                views.append(o)
            results.append(o)
        for o in views:   # torch forbids changing them in place (ember.ops.inplace.check_leaf says why)
            o._custom_view = (cls.__name__, o._out_idx, n_diff > 1)
        if HOOKS_OPEN and SAVED_HOOKS.stack and ctx._saved:   # as torch: packed once the graph is recorded
            ctx._pack(ctx._saved)
        if anomaly.ENABLED:
            anomaly.record(ctx)
        return results[0] if single else tuple(results)


class _CustomNode(FunctionCtx):
    _fn = Function

    @property
    def name(self) -> _NodeName:
        n = self._fn.__name__
        return _node_name(n, n + "Backward")   # torch names a custom Function's node 'MyFnBackward'

    def backward(self, *grads):
        if self._freed:
            raise RuntimeError(_FREED)
        # contiguous, as torch's kernels give them in practice: a backward written for torch views them
        grads = tuple(g.contiguous() if g is not None and not g.is_contiguous() else g for g in grads)
        out = self._fn.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n_in = len(self.parents)
        if len(out) < n_in:
            raise RuntimeError(f"function {self.name}.backward returned {len(out)} gradients, "
                               f"expected {n_in} (one per forward input; None for non-tensors)")
        return out[:n_in]


class _DelayedError(Function):
    """What once_differentiable's outputs hang from: differentiating them again raises."""

    @staticmethod
    def forward(ctx, *xs):
        return xs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(fn):
    """Decorate a custom Function's backward written for one differentiation only: it runs without
    recording a graph, and its results, when they would need one (create_graph=True), raise if
    differentiated again (torch.autograd.function.once_differentiable)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        from .._tensor import Tensor
        from .grad_mode import no_grad
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not STATE.enabled or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        stand_ins = [o.detach().requires_grad_() if isinstance(o, Tensor) else o for o in outs]
        wrapped = _DelayedError.apply(*stand_ins)
        return wrapped if isinstance(outputs, tuple) else wrapped[0]
    return wrapper
