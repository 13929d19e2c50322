"""The binomial distribution: successes in total_count Bernoulli trials."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import CountProbs

__all__ = ["Binomial"]


class Binomial(CountProbs, Distribution):
    """Successes in `total_count` independent trials of success probability `probs` (or sigmoid(`logits`)),
    as torch.distributions.Binomial; total_count broadcasts with the probabilities and takes their dtype.
    Samples come from ember.binomial; `entropy` and `enumerate_support` need one total_count for the batch.

    >>> d = ember.distributions.Binomial(4, probs=ember.tensor([0.5]))
    >>> d.mean.item(), d.log_prob(ember.tensor([2.0])).exp().item()
    (2.0, 0.375)
    """
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None) -> None:
        super().__init__(total_count, probs, logits, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ember.minimum(((self.total_count + 1) * self.probs).floor(), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_binom = ember.lgamma(n + 1) - ember.lgamma(value + 1) - ember.lgamma(n - value + 1)
        # k log p + (n - k) log(1 - p) = k logits - n log(1 + e^logits), the softplus written to stay finite
        softplus = logits.clamp(min=0) + ember.log1p(ember.exp(-logits.abs()))
        return log_binom + value * logits - n * softplus

    def _homogeneous_count(self, what: str) -> int:
        n = int(self.total_count.max().item())
        if self.total_count.min().item() != n:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        values = ember.arange(1 + n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
