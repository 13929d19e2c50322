"""`Variable`: torch's deprecated alias of Tensor (torch.autograd.Variable), kept so old code ports."""
from __future__ import annotations

import warnings

from .._tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    """Every Tensor is a Variable (`isinstance(t, Variable)`), and calling Variable makes a Tensor."""

    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        # a new leaf sharing data's memory (a plain Tensor also for a Parameter), as torch's
        return data.detach().requires_grad_(bool(requires_grad))


class Variable(metaclass=_VariableMeta):
    """Deprecated: `Variable(t, requires_grad=False)` returns `t.detach()` (the same memory) as a new
    leaf Tensor with `requires_grad` set, and `isinstance(t, Variable)` is true of every Tensor.

    >>> v = ember.autograd.Variable(ember.ones(2), requires_grad=True)
    >>> type(v).__name__, v.requires_grad, v.is_leaf, isinstance(v, ember.autograd.Variable)
    ('Tensor', True, True, True)
    """
