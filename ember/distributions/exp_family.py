"""ExponentialFamily: the base of the distributions whose density is exp(<t(x), theta> - F(theta) + k(x))."""
from __future__ import annotations

import ember
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of the exponential family, given by its natural parameters theta
    (`_natural_params`), its log normalizer F (`_log_normalizer`) and the mean of its carrier measure k
    (`_mean_carrier_measure`). The entropy, and the KL divergence between two members of the same family,
    follow from the Bregman divergence of F, computed with autograd (the subclasses here override
    `entropy` with closed forms).

    >>> isinstance(ember.distributions.Normal(0.0, 1.0), ember.distributions.ExponentialFamily)
    True
    """

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
