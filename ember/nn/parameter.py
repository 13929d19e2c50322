"""`Parameter`: a Tensor that a Module registers as one of its weights."""
from __future__ import annotations

from .._tensor import Tensor

__all__ = ["Parameter"]


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
