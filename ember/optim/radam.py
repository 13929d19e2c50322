"""RAdam: Adam with the variance of its adaptive learning rate rectified during the first steps."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops.math import where
from .optimizer import (Optimizer, cast_scalar, check_arg, check_implementation, effective_grad, lerp_,
                        on_device, params_with_grad, step_tensor, zeros_state)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """RAdam (torch.optim.RAdam).

    Adam's moments; while the length of the approximated simple moving average rho_t is at most 5 the step is
    plain momentum, lr * m_hat; after that it is lr * m_hat * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps) with the
    rectification r_t. `decoupled_weight_decay=True` shrinks the weights (as AdamW) instead of adding
    `weight_decay * w` to the gradient. `foreach` and `capturable` are torch's implementation choices: accepted,
    and the numbers do not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.8, -1.6]
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_arg("RAdam", lr >= 0.0, "learning rate", lr)
        check_arg("RAdam", eps >= 0.0, "epsilon value", eps)
        check_arg("RAdam", 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg("RAdam", 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        check_arg("RAdam", weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay, foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)
        check_implementation("RAdam", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        exp_avgs, exp_avg_sqs, steps = [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
            steps.append(state["step"])
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
        beta1, beta2 = group["betas"]
        radam(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, steps,
              lr=self.lr_tensor(group, params[0].device), beta1=beta1, beta2=beta2, eps=group["eps"],
              weight_decay=group["weight_decay"], decoupled_weight_decay=group["decoupled_weight_decay"],
              maximize=group["maximize"])


def radam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, steps: list, *, lr, beta1: float,
          beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """One RAdam step over Tensors, in place (call under no_grad); `steps[i]` is a 0-d step tensor
    (incremented here), `lr` a 0-d float64 tensor.

    torch branches on rho_t > 5 in Python; here both updates are computed and `where` picks one, so the
    step stays a function of the step tensor (no host sync, and a captured step stays valid)."""
    rho_inf = 2 / (1 - beta2) - 1
    for i, (p, g) in enumerate(zip(params, grads)):
        step = steps[i].add_(1)
        lr_p = on_device(lr, step)
        if maximize:
            g = -g
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(cast_scalar(1 - lr_p * weight_decay, p))
            else:
                g = effective_grad(p, g, False, weight_decay)
        m, v = exp_avgs[i], exp_avg_sqs[i]
        lerp_(m, g, 1 - beta1)
        v.mul_(beta2).add_((g * (1 - beta2)).mul_(g))
        # the bias corrections and rho_t in float64, in torch's order of operations (its Python floats)
        bias_correction1 = 1 - beta1 ** step
        momentum_step = (m / cast_scalar(bias_correction1, p)).mul_(cast_scalar(lr_p, p))   # lr * m_hat
        if rho_inf <= 5:   # rho_t < rho_inf: never rectified (small beta2)
            p.sub_(momentum_step)
            continue
        bias_correction2 = 1 - beta2 ** step
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rect_sq = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
        rect = where(rho_t > 5.0, rect_sq, 0.0) ** 0.5   # unused, and maybe negative, until rho_t > 5
        adaptive_lr = cast_scalar(bias_correction2 ** 0.5, p) / v.sqrt().add_(eps)
        rectified_step = (momentum_step * adaptive_lr).mul_(cast_scalar(rect, p))
        p.sub_(where(rho_t > 5.0, rectified_step, momentum_step))
