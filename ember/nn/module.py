"""`Module`: the base class of every layer and model.

Parameters, buffers and submodules are registered when assigned as attributes, so that
`parameters()`, `state_dict()`, `to()` and `train()` find them by walking the tree of modules.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Callable, Iterator

from .._tensor import Tensor
from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..autograd import profile_hooks as _profile_hooks
from ..autograd.profile_hooks import OPEN as _PROFILING
from .parameter import Buffer, Parameter, is_lazy, to_args

__all__ = ["Module"]

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _Handle:
    """Returned by register_*_hook; `remove()` takes the hook out again."""
    _next_id = 0

    def __init__(self, hooks: dict):
        self.hooks_dict = hooks
        self.id = _Handle._next_id
        _Handle._next_id += 1

    def remove(self):
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    return lines[0] if len(lines) == 1 else "\n".join([lines[0]] + [" " * n + ln for ln in lines[1:]])


class Module:
    """Base class for all neural network modules: subclass it, set layers in `__init__`, define `forward`.

    >>> class Net(ember.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = ember.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> Net()(ember.randn(3, 4)).shape
    (3, 2)
    """
    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()

    # --- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or _PROFILING):
            return self.forward(*args, **kwargs)   # the fast path: no hooks, no bookkeeping
        if _PROFILING:   # ember.profiler is open: the call runs inside a scope named after the module
            return _profile_hooks.module_call(self, args, kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        with_kwargs = self.__dict__.get("_forward_pre_hooks_with_kwargs", ())
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {out}.")
                    args, kwargs = out
                continue
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        result = self.forward(*args, **kwargs)
        for hid, hook in list(self._forward_hooks.items()):
            out = hook(self, args, kwargs, result) if hid in self._forward_hooks_with_kwargs \
                else hook(self, args, result)
            if out is not None:
                result = out
        return result

    def _forward_unimplemented(self, *args):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _forward_unimplemented

    def register_forward_pre_hook(self, hook, *, with_kwargs: bool = False) -> _Handle:
        """`hook(module, args)` runs before forward; it may return new args. With `with_kwargs`,
        `hook(module, args, kwargs)` may return a new `(args, kwargs)`."""
        h = _Handle(self._forward_pre_hooks)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self.__dict__.setdefault("_forward_pre_hooks_with_kwargs", set()).add(h.id)
        return h

    def register_forward_hook(self, hook, *, with_kwargs: bool = False) -> _Handle:
        """`hook(module, args, output)` runs after forward; it may return a new output."""
        h = _Handle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
        return h

    # --- registration --------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._discard(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(ember.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._discard(name)
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(ember.nn.Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer):   # nn.Buffer(t, persistent=...): registered as one
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(ember.nn.Buffer, ember.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name):
        d = self.__dict__
        d.pop(name, None)
        for k in ("_parameters", "_buffers", "_modules"):
            d[k].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            store = d.get(k)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if name in d[k]:
                del d[k][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{kind} name can't contain \".\" or be empty, got {name!r}")
        if hasattr(self, name) and name not in self._parameters and name not in self._buffers \
                and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(ember.nn.Parameter or None required)")
        if param is not None and param._node is not None:
            raise ValueError(f"cannot assign non-leaf Tensor to parameter '{name}'; wrap its detached "
                             f"value in a Parameter: nn.Parameter(t.detach())")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (BatchNorm's running_mean); in state_dict
        unless `persistent=False`."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(ember.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        mod = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # --- iteration -----------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, v in m.__dict__[store].items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """Every parameter and persistent buffer by dotted name ('0.weight'), detached."""
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:   # a lazy module's UninitializedParameter goes in as it is (torch's)
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def _state_slots(self):
        """(key, owning module, kind, name) for every entry that state_dict would hold."""
        out = []
        for prefix, m in self.named_modules(remove_duplicate=False):
            pre = prefix + "." if prefix else ""
            for name, p in m._parameters.items():
                if p is not None:
                    out.append((pre + name, m, "_parameters", name))
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    out.append((pre + name, m, "_buffers", name))
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from `state_dict` into this module's parameters and buffers.

        Every key is checked before anything is copied: with `strict`, missing or unexpected keys
        raise; a shape mismatch always raises. On error the module is left unchanged.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        slots = self._state_slots()
        with no_grad():   # a lazy module's placeholders take the checkpoint's shapes (torch's _lazy_load_hook)
            for key, m, kind, name in slots:
                cur = m.__dict__[kind][name]
                if is_lazy(cur) and key in state_dict and not is_lazy(state_dict[key]):
                    cur.materialize(tuple(state_dict[key].shape))
        expected = {k for k, *_ in slots}
        missing = [k for k, *_ in slots if k not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in expected]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        for key, m, kind, name in slots:
            if key not in state_dict:
                continue
            cur = m.__dict__[kind][name]
            src = state_dict[key]
            if is_lazy(cur):   # and src too (a lazy checkpoint into a lazy module): nothing to copy
                continue
            shape = tuple(src.shape) if hasattr(src, "shape") else ()
            if shape != tuple(cur.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {shape} from checkpoint, "
                              f"the shape in current model is {tuple(cur.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for key, m, kind, name in slots:
                if key not in state_dict:
                    continue
                src = state_dict[key]
                cur = m.__dict__[kind][name]
                if is_lazy(cur):
                    continue
                if not isinstance(src, Tensor):
                    src = _to_ember(src)
                if assign:
                    if kind == "_parameters":
                        m._parameters[name] = Parameter(src.detach(), cur.requires_grad)
                    else:
                        m._buffers[name] = src.detach()
                else:
                    cur.copy_(src)
        return _IncompatibleKeys(missing, unexpected)

    # --- modes and conversions -------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call `fn` on every submodule (children first) and then on self, e.g. to initialise weights."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, floating_only=False):
        with no_grad():
            for m in self.modules():
                for store in ("_parameters", "_buffers"):
                    for name, t in m.__dict__[store].items():
                        if t is None or (floating_only and not t.dtype.is_floating_point):
                            continue
                        new = fn(t)
                        if new is t:
                            continue
                        if is_lazy(t):   # no data yet: only its dtype and device change (torch's)
                            t.__dict__["_data"], t._device = new.__dict__["_data"], new._device
                            continue
                        t._data, t._device = new._data, new._device   # in place: optimizers keep their refs
                        if t.grad is not None:
                            g = fn(t.grad)
                            t.grad._data, t.grad._device = g._data, g._device
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers: m.to('cuda'), m.to(ember.float64).
        Only floating-point tensors change dtype."""
        dtype, device = to_args(args, kwargs)
        if dtype is not None and not _dtype.to_dtype(dtype).is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")

        def convert(t):
            out = t
            if device is not None:
                out = out.to(device=device)
            if dtype is not None and out.dtype.is_floating_point:
                out = out.to(dtype)
            return out
        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move parameters and buffers to `device` without copying their values (uninitialised
        memory), as torch: the way off device='meta', where tensors have no values to copy."""
        from ..ops.creation import empty

        def convert(t):
            return empty(*t.shape, dtype=t.dtype, device=device)
        return self._apply(convert)

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def float(self) -> "Module":
        return self._apply(lambda t: t.float(), floating_only=True)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double(), floating_only=True)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half(), floating_only=True)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16(), floating_only=True)

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: t.to(dst_type), floating_only=True)

    # --- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(list(super().__dir__()) + list(self._parameters) + list(self._buffers)
                          + list(self._modules)))

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __getstate__(self):
        return self.__dict__


def _to_ember(value) -> Tensor:
    """Accept NumPy arrays and torch tensors in load_state_dict (weights from the ecosystem)."""
    from ..ops.creation import tensor
    if hasattr(value, "detach") and hasattr(value, "cpu"):   # a torch tensor
        value = value.detach().cpu().numpy()
    return tensor(value)
