"""Muon: momentum SGD whose update of a matrix is orthogonalised by a Newton-Schulz iteration."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ember import _dtype
from .optimizer import Optimizer, cast_scalar, check_arg, lerp_, on_device, params_with_grad, zeros_state

__all__ = ["Muon", "muon"]

# torch's defaults: the quintic's coefficients (a, b, c), its number of steps and the norm's floor
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
EPS = 1e-7


class Muon(Optimizer):
    """Muon (torch.optim.Muon), for 2-D parameters (hidden layers' weights) only.

    The momentum buffer B moves towards the gradient G (`B = mu B + (1 - mu) G` as torch's lerp);
    the update (G lerped towards B by mu with `nesterov`, else B) is orthogonalised by `ns_steps`
    Newton-Schulz steps X <- a X + (b A + c A A) X, A = X X^T, run in bfloat16 on X / ||X|| (the
    wider side last), as torch does. The weights shrink by `1 - lr * weight_decay` and move by
    `-lr' X`, where `adjust_lr_fn` "original" (None) takes lr' = lr * sqrt(max(1, rows / cols)) and
    "match_rms_adamw" lr' = 0.2 * lr * sqrt(max(rows, cols)). Optimize biases, embeddings and other
    non-matrix parameters with another optimizer (AdamW).

    >>> w = ember.tensor([[3.0, 0.0], [0.0, 1.0]], requires_grad=True)
    >>> opt = ember.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> (w * w).sum().backward(); opt.step(); [round(v, 1) for v in w.flatten().tolist()]
    [2.9, 0.0, 0.0, 0.9]
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
                 eps: float = EPS, ns_steps: int = NS_STEPS, adjust_lr_fn: str | None = None) -> None:
        check_arg("Muon", lr >= 0.0, "learning rate", lr)
        check_arg("Muon", momentum >= 0.0, "momentum value", momentum)
        check_arg("Muon", weight_decay >= 0.0, "weight_decay value", weight_decay)
        check_arg("Muon", adjust_lr_fn in (None, "original", "match_rms_adamw"),
                  "adjust_lr_fn (expected None, 'original' or 'match_rms_adamw')", repr(adjust_lr_fn))
        check_arg("Muon", len(ns_coefficients) == 3, "ns_coefficients (expected 3 values)", ns_coefficients)
        check_arg("Muon", ns_steps < 100, "ns_steps (must be less than 100)", ns_steps)
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon: only supports 2D parameters, but got a parameter of shape "
                                     f"{tuple(p.shape)}; optimize it with another optimizer (AdamW)")

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        bufs = []
        for p in params:
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_state(p)
            bufs.append(state["momentum_buffer"])
        muon(params, [p.grad for p in params], bufs, lr=self.lr_tensor(group, params[0].device),
             weight_decay=group["weight_decay"], momentum=group["momentum"], nesterov=group["nesterov"],
             ns_coefficients=group["ns_coefficients"], ns_steps=group["ns_steps"], eps=group["eps"],
             adjust_lr_fn=group["adjust_lr_fn"])


def _addmm_bf16(c, a, b, beta: float, alpha: float = 1.0):
    """torch.addmm(c, a, b, beta=, alpha=) on bfloat16 matrices (c=None: a @ b): the products summed in float32
    and the result rounded to bfloat16 once, as torch's bfloat16 GEMM does."""
    f32 = _dtype.float32
    ab = a.to(f32) @ b.to(f32)
    out = ab if c is None else c.to(f32) * beta + ab * alpha
    return out.to(_dtype.bfloat16)


def zeropower_via_newtonschulz(grad, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float):
    """Approximately orthogonalise a matrix (U S V^T -> U S' V^T, S' near 1) in bfloat16, as torch's Muon."""
    a, b, c = ns_coefficients
    x = grad.to(_dtype.bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T                                                                # (small, large)
    norm = x.to(_dtype.float32).norm().to(_dtype.bfloat16)
    x = x / norm.clamp(min=eps)
    for _ in range(ns_steps):
        gram = _addmm_bf16(None, x, x.T, beta=0.0)                             # A = X X^T
        gram_update = _addmm_bf16(gram, gram, gram, beta=b, alpha=c)           # b A + c A A
        x = _addmm_bf16(x, gram_update, x, beta=a)                             # a X + (b A + c A A) X
    return x.T if tall else x


def muon(params: list, grads: list, momentum_bufs: list, *, lr, weight_decay: float, momentum: float,
         nesterov: bool, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float,
         adjust_lr_fn: str | None) -> None:
    """One Muon step over 2-D Tensors, in place (call under no_grad); `lr` is a 0-d float64 tensor."""
    for p, g, buf in zip(params, grads, momentum_bufs):
        lerp_(buf, g, 1 - momentum)
        update = lerp_(g.clone(), buf, momentum) if nesterov else buf
        update = zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        rows, cols = p.shape
        if adjust_lr_fn is None or adjust_lr_fn == "original":
            ratio = math.sqrt(max(1, rows / cols))
        else:
            ratio = 0.2 * math.sqrt(max(rows, cols))
        lr_p = on_device(lr, p)
        p.mul_(cast_scalar(1 - lr_p * weight_decay, p))
        p.add_(update.to(p.dtype) * cast_scalar(-(lr_p * ratio), p))
