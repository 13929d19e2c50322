"""Adafactor: Adam-like steps whose second moment of a matrix is kept as a row and a column factor."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ember import _dtype
from ember.ops import math as _M
from .optimizer import Optimizer, cast_scalar, check_arg, on_device, params_with_grad, step_tensor, zeros_state

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Adafactor (torch.optim.Adafactor), as torch writes it.

    For a gradient G of 2 or more dims the second moment is the outer product of running row means R and
    column means C of G*G, divided by the mean of R (at least eps1); vectors keep a full running mean V.
    The running means move with weight t^beta2_decay at step t. The update G / sqrt(V) (V clamped to eps1^2)
    is shrunk so its RMS is at most `d`, and scaled by max(eps2, RMS(w)) * min(lr, 1/sqrt(t)); `weight_decay`
    shrinks w by `1 - lr * weight_decay` first. `eps=(None, eps2)` takes eps1 as the parameter dtype's
    machine epsilon. `foreach` is accepted for torch's signature: Ember has one implementation.

    >>> w = ember.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.flatten().tolist()]
    [0.8239, -1.8239, 0.3239, 2.8239]
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        check_arg("Adafactor", lr >= 0.0, "learning rate", lr)
        check_arg("Adafactor", beta2_decay <= 0.0, "beta2_decay (must be <= 0)", beta2_decay)
        check_arg("Adafactor", eps[0] is None or eps[0] >= 0.0, "epsilon1 value", eps[0])
        check_arg("Adafactor", eps[1] >= 0.0, "epsilon2 value", eps[1])
        check_arg("Adafactor", d >= 1.0, "clipping threshold d (must be >= 1)", d)
        check_arg("Adafactor", weight_decay >= 0.0, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        row_vars, col_vars, variances, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = step_tensor(p)
                if p.grad.dim() > 1:
                    state["row_var"] = zeros_state(p).sum(dim=-1, keepdim=True)    # (..., m, 1)
                    state["col_var"] = zeros_state(p).sum(dim=-2, keepdim=True)    # (..., 1, n)
                else:
                    state["variance"] = zeros_state(p)
            steps.append(state["step"])
            row_vars.append(state.get("row_var"))
            col_vars.append(state.get("col_var"))
            variances.append(state.get("variance"))
        eps1, eps2 = group["eps"]
        adafactor(params, [p.grad for p in params], row_vars, col_vars, variances, steps,
                  lr=self.lr_tensor(group, params[0].device), beta2_decay=group["beta2_decay"], eps1=eps1,
                  eps2=eps2, d=group["d"], weight_decay=group["weight_decay"], maximize=group["maximize"])


def _lerp_(start, end, weight):
    """start.lerp_(end, weight) for a 0-d tensor weight, with torch's two rounding branches (see lerp_)."""
    w = cast_scalar(weight, start)
    diff = end - start
    start.copy_(_M.where(w < 0.5, start + diff * w, end - diff * (1 - w)))


def adafactor(params: list, grads: list, row_vars: list, col_vars: list, variances: list, steps: list, *, lr,
              beta2_decay: float, eps1: float | None, eps2: float, d: float, weight_decay: float,
              maximize: bool) -> None:
    """One Adafactor step over Tensors, in place (call under no_grad). `steps[i]` is a 0-d float64 step
    tensor (incremented here), `lr` a 0-d float64 tensor; `row_vars[i]`/`col_vars[i]` are None for a
    parameter of fewer than 2 dims, `variances[i]` None for the others. The scalars torch computes in
    Python floats from `.item()` (the relative step, the parameter's RMS, the update's RMS) are 0-d float64
    tensors here, so a step never reads a value back from the device."""
    for i, (p, g) in enumerate(zip(params, grads)):
        if maximize:
            g = -g
        if eps1 is None:   # as torch: the first parameter's dtype sets it for the whole group
            eps1 = _dtype.finfo(p.dtype).eps
        step = steps[i].add_(1)
        lr_p = on_device(lr, step)
        one_minus_beta2 = step ** beta2_decay
        rho = _M.minimum(lr_p, 1 / step.sqrt())
        rms_p = p.norm().to(step.dtype) / math.sqrt(p.numel())
        alpha = _M.clamp(rms_p, min=eps2) * rho
        if weight_decay != 0:
            p.mul_(cast_scalar(1 - lr_p * weight_decay, p))
        if g.dim() > 1:
            row_mean = g.norm(dim=-1, keepdim=True).square_().div_(g.shape[-1])    # (..., m, 1)
            _lerp_(row_vars[i], row_mean, one_minus_beta2)
            col_mean = g.norm(dim=-2, keepdim=True).square_().div_(g.shape[-2])    # (..., 1, n)
            _lerp_(col_vars[i], col_mean, one_minus_beta2)
            var_estimate = row_vars[i] @ col_vars[i]
            var_estimate = var_estimate / _M.clamp(row_vars[i].mean(dim=-2, keepdim=True), min=eps1)
        else:
            _lerp_(variances[i], g * g, one_minus_beta2)
            var_estimate = variances[i]
        update = _M.clamp(var_estimate, min=eps1 * eps1).rsqrt() * g
        denom = _M.clamp(update.norm().to(step.dtype) / (math.sqrt(update.numel()) * d), min=1.0)
        p.add_(update * cast_scalar(-alpha / denom, p))
