"""RMSprop: divide the gradient by a running root mean square, optionally centred and with momentum."""
from __future__ import annotations

from typing import Any, Iterable

from .optimizer import (Optimizer, check_arg, check_implementation, effective_grad, lerp_, params_with_grad,
                        scalar_as, step_tensor, zeros_state)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop (torch.optim.RMSprop).

    v = alpha * v + (1 - alpha) * g^2; the step is g / (sqrt(v) + eps), where `centered=True` subtracts the
    square of the running mean gradient from v first; `momentum` accumulates steps. `foreach` and `capturable`
    are torch's implementation choices: accepted, and the numbers do not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.RMSprop([w], lr=0.01, centered=True, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step()
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_arg("RMSprop", lr >= 0.0, "learning rate", lr)
        check_arg("RMSprop", eps >= 0.0, "epsilon value", eps)
        check_arg("RMSprop", momentum >= 0.0, "momentum value", momentum)
        check_arg("RMSprop", weight_decay >= 0.0, "weight_decay value", weight_decay)
        check_arg("RMSprop", alpha >= 0.0, "alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)
        check_implementation("RMSprop", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        momentum, centered = group["momentum"], group["centered"]
        square_avgs, grad_avgs, bufs = [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["square_avg"] = zeros_state(p)
                if momentum > 0:
                    state["momentum_buffer"] = zeros_state(p)
                if centered:
                    state["grad_avg"] = zeros_state(p)
            state["step"].add_(1)
            square_avgs.append(state["square_avg"])
            if momentum > 0:
                bufs.append(state["momentum_buffer"])
            if centered:
                grad_avgs.append(state["grad_avg"])
        rmsprop(params, [p.grad for p in params], square_avgs, grad_avgs, bufs,
                lr=self.lr_tensor(group, params[0].device), alpha=group["alpha"], eps=group["eps"],
                weight_decay=group["weight_decay"], momentum=momentum, centered=centered,
                maximize=group["maximize"])


def rmsprop(params: list, grads: list, square_avgs: list, grad_avgs: list, momentum_buffers: list, *,
            lr, alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool,
            maximize: bool) -> None:
    """One RMSprop step over Tensors, in place (call under no_grad; `grad_avgs` used when centered,
    buffers with momentum); `lr` is a 0-d tensor."""
    lrs: dict = {}
    for i, (p, g) in enumerate(zip(params, grads)):
        g = effective_grad(p, g, maximize, weight_decay)
        v = square_avgs[i]
        v.mul_(alpha).add_((g * (1 - alpha)).mul_(g))
        if centered:
            g_avg = lerp_(grad_avgs[i], g, 1 - alpha)
            avg = (v - g_avg * g_avg).sqrt()
        else:
            avg = v.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffers[i].mul_(momentum).add_(g / avg)
            p.sub_(buf * scalar_as(lr, p, lrs))   # torch's add_(buf, alpha=-lr)
        else:
            p.sub_((g * scalar_as(lr, p, lrs)).div_(avg))   # torch's addcdiv_(g, avg, value=-lr)
