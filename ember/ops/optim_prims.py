"""Fused optimizer updates: one primitive call per parameter instead of a dozen.

An optimizer step written in Tensor ops costs about 17 primitive calls per parameter for Adam, which is
most of a small model's step. `AdamStep` does the same arithmetic, in the same order and dtype, in one
forward written against `xp`, and writes the parameter and its state in place (like `Assign`, it is an
in-place primitive: its inputs `step`, `p`, `m`, `v` and `vmax` are updated, and `p` is returned). The
optimizer's `lr` and `step` are 0-d input tensors (the bias corrections are computed from them inside),
so a captured step stays valid when a scheduler changes the rate; the hyper-parameters that a user sets
once are attributes.
"""
from __future__ import annotations

from ..autograd.function import Primitive
from ..backends import array_module

__all__ = ["AdamStep"]


class AdamStep(Primitive):
    """In place: step, p, m, v (and vmax with `amsgrad`) after one Adam step, torch's order of operations.

    Inputs: p, g, m, v, [vmax if amsgrad], step (0-d float64, incremented here), lr (0-d float64).
    Attributes: beta1, beta2, eps, weight_decay (L2, or decoupled as AdamW's), decoupled, amsgrad,
    maximize. The bias corrections are computed in float64 from the step, as torch computes them in
    Python floats, then cast to the parameter's dtype.
    """
    attrs = {"beta1": float, "beta2": float, "eps": float, "weight_decay": float, "amsgrad": bool,
             "decoupled": bool, "maximize": bool}
    differentiable = False
    amsgrad = False
    decoupled = False
    maximize = False
    weight_decay = 0.0

    def forward(self, p, g, m, v, *rest):
        xp = array_module(p)
        vmax = rest[0] if self.amsgrad else None
        step, lr = rest[-2], rest[-1]
        step += 1
        dt = p.dtype
        step_size = (lr / (1 - self.beta1 ** step)).astype(dt)
        bc2_sqrt = xp.sqrt(1 - self.beta2 ** step).astype(dt)
        wd = self.weight_decay
        if self.decoupled and wd != 0:
            p *= (1 - lr * wd).astype(dt)                    # AdamW: p *= 1 - lr * weight_decay
        if self.maximize:
            g = -g
        if not self.decoupled and wd != 0:
            g = g + p * wd
        diff = g - m                                         # m = lerp(m, g, 1 - beta1), as torch rounds it
        w = 1 - self.beta1
        if w < 0.5:
            diff *= w
            m += diff
        else:
            diff *= 1 - w
            m[...] = g - diff
        t = g * (1 - self.beta2)                             # v = beta2 * v + (1 - beta2) * g^2
        t *= g
        v *= self.beta2
        v += t
        if vmax is not None:
            xp.maximum(vmax, v, out=vmax)
            v = vmax
        denom = xp.sqrt(v)                                   # sqrt(v) / sqrt(1 - beta2^t) + eps
        denom /= bc2_sqrt
        denom += self.eps
        t = m * step_size                                    # p -= step_size * m / denom
        t /= denom
        p -= t
        return p

    def infer(self, p, *rest):
        return tuple(p.shape), p.dtype


# Adam's update in one compiled pass per parameter on the CPU (numba, on first use): backends/cpu_kernels.py
from ..backends import cpu_kernels as _cpu_kernels  # noqa: E402

_cpu_kernels.install({AdamStep: "adam_step"})
