"""ember/distributions/transforms.py and transformed_distribution.py against torch.distributions: each
transform's forward, inverse and log |det J| (values and gradients through check_op), composition and event
dims, caching, TransformedDistribution's shapes, log_prob, cdf/icdf and support, LogNormal, and the
flows and squashed policies research code builds from them."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op
from .dist_helpers import draws

rng = np.random.default_rng(1)
real, pos, _ = draws(rng)
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)


def T(L):
    return L.distributions.transforms


# name -> (make(L, device), domain sample)
TRANSFORMS = {
    "exp": (lambda L, dev: T(L).ExpTransform(), real(3, 4)),
    "power": (lambda L, dev: T(L).PowerTransform(1.7), pos(3, 4)),
    "sigmoid": (lambda L, dev: T(L).SigmoidTransform(), real(3, 4)),
    "tanh": (lambda L, dev: T(L).TanhTransform(), real(3, 4)),
    "softplus": (lambda L, dev: T(L).SoftplusTransform(), real(3, 4)),
    "affine_numbers": (lambda L, dev: T(L).AffineTransform(0.5, -3.0), real(3, 4)),
    "affine_event_dim": (lambda L, dev: T(L).AffineTransform(L.tensor([1.0, 2.0, 3.0, 4.0], device=dev),
                                                       L.tensor([0.5, -2.0, 1.5, 3.0], device=dev), event_dim=1), real(3, 4)),
    "compose": (lambda L, dev: T(L).ComposeTransform([T(L).AffineTransform(0.3, 2.0), T(L).SoftplusTransform(),
                                                T(L).PowerTransform(0.5)]), real(3, 4)),
    "independent": (lambda L, dev: T(L).IndependentTransform(T(L).TanhTransform(), 2), real(3, 4)),
    "stick_breaking": (lambda L, dev: T(L).StickBreakingTransform(), real(3, 4)),
    "inverse": (lambda L, dev: T(L).ExpTransform().inv, pos(3, 4)),
    "compose_inverse": (lambda L, dev: T(L).ComposeTransform([T(L).ExpTransform(), T(L).AffineTransform(1.0, 2.0)]).inv,
                        pos(3, 4, lo=1.5, hi=4.0)),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_forward_inverse_and_log_det_match_torch(name):
    make, x = TRANSFORMS[name]

    def fn(L, x):
        t = make(L, x.device)
        y = t(x)
        return y, t.inv(y), t.log_abs_det_jacobian(x, y)
    check_op(fn, x, **TOL)
    res = {}
    for L in (ember, torch):
        t = make(L, "cpu")
        res[L.__name__] = (t.domain.event_dim, t.codomain.event_dim, t.bijective, t.forward_shape((2, 3, 4)),
                           t.inverse_shape((3, 4)))
    assert res["ember"] == res["torch"]


def test_cache_returns_the_exact_input_and_equality_as_torch():
    for L in (ember, torch):
        t = T(L).TanhTransform(cache_size=1)
        x = L.tensor([20.0, 0.5])          # tanh(20) rounds to 1.0: atanh of it is inf
        y = t(x)
        assert t.inv(y) is x and t(x) is y
        assert L.isinf(T(L).TanhTransform()(x).atanh()[0])
        assert T(L).ExpTransform() == T(L).ExpTransform() and T(L).ExpTransform() != T(L).TanhTransform()
        assert t.inv.inv is t and T(L).AffineTransform(1.0, 2.0) == T(L).AffineTransform(1.0, 2.0)
        assert T(L).ComposeTransform([T(L).ExpTransform()]).sign == 1
        a = T(L).AbsTransform()
        assert a(L.tensor([-2.0, 3.0])).tolist() == [2.0, 3.0] and a.inv(L.tensor([2.0])).tolist() == [2.0]
        assert not a.bijective and T(L).identity_transform(x) is x
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            T(L).ExpTransform(cache_size=2)


def test_transformed_distribution_log_prob_cdf_icdf_as_torch():
    loc, scale = real(2), pos(2)

    def make(L, m, s):
        return L.distributions.TransformedDistribution(
            L.distributions.Normal(m, s), [T(L).AffineTransform(1.0, -2.0), T(L).SigmoidTransform()])
    check_op(lambda L, m, s, v: make(L, m, s).log_prob(v), loc, scale, pos(3, 2, lo=0.1, hi=0.9), **TOL)
    check_op(lambda L, m, s, v: make(L, m, s).cdf(v), loc, scale, pos(3, 2, lo=0.1, hi=0.9), **TOL)
    check_op(lambda L, m, s, u: make(L, m, s).icdf(u), loc, scale, pos(3, 2, lo=0.1, hi=0.9), **TOL)


def test_squashed_gaussian_policy_and_a_vector_flow_as_torch():
    mu, log_std, eps = real(4, 2), real(4, 2, lo=-1, hi=0.5), real(4, 2)

    def policy(L, m, ls, e):   # SAC: a = tanh(u), log pi(a) through the cached pre-squash u
        pi = L.distributions.TransformedDistribution(L.distributions.Normal(m, ls.exp()),
                                                     [T(L).TanhTransform(cache_size=1)])
        a = pi.transforms[0](m + ls.exp() * e)
        return a, pi.log_prob(a).sum(-1)
    check_op(policy, mu, log_std, eps, **TOL)

    def flow(L, shift, s, x):   # an affine flow over 3-vectors, then exp: event_shape (3,)
        base = L.distributions.Independent(L.distributions.Normal(L.zeros(3, dtype=x.dtype, device=x.device), 1.0), 1)
        d = L.distributions.TransformedDistribution(base, [T(L).AffineTransform(shift, s, event_dim=1),
                                                           T(L).ExpTransform()])
        return d.log_prob(x)
    check_op(flow, real(3), pos(3), pos(5, 3), **TOL)
    res = {}
    for L in (ember, torch):
        base = L.distributions.Normal(L.zeros(4, 3), 1.0)
        d = L.distributions.TransformedDistribution(base, T(L).AffineTransform(0.0, L.ones(3), event_dim=1))
        e = d.expand((2, 4))
        res[L.__name__] = (tuple(d.batch_shape), tuple(d.event_shape), d.has_rsample, repr(d.support),
                           tuple(e.batch_shape), tuple(d.sample((5,)).shape), tuple(e.rsample().shape))
    assert res["ember"] == res["torch"] == ((4,), (3,), True, "IndependentConstraint(Real(), 1)", (2, 4), (5, 4, 3),
                                            (2, 4, 3))


def test_log_normal_as_torch():
    loc, scale = real(3), pos(3)
    check_op(lambda L, m, s, v: L.distributions.LogNormal(m, s).log_prob(v), loc, scale, pos(2, 3), **TOL)
    check_op(lambda L, m, s: (L.distributions.LogNormal(m, s).mean, L.distributions.LogNormal(m, s).variance,
                              L.distributions.LogNormal(m, s).mode, L.distributions.LogNormal(m, s).entropy()),
             loc, scale, **TOL)
    check_op(lambda L, m, s, v: L.distributions.LogNormal(m, s).cdf(v), loc, scale, pos(2, 3), **TOL)
    for L in (ember, torch):
        d = L.distributions.LogNormal(L.zeros(3), L.ones(3))
        assert tuple(d.rsample((2,)).shape) == (2, 3) and bool((d.sample() > 0).all())
        with pytest.raises(ValueError, match="support"):
            d.log_prob(L.tensor([-1.0, 1.0, 1.0]))
        with pytest.raises(ValueError, match="scale"):
            L.distributions.LogNormal(0.0, -1.0)


def test_a_user_transform_subclass_works_in_a_transformed_distribution_as_torch():
    def run(L):
        class Cube(L.distributions.Transform):   # y = x ** 3 (a research flow's own bijection)
            bijective = True
            sign = +1
            domain = codomain = L.distributions.constraints.real

            def _call(self, x):
                return x ** 3

            def _inverse(self, y):
                return y.sign() * y.abs() ** (1 / 3)

            def log_abs_det_jacobian(self, x, y):
                return (3 * x ** 2).log()

        t = Cube(cache_size=1)
        d = L.distributions.TransformedDistribution(L.distributions.Normal(L.zeros(2, dtype=L.float64), 1.0), t)
        x = L.tensor([0.5, -1.5], dtype=L.float64)
        with pytest.raises(NotImplementedError):
            L.distributions.Transform().log_abs_det_jacobian(x, x)
        return t(x).tolist(), t.inv(t(x)) is x, d.log_prob(L.tensor([0.125, 8.0], dtype=L.float64)).tolist(), \
            repr(t), t.with_cache(1) is t
    res = {L.__name__: run(L) for L in (ember, torch)}
    np.testing.assert_allclose(res["ember"][2], res["torch"][2], rtol=1e-12)
    assert res["ember"][:2] + res["ember"][3:] == res["torch"][:2] + res["torch"][3:]
