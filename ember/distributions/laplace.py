"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import LocScale

__all__ = ["Laplace"]


class Laplace(LocScale, Distribution):
    """Laplace distribution of location `loc` and scale `scale`, as torch.distributions.Laplace;
    `rsample` inverts the CDF at u ~ U(eps - 1, 1) from ember's generator.

    >>> d = ember.distributions.Laplace(0.0, 1.0)
    >>> d.variance.item(), d.cdf(ember.tensor(0.0)).item()
    (2.0, 0.5)
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ember.finfo(self.loc.dtype).eps
        # u uniform on [eps - 1, 1), so that log1p(-|u|) stays finite
        u = ember.rand(*shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)
