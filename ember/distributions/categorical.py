"""The categorical distribution over {0, ..., K-1}."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Categorical distribution over the K indices of the last dim of `probs` (normalised to sum to 1) or
    `logits` (unnormalised log-probabilities, normalised by logsumexp), as torch.distributions.Categorical.
    `sample` draws with ember.multinomial; samples are int64 indices of shape sample_shape + batch_shape.

    >>> d = ember.distributions.Categorical(probs=ember.tensor([1.0, 3.0]))
    >>> d.probs.tolist(), round(d.log_prob(ember.tensor(1)).exp().item(), 4)
    ([0.25, 0.75], 0.75)
    """
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("Categorical: `probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("Categorical: `logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = tuple(self._param.shape[:-1]) if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return ember.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return ember.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = ember.multinomial(probs_2d, math.prod(sample_shape), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = ember.finfo(self.logits.dtype).min
        logits = ember.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, dtype=ember.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
