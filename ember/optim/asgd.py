"""ASGD: stochastic gradient descent with a decaying step size and a running average of the iterates."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops import creation as _C
from ember.ops.math import where
from .optimizer import (Optimizer, cast_scalar, check_arg, check_implementation, effective_grad, on_device,
                        params_with_grad, scalar_dtype, step_tensor, zeros_state)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged SGD (torch.optim.ASGD).

    w = w * (1 - lambd * eta) - eta * g; the average ax follows w with weight mu. After step t, eta = lr / (1 +
    lambd * lr * t)^alpha and mu = 1 / max(1, t - t0), so averaging starts after `t0` steps. The state keeps eta
    and mu as 0-d tensors in torch's scalar dtype (float32), as torch rounds them, and the average in "ax".
    `foreach` and `capturable` are torch's implementation choices: accepted, and the numbers do not change (see
    ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.ASGD([w], lr=0.25, t0=0)
    >>> for _ in range(3):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()], [round(v, 4) for v in opt.state[w]["ax"].tolist()]
    ([0.125, -0.25], [0.1875, -0.375])
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_arg("ASGD", lr >= 0.0, "learning rate", lr)
        check_arg("ASGD", weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)
        check_implementation("ASGD", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        axs, mus, etas, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                lr = group["lr"]
                lr = lr.item() if hasattr(lr, "item") else lr
                state["step"] = step_tensor(p)
                state["eta"] = _C.full((), lr, dtype=scalar_dtype(), device=p.device)
                state["mu"] = _C.full((), 1.0, dtype=scalar_dtype(), device=p.device)
                state["ax"] = zeros_state(p)
            steps.append(state["step"])
            etas.append(state["eta"])
            mus.append(state["mu"])
            axs.append(state["ax"])
        asgd(params, [p.grad for p in params], axs, mus, etas, steps, lr=self.lr_tensor(group, params[0].device),
             lambd=group["lambd"], alpha=group["alpha"], t0=group["t0"], weight_decay=group["weight_decay"],
             maximize=group["maximize"])


def asgd(params: list, grads: list, axs: list, mus: list, etas: list, steps: list, *, lr, lambd: float,
         alpha: float, t0: float, weight_decay: float, maximize: bool) -> None:
    """One ASGD step over Tensors, in place (call under no_grad); `steps[i]` is a 0-d step tensor
    (incremented here), `etas[i]` and `mus[i]` 0-d tensors rewritten here, `lr` a 0-d float64 tensor.

    torch copies the parameter into the average while mu == 1 and blends otherwise, branching on
    `mu.item()`; here `where` picks one, so the step needs no host sync."""
    for i, (p, g) in enumerate(zip(params, grads)):
        step = steps[i].add_(1)
        g = effective_grad(p, g, maximize, weight_decay)
        eta, mu, ax = etas[i], mus[i], axs[i]
        eta64 = eta.to(step.dtype)
        p.mul_(cast_scalar(1 - lambd * eta64, p))
        p.sub_(g * cast_scalar(eta64, p))                        # torch's add_(g, alpha=-eta)
        ax.copy_(where(mu == 1, p, ax + (p - ax).mul_(cast_scalar(mu, p))))
        # the next eta and mu, in float64 as torch's Python floats, then rounded as its torch.as_tensor
        lr_p = on_device(lr, step)
        new_eta = lr_p / ((1 + lambd * lr_p * step) ** alpha)
        new_mu = 1 / (step - t0).clamp(min=1)
        eta.copy_(new_eta.to(scalar_dtype()))
        mu.copy_(new_mu.to(scalar_dtype()))
