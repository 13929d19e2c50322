"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from typing import Any, Iterable

from .optimizer import (_LOADED_DEFAULTS, Optimizer, check_arg, check_implementation, effective_grad,
                        params_with_grad, scalar_as)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent (torch.optim.SGD).

    With momentum mu and dampening tau: b = mu * b + (1 - tau) * g (b = g on the first step), and the
    update uses b, or g + mu * b with `nesterov=True`. `foreach` and `fused` are torch's implementation
    choices: accepted, and the numbers do not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step(); w.tolist()
    [0.8, -1.6]
    """

    _loaded_defaults = {**_LOADED_DEFAULTS, "fused": False}   # torch's SGD.__setstate__: fused=False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_arg("SGD", lr >= 0.0, "learning rate", lr)
        check_arg("SGD", momentum >= 0.0, "momentum value", momentum)
        check_arg("SGD", weight_decay >= 0.0, "weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(f"SGD: nesterov momentum requires a momentum > 0 and zero dampening, got "
                             f"momentum={momentum}, dampening={dampening}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        check_implementation("SGD", foreach=foreach, fused=fused, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        momentum = group["momentum"]
        bufs = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else []
        sgd(params, [p.grad for p in params], bufs, lr=self.lr_tensor(group, params[0].device),
            momentum=momentum, dampening=group["dampening"], weight_decay=group["weight_decay"],
            nesterov=group["nesterov"], maximize=group["maximize"])
        for p, buf in zip(params, bufs):
            self.state[p]["momentum_buffer"] = buf


def sgd(params: list, grads: list, momentum_buffers: list, *, lr, momentum: float,
        dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    """One SGD step over Tensors, in place (call under no_grad); `lr` is a 0-d tensor.

    `momentum_buffers[i]` is None before the first step with momentum; it is then set to a new
    buffer (a copy of the gradient), which the caller keeps.
    """
    lrs: dict = {}
    for i, (p, g) in enumerate(zip(params, grads)):
        g = effective_grad(p, g, maximize, weight_decay)
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = g.detach().clone()
            else:
                buf.mul_(momentum).add_(g, alpha=1 - dampening)
            g = g + buf * momentum if nesterov else buf
        p.sub_(g * scalar_as(lr, p, lrs))                    # torch's add_(g, alpha=-lr)
