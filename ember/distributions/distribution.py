"""The Distribution base class (torch.distributions.Distribution): shapes, argument validation, sample."""
from __future__ import annotations

import warnings

import ember
from ember import Tensor
from .._errors import op_error
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Base class of the probability distributions, as torch.distributions.Distribution.

    batch_shape: the shape over which parameters are batched (independent, not identical, distributions).
    event_shape: the shape of one sample (() for univariate distributions).
    validate_args: check the parameters at construction and the values given to log_prob/cdf against the
        constraints (`arg_constraints`, `support`); None takes the class default, which
        `Distribution.set_default_validate_args` sets (on by default, off under `python -O`, as torch).

    >>> d = ember.distributions.Normal(ember.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape, tuple(d.sample((2,)).shape)
    ((3,), (), (2, 3))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made without `validate_args`."""
        if value not in [True, False]:
            raise ValueError(f"Distribution.set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              f"`arg_constraints = {{}}` or initialize the distribution with `validate_args=False` "
                              f"to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue   # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue   # derived from the given parameter (logits from probs): not an argument
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise op_error(type(self).__name__,
                                   f"Expected parameter {param} ({type(value).__name__} of shape "
                                   f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                   f"{constraint!r}, but found invalid values:\n{value}", ValueError)
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same kind with its parameters expanded (not copied) to `batch_shape`."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """{parameter name: Constraint} that `validate_args` checks."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint the samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, cut from the autograd graph."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterized sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> tuple:
        """sample_shape + batch_shape + event_shape."""
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value: Tensor) -> None:
        """torch's checks of a value given to log_prob/cdf: its rightmost dims are event_shape, it
        broadcasts with batch_shape + event_shape, and it lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        name = type(self).__name__
        actual_shape = tuple(value.shape)
        event_dim_start = len(actual_shape) - len(self._event_shape)
        if actual_shape[event_dim_start:] != self._event_shape:
            raise op_error(name, f"The right-most size of value must match event_shape: {actual_shape} vs "
                                 f"{self._event_shape}.", ValueError)
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise op_error(name, f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                     f"{expected_shape}.", ValueError)
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          f"initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise op_error(name, f"Expected value argument ({type(value).__name__} of shape {actual_shape}) to be "
                                 f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                                 f"values:\n{value}", ValueError)

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    @staticmethod
    def _repr_param(value) -> str:
        # torch formats a one-element tensor (a 0-d one as its number), and the shape of a larger one
        if value.numel() != 1:
            return str(tuple(value.shape))
        return repr(value.item()) if value.dim() == 0 else str(value)

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(f"{p}: {self._repr_param(self.__dict__[p])}" for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"
