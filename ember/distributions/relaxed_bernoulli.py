"""The relaxed (concrete) Bernoulli distribution and its logit."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _NUMBER, BinaryProbs, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class _RelaxedParams:
    """temperature, logits and probs of a relaxed distribution, read from its base distribution (the
    TransformedDistribution subclasses RelaxedBernoulli and RelaxedOneHotCategorical)."""
    base_dist: Distribution

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature   # type: ignore[attr-defined]

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits   # type: ignore[attr-defined]

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs   # type: ignore[attr-defined]


class LogitRelaxedBernoulli(BinaryProbs, Distribution):
    """The logit of a RelaxedBernoulli sample, as torch.distributions.LogitRelaxedBernoulli (Maddison et
    al. 2017): (logit(p) + logit(u)) / temperature with u ~ U(0, 1) from ember's generator.
    `temperature` is a tensor."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("LogitRelaxedBernoulli: Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _NUMBER)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            is_scalar = isinstance(logits, _NUMBER)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(() if is_scalar else tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(LogitRelaxedBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(*shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - ember.log1p(-u) + probs.log() - ember.log1p(-probs)) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * ember.log1p(diff.exp())


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """A continuous relaxation of Bernoulli on (0, 1): sigmoid of a LogitRelaxedBernoulli sample, as
    torch.distributions.RelaxedBernoulli; samples are reparameterised (differentiable in probs/logits and
    temperature), and approach Bernoulli samples as the temperature goes to 0.

    >>> d = ember.distributions.RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor([0.3, 0.9]))
    >>> tuple(d.rsample((4,)).shape), d.has_rsample
    ((4, 2), True)
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))

