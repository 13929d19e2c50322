"""The half-normal distribution: |X| for a centred normal X."""
from __future__ import annotations

import math

from ember import Tensor
from .normal import Normal
from .transformed_distribution import Folded

__all__ = ["HalfNormal"]


class HalfNormal(Folded):
    """|X| for X ~ Normal(0, scale), as torch.distributions.HalfNormal; `rsample` is |scale * eps|.

    >>> d = ember.distributions.HalfNormal(1.0)
    >>> round(d.mean.item(), 4), round(d.cdf(ember.tensor(1.0)).item(), 4)
    (0.7979, 0.6827)
    """
    base = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)
