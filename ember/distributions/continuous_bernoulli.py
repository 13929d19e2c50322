"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019)."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, BinaryProbs, broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryProbs, ExponentialFamily):
    """Density C(p) p^x (1 - p)^(1 - x) on [0, 1], parameterised by `probs` p (clamped away from 0 and 1)
    or `logits`, as torch.distributions.ContinuousBernoulli. Inside `lims` (p near 1/2, where the closed
    forms divide 0 by 0) the normalizer, mean, variance, cdf and icdf use torch's Taylor expansions;
    rsample is the inverse cdf of a uniform draw, differentiable in p.

    >>> d = ember.distributions.ContinuousBernoulli(probs=ember.tensor([0.5, 0.8]))
    >>> [round(v, 4) for v in d.mean.tolist()], [round(v, 4) for v in d.log_prob(ember.tensor([0.5, 1.0])).tolist()]
    ([0.5, 0.612], [0.0, 0.6143])
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("ContinuousBernoulli: Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _NUMBER)
            (probs,) = broadcast_all(probs)
            # checked here only when validate_args is given explicitly, as torch: the clamp below would
            # make any value pass the later check
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(probs).all()):
                raise ValueError("ContinuousBernoulli: The parameter probs has invalid values")
            self.probs = clamp_probs(probs)
        else:
            is_scalar = isinstance(logits, _NUMBER)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        # p inside lims replaced by lims[0], so the closed forms stay finite where where() discards them
        return ember.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """log C(p) = log |log(1 - p) - log p| - log |1 - 2p|, a Taylor series in (p - 1/2)^2 near 1/2."""
        p = self._cut_probs()
        below = ember.where(p <= 0.5, p, 0.0)
        above = ember.where(p >= 0.5, p, 1.0)
        log_norm = (ember.log((ember.log1p(-p) - ember.log(p)).abs())
                    - ember.where(p <= 0.5, ember.log1p(-2.0 * below), ember.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        p = self._cut_probs()
        mus = p / (2.0 * p - 1.0) + 1.0 / (ember.log1p(-p) - ember.log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return ember.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        p = self._cut_probs()
        variances = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / (ember.log1p(-p) - ember.log(p)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(*shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        from ember.nn.functional import binary_cross_entropy_with_logits
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        cdfs = (p ** value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        unbounded = ember.where(self._outside_unstable_region(), cdfs, value)
        return ember.where(value <= 0.0, ember.zeros_like(value),
                           ember.where(value >= 1.0, ember.ones_like(value), unbounded))

    def icdf(self, value):
        p = self._cut_probs()
        x = (ember.log1p(-p + value * (2.0 * p - 1.0)) - ember.log1p(-p)) / (ember.log(p) - ember.log1p(-p))
        return ember.where(self._outside_unstable_region(), x, value)

    def entropy(self):
        log_probs0 = ember.log1p(-self.probs)
        log_probs1 = ember.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizer in the natural parameter: log |expm1(x) / x|, a Taylor series near 0."""
        unstable = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(unstable, x, self._lims[0] - 0.5)
        log_norm = ember.log(ember.expm1(cut).abs()) - ember.log(cut.abs())
        taylor = 0.5 * x + x ** 2 / 24.0 - x ** 4 / 2880.0
        return ember.where(unstable, log_norm, taylor)
