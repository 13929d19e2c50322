"""Adamax: Adam with the second moment replaced by a running infinity norm of the gradient."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops.math import maximum
from .optimizer import (Optimizer, cast_scalar, check_arg, check_implementation, effective_grad, lerp_,
                        on_device, params_with_grad, step_tensor, zeros_state)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax (torch.optim.Adamax).

    m = beta1 * m + (1 - beta1) * g; u = max(beta2 * u, |g| + eps); w -= lr / (1 - beta1^t) * m / u. `foreach`
    and `capturable` are torch's implementation choices: accepted, and the numbers do not change (see
    ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.9, -1.9]
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        check_arg("Adamax", lr >= 0.0, "learning rate", lr)
        check_arg("Adamax", eps >= 0.0, "epsilon value", eps)
        check_arg("Adamax", 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg("Adamax", 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        check_arg("Adamax", weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)
        check_implementation("Adamax", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        exp_avgs, exp_infs, steps = [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["exp_avg"] = zeros_state(p)
                state["exp_inf"] = zeros_state(p)
            steps.append(state["step"])
            exp_avgs.append(state["exp_avg"])
            exp_infs.append(state["exp_inf"])
        beta1, beta2 = group["betas"]
        adamax(params, [p.grad for p in params], exp_avgs, exp_infs, steps,
               lr=self.lr_tensor(group, params[0].device), beta1=beta1, beta2=beta2, eps=group["eps"],
               weight_decay=group["weight_decay"], maximize=group["maximize"])


def adamax(params: list, grads: list, exp_avgs: list, exp_infs: list, steps: list, *, lr, beta1: float,
           beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """One Adamax step over Tensors, in place (call under no_grad); `steps[i]` is a 0-d step tensor
    (incremented here), `lr` a 0-d float64 tensor."""
    for i, (p, g) in enumerate(zip(params, grads)):
        step = steps[i].add_(1)
        g = effective_grad(p, g, maximize, weight_decay)
        m, u = exp_avgs[i], exp_infs[i]
        lerp_(m, g, 1 - beta1)
        u.copy_(maximum(u.mul_(beta2), g.abs().add_(eps)))
        clr = on_device(lr, step) / (1 - beta1 ** step)          # 0-d, float64, as torch's Python float
        p.sub_((m * cast_scalar(clr, p)).div_(u))                 # torch's addcdiv_(m, u, value=-clr)
