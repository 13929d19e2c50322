"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import LocScale

__all__ = ["Cauchy"]


class Cauchy(LocScale, Distribution):
    """Cauchy distribution of median `loc` and half width at half maximum `scale`, as
    torch.distributions.Cauchy (no mean or variance: NaN and inf); `rsample` inverts the CDF,
    loc + scale * tan(pi (u - 1/2)) with u ~ U[0, 1) from ember's generator.

    >>> d = ember.distributions.Cauchy(0.0, 2.0)
    >>> d.cdf(ember.tensor(2.0)).item(), d.icdf(ember.tensor(0.5)).item()
    (0.75, 0.0)
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        return ember.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def variance(self) -> Tensor:
        return ember.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = ember.rand(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * ember.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - ember.log1p(z * z)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return self.loc + self.scale * ember.tan(math.pi * (value - 0.5))

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
