"""Maps from unconstrained space onto a constraint's set, as torch.distributions.constraint_registry:
`biject_to(c)` gives a bijective Transform (for HMC-style reparameterisation, where log |det J| matters),
`transform_to(c)` any Transform onto c (for optimising a constrained parameter through a free one).
Both look the transform up by the constraint's class; `register` adds one for a new Constraint.

>>> from ember.distributions import constraints, transform_to
>>> t = transform_to(constraints.positive)
>>> u = ember.zeros(2, requires_grad=True)        # the free parameter
>>> t(u).tolist(), [round(v, 4) for v in t.inv(ember.tensor([1.0, math.e])).tolist()]
([1.0, 1.0], [0.0, 1.0])
"""
from __future__ import annotations

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

_NUMBER = (int, float)


class ConstraintRegistry:
    """Constraint classes to factories `f(constraint) -> Transform`."""

    def __init__(self) -> None:
        self._registry: dict = {}

    def register(self, constraint, factory=None):
        """Register `factory` for a Constraint subclass (or the class of a constraint instance); without a
        factory, returns a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The Transform onto `constraint`; NotImplementedError when its class has none registered."""
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _to_real(constraint):
    return transforms.identity_transform


def _biject_to_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


def _transform_to_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


def _to_positive(constraint):
    return transforms.ExpTransform()


def _to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


def _to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


def _to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, _NUMBER) and lower == 0 and isinstance(upper, _NUMBER) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


# torch's table, in torch's order: positive and nonnegative are instances of the greater_than(_eq) classes,
# so the later greater_than entry is what biject_to(positive) gives (exp, then + 0), as in torch
for _registry in (biject_to, transform_to):
    _registry.register(constraints.real, _to_real)
    _registry.register(constraints.positive, _to_positive)
    _registry.register(constraints.nonnegative, _to_positive)
    _registry.register(constraints.greater_than, _to_greater_than)
    _registry.register(constraints.greater_than_eq, _to_greater_than)
    _registry.register(constraints.less_than, _to_less_than)
    _registry.register(constraints.interval, _to_interval)
    _registry.register(constraints.half_open_interval, _to_interval)
biject_to.register(constraints.independent, _biject_to_independent)
transform_to.register(constraints.independent, _transform_to_independent)
biject_to.register(constraints.simplex, _biject_to_simplex)
transform_to.register(constraints.simplex, _transform_to_simplex)
transform_to.register(constraints.lower_cholesky, _transform_to_lower_cholesky)
transform_to.register(constraints.positive_definite, _transform_to_positive_definite)
transform_to.register(constraints.positive_semidefinite, _transform_to_positive_definite)


def _biject_to_cat(constraint):
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


def _transform_to_cat(constraint):
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


def _biject_to_stack(constraint):
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


def _transform_to_stack(constraint):
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)


biject_to.register(constraints.cat, _biject_to_cat)
transform_to.register(constraints.cat, _transform_to_cat)
biject_to.register(constraints.stack, _biject_to_stack)
transform_to.register(constraints.stack, _transform_to_stack)
