"""ember/distributions/transforms.py and transformed_distribution.py against torch: each transform's
forward, inverse and log|det J| (values and gradients through check_op), composition, caching, event dims;
TransformedDistribution's shapes, log_prob, cdf/icdf (decreasing transforms too), rsample gradients with
Ember's noise replayed in torch, and its errors."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch
from .dist_helpers import draws

rng = np.random.default_rng(11)
real, pos, _ = draws(rng)


def T(L):
    return L.distributions.transforms


TRANSFORMS = {   # name: (make(L, *params), params, x (in the domain))
    "exp": (lambda L: T(L).ExpTransform(), [], real(2, 3)),
    "sigmoid": (lambda L: T(L).SigmoidTransform(), [], real(2, 3, lo=-4, hi=4)),
    "tanh": (lambda L: T(L).TanhTransform(), [], real(2, 3)),
    "affine_numbers": (lambda L: T(L).AffineTransform(0.5, -2.0), [], real(2, 3)),
    "affine_tensors": (lambda L, a, b: T(L).AffineTransform(a, b), [real(3), pos(2, 3)], real(2, 3)),
    "affine_event_dim": (lambda L, a, b: T(L).AffineTransform(a, b, event_dim=1), [real(3), pos(3)], real(2, 3)),
    "compose": (lambda L, a: T(L).ComposeTransform([T(L).AffineTransform(a, 2.0), T(L).ExpTransform(),
                                                    T(L).AffineTransform(1.0, 3.0)]), [real(3)], real(2, 3)),
    "inverse_of_sigmoid": (lambda L: T(L).SigmoidTransform().inv, [], pos(2, 3, lo=0.05, hi=0.95)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_forward_inverse_and_log_det_jacobian_as_torch(name):
    make, params, x = TRANSFORMS[name]
    n = len(params)

    def forward(L, *a):
        t = make(L, *a[:n])
        y = t(a[n])
        return y, t.inv(y), t.log_abs_det_jacobian(a[n], y)
    check_op(forward, *params, x, atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)
    t, u = make(torch, *map(torch.tensor, params)), make(ember, *map(ember.tensor, params))
    assert (repr(u.domain), repr(u.codomain), u.bijective) == (repr(t.domain), repr(t.codomain), t.bijective)
    assert (u.domain.event_dim, u.codomain.event_dim) == (t.domain.event_dim, t.codomain.event_dim)


def test_softmax_transform():
    check_op(lambda L, x: (T(L).SoftmaxTransform()(x), T(L).SoftmaxTransform().inv(x.softmax(-1))), real(2, 4))
    s = T(ember).SoftmaxTransform()
    assert not s.bijective and s.forward_shape((2, 4)) == (2, 4) and repr(s.codomain) == "Simplex()"
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        s.forward_shape(())
    with pytest.raises(NotImplementedError):
        s.log_abs_det_jacobian(ember.zeros(3), ember.zeros(3))


def test_compose_event_dims_sign_and_identity():
    for L in (torch, ember):
        c = T(L).ComposeTransform([T(L).AffineTransform(0.0, 2.0, event_dim=1), T(L).ExpTransform()])
        assert (c.domain.event_dim, c.codomain.event_dim) == (1, 1)
        assert repr(c.codomain) == "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"
        assert c.inv.inv is c and c.sign == 1 and c.bijective
        d = T(L).ComposeTransform([T(L).AffineTransform(0.0, -2.0), T(L).ExpTransform().inv])
        assert d.sign == -1
        assert T(L).identity_transform.forward_shape((2,)) == (2,)
    check_op(lambda L, x: (T(L).identity_transform(x), T(L).identity_transform.log_abs_det_jacobian(x, x)),
             real(3), grad=False)
    # a compose over vectors sums the log|det J| of its pointwise parts over the event dim
    check_op(lambda L, x: T(L).ComposeTransform([T(L).AffineTransform(1.0, 2.0, event_dim=1), T(L).ExpTransform()])
             .log_abs_det_jacobian(x, (1 + 2 * x).exp()), real(2, 3))


def test_equality_inverse_and_cache():
    E = T(ember)
    assert E.ExpTransform() == E.ExpTransform() and E.ExpTransform() != E.SigmoidTransform()
    assert E.ExpTransform().inv == E.ExpTransform().inv and E.AffineTransform(1.0, 2.0) == E.AffineTransform(1.0, 2.0)
    assert E.AffineTransform(ember.ones(2), 2.0) != E.AffineTransform(ember.zeros(2), 2.0)
    assert E.ComposeTransform([E.ExpTransform()]) == E.ComposeTransform([E.ExpTransform()])
    t = E.TanhTransform()
    assert t.inv.inv is t and repr(t.inv) == "_InverseTransform(TanhTransform())"
    # cache_size=1: the inverse of the last output is its input itself (atanh(tanh(20)) is inf without it)
    x = ember.tensor([20.0, 0.5])
    c = E.TanhTransform(cache_size=1)
    assert c.inv(c(x)) is x
    assert E.TanhTransform().inv(E.TanhTransform()(x))[0].item() == float("inf")
    assert E.ExpTransform().with_cache(1)._cache_size == 1 and E.AffineTransform(0.0, 1.0).with_cache(1)._cache_size == 1
    assert E.ComposeTransform([E.ExpTransform()], cache_size=1).parts[0]._cache_size == 1
    for L in (torch, ember):
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            T(L).ExpTransform(cache_size=2)
        with pytest.raises(ValueError, match="Please use either .domain.event_dim or .codomain.event_dim"):
            _mixed_event_dim(L).event_dim
    assert E.AffineTransform(0.0, -2.0).sign == -1 and E.AffineTransform(0.0, ember.tensor([-1.0, 2.0])).sign.tolist() == [-1, 1]


def _mixed_event_dim(L):
    class Flatten(T(L).Transform):   # domain event_dim 0, codomain event_dim 1
        domain = L.distributions.constraints.real
        codomain = L.distributions.constraints.real_vector
    return Flatten()


# ---------------------------------------------------------------- TransformedDistribution
def _td(L, base, transforms):
    return L.distributions.TransformedDistribution(base, transforms)


def test_transformed_log_prob_cdf_icdf_as_torch():
    D = "distributions"
    m, s = real(2, 3), pos(2, 3)

    def lognormal(L, m, s):
        return _td(L, getattr(L, D).Normal(m, s), [T(L).ExpTransform()])

    def reflected(L, m, s):   # a decreasing transform: cdf and icdf flip
        return _td(L, getattr(L, D).Normal(m, s), [T(L).AffineTransform(1.0, -2.0), T(L).ExpTransform()])
    for make in (lognormal, reflected):
        check_op(lambda L, m, s, y: make(L, m, s).log_prob(y), m, s, pos(4, 2, 3), atol=1e-5, rtol=1e-5)
        check_op(lambda L, m, s, y: make(L, m, s).cdf(y), m, s, pos(2, 3), atol=1e-5, rtol=1e-5)
        check_op(lambda L, m, s, u: make(L, m, s).icdf(u), m, s, pos(2, 3, lo=0.1, hi=0.9), atol=1e-5, rtol=1e-5,
                 grad_atol=1e-4, grad_rtol=1e-4)

    def logistic(L, a, b):   # torch's docstring example: Uniform through logit, then affine
        return _td(L, getattr(L, D).Uniform(L.zeros_like(a), L.ones_like(a)), [T(L).SigmoidTransform().inv,
                                                                                T(L).AffineTransform(a, b)])
    check_op(lambda L, a, b, y: logistic(L, a, b).log_prob(y), real(3), pos(3), real(5, 3), atol=1e-5, rtol=1e-5)


def test_transformed_shapes_event_coupling_and_broadcast_base():
    for L in (torch, ember):
        # a transform over vectors makes the base's last batch dim an event dim (Independent)
        d = _td(L, L.distributions.Normal(L.zeros(2, 3), 1.0), [T(L).AffineTransform(0.0, 2.0, event_dim=1)])
        assert (tuple(d.batch_shape), tuple(d.event_shape)) == ((2,), (3,))
        assert type(d.base_dist).__name__ == "Independent" and tuple(d.sample((4,)).shape) == (4, 2, 3)
        assert repr(d.support) == "IndependentConstraint(Real(), 1)"
        # a transform's parameters broadcast the base distribution up
        e = _td(L, L.distributions.Normal(L.zeros(3), 1.0), T(L).AffineTransform(L.zeros(4, 1), 2.0))
        assert (tuple(e.batch_shape), tuple(e.base_dist.batch_shape)) == ((4, 3), (4, 3))
        x = e.expand((5, 4, 3))
        assert tuple(x.batch_shape) == (5, 4, 3) and tuple(x.sample().shape) == (5, 4, 3)
        assert _td(L, L.distributions.Normal(0.0, 1.0), []).support is L.distributions.constraints.real
        assert e.has_rsample and not _td(L, L.distributions.Poisson(L.ones(2)), T(L).ExpTransform()).has_rsample
    check_op(lambda L, m, y: _td(L, L.distributions.Normal(m, 1.0), [T(L).AffineTransform(0.0, 2.0, event_dim=1)])
             .log_prob(y), real(2, 3), real(4, 2, 3))
    check_op(lambda L, m, y: _td(L, L.distributions.Normal(m, 1.0), [T(L).SoftmaxTransform().inv]).base_dist.log_prob(y),
             real(2, 3), real(2, 3))


def test_transformed_errors_as_torch():
    raises_as_torch(lambda L: _td(L, L.distributions.Normal(0.0, 1.0), "exp"), ValueError,
                    "transforms must be a Transform or list, but was exp")
    raises_as_torch(lambda L: _td(L, L.distributions.Normal(0.0, 1.0), [1]), ValueError,
                    "transforms must be a Transform or a list of Transforms")
    raises_as_torch(lambda L: _td(L, L.distributions.Normal(0.0, 1.0), [T(L).AffineTransform(0.0, 1.0, event_dim=1)]),
                    ValueError, "base_distribution needs to have shape with size at least 1, but got ")
    raises_as_torch(lambda L: _td(L, L.distributions.Normal(0.0, 1.0), T(L).ExpTransform()).log_prob(L.tensor(-1.0)),
                    ValueError, "to be within the support (GreaterThan(lower_bound=0.0))")


def test_transformed_rsample_gradient_replayed_in_torch():
    # Ember's y = exp(2 + 3 * (m + s * eps)): its gradients in m and s equal torch's for the same eps
    m0, s0 = real(2, 3), pos(2, 3)
    _ = ember.manual_seed(4)
    m, s = ember.tensor(m0, requires_grad=True), ember.tensor(s0, requires_grad=True)
    d = _td(ember, ember.distributions.Normal(m, s), [T(ember).AffineTransform(2.0, 3.0), T(ember).ExpTransform()])
    y = d.rsample((5,))
    w = ember.tensor(real(5, 2, 3))
    (y * w).sum().backward()
    eps = (((y.detach().log() - 2) / 3 - m.detach()) / s.detach()).numpy()
    tm, ts = torch.tensor(m0, requires_grad=True), torch.tensor(s0, requires_grad=True)
    ty = (2 + 3 * (tm + ts * torch.tensor(eps, dtype=torch.float32))).exp()
    (ty * torch.tensor(w.numpy())).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert not d.sample().requires_grad


def test_transformed_on_the_check_op_device():
    check_op(lambda L, m, s: _td(L, L.distributions.Normal(m, s), [T(L).TanhTransform()]).log_prob(
        L.full_like(m, 0.25)), real(3), pos(3))
    check_op(lambda L, m: _td(L, L.distributions.Normal(m, 1.0), [T(L).AffineTransform(L.ones_like(m), 2.0)]).cdf(m),
             real(3))


def test_sample_statistics_of_a_transformed_normal():
    # y = exp(x), x ~ N(0.5, 0.4): mean exp(0.5 + 0.08), log(y) has the base's mean and std
    _ = ember.manual_seed(0)
    n = 200_000
    d = _td(ember, ember.distributions.Normal(ember.tensor([0.5], dtype=ember.float64), 0.4), T(ember).ExpTransform())
    y = d.sample((n,)).numpy()[:, 0]
    assert abs(np.log(y).mean() - 0.5) < 4 * 0.4 / n ** 0.5 and abs(np.log(y).std() / 0.4 - 1) < 0.01
    assert abs(y.mean() / np.exp(0.58) - 1) < 0.01
