"""Rprop: per-coordinate step sizes that grow while the gradient keeps its sign and shrink when it flips."""
from __future__ import annotations

from typing import Any, Iterable

from ember.ops.math import where
from .optimizer import Optimizer, check_arg, check_implementation, params_with_grad, step_tensor, zeros_state

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation (torch.optim.Rprop).

    Each coordinate has its own step size, starting at `lr`: multiplied by etas[1] when the gradient keeps its
    sign, by etas[0] when it flips (and that coordinate then skips its step), clamped to `step_sizes`; the
    parameter moves by its step size against the sign of the gradient. Only the first step reads `lr`, as in
    torch. `foreach` and `capturable` are torch's implementation choices: accepted, and the numbers do not
    change (see ember.optim.optimizer).

    >>> w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    >>> opt = ember.optim.Rprop([w], lr=0.25)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> w.tolist(), opt.state[w]["step_size"].tolist()
    ([0.45, -1.45], [0.3, 0.3])
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_arg("Rprop", lr >= 0.0, "learning rate", lr)
        check_arg("Rprop", 0.0 < etas[0] < 1.0 < etas[1], "eta values", f"{etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)
        check_implementation("Rprop", foreach=foreach, differentiable=differentiable)

    def _update_group(self, group: dict[str, Any]) -> None:
        params = params_with_grad(group)
        if not params:
            return
        prevs, step_sizes = [], []
        for p in params:
            state = self.state[p]
            if not state:
                lr = group["lr"]
                state["step"] = step_tensor(p)
                state["prev"] = zeros_state(p)
                state["step_size"] = zeros_state(p, lr.item() if hasattr(lr, "item") else lr)
            state["step"].add_(1)
            prevs.append(state["prev"])
            step_sizes.append(state["step_size"])
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        rprop(params, [p.grad for p in params], prevs, step_sizes, step_size_min=step_size_min,
              step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus, maximize=group["maximize"])


def rprop(params: list, grads: list, prevs: list, step_sizes: list, *, step_size_min: float,
          step_size_max: float, etaminus: float, etaplus: float, maximize: bool) -> None:
    """One Rprop step over Tensors, in place (call under no_grad)."""
    for i, (p, g) in enumerate(zip(params, grads)):
        if maximize:
            g = -g
        prev, step_size = prevs[i], step_sizes[i]
        sign = (g * prev).sign()
        # etaplus where the sign held, etaminus where it flipped, 1 where either is 0 (sign + 1), NaN stays NaN
        factor = where(sign > 0, etaplus, where(sign < 0, etaminus, sign + 1))
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        g = where(sign < 0, 0.0, g)                             # a flipped coordinate does not move
        p.sub_(g.sign() * step_size)                            # torch's addcmul_(sign(g), step_size, value=-1)
        prev.copy_(g)
