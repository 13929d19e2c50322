"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""
from __future__ import annotations

from typing import Any, Iterable

from .optimizer import (Optimizer, check_arg, check_implementation, effective_grad, params_with_grad, step_tensor,
                        zeros_state)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad (torch.optim.Adagrad): w -= lr_t * g / (sqrt(sum of g^2) + eps).

    The accumulator starts at `initial_accumulator_value`; `lr_decay` gives
    lr_t = lr / (1 + (t - 1) * lr_decay). `foreach` and `fused` are torch's implementation choices:
    accepted, and the numbers do not change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.Adagrad([w], lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)
    >>> (w * w).sum().backward(); opt.step()
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        check_arg("Adagrad", lr >= 0.0, "learning rate", lr)
        check_arg("Adagrad", lr_decay >= 0.0, "lr_decay value", lr_decay)
        check_arg("Adagrad", weight_decay >= 0.0, "weight_decay value", weight_decay)
        check_arg("Adagrad", initial_accumulator_value >= 0.0, "initial_accumulator_value value",
                  initial_accumulator_value)
        check_arg("Adagrad", eps >= 0.0, "epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        check_implementation("Adagrad", foreach=foreach, fused=fused, differentiable=differentiable)
        # like torch, the state exists from the start (so a state_dict taken before training has it)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = step_tensor(p)
                self.state[p]["sum"] = zeros_state(p, group["initial_accumulator_value"])

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        sums, steps = [], []
        for p in params:
            state = self.state[p]
            if not state:  # a group added later
                state["step"] = step_tensor(p)
                state["sum"] = zeros_state(p, group["initial_accumulator_value"])
            steps.append(state["step"])
            sums.append(state["sum"])
        adagrad(params, [p.grad for p in params], sums, steps, lr=self.lr_tensor(group, params[0].device),
                lr_decay=group["lr_decay"], weight_decay=group["weight_decay"], eps=group["eps"],
                maximize=group["maximize"])


def adagrad(params: list, grads: list, state_sums: list, steps: list, *, lr, lr_decay: float,
            weight_decay: float, eps: float, maximize: bool) -> None:
    """One Adagrad step over Tensors, in place (call under no_grad); `steps[i]` is a 0-d step tensor
    (incremented here), `lr` a 0-d tensor."""
    for i, (p, g) in enumerate(zip(params, grads)):
        step = steps[i].add_(1)
        g = effective_grad(p, g, maximize, weight_decay)
        clr = lr / ((step - 1) * lr_decay + 1)                # 0-d, float64
        state_sums[i].add_(g * g)
        std = state_sums[i].sqrt().add_(eps)
        p.sub_((g * clr).div_(std))                          # torch's addcdiv_(g, std, value=-clr)
