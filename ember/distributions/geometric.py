"""The geometric distribution: failures before the first success."""
from __future__ import annotations

import ember
from ember import Tensor
from .._errors import op_error
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, BinaryProbs, broadcast_all

__all__ = ["Geometric"]


class Geometric(BinaryProbs, Distribution):
    """Number of failures before the first success in Bernoulli trials of success probability `probs`
    (or sigmoid(`logits`)): P(k) = (1 - p)^k p for k = 0, 1, ..., as torch.distributions.Geometric.
    Samples are floor(log u / log(1 - p)), u ~ U(0, 1) from ember's generator.

    >>> d = ember.distributions.Geometric(probs=ember.tensor([0.25]))
    >>> d.mean.item(), d.variance.item(), d.log_prob(ember.tensor([0.0])).exp().item()
    (3.0, 12.0, 0.25)
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Geometric: Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        batch_shape = () if isinstance(given, _NUMBER) else tuple(given.shape)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise op_error("Geometric", f"Expected parameter probs ({type(self.probs).__name__} of shape "
                                        f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                                        f"found invalid values:\n{self.probs[~(self.probs > 0)]}", ValueError)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ember.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            probs = self.probs
            u = ember.rand(*shape, dtype=probs.dtype, device=probs.device).clamp(min=ember.finfo(probs.dtype).tiny)
            return (u.log() / ember.log1p(-probs)).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 at k = 0: probability 1, not 0 * log(0) = NaN
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * ember.log1p(-probs) + self.probs.log()

    def entropy(self):
        from ember.nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
