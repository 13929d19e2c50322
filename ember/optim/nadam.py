"""NAdam: Adam with Nesterov momentum and a momentum schedule."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops import creation as _C
from .optimizer import (Optimizer, cast_scalar, check_arg, check_implementation, effective_grad, lerp_,
                        on_device, params_with_grad, scalar_dtype, step_tensor, zeros_state)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """NAdam (torch.optim.NAdam).

    The momentum coefficient of step t is mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)); the step mixes
    the gradient and the first moment with mu_t and mu_{t+1}, each divided by its running product (state
    "mu_product", a 0-d tensor in torch's scalar dtype, float32, as torch rounds it).
    `decoupled_weight_decay=True` shrinks the weights (as AdamW) instead of adding `weight_decay * w` to the
    gradient. `foreach` and `capturable` are torch's implementation choices: accepted, and the numbers do not
    change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.8944, -1.8944]
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        check_arg("NAdam", lr >= 0.0, "learning rate", lr)
        check_arg("NAdam", eps >= 0.0, "epsilon value", eps)
        check_arg("NAdam", 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg("NAdam", 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        check_arg("NAdam", weight_decay >= 0.0, "weight_decay value", weight_decay)
        check_arg("NAdam", momentum_decay >= 0.0, "momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)
        check_implementation("NAdam", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        exp_avgs, exp_avg_sqs, mu_products, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["mu_product"] = _C.full((), 1.0, dtype=scalar_dtype(), device=p.device)
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
            steps.append(state["step"])
            mu_products.append(state["mu_product"])
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
        beta1, beta2 = group["betas"]
        nadam(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, mu_products, steps,
              lr=self.lr_tensor(group, params[0].device), beta1=beta1, beta2=beta2, eps=group["eps"],
              weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
              decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])


def nadam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, mu_products: list, steps: list, *,
          lr, beta1: float, beta2: float, eps: float, weight_decay: float, momentum_decay: float,
          decoupled_weight_decay: bool, maximize: bool) -> None:
    """One NAdam step over Tensors, in place (call under no_grad); `steps[i]` is a 0-d step tensor
    (incremented here), `mu_products[i]` a 0-d tensor updated here, `lr` a 0-d float64 tensor."""
    for i, (p, g) in enumerate(zip(params, grads)):
        step = steps[i].add_(1)
        lr_p = on_device(lr, step)
        bias_correction2 = 1 - beta2 ** step
        if maximize:
            g = -g
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(cast_scalar(1 - lr_p * weight_decay, p))
            else:
                g = effective_grad(p, g, False, weight_decay)
        # the momentum coefficients mu_t and mu_{t+1}, in float64 as torch's Python floats
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = mu_products[i]
        mu_product.mul_(mu.to(mu_product.dtype))    # torch's `mu_product *= mu`: mu rounded to its dtype
        m, v = exp_avgs[i], exp_avg_sqs[i]
        lerp_(m, g, 1 - beta1)
        v.mul_(beta2).add_((g * (1 - beta2)).mul_(g))
        denom = (v / cast_scalar(bias_correction2, p)).sqrt().add_(eps)
        mu_product64 = mu_product.to(step.dtype)
        grad_coef = (-lr_p * (1.0 - mu)) / (1.0 - mu_product64)
        avg_coef = (-lr_p * mu_next) / (1.0 - mu_product64 * mu_next)
        p.add_((g * cast_scalar(grad_coef, p)).div_(denom))      # torch's addcdiv_(g, denom, value=grad_coef)
        p.add_((m * cast_scalar(avg_coef, p)).div_(denom))      # and addcdiv_(m, denom, value=avg_coef)
