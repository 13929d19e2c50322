"""The logistic-normal distribution on the simplex."""
from __future__ import annotations

from ember import Tensor
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform(X) for X ~ Normal(loc, scale) over the last dim, as
    torch.distributions.LogisticNormal: a K-vector loc gives points on the (K + 1)-simplex, and
    `rsample` is differentiable in loc and scale.

    >>> d = ember.distributions.LogisticNormal(ember.zeros(2), ember.ones(2))
    >>> d.event_shape, round(d.sample().sum().item(), 5)
    ((3,), 1.0)
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand((1,))
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
