"""HalfNormal, HalfCauchy, Gumbel, Pareto, Weibull, Kumaraswamy, LogisticNormal and
InverseGamma (TransformedDistributions, as torch's)
against torch: log_prob, cdf/icdf, moments and entropy through check_op (values and gradients), rsample
gradients with Ember's noise replayed in torch, sampling statistics with a fixed seed, shapes, expand and
validation errors."""
import math

import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch
from .dist_helpers import draws, replay

rng = np.random.default_rng(33)
real, pos, _ = draws(rng)
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)
N = 200_000


# ---------------------------------------------------------------- values and gradients against torch
@pytest.mark.parametrize("name", ["HalfNormal", "HalfCauchy"])
def test_half_normal_and_half_cauchy(name):
    s = pos(2, 3)

    def d(L, s):
        return getattr(L.distributions, name)(s)
    check_op(lambda L, s, y: d(L, s).log_prob(y), s, pos(4, 2, 3, lo=0.0, hi=3.0), **TOL)
    check_op(lambda L, s: (d(L, s).mean, d(L, s).mode, d(L, s).variance, d(L, s).entropy(), d(L, s).scale), s,
             **TOL)
    check_op(lambda L, s, y: d(L, s).cdf(y), s, pos(2, 3, lo=0.0, hi=3.0), **TOL)
    check_op(lambda L, s, u: d(L, s).icdf(u), s, pos(2, 3, lo=0.05, hi=0.95), **TOL)
    # log_prob is -inf below 0 (validate_args off), as torch's
    check_op(lambda L, s, y: getattr(L.distributions, name)(s, validate_args=False).log_prob(y), s,
             np.array([[-1.0, 0.0, 2.0], [0.5, -0.1, 3.0]]), grad=False)


def test_gumbel():
    m, s = real(2, 3), pos(2, 3)

    def d(L, m, s):
        return L.distributions.Gumbel(m, s)
    check_op(lambda L, m, s, x: d(L, m, s).log_prob(x), m, s, real(4, 2, 3), **TOL)
    check_op(lambda L, m, s: (d(L, m, s).mean, d(L, m, s).mode, d(L, m, s).variance, d(L, m, s).stddev,
                              d(L, m, s).entropy()), m, s, **TOL)
    check_op(lambda L, m, s, x: d(L, m, s).cdf(x), m, s, real(2, 3), **TOL)
    check_op(lambda L, m, s, u: d(L, m, s).icdf(u), m, s, pos(2, 3, lo=0.05, hi=0.95), **TOL)
    check_op(lambda L, x: L.distributions.Gumbel(0.5, 2.0).log_prob(x), real(5), **TOL)


def test_pareto():
    # alpha on both sides of 1 and 2: the mean is inf below 1, the variance inf below 2
    sc, a = pos(2, 3), np.array([[0.5, 1.5, 2.5], [4.0, 0.9, 3.0]])

    def d(L, sc, a):
        return L.distributions.Pareto(sc, a)
    check_op(lambda L, sc, a, y: d(L, sc, a).log_prob(y), sc, a, pos(4, 2, 3, lo=2.0, hi=5.0), **TOL)
    check_op(lambda L, sc, a: (d(L, sc, a).mean, d(L, sc, a).mode, d(L, sc, a).variance, d(L, sc, a).entropy()),
             sc, a, **TOL)
    check_op(lambda L, sc, a, y: d(L, sc, a).cdf(y), sc, a, pos(2, 3, lo=2.0, hi=5.0), **TOL)
    check_op(lambda L, sc, a, u: d(L, sc, a).icdf(u), sc, a, pos(2, 3, lo=0.05, hi=0.95), **TOL)


def test_weibull():
    sc, k = pos(2, 3), pos(2, 3, lo=0.5, hi=3.0)

    def d(L, sc, k):
        return L.distributions.Weibull(sc, k)
    check_op(lambda L, sc, k, y: d(L, sc, k).log_prob(y), sc, k, pos(4, 2, 3, lo=0.1, hi=3.0), **TOL)
    check_op(lambda L, sc, k: (d(L, sc, k).mean, d(L, sc, k).variance, d(L, sc, k).entropy()), sc, k, **TOL)
    check_op(lambda L, sc, k: d(L, sc, k).mode, sc, pos(2, 3, lo=1.2, hi=3.0), **TOL)
    check_op(lambda L, sc, k, y: d(L, sc, k).cdf(y), sc, k, pos(2, 3, lo=0.1, hi=3.0), **TOL)
    check_op(lambda L, sc, k, u: d(L, sc, k).icdf(u), sc, k, pos(2, 3, lo=0.05, hi=0.95), **TOL)


def test_kumaraswamy():
    a, b = pos(2, 3, lo=0.5, hi=3.0), pos(2, 3, lo=0.5, hi=3.0)

    def d(L, a, b):
        return L.distributions.Kumaraswamy(a, b)
    check_op(lambda L, a, b, y: d(L, a, b).log_prob(y), a, b, pos(4, 2, 3, lo=0.05, hi=0.95), **TOL)
    check_op(lambda L, a, b: (d(L, a, b).mean, d(L, a, b).variance, d(L, a, b).entropy()), a, b, **TOL)
    check_op(lambda L, a, b: d(L, a, b).mode, a, b, grad=False)   # NaN, as torch's expression gives
    check_op(lambda L, a, b, y: d(L, a, b).cdf(y), a, b, pos(2, 3, lo=0.05, hi=0.95), **TOL)
    check_op(lambda L, a, b, u: d(L, a, b).icdf(u), a, b, pos(2, 3, lo=0.05, hi=0.95), **TOL)


def test_inverse_gamma():
    # concentration on both sides of 1 and 2: the mean is inf below 1, the variance inf below 2
    c, r = np.array([[0.5, 1.5, 2.5], [4.0, 0.9, 3.0]]), pos(2, 3)

    def d(L, c, r):
        return L.distributions.InverseGamma(c, r)
    check_op(lambda L, c, r, y: d(L, c, r).log_prob(y), c, r, pos(4, 2, 3, lo=0.1, hi=3.0), **TOL)
    check_op(lambda L, c, r: (d(L, c, r).mean, d(L, c, r).mode, d(L, c, r).variance, d(L, c, r).entropy(),
                              d(L, c, r).concentration, d(L, c, r).rate), c, r, **TOL)
    check_op(lambda L, c, y: L.distributions.InverseGamma(c, 1.5).cdf(y), c, pos(2, 3, lo=0.1, hi=3.0),
             grad=False, **{k: v for k, v in TOL.items() if not k.startswith("grad")})


def test_logistic_normal():
    m, s = real(2, 3), pos(2, 3)
    y = rng.dirichlet(np.ones(4), size=(5, 2))

    def d(L, m, s):   # unvalidated: torch's simplex check refuses float16 points in check_op's dtype pass
        return L.distributions.LogisticNormal(m, s, validate_args=False)
    check_op(lambda L, m, s, y: d(L, m, s).log_prob(y), m, s, y, **TOL)
    check_op(lambda L, m, s: (d(L, m, s).loc, d(L, m, s).scale), m, s)
    # scalar parameters: a batch of one 2-simplex point, as torch
    check_op(lambda L, y: L.distributions.LogisticNormal(0.3, 1.2, validate_args=False).log_prob(y), np.array([0.3, 0.7]),
             device="cpu", **TOL)   # number parameters live on the CPU


# ---------------------------------------------------------------- shapes, flags, expand
def _all(L):
    D, f = L.distributions, L.float64
    return {
        "HalfNormal": D.HalfNormal(L.ones(2, 3, dtype=f)),
        "HalfCauchy": D.HalfCauchy(L.ones(2, 3, dtype=f)),
        "Gumbel": D.Gumbel(L.zeros(2, 3, dtype=f), 1.0),
        "Pareto": D.Pareto(L.ones(2, 3, dtype=f), 2.0),
        "Weibull": D.Weibull(L.ones(2, 3, dtype=f), 1.5),
        "Kumaraswamy": D.Kumaraswamy(L.ones(2, 3, dtype=f), 2.0),
        "InverseGamma": D.InverseGamma(L.full((2, 3), 3.0, dtype=f), 2.0),
        "LogisticNormal": D.LogisticNormal(L.zeros(2, 3, dtype=f), L.ones(2, 3, dtype=f)),
        "scalar LogisticNormal": D.LogisticNormal(0.0, 1.0),
        "scalar Gumbel": D.Gumbel(0.0, 1.0),
        "scalar HalfNormal": D.HalfNormal(1.0),
    }


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 1)])
def test_sample_shapes_dtypes_flags_and_expand_match_torch(sample_shape):
    td, ed = _all(torch), _all(ember)
    for name in td:
        t, e = td[name], ed[name]
        assert (e.batch_shape, e.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)), name
        assert e.has_rsample == t.has_rsample, name
        ts, es = t.sample(sample_shape), e.sample(sample_shape)
        assert tuple(es.shape) == tuple(ts.shape) and es.dtype.name == str(ts.dtype).split(".")[1], name
        assert not es.requires_grad and bool(e.support.check(es).all()), name
        assert tuple(e.rsample(sample_shape).shape) == tuple(t.rsample(sample_shape).shape), name
        if e.batch_shape:
            x, tx = e.expand((4,) + e.batch_shape), t.expand((4,) + t.batch_shape)
            assert type(x) is type(e) and x.batch_shape == (4,) + e.batch_shape, name
            assert tuple(x.sample().shape) == (4,) + e.batch_shape + e.event_shape, name
            if name != "LogisticNormal":   # no mean, as torch's
                np.testing.assert_allclose(x.mean.numpy(), tx.mean.numpy(), rtol=1e-12, err_msg=name)


def test_reprs_as_torch():
    for make in (lambda L: L.distributions.HalfNormal(L.tensor([1.0])), lambda L: L.distributions.Gumbel(0.0, 1.0),
                 lambda L: L.distributions.Pareto(1.0, 2.0), lambda L: L.distributions.Weibull(1.0, 2.0)):
        assert repr(make(ember)) == repr(make(torch))


# ---------------------------------------------------------------- rsample gradients, Ember's noise replayed in torch
def _replay(make_e, params, noise_of, make_t, w_shape):
    replay(make_e, params, noise_of, make_t, real(*w_shape))


def test_rsample_gradients_replayed_in_torch():
    _ = ember.manual_seed(3)
    m, s = real(2, 3), pos(2, 3)
    # the noise is recovered as torch's base sample (|eps|, u) and pushed through torch's own distribution's
    # transforms, so the parameter gradients are torch's
    for name in ("HalfNormal", "HalfCauchy"):
        _replay(lambda s: getattr(ember.distributions, name)(s).rsample((4,)), [s], lambda y, s: y / s,
                lambda e, s: getattr(torch.distributions, name)(s).transforms[0](e * s), (4, 2, 3))

    def through(d, base):   # torch's transforms applied to a base sample
        for t in d.transforms:
            base = t(base)
        return base
    _replay(lambda m, s: ember.distributions.Gumbel(m, s).rsample((4,)), [m, s],
            lambda y, m, s: np.exp(-np.exp(-(y - m) / s)), lambda u, m, s: through(torch.distributions.Gumbel(m, s), u),
            (4, 2, 3))
    a = pos(2, 3, lo=1.0, hi=3.0)
    _replay(lambda s, a: ember.distributions.Pareto(s, a).rsample((4,)), [s, a],
            lambda y, s, a: np.log(y / s) * a, lambda e, s, a: s * (e / a).exp(), (4, 2, 3))
    _replay(lambda s, k: ember.distributions.Weibull(s, k).rsample((4,)), [s, a],
            lambda y, s, k: (y / s) ** k, lambda e, s, k: s * e.pow(1 / k), (4, 2, 3))
    # LogisticNormal: eps = (logit of the stick pieces - loc) / scale, through torch's StickBreakingTransform
    sb = torch.distributions.transforms.StickBreakingTransform()
    _replay(lambda m, s: ember.distributions.LogisticNormal(m, s).rsample((4,)), [m, s],
            lambda y, m, s: (sb.inv(torch.tensor(y)).numpy() - m) / s, lambda e, m, s: sb(m + s * e), (4, 2, 4))
    b = pos(2, 3, lo=1.0, hi=3.0)
    _replay(lambda a, b: ember.distributions.Kumaraswamy(a, b).rsample((4,)), [a, b],
            lambda y, a, b: (1 - y ** a) ** b, lambda u, a, b: (1 - u.pow(1 / b)).pow(1 / a), (4, 2, 3))


# ---------------------------------------------------------------- sampling statistics
def _moments(make_t):
    d = make_t()
    return d.mean.tolist(), d.stddev.tolist()


@pytest.mark.parametrize("name,args", [
    ("HalfNormal", ([0.5, 2.0],)),
    ("Gumbel", ([0.0, 1.0], [1.0, 0.5])),
    ("Pareto", ([1.0, 2.0], [5.0, 8.0])),
    ("Weibull", ([1.0, 2.0], [0.8, 3.0])),
    ("Kumaraswamy", ([0.5, 3.0], [2.0, 0.7])),
    ("InverseGamma", ([5.0, 9.0], [2.0, 0.5])),
])
def test_sample_mean_and_std(name, args):
    mean, std = _moments(lambda: getattr(torch.distributions, name)(*(torch.tensor(a) for a in args)))
    _ = ember.manual_seed(0)
    d = getattr(ember.distributions, name)(*(ember.tensor(a) for a in args))
    std = np.array(std)
    for x in (d.sample((N,)), d.rsample((N,)).detach()):
        x = x.to(ember.float64).numpy()
        assert np.all(np.abs(x.mean(0) - mean) < 5 * std / N ** 0.5), (x.mean(0), mean)
        assert np.all(np.abs(x.std(0) / std - 1) < 0.03), (x.std(0), std)


def test_half_cauchy_sample_quartiles():
    _ = ember.manual_seed(0)
    x = ember.distributions.HalfCauchy(ember.tensor([2.0])).sample((N,)).numpy()[:, 0]
    se = (0.25 * 0.75 / N) ** 0.5
    q1, q3 = 2.0 * math.tan(math.pi / 8), 2.0 * math.tan(3 * math.pi / 8)
    assert abs((x < q1).mean() - 0.25) < 4 * se and abs((x < q3).mean() - 0.75) < 4 * se


# ---------------------------------------------------------------- validation
def test_validation_errors_as_torch():
    raises_as_torch(lambda L: L.distributions.HalfNormal(L.tensor([-1.0])), ValueError, "Expected parameter scale")
    raises_as_torch(lambda L: L.distributions.HalfCauchy(L.tensor([1.0])).log_prob(L.tensor([-1.0])), ValueError,
                    "to be within the support (GreaterThanEq(lower_bound=0.0))")
    raises_as_torch(lambda L: L.distributions.Gumbel(L.zeros(2), L.tensor([1.0, 0.0])), ValueError,
                    "to satisfy the constraint GreaterThan(lower_bound=0.0)")
    raises_as_torch(lambda L: L.distributions.Pareto(L.tensor([1.0]), L.tensor([-2.0])), ValueError,
                    "Expected parameter rate")   # the Exponential base validates first, in torch too
    raises_as_torch(lambda L: L.distributions.Pareto(L.tensor([2.0]), L.tensor([2.0])).log_prob(L.tensor([1.0])),
                    ValueError, "to be within the support (GreaterThanEq(lower_bound=")
    raises_as_torch(lambda L: L.distributions.LogisticNormal(L.zeros(2), L.ones(2)).log_prob(L.tensor([0.5, 0.6, 0.1])),
                    ValueError, "to be within the support (Simplex())")
    raises_as_torch(lambda L: L.distributions.InverseGamma(L.tensor([1.0]), L.tensor([-1.0])), ValueError,
                    "Expected parameter rate")
    raises_as_torch(lambda L: L.distributions.Weibull(L.tensor([1.0]), L.tensor([0.0])), ValueError,
                    "Expected parameter concentration")
    raises_as_torch(lambda L: L.distributions.Kumaraswamy(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([1.5])),
                    ValueError, "to be within the support (Interval(lower_bound=0.0, upper_bound=1.0))")
