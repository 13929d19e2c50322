"""clip_grad_norm_ and clip_grad_value_."""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M, shape as S
from ...ops.creation import tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale all gradients together so that their joint norm is at most max_norm; returns the norm.

    >>> w = ember.nn.Parameter(ember.ones(4)); (w * 10).sum().backward()
    >>> float(ember.nn.utils.clip_grad_norm_([w], 1.0))
    20.0
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().max() for g in grads]
            total = norms[0] if len(norms) == 1 else S.stack(norms).max()
        else:
            norms = [M.norm(g.reshape(-1), norm_type) for g in grads]
            total = M.norm(S.stack(norms), norm_type)
        if error_if_nonfinite and not bool(M.isfinite(total).all()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                               f"non-finite, so it cannot be clipped. To disable this error and scale the "
                               f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = M.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
