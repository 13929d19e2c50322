"""The exponential distribution."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution of rate `rate` (mean 1 / rate), as torch.distributions.Exponential;
    `rsample` is -log1p(-u) / rate with u ~ U[0, 1) from ember's generator.

    >>> d = ember.distributions.Exponential(ember.tensor([2.0]))
    >>> d.mean.item(), d.cdf(ember.tensor([0.0])).item()
    (0.5, 0.0)
    """
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return ember.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, _NUMBER) else tuple(self.rate.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = tuple(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Exponential, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = ember.rand(*shape, dtype=self.rate.dtype, device=self.rate.device)
        return -ember.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ember.log(-x)
