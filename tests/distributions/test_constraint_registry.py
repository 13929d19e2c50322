"""biject_to / transform_to (ember/distributions/constraint_registry.py) and the transforms they need
(LowerCholeskyTransform, PositiveDefiniteTransform, ReshapeTransform,
CatTransform, StackTransform) and the cat / stack constraints against torch: the same transform
for each constraint, its values, inverse and log |det J| with gradients through check_op, and the
registry's errors."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch

TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)

CONSTRAINTS = {
    "real": lambda C: C.real,
    "positive": lambda C: C.positive,
    "nonnegative": lambda C: C.nonnegative,
    "greater_than": lambda C: C.greater_than(-1.5),
    "greater_than_eq": lambda C: C.greater_than_eq(2.0),
    "less_than": lambda C: C.less_than(0.5),
    "unit_interval": lambda C: C.unit_interval,
    "interval": lambda C: C.interval(-1.0, 3.0),
    "half_open_interval": lambda C: C.half_open_interval(0.5, 2.0),
    "real_vector": lambda C: C.real_vector,
    "independent positive": lambda C: C.independent(C.positive, 1),
    "simplex": lambda C: C.simplex,
}


def _structure(t):
    """A transform as nested (class name, parts) for comparing torch's and Ember's."""
    name = type(t).__name__
    if name == "ComposeTransform":
        return (name, tuple(_structure(p) for p in t.parts))
    if name in ("CatTransform", "StackTransform"):
        return (name, tuple(_structure(p) for p in t.transforms), t.dim, getattr(t, "lengths", None))
    if name == "IndependentTransform":
        return (name, _structure(t.base_transform), t.reinterpreted_batch_ndims)
    if name == "AffineTransform":
        return (name, float(t.loc), float(t.scale))
    return name


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_registry_gives_torchs_transform(registry, name):
    def t(L):
        return getattr(L.distributions, registry)(CONSTRAINTS[name](L.distributions.constraints))
    assert _structure(t(ember)) == _structure(t(torch))
    x = np.random.default_rng(0).uniform(-2, 2, (3, 4))
    check_op(lambda L, x: (t(L)(x), t(L).inv(t(L)(x))), x, **TOL)
    if t(torch).bijective:     # SoftmaxTransform (transform_to(simplex)) has no log |det J|, in torch neither
        check_op(lambda L, x: t(L).log_abs_det_jacobian(x, t(L)(x)), x, **TOL)
    y = t(ember)(ember.tensor(np.random.default_rng(1).uniform(-3, 3, (3, 4))))
    assert bool(CONSTRAINTS[name](ember.distributions.constraints).check(y).all())


@pytest.mark.parametrize("name", ["lower_cholesky", "positive_definite", "positive_semidefinite"])
def test_transform_to_matrices(name):
    def t(L):
        return L.distributions.transform_to(getattr(L.distributions.constraints, name))
    assert type(t(ember)).__name__ == type(t(torch)).__name__
    x = np.random.default_rng(2).uniform(-1, 1, (2, 3, 3))
    check_op(lambda L, x: (t(L)(x), t(L).inv(t(L)(x))), x, **TOL)
    assert bool(getattr(ember.distributions.constraints, name).check(t(ember)(ember.tensor(x))).all())
    for L in (torch, ember):
        with pytest.raises(NotImplementedError):
            L.distributions.biject_to(getattr(L.distributions.constraints, name))


def test_reshape_transform():
    def t(L):
        return L.distributions.transforms.ReshapeTransform((6,), (2, 3))
    x = np.random.default_rng(3).uniform(-1, 1, (4, 6))
    check_op(lambda L, x: (t(L)(x), t(L).inv(t(L)(x)), t(L).log_abs_det_jacobian(x, t(L)(x))), x, **TOL)
    for L in (torch, ember):
        tt = t(L)
        assert tuple(tt.forward_shape((5, 6))) == (5, 2, 3) and tuple(tt.inverse_shape((2, 3))) == (6,)
        assert (tt.domain.event_dim, tt.codomain.event_dim, tt.bijective) == (1, 2, True)
        assert tt.with_cache(1)._cache_size == 1
    raises_as_torch(lambda L: L.distributions.transforms.ReshapeTransform((6,), (4,)), ValueError,
                    "in_shape, out_shape have different numbers of elements")
    raises_as_torch(lambda L: L.distributions.transforms.ReshapeTransform((6,), (2, 3)).forward_shape(()), ValueError,
                    "Too few dimensions on input")
    raises_as_torch(lambda L: L.distributions.transforms.ReshapeTransform((6,), (2, 3)).inverse_shape((3, 2)),
                    ValueError, "Shape mismatch")


def test_transformed_normal_through_biject_to_matches_torch():
    # the Pyro pattern: a constrained sample site reparameterised through biject_to(support)
    def f(L, m, s):
        d = L.distributions.Gamma(s.exp(), 1.0)
        t = L.distributions.biject_to(d.support)
        u = m
        return d.log_prob(t(u)) + t.log_abs_det_jacobian(u, t(u))
    check_op(f, np.array([-0.5, 0.3, 1.2]), np.array([0.1, 0.4, -0.2]), **TOL)


def test_errors_and_custom_registration():
    for L in (torch, ember):
        C = L.distributions.constraints
        with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
            L.distributions.transform_to(C.boolean)
        with pytest.raises(NotImplementedError, match="Cannot transform _IntegerInterval constraints"):
            L.distributions.biject_to(C.integer_interval(0, 3))
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
            L.distributions.constraint_registry.ConstraintRegistry().register(int, lambda c: None)

    class Odd(ember.distributions.constraints.Constraint):
        pass
    registry = ember.distributions.constraint_registry.ConstraintRegistry()

    @registry.register(Odd)
    def _odd(constraint):
        return ember.distributions.transforms.ExpTransform()
    assert isinstance(registry(Odd()), ember.distributions.transforms.ExpTransform)
    registry.register(Odd(), lambda c: ember.distributions.transforms.identity_transform)
    assert registry(Odd()) is ember.distributions.transforms.identity_transform


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_cat_and_stack(registry):
    def cat(L):
        C = L.distributions.constraints
        return getattr(L.distributions, registry)(C.cat([C.positive, C.real, C.interval(-1.0, 2.0)], 1, [2, 1, 3]))

    def stack(L):
        C = L.distributions.constraints
        return getattr(L.distributions, registry)(C.stack([C.positive, C.real, C.unit_interval], -1))
    assert _structure(cat(ember)) == _structure(cat(torch))
    assert _structure(stack(ember)) == _structure(stack(torch))
    x = np.random.default_rng(4).uniform(-2, 2, (4, 6))
    check_op(lambda L, x: (cat(L)(x), cat(L).inv(cat(L)(x)), cat(L).log_abs_det_jacobian(x, cat(L)(x))), x, **TOL)
    check_op(lambda L, x: (stack(L)(x), stack(L).inv(stack(L)(x)), stack(L).log_abs_det_jacobian(x, stack(L)(x))),
             x[:, :3], **TOL)
    for L in (torch, ember):
        C = L.distributions.constraints
        y = cat(L)(L.tensor(x))
        assert C.cat([C.positive, C.real, C.interval(-1.0, 2.0)], 1, [2, 1, 3]).check(y).all()
        assert not C.cat([C.positive, C.real, C.interval(-1.0, 2.0)], 1, [2, 1, 3]).check(-y.abs()).all()
        assert C.stack([C.positive, C.real, C.unit_interval], -1).check(stack(L)(L.tensor(x[:, :3]))).all()
        assert (cat(L).event_dim, cat(L).bijective, stack(L).bijective) == (0, True, True)
        # a vector transform among scalar ones: log-dets summed over its event, cat over the rest
        t = L.distributions.transforms.CatTransform([L.distributions.transforms.ExpTransform(),
                                                     L.distributions.transforms.StickBreakingTransform()], 0, [2, 2])
        assert t.event_dim == 1
    check_op(lambda L, x: L.distributions.transforms.CatTransform(
        [L.distributions.transforms.ExpTransform(), L.distributions.transforms.StickBreakingTransform()], -1,
        [2, 2]).log_abs_det_jacobian(x, x), x[:, :4].copy(), grad=False)
    raises_as_torch(lambda L: cat(L)(L.zeros(4, 5)), AssertionError, "must equal length 6")
    raises_as_torch(lambda L: stack(L)(L.zeros(4, 2)), AssertionError, "must equal len(transforms) 3")
    raises_as_torch(lambda L: L.distributions.transforms.CatTransform([L.distributions.transforms.ExpTransform()],
                                                                      0, [1, 2]), AssertionError,
                    "lengths (2) must match transforms (1)")


@pytest.mark.parametrize("name", ["LowerCholeskyTransform", "PositiveDefiniteTransform"])
def test_matrix_transforms_by_name(name):
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3, 3))
    check_op(lambda L, x: (getattr(L.distributions, name)()(x), getattr(L.distributions, name)().inv(
        getattr(L.distributions, name)()(x))), x, **TOL)
    for L in (torch, ember):
        t = getattr(L.distributions.transforms, name)()
        assert t == getattr(L.distributions.transforms, name)() and t != L.distributions.transforms.ExpTransform()
        assert (t.domain.event_dim, t.codomain.event_dim, repr(t)) == (2, 2, name + "()")
