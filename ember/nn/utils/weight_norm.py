"""weight_norm / remove_weight_norm: the classic hook form (torch.nn.utils.weight_norm).

`weight` is split into a magnitude `weight_g` and a direction `weight_v` (two Parameters); a forward
pre-hook recomputes `weight = weight_v * weight_g / ||weight_v||` before each forward. The newer form is
`ember.nn.utils.parametrizations.weight_norm`.
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...linalg import vector_norm
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over every dim but `dim` (kept as size-1 dims); dim=-1: the norm of all of `v`
    (a 0-d tensor), as torch.norm_except_dim."""
    if dim == -1:
        return vector_norm(v, pow)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    if not others:   # 1-D: the norm of each element alone (an empty dim tuple would mean all of them)
        return vector_norm(v.unsqueeze(-1), pow, dim=-1)
    return vector_norm(v, pow, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """v * (g / ||v||) with the norm over every dim but `dim` (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that weight_norm registers (one per normalized parameter)."""

    def __init__(self, name: str, dim: int | None):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name: str, dim: int | None) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrize `module.<name>` as `<name>_g * <name>_v / ||<name>_v||` (norm over every dim but `dim`;
    dim=None: over all); returns the module.

    >>> m = ember.nn.utils.weight_norm(ember.nn.Linear(20, 40), name="weight")
    >>> m.weight_g.shape, m.weight_v.shape
    ((40, 1), (40, 20))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo weight_norm: `<name>` is a plain Parameter again, with the value it had."""
    return remove_hook(module, WeightNorm, name, "weight_norm")


def remove_hook(module, cls, name, what):
    """Remove the `cls` forward pre-hook of parameter `name` (it restores the plain Parameter)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
