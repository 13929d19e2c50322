"""The negative binomial distribution: successes before total_count failures."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import CountProbs, lazy_property

__all__ = ["NegativeBinomial"]


def _logsigmoid(x: Tensor) -> Tensor:
    # log sigmoid(x) = -softplus(-x), written to stay finite for large |x|
    return -((-x).clamp(min=0) + ember.log1p(ember.exp(-x.abs())))


class NegativeBinomial(CountProbs, Distribution):
    """Number of successes, each of probability `probs` (or sigmoid(`logits`)), before `total_count`
    failures, as torch.distributions.NegativeBinomial; total_count (a positive real) broadcasts with the
    probabilities and takes their dtype. Samples are Poisson(Gamma(total_count, rate=exp(-logits))), drawn
    from ember's generator.

    >>> d = ember.distributions.NegativeBinomial(2.0, probs=ember.tensor([0.5]))
    >>> d.mean.item(), d.variance.item(), d.log_prob(ember.tensor([1.0])).exp().item()
    (2.0, 4.0, 0.25)
    """
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    @property
    def mean(self) -> Tensor:
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            rate = self._gamma.sample(sample_shape)
            return ember.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_unnormalized = n * _logsigmoid(-logits) + value * _logsigmoid(logits)
        log_normalization = -ember.lgamma(n + value) + ember.lgamma(1.0 + value) + ember.lgamma(n)
        # total_count 0 at value 0: probability 1 (lgamma(0) - lgamma(0) would be NaN)
        log_normalization = ember.where(n + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization
