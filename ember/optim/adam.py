"""Adam and AdamW: one step function, with L2 (Adam) or decoupled (AdamW) weight decay."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ember.backends import array_module
from .optimizer import Optimizer, bump_versions, check_arg, effective_grad, lerp_, params_with_grad, zeros_state

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    """Adam (torch.optim.Adam): bias-corrected moving averages of the gradient and its square.

    `weight_decay` adds `weight_decay * w` to the gradient (L2); `decoupled_weight_decay=True` (or
    `AdamW`) shrinks the weights instead; `amsgrad` normalises by the running maximum of the second
    moment.

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.9, -1.9]
    """

    _name = "Adam"

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 maximize: bool = False, decoupled_weight_decay: bool = False) -> None:
        name = self._name
        check_arg(name, lr >= 0.0, "learning rate", lr)
        check_arg(name, eps >= 0.0, "epsilon value", eps)
        check_arg(name, 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg(name, 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        check_arg(name, weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        amsgrad = group["amsgrad"]
        exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_state(p)
            state["step"] += 1
            steps.append(state["step"])
            exp_avgs.append(state["exp_avg"]._data)
            exp_avg_sqs.append(state["exp_avg_sq"]._data)
            if amsgrad:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"]._data)
        beta1, beta2 = group["betas"]
        adam([p._data for p in params], [p.grad._data for p in params], exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs, steps, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
             weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
             decoupled_weight_decay=group["decoupled_weight_decay"])
        bump_versions(params)


class AdamW(Adam):
    """AdamW (torch.optim.AdamW): Adam with decoupled weight decay, `w *= 1 - lr * weight_decay`.

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.85, -1.8]
    """

    _name = "AdamW"

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=True)


def adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
         steps: list[int], *, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
         amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One Adam step over raw arrays, in place; `steps[i]` is the step count including this one."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp = array_module(p)
        if decoupled_weight_decay and weight_decay != 0:   # AdamW: decay the weights, not the gradient
            p *= 1 - lr * weight_decay
        g = effective_grad(p, g, maximize, 0.0 if decoupled_weight_decay else weight_decay)
        m, v = exp_avgs[i], exp_avg_sqs[i]
        lerp_(m, g, 1 - beta1, xp)                      # m = beta1 * m + (1 - beta1) * g
        v *= beta2
        tmp = xp.multiply(g, g)
        tmp *= 1 - beta2
        v += tmp                                         # v = beta2 * v + (1 - beta2) * g^2
        step_size = lr / (1 - beta1 ** steps[i])
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** steps[i])
        if amsgrad:
            xp.maximum(max_exp_avg_sqs[i], v, out=max_exp_avg_sqs[i])
            v = max_exp_avg_sqs[i]
        denom = xp.sqrt(v, out=tmp)
        denom /= bias_correction2_sqrt
        denom += eps                                     # sqrt(v_hat) + eps, scaled by 1/step_size
        xp.divide(m, denom, out=denom)
        denom *= step_size
        p -= denom
