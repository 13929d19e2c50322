"""The normal (Gaussian) distribution."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import LocScale, _NUMBER, _standard_normal

__all__ = ["Normal"]


class Normal(LocScale, ExponentialFamily):
    """Normal distribution of mean `loc` and standard deviation `scale` (broadcast together), as
    torch.distributions.Normal; `rsample` is loc + scale * eps with eps ~ N(0, 1) from ember's generator.

    >>> _ = ember.manual_seed(0)
    >>> d = ember.distributions.Normal(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 2.0]))
    >>> tuple(d.rsample((5,)).shape)
    (5, 2)
    >>> round(d.log_prob(ember.tensor([0.0, 1.0]))[0].item(), 4)
    -0.9189
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if isinstance(self.scale, _NUMBER) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + ember.log(self.scale)

    @property
    def _natural_params(self) -> tuple:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)
