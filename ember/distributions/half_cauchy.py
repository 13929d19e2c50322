"""The half-Cauchy distribution: |X| for a centred Cauchy X."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from .cauchy import Cauchy
from .transformed_distribution import Folded

__all__ = ["HalfCauchy"]


class HalfCauchy(Folded):
    """|X| for X ~ Cauchy(0, scale), as torch.distributions.HalfCauchy (mean inf, variance inf);
    `rsample` is |scale * tan(pi (u - 1/2))|.

    >>> d = ember.distributions.HalfCauchy(2.0)
    >>> d.mean.item(), d.cdf(ember.tensor(2.0)).item(), d.icdf(ember.tensor(0.5)).item()
    (inf, 0.5, 2.0)
    """
    base = Cauchy

    @property
    def mean(self) -> Tensor:
        return ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
