"""`ember.nn.utils.prune`: torch's pruning by masks. Pruning `module.weight` moves the parameter to
`weight_orig`, keeps a `weight_mask` buffer and makes `weight` a plain attribute `weight_orig * weight_mask`,
recomputed by a forward pre-hook (the pruning method itself). Pruning the same tensor again prunes only what
is left (a `PruningContainer` combines the masks); `remove` makes the pruned tensor the parameter again.

>>> import ember.nn.utils.prune as prune
>>> lin = nn.Linear(4, 3)
>>> lin = prune.l1_unstructured(lin, "weight", amount=0.5)   # the 6 smallest |w| set to 0
>>> int((lin.weight == 0).sum())
6
>>> lin = prune.remove(lin, "weight")                       # a Parameter again, with its zeros
"""
from __future__ import annotations

import numbers

from ... import random
from ...ops import creation, math, shape
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod:
    """A pruning method: `compute_mask(t, default_mask)` gives the new mask; an instance is the forward
    pre-hook that recomputes `module.<name>` from `<name>_orig` and `<name>_mask`."""
    PRUNING_TYPE: str | None = None   # "unstructured", "structured" (with a `dim`) or "global"
    _tensor_name: str | None = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        raise NotImplementedError(f"{type(self).__name__}.compute_mask")

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        old_method = None
        for key, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                if old_method is not None:
                    raise ValueError(f"prune: more than one pruning hook for parameter '{name}' of {module}")
                old_method = hook
                del module._forward_pre_hooks[key]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        elif old_method is not None:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(f"prune: importance_scores of shape {tuple(importance_scores.shape)} should "
                             f"match the shape {tuple(orig.shape)} of parameter '{name}'")
        if old_method is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = creation.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """`t` times the mask computed from `importance_scores` (default `t`)."""
        scores = t if importance_scores is None else importance_scores
        default_mask = creation.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor; each new one prunes only the part still kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):   # an iterable of methods
            args = tuple(args[0])
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        n_dims = t.ndim
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1                    # prune among the entries still kept
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple([slice(None)] * dim + [keep_channel])   # ... among the channels still kept
        elif method.PRUNING_TYPE == "global":
            slc = tuple([slice(None)] * n_dims)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask = default_mask.clone()
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` (a fraction, or a count) of the entries, chosen at random."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, default_mask, lambda k: shape.topk(random.rand_like(t).reshape(-1), k=k))

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` (a fraction, or a count) entries of smallest absolute value."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, default_mask,
                                  lambda k: shape.topk(t.abs().reshape(-1), k=k, largest=False))

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        n_prune = _n_to_prune(self.amount, size)
        if n_prune == 0:
            return default_mask
        prob = random.rand(size)
        keep = prob <= shape.kthvalue(prob, k=size - n_prune).values
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        n_prune = _n_to_prune(self.amount, size)
        if n_prune == 0:
            return default_mask
        dim = self.dim + t.ndim if self.dim < 0 else self.dim
        norm = math.norm(t, p=self.n, dim=[d for d in range(t.ndim) if d != dim])   # (size,)
        keep = shape.topk(norm, k=size - n_prune, largest=True).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"prune.custom_from_mask: mask of shape {tuple(self.mask.shape)} for a tensor of "
                             f"shape {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _n_to_prune(amount, size):
    # a fraction rounds half to even, as Python's round (torch's rule)
    n = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if n > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return n


def _unstructured_mask(amount, default_mask, pick):
    """default_mask with the entries `pick(k)` chooses (a topk result over the flattened tensor) set to 0,
    k the count `amount` asks for."""
    n_prune = _n_to_prune(amount, default_mask.numel())
    mask = default_mask.clone()
    if n_prune != 0:
        mask.view(-1)[pick(n_prune).indices] = 0
    return mask


def _validate_structured(t, dim):
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {tuple(t.shape)} with {t.ndim} dims")
    if dim >= t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _channel_mask(t, dim, keep):
    mask = creation.zeros_like(t)
    mask[tuple([slice(None)] * dim + [keep])] = 1
    return mask


def identity(module, name):
    """Registers the pruning machinery on `module.<name>` without pruning anything."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the (module, name) pairs together: `pruning_method` (unstructured) picks among all their
    entries at once (the smallest |w| over every layer for L1Unstructured)."""
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured: importance_scores must be None or a dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", creation.ones_like(getattr(m, n)))
                                         for m, n in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for m, n in parameters:
        p = getattr(m, n)
        custom_from_mask(m, n, mask=final_mask[start:start + p.numel()].view_as(p))
        start += p.numel()


def remove(module, name):
    """Makes the pruned `module.<name>` its parameter again (zeros kept), dropping `_orig`, `_mask` and the hook."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether any submodule of `module` carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())
