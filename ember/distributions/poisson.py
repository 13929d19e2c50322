"""The Poisson distribution on the nonnegative integers."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution of rate `rate`: P(k) = rate^k exp(-rate) / k!, as torch.distributions.Poisson
    (samples are floats of the rate's dtype; torch has no entropy for it, nor has Ember).

    >>> d = ember.distributions.Poisson(ember.tensor([2.0]))
    >>> round(d.log_prob(ember.tensor([1.0])).exp().item(), 4), d.mode.item()
    (0.2707, 2.0)
    """
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, _NUMBER) else tuple(self.rate.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = tuple(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return ember.xlogy(value, rate) - rate - ember.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple:
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)
