"""Adam and AdamW: one step function, with L2 (Adam) or decoupled (AdamW) weight decay."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops.optim_prims import AdamStep
from .optimizer import Optimizer, check_arg, check_implementation, params_with_grad, step_tensor, zeros_state

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    """Adam (torch.optim.Adam): bias-corrected moving averages of the gradient and its square.

    `weight_decay` adds `weight_decay * w` to the gradient (L2); `decoupled_weight_decay=True` (or
    `AdamW`) shrinks the weights instead; `amsgrad` normalises by the running maximum of the second
    moment. `foreach`, `fused` and `capturable` are torch's implementation choices: accepted, and the
    numbers do not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
    [0.9, -1.9]
    """

    _name = "Adam"

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        name = self._name
        check_arg(name, lr >= 0.0, "learning rate", lr)
        check_arg(name, eps >= 0.0, "epsilon value", eps)
        check_arg(name, 0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check_arg(name, 0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        check_arg(name, weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        check_implementation(name, foreach=foreach, fused=fused, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        amsgrad = group["amsgrad"]
        exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_state(p)
            steps.append(state["step"])
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
        beta1, beta2 = group["betas"]
        adam(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
             lr=self.lr_tensor(group, params[0].device), beta1=beta1, beta2=beta2, eps=group["eps"],
             weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
             decoupled_weight_decay=group["decoupled_weight_decay"])


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
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:   # as torch's AdamW: always decoupled, whatever the dict says
            group["decoupled_weight_decay"] = True


def adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
         steps: list, *, lr, beta1: float, beta2: float, eps: float, weight_decay: float,
         amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One Adam step over Tensors, in place (call under no_grad). `steps[i]` is parameter i's 0-d step
    tensor, `lr` a 0-d float64 tensor. Each parameter is one fused `AdamStep` call
    (ember/ops/optim_prims.py): it increments the step, computes the bias corrections from it and updates
    the parameter and its moments in place, in torch's order of operations (single-tensor, non-capturable)."""
    for i, (p, g) in enumerate(zip(params, grads)):
        state = (exp_avgs[i], exp_avg_sqs[i]) + ((max_exp_avg_sqs[i],) if amsgrad else ())
        step = steps[i]
        AdamStep.apply(p, g, *state, step, lr if lr.device == step.device else lr.to(step.device), beta1=float(beta1),
                       beta2=float(beta2), eps=float(eps), weight_decay=float(weight_decay),
                       decoupled=bool(decoupled_weight_decay), amsgrad=bool(amsgrad), maximize=bool(maximize))
        for t in (p, step) + state:
            t._bump_version()
