"""clip_grad_norm_ (get_total_norm, then clip_grads_with_norm_) and clip_grad_value_."""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M, shape as S
from ...ops.creation import tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The norm of all `tensors` together, as if concatenated into one vector (torch 2.6's
    `nn.utils.get_total_norm`; its first half of `clip_grad_norm_`).

    >>> float(ember.nn.utils.get_total_norm([ember.ones(2), ember.ones(3) * 2]))
    3.7416574954986572
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [t.abs().max() for t in tensors]
            total = norms[0] if len(norms) == 1 else S.stack(norms).max()
        else:
            norms = [M.norm(t.reshape(-1), norm_type) for t in tensors]
            total = M.norm(S.stack(norms), norm_type)
        if error_if_nonfinite and not bool(M.isfinite(total).all()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                               f"non-finite, so it cannot be clipped. To disable this error and scale the "
                               f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the parameters' gradients by max_norm / (total_norm + 1e-6) where that is below 1, in place
    (torch 2.6's second half of `clip_grad_norm_`, for a norm computed elsewhere: `get_total_norm`)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = M.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale all gradients together so that their joint norm is at most max_norm; returns the norm.

    >>> w = ember.nn.Parameter(ember.ones(4)); (w * 10).sum().backward()
    >>> float(ember.nn.utils.clip_grad_norm_([w], 1.0))
    20.0
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """Deprecated in torch for `clip_grad_norm_` (same result, with torch's FutureWarning)."""
    import warnings
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of `ember.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
