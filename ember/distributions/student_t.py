"""Student's t distribution."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location `loc` and scale `scale`, as
    torch.distributions.StudentT. `rsample` is loc + scale * X / sqrt(Z / df) for X ~ N(0, 1) and
    Z ~ Chi2(df), differentiable in df through the chi-squared's implicit gradient. The mean is NaN for
    df <= 1, the variance inf for 1 < df <= 2 and NaN for df <= 1.

    >>> d = ember.distributions.StudentT(ember.tensor([4.0]))
    >>> d.mean.item(), d.variance.item(), round(d.log_prob(ember.tensor([0.0])).item(), 4)
    (0.0, 2.0, -0.9808)
    """
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = tuple(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return ember.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        # the df > 2 formula on a stand-in df elsewhere: its gradient must not be 0 * inf where unused
        df = ember.where(self.df > 2, self.df, 3.0)
        finite = self.scale.pow(2) * df / (df - 2)
        return ember.where(self.df > 2, finite, ember.where(self.df > 1, ember.full_like(finite, math.inf), math.nan))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * ember.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + ember.lgamma(0.5 * self.df) - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y * y / self.df) - log_norm

    def entropy(self):
        half = 0.5 * self.df
        log_beta = ember.lgamma(half) + math.lgamma(0.5) - ember.lgamma(half + 0.5)
        return (self.scale.log() + (half + 0.5) * (ember.digamma(half + 0.5) - ember.digamma(half))
                + 0.5 * self.df.log() + log_beta)
