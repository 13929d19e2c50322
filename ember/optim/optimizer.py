"""The Optimizer base class: parameter groups, per-parameter state, state dicts.

Each optimizer is a thin class over a pure step function (`sgd`, `adam`, ...) that takes lists of
Tensors (parameters, gradients, state) and updates them in place with Tensor ops, under no_grad: every
computation is a primitive call and every write an `Assign` (the in-place `_` methods), so a dispatch
mode (`ember.utils.dispatch.PrimitiveLog`) sees the whole step and can replay it. The class only gathers
the tensors of one parameter group, creates the state the first time a parameter is seen and calls the
function; the in-place writes bump the parameters' versions, so autograd notices the change.

Data that changes between steps is a tensor input of the update, never a constant baked into it: the
step count is a 0-d tensor per parameter (`state["step"]`, as torch's capturable optimizers keep it) and
bias corrections are computed from it with Tensor ops; the learning rate is a 0-d tensor per parameter
group (see `Optimizer.lr_tensor`).

torch's implementation choices (`foreach`, `fused`, `capturable`) are accepted with torch's names, positions
and defaults and kept in the param groups; they change no number, since Ember's update is already one
fused primitive per parameter. `capturable=True` works on every device (torch's asserts CUDA at step()):
the step count and lr already live on the parameter's device. `differentiable=True` (differentiating
through the step) is not supported: the constructor raises NotImplementedError.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Callable, Iterable

from ember import _dtype
from ember._errors import op_error
from ember._tensor import Tensor
from ember.autograd.grad_mode import enable_grad, no_grad
from ember.ops import creation as _C
from ember.ops.inplace import assign

__all__ = ["Optimizer", "required"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()  # marks a default that every param group must set (SGD's lr)


# the values torch's `__setstate__` gives the options that an older state dict's groups lack (they were added
# after the first releases); a missing option not named here takes the optimizer's own default
_LOADED_DEFAULTS = {"maximize": False, "foreach": None, "fused": None, "capturable": False,
                    "differentiable": False, "decoupled_weight_decay": False}


class Optimizer:
    """Base class of all optimizers.

    Subclasses pass their defaults (a dict of options) and implement `_update_group(group)`, which
    applies one step to the parameters of a group (it runs under no_grad).

    The learning rate: `group["lr"]` stays a Python float, for users and LR schedulers (as torch). The
    update reads it as a 0-d float64 tensor, `self.lr_tensor(group, device)`, kept per group and
    device; when `group["lr"]` differs from the value last written, `step()` writes the new value into
    that same tensor with an in-place `fill_` (one `Assign`). So a logged or captured step takes the rate
    as an input and stays valid after a scheduler changes it; reading the value never syncs a device.

    >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> b = ember.tensor([3.0], requires_grad=True)
    >>> opt = ember.optim.SGD([{"params": [w], "lr": 0.5}, {"params": [b]}], lr=0.25)
    >>> ((w * w).sum() + (b * b).sum()).backward(); opt.step(); w.tolist(), b.tolist()
    ([0.0, 0.0], [1.5])
    """

    _loaded_defaults = _LOADED_DEFAULTS   # see load_state_dict

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        # per-parameter state; Tensors hash by identity, so they key a dict as torch's do
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._lr: dict = {}   # (id(group), device) -> [group, value written, 0-d lr tensor]
        name = type(self).__name__
        if _is_tensor(params):
            raise TypeError(f"{name}: params must be an iterable of Tensors or dicts, but got a "
                            "single Tensor; wrap it in a list: [tensor]")
        if isinstance(params, dict):
            raise TypeError(f"{name}: params must be an iterable of Tensors or dicts, but got a dict; "
                            "pass [dict(params=..., lr=...)] or model.parameters()")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError(f"{name}: got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # -- parameter groups --------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing options take the defaults).

        >>> opt = ember.optim.SGD([ember.zeros(2, requires_grad=True)], lr=0.1)
        >>> opt.add_param_group({"params": [ember.zeros(3, requires_grad=True)], "lr": 1e-3})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.001]
        """
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}.add_param_group: expected a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if _is_tensor(params):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(f"{name}: parameters must be an ordered collection (a list or tuple), "
                            "not a set: the order of a set changes between runs")
        else:
            params = list(params)
        for p in params:
            if not _is_tensor(p):
                raise TypeError(f"{name}: can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if getattr(p, "grad_fn", None) is not None:
                raise ValueError(f"{name}: can't optimize a non-leaf Tensor (shape {tuple(p.shape)}); "
                                 "optimize the leaf it was computed from, or .detach().requires_grad_()")
        group = dict(param_group)
        group["params"] = params
        for key, default in self.defaults.items():
            if default is required and key not in group:
                raise ValueError(f"{name}: parameter group didn't specify a value of required option "
                                 f"{key!r}")
            group.setdefault(key, default)
        if len({id(p) for p in params}) != len(params):
            raise ValueError(f"{name}: a parameter group contains the same parameter twice")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError(f"{name}: some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # -- the training loop -------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters (to None by default, as torch does).

        >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.zero_grad(); w.grad is None
        True
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:   # one Assign of 0 into the gradient's memory (its history, if any, is dropped)
                    if p.grad.grad_fn is not None:
                        p.grad = p.grad.detach()
                    assign(p.grad, value=0, name="zero_")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Apply one update to every parameter that has a gradient; returns what `closure` returns.

        >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.SGD([w], lr=0.25)
        >>> (w * w).sum().backward(); opt.step(); w.tolist()
        [0.5, 0.5]
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def lr_tensor(self, group: dict[str, Any], device) -> Tensor:
        """`group["lr"]` as a 0-d float64 tensor on `device`: the same tensor at every step, rewritten
        in place (`fill_`) only when the group's rate changed since it was last written."""
        key = (id(group), device)
        entry = self._lr.get(key)
        lr = group["lr"]
        if isinstance(lr, Tensor):   # a tensor learning rate (torch allows one): use its value
            lr = lr.item()
        if entry is None or entry[0] is not group:
            entry = self._lr[key] = [group, lr, _C.full((), lr, dtype=_dtype.float64, device=device)]
        elif entry[1] != lr:
            entry[2].fill_(lr)
            entry[1] = lr
        return entry[2]

    # -- state dicts -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in torch's layout: parameters are referred to by their index.

        `{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}`; the tensors in
        "state" are the live state tensors (save the dict, or deep-copy it, to keep a snapshot).

        >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.Adam([w])
        >>> (w * w).sum().backward(); opt.step()
        >>> sd = opt.state_dict(); sorted(sd["state"][0]), sd["param_groups"][0]["params"]
        (['exp_avg', 'exp_avg_sq', 'step'], [0])
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict made by `state_dict()` (ours or one with the same layout).

        Checks that the number of groups and the size of each group match before changing anything;
        state tensors are copied and cast to the dtype and device of their parameter. Options a group of an
        older state dict lacks (`foreach`, `fused`, ...) take the values torch's `__setstate__` gives them.

        >>> w = ember.ones(2, requires_grad=True); opt = ember.optim.Adam([w])
        >>> (w * w).sum().backward(); opt.step()
        >>> w2 = ember.ones(2, requires_grad=True); opt2 = ember.optim.Adam([w2])
        >>> opt2.load_state_dict(opt.state_dict()); opt2.state[w2]["step"]
        tensor(1., dtype=ember.float64)
        """
        name = type(self).__name__
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict or "state" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups'")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the loaded state dict has {len(saved_groups)} "
                             f"parameter groups, but the optimizer has {len(self.param_groups)}")
        for i, (ours, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(ours["params"]) != len(saved["params"]):
                raise ValueError(f"{name}.load_state_dict: parameter group {i} has "
                                 f"{len(saved['params'])} parameters in the loaded state dict, but "
                                 f"{len(ours['params'])} in the optimizer")
        by_index = {}
        for ours, saved in zip(self.param_groups, saved_groups):
            for p, idx in zip(ours["params"], saved["params"]):
                by_index[idx] = p
        saved_state = state_dict["state"]
        unknown = [k for k in saved_state if _as_index(k) not in by_index]
        if unknown:
            raise ValueError(f"{name}.load_state_dict: state for parameter indices {unknown} that "
                             "no parameter group refers to")
        # everything is checked: from here on nothing fails halfway
        new_state = {}
        for key, value in saved_state.items():
            p = by_index[_as_index(key)]
            new_state[p] = {k: _cast_state(v, p, k) for k, v in value.items()}
        new_groups = []
        for ours, saved in zip(self.param_groups, saved_groups):
            group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            for key in ("betas", "etas", "step_sizes"):   # tuples come back from JSON as lists
                if isinstance(group.get(key), list):
                    group[key] = tuple(group[key])
            for key, default in self.defaults.items():   # an older state dict: fill in what it lacks
                if key not in group:
                    group[key] = copy.deepcopy(self._loaded_defaults.get(key, default))
            group["params"] = ours["params"]
            new_groups.append(group)
        self.param_groups[:] = new_groups
        self.state = defaultdict(dict, new_state)
        self._lr = {}   # the old groups' lr tensors: new ones are made for the new groups at the next step


def _is_tensor(x) -> bool:
    # isinstance first: a lazy module's UninitializedParameter is a Tensor whose `_data` raises until its
    # first forward materializes it in place (the optimizer keeps the same object, as torch's)
    return isinstance(x, Tensor) or (hasattr(x, "_data") and hasattr(x, "requires_grad"))


def _as_index(key) -> int:
    # state dicts that went through JSON (ember.save keeps ints, other tools may not) have str keys
    return int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else key


def _cast_state(value, p, key: str):
    """A copy of one state value, on the parameter's device (and dtype, for floating state); the step
    count, a number or a tensor of any dtype (torch's is float32), becomes our 0-d float64 tensor."""
    if key == "step" and (_is_tensor(value) or isinstance(value, (int, float))):
        return step_tensor(p, float(value.item() if _is_tensor(value) else value))
    if _is_tensor(value):
        out = value.detach().clone()
        if out.dtype.is_floating_point and out.dtype != p.dtype:
            out = out.to(p.dtype)
        if out.device != p.device:
            out = out.to(p.device)
        return out
    if isinstance(value, list):
        return [_cast_state(v, p, key) for v in value]
    return copy.deepcopy(value)


def step_tensor(p, value: float = 0.0) -> Tensor:
    """A parameter's step count: a 0-d float64 tensor on its device (float64, so the bias corrections
    computed from it are exactly torch's, which it computes in Python floats, for float64 parameters too)."""
    return _C.full((), value, dtype=_dtype.float64, device=p.device)


def scalar_as(t: Tensor, like: Tensor, cache: dict) -> Tensor:
    """0-d `t` (lr) on `like`'s device and in its dtype, cast once per (dtype, device) in a step."""
    key = (like.dtype, like.device)
    out = cache.get(key)
    if out is None:
        out = cache[key] = t.to(like.device).to(like.dtype)
    return out


def on_device(t: Tensor, like: Tensor) -> Tensor:
    """0-d `t` (lr) on `like`'s device, keeping its dtype (float64): for factors computed with a parameter's
    own step tensor, which lives on that parameter's device."""
    return t if t.device == like.device else t.to(like.device)


def cast_scalar(t: Tensor, like: Tensor) -> Tensor:
    """0-d `t` (a factor computed from a step, in float64) in `like`'s dtype and on its device, as torch
    casts a Python scalar to a tensor's dtype before using it."""
    return t.to(like.device).to(like.dtype)


def scalar_dtype():
    """The dtype of torch's 0-d scalar state (NAdam's mu_product, ASGD's eta and mu): float64 when the
    default dtype is float64, else float32 (torch's `_get_scalar_dtype`); torch rounds these values to it."""
    return _dtype.float64 if _dtype.get_default_dtype() == _dtype.float64 else _dtype.float32


def check_arg(optimizer: str, ok: bool, what: str, value) -> None:
    """Raise `ValueError('SGD: invalid learning rate: -0.1')` unless `ok`."""
    if not ok:
        raise ValueError(f"{optimizer}: invalid {what}: {value}")


def check_implementation(optimizer: str, *, foreach=None, fused=None, differentiable=False) -> None:
    """torch's construction-time checks of the implementation choices (its messages), and Ember's refusal of
    `differentiable=True`; `foreach`, `fused` and `capturable` otherwise change nothing (see the module doc)."""
    if fused:
        if differentiable:
            raise op_error(optimizer, "`fused` does not support `differentiable`")
        if foreach:
            raise op_error(optimizer, "`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise op_error(optimizer, "differentiable=True (differentiating through the optimizer step) is not "
                                  "supported by Ember; its steps update the parameters in place under no_grad",
                       NotImplementedError)


def params_with_grad(group: dict[str, Any]) -> list:
    """The parameters of a group that received a gradient (the others are skipped, as in torch)."""
    return [p for p in group["params"] if p.grad is not None]


def effective_grad(p, g, maximize: bool, weight_decay: float):
    """The gradient a step uses: negated to maximize, plus L2 weight decay (never in place on g)."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    return g


def lerp_(start: Tensor, end: Tensor, weight: float) -> Tensor:
    """start += weight * (end - start), in place, rounded the way torch's lerp_ rounds."""
    diff = end - start   # the one temporary; the in-place ops below write into it
    if weight < 0.5:
        return start.add_(diff.mul_(weight))
    return start.copy_(end - diff.mul_(1 - weight))   # exact at weight == 1


def zeros_state(p, fill: float = 0.0) -> Tensor:
    """A new state tensor shaped like parameter `p`, on its device, filled with `fill`."""
    return _C.full(tuple(p.shape), fill, dtype=p.dtype, device=p.device)
