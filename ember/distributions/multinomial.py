"""The multinomial distribution: counts of the K categories in total_count draws."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts of the K categories of the last dim of `probs` (normalised) or `logits` (unnormalised
    log-probabilities) in `total_count` independent draws, as torch.distributions.Multinomial. total_count
    is one Python int for the batch (needed by `sample` and `entropy`); `log_prob` takes the count of
    each value from the value itself, so it works with any total_count.

    >>> d = ember.distributions.Multinomial(4, probs=ember.tensor([1.0, 1.0]))
    >>> d.mean.tolist(), round(d.log_prob(ember.tensor([2.0, 2.0])).exp().item(), 4)
    ([2.0, 2.0], 0.375)
    """
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args=None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs, validate_args=False)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        probs = self.probs
        with ember.no_grad():
            if self.total_count == 0:
                return ember.zeros(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device)
            indices = self._categorical.sample((self.total_count,) + sample_shape)   # (n,) + sample + batch
            indices = indices.permute(tuple(range(1, indices.dim())) + (0,))        # sample + batch + (n,)
            counts = ember.zeros(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device)
            # a scatter of n draws per row, not an (n, ..., K) one-hot: memory n + K per row, not n K
            return counts.scatter_add(-1, indices, ember.ones(indices.shape, dtype=probs.dtype, device=probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ember.broadcast_tensors(self.logits, value)
        log_factorial_n = ember.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ember.lgamma(value + 1).sum(-1)
        # a category of probability 0 drawn 0 times adds 0, not 0 * -inf = NaN
        logits = ember.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self):
        # H = n H(categorical) - log n! + sum_k E[log x_k!], x_k ~ Binomial(n, p_k)
        probs = self.probs
        n = ember.tensor(self.total_count, device=probs.device)   # int64, as torch (its lgamma is float32)
        term1 = n * self._categorical.entropy() - ember.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]     # (n, 1, ..., 1)
        binomial_probs = ember.exp(self._binomial.log_prob(support))
        weights = ember.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum(0).sum(-1)
