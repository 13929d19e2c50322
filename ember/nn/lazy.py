"""`LazyModuleMixin`: modules whose input size is inferred at their first forward (nn.LazyLinear ...).

A lazy module starts with `UninitializedParameter`s (and `UninitializedBuffer`s). A forward pre-hook runs
`initialize_parameters(*args, **kwargs)` at the first call: it reads the input's feature count, gives the
placeholders their shape in place (`materialize`), and runs the regular module's `reset_parameters`. Then
the hook goes away and the module's class becomes `cls_to_become` (LazyLinear -> Linear), so the module
is from then on exactly the regular one (for `ember.compile`, `ember.summary`, pickling ...). As torch's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..autograd.grad_mode import no_grad
from .parameter import is_lazy

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a Module class: lazy parameters, initialised by the first forward.

    >>> m = ember.nn.LazyLinear(3)
    >>> m.weight
    <UninitializedParameter>
    >>> m(ember.randn(2, 5)).shape, m
    ((2, 3), Linear(in_features=5, out_features=3, bias=True))
    """
    cls_to_become: type | None = None
    _parameters: dict[str, Tensor | None]   # the Module's it is mixed into
    _buffers: dict[str, Tensor | None]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        with no_grad():
            module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")
