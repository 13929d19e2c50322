"""SparseAdam: torch's Adam for sparse gradients. Ember has no sparse tensors, so no gradient qualifies."""
from __future__ import annotations

from typing import Any, Iterable

from .optimizer import Optimizer, check_arg, params_with_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam, for code that names it: same arguments and checks, and, as torch does for a
    dense gradient, `step()` raises RuntimeError for every gradient Ember can produce (all are dense).
    Use `ember.optim.Adam`; `nn.Embedding(sparse=True)` gives dense gradients in Ember.

    >>> w = ember.ones(2, requires_grad=True)
    >>> opt = ember.optim.SparseAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    Traceback (most recent call last):
    RuntimeError: SparseAdam does not support dense gradients, please consider Adam instead
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        check_arg("SparseAdam", lr > 0.0, "learning rate", lr)
        check_arg("SparseAdam", eps > 0.0, "epsilon value", eps)
        check_arg("SparseAdam", 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg("SparseAdam", 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))

    def _update_group(self, group: dict[str, Any]) -> None:
        if params_with_grad(group):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
