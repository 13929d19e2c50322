"""`Module`: the base class of every layer and model.

Parameters, buffers and submodules are registered when assigned as attributes, so that
`parameters()`, `state_dict()`, `to()` and `train()` find them by walking the tree of modules.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from .._tensor import Tensor
from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..autograd import profile_hooks as _profile_hooks
from ..autograd.profile_hooks import OPEN as _PROFILING
from .parameter import Buffer, Parameter, is_lazy, to_args
from . import _backward_hooks as _bw

__all__ = ["Module"]

class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns (torch's repr: '<All keys matched successfully>' when both are empty)."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"

    __str__ = __repr__


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _Handle:
    """Returned by register_*_hook; `remove()` takes the hook out again (and its id out of `extra`: the
    sets that mark a hook `with_kwargs` or `always_call`)."""
    _next_id = 0

    def __init__(self, hooks: dict, extra=()):
        self.hooks_dict = hooks
        self.extra = extra
        self.id = _Handle._next_id
        _Handle._next_id += 1

    def remove(self):
        self.hooks_dict.pop(self.id, None)
        for s in self.extra:
            s.discard(self.id)

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
    _is_full_backward_hook = None   # True: register_full_backward_hook's, False: register_backward_hook's
    _compiled_call = None           # Module.compile()'s CompiledFunction

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
        d["_forward_hooks_always_called"] = set()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    # --- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _PROFILING or self._compiled_call is not None):
            return self.forward(*args, **kwargs)   # the fast path: no hooks, no bookkeeping
        if self._compiled_call is not None:   # Module.compile()
            return self._compiled_call(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call without Module.compile(): what the compiled call traces."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _PROFILING):
            return self.forward(*args, **kwargs)
        if _PROFILING:   # ember.profiler is open: the call runs inside a scope named after the module
            return _profile_hooks.module_call(self, args, kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        called = set()   # the always_call forward hooks that ran (the others run if forward raises)
        result = None
        try:
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
            bw_hook = None
            full = self._is_full_backward_hook is True and self._backward_hooks
            if full or self._backward_pre_hooks:
                bw_hook = _bw.BackwardHook(self, list(self._backward_hooks.values()) if full else [],
                                           list(self._backward_pre_hooks.values()))
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called:
                    called.add(hid)
                out = hook(self, args, kwargs, result) if hid in self._forward_hooks_with_kwargs \
                    else hook(self, args, result)
                if out is not None:
                    result = out
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn(f"For backward hooks to be called, module output should be a Tensor or a "
                                  f"tuple of Tensors but received {type(result)}", stacklevel=3)
                result = bw_hook.setup_output_hook(result)
            if self._backward_hooks and self._is_full_backward_hook is False:   # register_backward_hook
                var = result
                while not isinstance(var, Tensor):
                    var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) \
                        else var[0]
                node = var.grad_fn
                if node is not None:
                    if node._post_hooks is None:
                        node._post_hooks = []
                    node._post_hooks += [_bw.WrappedHook(h, self) for h in self._backward_hooks.values()]
                    _bw.warn_non_full(args, result, node)
            return result
        except Exception:
            for hid, hook in list(self._forward_hooks.items()):
                if hid not in self._forward_hooks_always_called or hid in called:
                    continue
                try:
                    out = hook(self, args, kwargs, result) if hid in self._forward_hooks_with_kwargs \
                        else hook(self, args, result)
                    if out is not None:
                        result = out
                except Exception as e:
                    warnings.warn(f"module forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {e}", stacklevel=3)
            raise

    def _forward_unimplemented(self, *args):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _forward_unimplemented

    # --- hooks ---------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> _Handle:
        """`hook(module, args)` runs before forward; it may return new args. With `with_kwargs`,
        `hook(module, args, kwargs)` may return a new `(args, kwargs)`. `prepend` runs it before the
        hooks registered so far."""
        h = _Handle(self._forward_pre_hooks, (self.__dict__.setdefault("_forward_pre_hooks_with_kwargs", set()),))
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(h.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> _Handle:
        """`hook(module, args, output)` runs after forward; it may return a new output. With `with_kwargs`,
        `hook(module, args, kwargs, output)`. With `always_call` it also runs when forward raises (the
        error is raised again afterwards)."""
        h = _Handle(self._forward_hooks, (self._forward_hooks_with_kwargs, self._forward_hooks_always_called))
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
        if always_call:
            self._forward_hooks_always_called.add(h.id)
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> _Handle:
        """`hook(module, grad_output)` runs when the gradients w.r.t. the module's outputs are computed,
        before the module's own backward; it may return a new grad_output (a tuple, None for non-Tensor
        outputs). As torch's, the module then gets (and its caller receives) views of its tensors,
        which must not be changed in place.

        >>> lin = ember.nn.Linear(3, 2)
        >>> h = lin.register_full_backward_pre_hook(lambda m, g_out: (g_out[0] * 0,))
        >>> lin(ember.ones(1, 3)).sum().backward()
        >>> lin.weight.grad.abs().sum().item()
        0.0
        """
        h = _Handle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend: bool = False) -> _Handle:
        """`hook(module, grad_input, grad_output)` runs once per backward through a call of this module,
        with the gradients w.r.t. its positional inputs and its outputs (tuples; None for non-Tensor ones,
        keyword arguments ignored); it may return a new grad_input. When no input requires grad it runs
        as soon as grad_output is known, with grad_input all None (and a warning), as torch's. The module
        gets (and its caller receives) views of its tensors, which must not be changed in place.

        >>> lin = ember.nn.Linear(3, 2)
        >>> h = lin.register_full_backward_hook(lambda m, g_in, g_out: print(g_in[0].shape, g_out[0].shape))
        >>> lin(ember.ones(4, 3, requires_grad=True)).sum().backward()
        (4, 3) (4, 2)
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        h = _Handle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook) -> _Handle:
        """Deprecated (use register_full_backward_hook): `hook(module, grad_input, grad_output)` on the
        graph node that made the module's (first) output, with that node's input and output gradients.
        For a module of one node (ReLU, Sigmoid) they are the module's; otherwise they are partial, and
        Ember's nodes are not torch's (Ember's Linear is not one addmm), so they can differ from torch's.
        Warns (FutureWarning) where torch does."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single "
                               "Module. Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        h = _Handle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        return h

    def register_state_dict_pre_hook(self, hook) -> _Handle:
        """`hook(module, prefix, keep_vars)` runs at the start of this module's part of `state_dict()`."""
        h = _Handle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook) -> _Handle:
        """`hook(module, state_dict, prefix, local_metadata)` runs after this module's part of
        `state_dict()` (its children included); it may change `state_dict` in place and must return None.

        >>> def drop_bias(module, state_dict, prefix, local_metadata):
        ...     del state_dict[prefix + "bias"]
        >>> lin = ember.nn.Linear(2, 2)
        >>> h = lin.register_state_dict_post_hook(drop_bias)
        >>> list(lin.state_dict())
        ['weight']
        """
        hook._from_public_api = True
        h = _Handle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    def register_load_state_dict_pre_hook(self, hook) -> _Handle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)` runs before this module's part of `load_state_dict` (its children after it); it may
        change `state_dict` (a copy of the caller's) and append to the three lists. `strict` is always
        True there, as torch passes it."""
        h = _Handle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = hook
        return h

    def register_load_state_dict_post_hook(self, hook) -> _Handle:
        """`hook(module, incompatible_keys)` runs after this module and its children are loaded; it may
        change `incompatible_keys.missing_keys` / `.unexpected_keys` in place (which decides whether a
        strict load raises) and must return None.

        >>> lin = ember.nn.Linear(2, 2)
        >>> h = lin.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
        >>> lin.load_state_dict({"weight": ember.zeros(2, 2)})
        <All keys matched successfully>
        """
        h = _Handle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    # --- registration --------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._discard(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(ember.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._discard(name, keep="_modules")
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

    def _discard(self, name, keep):
        # `keep` is the store being assigned to: replacing its entry in place keeps its order (a layer
        # swapped by setattr stays where it was) and lets a loop over named_children() do the swap
        d = self.__dict__
        d.pop(name, None)
        for k in ("_parameters", "_buffers", "_modules"):
            if k != keep:
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

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target` ('bn.running_mean'), as get_parameter for parameters.

        >>> ember.nn.Sequential(ember.nn.BatchNorm1d(2)).get_buffer("0.running_var")
        tensor([1., 1.])
        """
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put `module` at dotted path `target`, replacing the submodule there or (unless `strict`) adding
        it to the parent, which must exist.

        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
        >>> net.set_submodule("1", ember.nn.Tanh())
        >>> net[1]
        Tanh()
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

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
    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to keep non-tensor state in state_dict, under the key
        '<prefix>_extra_state'; the base class's is never called.

        >>> class Counter(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.steps = 3
        ...     def get_extra_state(self):
        ...         return {"steps": self.steps}
        ...     def set_extra_state(self, state):
        ...         self.steps = state["steps"]
        >>> dict(Counter().state_dict())
        {'_extra_state': {'steps': 3}}
        """
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called "
                           "(state_dict calls it only where a subclass overrides it).")

    def set_extra_state(self, state: Any) -> None:
        """Restore what get_extra_state returned (called by load_state_dict where a subclass overrides it)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called "
                           "(load_state_dict calls it only where a subclass overrides it).")

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Every parameter and persistent buffer by dotted name ('0.weight'), detached, and the extra state
        of modules that define get_extra_state; `_metadata` holds each module's version, and the state_dict
        hooks run as torch's (pre-hooks before a module's part, post-hooks after it)."""
        if args:   # torch's deprecated positional form: (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        for name, p in self._parameters.items():
            if p is not None:   # a lazy module's UninitializedParameter goes in as it is (torch's)
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            out = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if out is not None:
                    destination = out
            elif out is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from `state_dict` into this module's parameters and buffers (and extra state).

        Every key is checked before anything is copied: with `strict`, missing or unexpected keys
        raise; a shape mismatch always raises. On error the module is left unchanged, unless a module
        has a load_state_dict post-hook: then, as torch, values are copied first and the post-hooks
        (which may forgive keys) run before the strict check.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)   # the pre-hooks may change it: not the caller's
        if metadata is not None:
            state_dict._metadata = metadata
        post = any(m._load_state_dict_post_hooks for m in self.modules())
        plan: list[tuple[Module, str, str, Tensor]] = []   # (module, kind, name, value): what to copy, once every module has been checked

        def load(module, local, prefix=""):
            meta = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                meta["assign_to_params_buffers"] = assign
            module._plan_load(local, prefix, meta, missing, unexpected, errors, plan)
            if post:
                _copy_plan(plan, assign)
                plan.clear()
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        _copy_plan(plan, assign)
        return _IncompatibleKeys(missing, unexpected)

    def _plan_load(self, state_dict, prefix, local_metadata, missing, unexpected, errors, plan):
        """This module's part of load_state_dict (torch's _load_from_state_dict, without the copy): run the
        pre-hooks, then check each own key; what to copy goes into `plan`."""
        with no_grad():   # a lazy module's placeholders take the checkpoint's shapes (torch's _lazy_load_hook)
            for store in (self._parameters, self._buffers):
                for name, cur in store.items():
                    key = prefix + name
                    if is_lazy(cur) and key in state_dict and not is_lazy(state_dict[key]):
                        cur.materialize(tuple(state_dict[key].shape))
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, True, missing, unexpected, errors)
        own = [(n, "_parameters", p) for n, p in self._parameters.items() if p is not None]
        own += [(n, "_buffers", b) for n, b in self._buffers.items()
                if b is not None and n not in self._non_persistent_buffers_set]
        for name, kind, cur in own:
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            src = state_dict[key]
            if is_lazy(cur):   # and src too (a lazy checkpoint into a lazy module): nothing to copy
                continue
            shape = tuple(src.shape) if hasattr(src, "shape") else ()
            if shape != tuple(cur.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {shape} from checkpoint, "
                              f"the shape in current model is {tuple(cur.shape)}.")
                continue
            plan.append((self, kind, name, src))
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                plan.append((self, "_extra_state", None, state_dict[extra_key]))
            else:
                missing.append(extra_key)
        elif extra_key in state_dict:
            unexpected.append(extra_key)
        names = {n for n, _, _ in own}
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)
                if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in names):
                    unexpected.append(key)

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

    def share_memory(self) -> "Module":
        """Move every parameter and buffer (and any `.grad` they have) into shared memory in place
        (`Tensor.share_memory_`); returns self. Processes forked after this, or sent the module through
        `ember.multiprocessing`, update the same weights: torch's Hogwild training (docs/multiprocessing.md).

        >>> lin = ember.nn.Linear(2, 2).share_memory()
        >>> lin.weight.is_shared()
        True
        """
        tensors = list(self.parameters()) + list(self.buffers())
        if any(is_lazy(t) for t in tensors):
            raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                               "initialize the parameters before calling `module.share_memory()`.")
        for t in tensors:
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with `ember.compile(..., *args, **kwargs)`: `module(x)`
        then runs the compiled call (hooks included, as torch's Module.compile); `forward` is unchanged.

        >>> lin = ember.nn.Linear(3, 2)
        >>> lin.compile()
        >>> lin(ember.ones(4, 3)).shape
        (4, 2)
        """
        from ..jit.compiler import compile as _compile
        self.__dict__["_compiled_call"] = _compile(self._call_impl, *args, **kwargs)

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
        d = self.__dict__   # a module pickled before these existed
        for name in ("_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs"):
            d.setdefault(name, set())
        for name in ("_backward_pre_hooks", "_backward_hooks", "_state_dict_pre_hooks", "_state_dict_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            d.setdefault(name, OrderedDict())

    def __getstate__(self):
        return self.__dict__


def _copy_plan(plan, assign):
    """Copy (or with `assign`, put) the checked values of load_state_dict into their modules."""
    with no_grad():
        for m, kind, name, src in plan:
            if kind == "_extra_state":
                m.set_extra_state(src)
                continue
            cur = m.__dict__[kind][name]
            if not isinstance(src, Tensor):
                src = _to_ember(src)
            if assign:
                if kind == "_parameters":
                    m._parameters[name] = Parameter(src.detach(), cur.requires_grad)
                else:
                    m._buffers[name] = src.detach()
            else:
                cur.copy_(src)


def _to_ember(value) -> Tensor:
    """Accept NumPy arrays and torch tensors in load_state_dict (weights from the ecosystem)."""
    from ..ops.creation import tensor
    if hasattr(value, "detach") and hasattr(value, "cpu"):   # a torch tensor
        value = value.detach().cpu().numpy()
    return tensor(value)
