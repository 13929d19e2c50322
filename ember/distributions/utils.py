"""Helpers shared by the distributions, under torch.distributions.utils' names."""
from __future__ import annotations

import functools

import ember
from ember import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property"]

euler_constant = 0.57721566490153286060   # Euler-Mascheroni

_NUMBER = (bool, int, float)


def broadcast_all(*values) -> tuple:
    """Tensors and Python numbers broadcast together; numbers become tensors of the first tensor's dtype
    and device (of the default dtype when all are numbers), as torch.distributions.utils.broadcast_all.

    >>> from ember.distributions.utils import broadcast_all
    >>> [tuple(v.shape) for v in broadcast_all(ember.zeros(2, 1), 1.0, ember.ones(3))]
    [(2, 3), (2, 3), (2, 3)]
    """
    if not all(isinstance(v, (Tensor,) + _NUMBER) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        ref = next((v for v in values if isinstance(v, Tensor)), None)
        options = (dict(dtype=ember.get_default_dtype()) if ref is None
                   else dict(dtype=ref.dtype, device=ref.device))
        values = tuple(v if isinstance(v, Tensor) else ember.tensor(float(v), **options) for v in values)
    return tuple(ember.broadcast_tensors(*values))


def _standard_normal(shape, dtype, device) -> Tensor:
    return ember.randn(*shape, dtype=dtype, device=device)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds to probabilities (`is_binary`), or unnormalised log-probabilities along the last dim to
    probabilities (softmax)."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, -1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped to [eps, 1 - eps], eps the machine epsilon of their dtype.

    >>> from ember.distributions.utils import clamp_probs
    >>> clamp_probs(ember.tensor([0.0, 0.5], dtype=ember.float64)).tolist()
    [2.220446049250313e-16, 0.5]
    """
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities to log-odds (`is_binary`) or to log-probabilities, of clamped probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed on first use (under grad mode) and then stored on the instance: how a
    distribution given `probs` derives `logits` only when asked."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class BinaryProbs:
    """`probs` and `logits` of a two-outcome parameter (a mixin before the Distribution base of
    Bernoulli, Binomial, Geometric and LogitRelaxedBernoulli): the one given is set on the instance, the
    other is derived from it on first use."""

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)


class CountProbs(BinaryProbs):
    """`total_count` with `probs` or `logits` (a mixin before the Distribution base of Binomial and
    NegativeBinomial): the count broadcasts with the probabilities and takes their dtype; `expand` and
    `param_shape` follow whichever of probs/logits was given."""

    def __init__(self, total_count, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError(f"{type(self).__name__}: Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            total_count, self.probs = broadcast_all(total_count, probs)
            self._param = self.probs
        else:
            total_count, self.logits = broadcast_all(total_count, logits)
            self._param = self.logits
        self.total_count = total_count.to(self._param.dtype)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(CountProbs, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)


class LocScale:
    """The location-scale part of Normal and Laplace (a mixin before their Distribution base): `loc` and
    `scale` broadcast together, the batch shape, `expand`, and mean = mode = loc."""

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, _NUMBER) and isinstance(scale, _NUMBER):
            batch_shape = ()
        else:
            batch_shape = tuple(self.loc.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        cls = next(c for c in type(self).__mro__ if LocScale in c.__bases__)   # Normal or Laplace
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(LocScale, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
