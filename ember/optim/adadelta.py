"""Adadelta: step sizes from the ratio of running RMS of updates and of gradients."""
from __future__ import annotations

from typing import Any, Iterable

from .optimizer import (Optimizer, check_arg, check_implementation, effective_grad, params_with_grad,
                        scalar_as, step_tensor, zeros_state)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta (torch.optim.Adadelta).

    v = rho * v + (1 - rho) * g^2; delta = sqrt(u + eps) / sqrt(v + eps) * g; u = rho * u + (1 - rho) * delta^2;
    w -= lr * delta. `foreach` and `capturable` are torch's implementation choices: accepted, and the numbers do
    not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.Adadelta([w], lr=1.0, rho=0.9)
    >>> (w * w).sum().backward(); opt.step()
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_arg("Adadelta", lr >= 0.0, "learning rate", lr)
        check_arg("Adadelta", 0.0 <= rho <= 1.0, "rho value", rho)
        check_arg("Adadelta", eps >= 0.0, "epsilon value", eps)
        check_arg("Adadelta", weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)
        check_implementation("Adadelta", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        square_avgs, acc_deltas = [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["square_avg"] = zeros_state(p)
                state["acc_delta"] = zeros_state(p)
            state["step"].add_(1)
            square_avgs.append(state["square_avg"])
            acc_deltas.append(state["acc_delta"])
        adadelta(params, [p.grad for p in params], square_avgs, acc_deltas,
                 lr=self.lr_tensor(group, params[0].device), rho=group["rho"], eps=group["eps"],
                 weight_decay=group["weight_decay"], maximize=group["maximize"])


def adadelta(params: list, grads: list, square_avgs: list, acc_deltas: list, *, lr, rho: float,
             eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adadelta step over Tensors, in place (call under no_grad); `lr` is a 0-d tensor."""
    lrs: dict = {}
    for i, (p, g) in enumerate(zip(params, grads)):
        g = effective_grad(p, g, maximize, weight_decay)
        v, u = square_avgs[i], acc_deltas[i]
        v.mul_(rho).add_((g * (1 - rho)).mul_(g))
        std = (v + eps).sqrt()
        delta = (u + eps).sqrt().div_(std).mul_(g)
        u.mul_(rho).add_((delta * (1 - rho)).mul_(delta))
        p.sub_(delta * scalar_as(lr, p, lrs))   # torch's add_(delta, alpha=-lr)
