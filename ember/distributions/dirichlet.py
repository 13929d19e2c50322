"""The Dirichlet distribution on the probability simplex."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .gamma import _reparameterized_standard_gamma

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution of concentrations `concentration` (..., K) over the K-simplex, as
    torch.distributions.Dirichlet. `rsample` normalises K reparameterized Gamma(concentration_k, 1)
    samples (Ember's gamma sampler and implicit gradient; torch differentiates the Dirichlet sampler
    directly: both are unbiased pathwise gradients, not equal sample for sample).

    >>> d = ember.distributions.Dirichlet(ember.tensor([1.0, 3.0]))
    >>> d.mean.tolist(), d.sample((4,)).shape
    ([0.25, 0.75], (4, 2))
    """
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("Dirichlet: `concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        gammas = _reparameterized_standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1) + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: the mode is the vertex of the largest one
        mask = (self.concentration < 1).all(-1, keepdim=True)
        k = concentrationm1.shape[-1]
        vertex = (mode.argmax(-1, keepdim=True) == ember.arange(k, device=mode.device)).to(mode.dtype)
        return ember.where(mask, vertex, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
