"""The relaxed one-hot categorical (concrete / Gumbel-softmax) distribution and its log."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .relaxed_bernoulli import _RelaxedParams
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample, as torch.distributions.ExpRelaxedCategorical:
    log_softmax((logits + g) / temperature) with Gumbel noise g = -log(-log u) from ember's generator.
    `temperature` is a tensor."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector   # the samples lie on a submanifold of it
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        super(ExpRelaxedCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(ember.rand(*shape, dtype=self.logits.dtype, device=self.logits.device))
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log density of the concrete distribution: log (K-1)! + (K-1) log t + sum_k log_softmax(logits - t x)_k
        log_scale = math.lgamma(k) + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """A continuous relaxation of OneHotCategorical on the simplex (Gumbel-softmax): exp of an
    ExpRelaxedCategorical sample, as torch.distributions.RelaxedOneHotCategorical; samples are
    reparameterised and approach one-hot vectors as the temperature goes to 0.

    >>> d = ember.distributions.RelaxedOneHotCategorical(ember.tensor(0.5), logits=ember.zeros(2, 3))
    >>> x = d.rsample()
    >>> tuple(x.shape), [round(v, 4) for v in x.sum(-1).tolist()]
    ((2, 3), [1.0, 1.0])
    """
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

