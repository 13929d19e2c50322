"""The chi-squared distribution: Gamma(df / 2, 1 / 2)."""
from __future__ import annotations

from ember import Tensor
from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared distribution with `df` degrees of freedom, as torch.distributions.Chi2: a Gamma of
    concentration df / 2 and rate 1 / 2 (rsample differentiable in df through Gamma's implicit gradient).

    >>> d = ember.distributions.Chi2(ember.tensor([4.0]))
    >>> d.mean.item(), d.variance.item()
    (4.0, 8.0)
    """
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(Chi2, _instance))

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
