"""functional_call: run a module with some of its parameters and buffers replaced by given tensors, as
torch.nn.utils.stateless.functional_call (and torch.func.functional_call, ember.func)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from ..._tensor import Tensor
from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """A tensor shared by several names (tied weights) given under one name is used for all of them."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of: dict = {}
    for name, t in named.items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    given = [n for n in parameters_and_buffers if n in tied]
    for name in given:
        names = tied[name]
        if len(names.intersection(given)) > 1 and \
                len({id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             f"Consider using tie_weights=False")
    out = dict(parameters_and_buffers)
    for name in given:
        for other in tied[name]:
            out[other] = parameters_and_buffers[name]
    return out


def _swap_tensor(module: Module, name: str, tensor):
    """Put `tensor` at dotted `name` (a parameter or buffer slot, else an attribute); return what was there."""
    prefix, _, attr = name.rpartition(".")
    try:
        owner = module.get_submodule(prefix)
    except AttributeError:
        return _MISSING
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"functional_call: {name} must be an ember.Tensor, got {type(tensor).__name__}")
    for store in ("_parameters", "_buffers"):
        slots = owner.__dict__[store]
        if attr in slots:
            orig = slots[attr]
            if tensor is _MISSING:
                del slots[attr]
            else:
                slots[attr] = tensor
            return orig
    orig = getattr(owner, attr, _MISSING)
    if tensor is not _MISSING:
        setattr(owner, attr, tensor)
    elif orig is not _MISSING:
        delattr(owner, attr)
    return orig


@contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(untied)), sorted(set(untied) - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors))
    orig = {}
    try:
        for name, t in untied.items():
            orig[name] = _swap_tensor(module, name, t)
        yield
    finally:
        for name, t in orig.items():
            _swap_tensor(module, name, t)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: expected an ember.nn.Module, got {type(module).__name__}")
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None,
                    *, tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with the parameters and buffers named in `parameters_and_buffers` (dotted
    names, as in state_dict) replaced by the given tensors for this call only; gradients flow to those
    tensors. `tie_weights`: a tied weight given under one of its names replaces all of them; `strict`: the
    names must be exactly the module's. A single non-tuple `args` is one positional argument.

    >>> m = ember.nn.Linear(2, 1)
    >>> w = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
    >>> ember.nn.utils.stateless.functional_call(m, w, ember.tensor([[1.0, 2.0]])).tolist()
    [[3.0]]
    """
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
