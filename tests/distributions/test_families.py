"""The families built on TransformedDistribution and the later ones (LogNormal, Cauchy, Chi2, StudentT,
Poisson, Binomial, Geometric, RelaxedBernoulli, RelaxedOneHotCategorical) against torch: log_prob,
entropy, moments and cdf/icdf through check_op (values and gradients), rsample gradients with Ember's
noise replayed in torch, sampling statistics with a fixed seed, and validation errors."""
import math

import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_as_torch
from .dist_helpers import draws, replay

rng = np.random.default_rng(21)
real, pos, counts = draws(rng)
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)
N = 200_000


# ---------------------------------------------------------------- values and gradients against torch
def test_log_normal():
    m, s = real(2, 3), pos(2, 3)

    def d(L, m, s):
        return L.distributions.LogNormal(m, s)
    check_op(lambda L, m, s, y: d(L, m, s).log_prob(y), m, s, pos(4, 2, 3), **TOL)
    check_op(lambda L, m, s: (d(L, m, s).entropy(), d(L, m, s).mean, d(L, m, s).mode, d(L, m, s).variance,
                              d(L, m, s).stddev, d(L, m, s).loc, d(L, m, s).scale), m, s, **TOL)
    check_op(lambda L, m, s, y: d(L, m, s).cdf(y), m, s, pos(2, 3), **TOL)
    check_op(lambda L, m, s, u: d(L, m, s).icdf(u), m, s, pos(2, 3, lo=0.1, hi=0.9), **TOL)
    check_op(lambda L, y: L.distributions.LogNormal(0.0, 1.0).cdf(y), NoGrad(np.array(1.0)), grad=False, device="cpu")


def test_cauchy():
    m, s = real(2, 3), pos(2, 3)

    def d(L, m, s):
        return L.distributions.Cauchy(m, s)
    check_op(lambda L, m, s, x: d(L, m, s).log_prob(x), m, s, real(4, 2, 3), **TOL)
    check_op(lambda L, m, s: (d(L, m, s).entropy(), d(L, m, s).mean, d(L, m, s).mode, d(L, m, s).variance), m, s,
             **TOL)
    check_op(lambda L, m, s, x: d(L, m, s).cdf(x), m, s, real(2, 3), **TOL)
    check_op(lambda L, m, s, u: d(L, m, s).icdf(u), m, s, pos(2, 3, lo=0.1, hi=0.9), **TOL)


def test_chi2():
    df = pos(2, 3, lo=1.0, hi=5.0)
    check_op(lambda L, k, x: L.distributions.Chi2(k).log_prob(x), df, pos(4, 2, 3), **TOL)
    check_op(lambda L, k: (L.distributions.Chi2(k).entropy(), L.distributions.Chi2(k).mean,
                           L.distributions.Chi2(k).variance, L.distributions.Chi2(k).df), df, **TOL)
    check_op(lambda L, k, x: L.distributions.Chi2(k).cdf(x), NoGrad(df), pos(2, 3), **TOL)


def test_student_t():
    # df on both sides of 1 and 2: the mean is NaN below 1, the variance NaN below 1 and inf up to 2
    df = np.array([[0.5, 1.5, 2.5], [4.0, 0.9, 10.0]])
    m, s = real(2, 3), pos(2, 3)

    def d(L, k, m, s):
        return L.distributions.StudentT(k, m, s)
    check_op(lambda L, k, m, s, x: d(L, k, m, s).log_prob(x), df, m, s, real(4, 2, 3), **TOL)
    check_op(lambda L, k, m, s: (d(L, k, m, s).entropy(), d(L, k, m, s).mean, d(L, k, m, s).mode,
                                 d(L, k, m, s).variance), df, m, s, **TOL)
    check_op(lambda L, k, x: L.distributions.StudentT(k).log_prob(x), pos(3, lo=1, hi=6), real(3))


def test_poisson():
    rate = pos(2, 3, lo=0.5, hi=6.0)
    check_op(lambda L, r, k: L.distributions.Poisson(r).log_prob(k), rate, NoGrad(counts(8, 4, 2, 3)), **TOL)
    check_op(lambda L, r: (L.distributions.Poisson(r).mean, L.distributions.Poisson(r).mode,
                           L.distributions.Poisson(r).variance), rate)
    # rate 0: probability 1 at k = 0 (xlogy's 0 log 0 = 0)
    check_op(lambda L, r, k: L.distributions.Poisson(r).log_prob(k), NoGrad(np.array([0.0, 0.0, 2.0])),
             NoGrad(np.array([0.0, 1.0, 0.0])), grad=False)
    for L in (torch, ember):
        with pytest.raises(NotImplementedError):
            L.distributions.Poisson(L.ones(2)).entropy()


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_binomial(param):
    p = pos(2, 3, lo=0.1, hi=0.9) if param == "probs" else real(2, 3)
    n = np.array([[5.0], [8.0]])

    def d(L, n, p):
        return L.distributions.Binomial(n, **{param: p})
    check_op(lambda L, n, p, k: d(L, n, p).log_prob(k), NoGrad(n), p, NoGrad(counts(6, 4, 2, 3)), **TOL)
    check_op(lambda L, n, p: (d(L, n, p).mean, d(L, n, p).variance, d(L, n, p).probs, d(L, n, p).logits),
             NoGrad(n), p, **TOL)
    check_op(lambda L, n, p: d(L, n, p).mode, NoGrad(n), p, grad=False)
    check_op(lambda L, p: (L.distributions.Binomial(6, **{param: p}).entropy(),
                           L.distributions.Binomial(6, **{param: p}).enumerate_support()), p, **TOL)
    check_op(lambda L, p: L.distributions.Binomial(6, **{param: p}).enumerate_support(expand=False), p, grad=False)
    # the mode at p = 1 is total_count, not total_count + 1
    check_op(lambda L, p: L.distributions.Binomial(4, probs=p).mode, NoGrad(np.array([0.0, 1.0, 0.5])), grad=False)


def test_geometric():
    p = pos(2, 3, lo=0.1, hi=0.9)
    check_op(lambda L, p, k: L.distributions.Geometric(probs=p).log_prob(k), p, NoGrad(counts(6, 4, 2, 3)), **TOL)
    check_op(lambda L, lg, k: L.distributions.Geometric(logits=lg).log_prob(k), real(2, 3), NoGrad(counts(6, 2, 3)),
             **TOL)
    check_op(lambda L, p: (L.distributions.Geometric(probs=p).mean, L.distributions.Geometric(probs=p).variance,
                           L.distributions.Geometric(probs=p).mode, L.distributions.Geometric(probs=p).entropy()),
             p, **TOL)
    # p = 1: probability 1 at k = 0 and 0 elsewhere (not NaN)
    check_op(lambda L, p, k: L.distributions.Geometric(probs=p).log_prob(k), NoGrad(np.array([1.0, 1.0, 0.5])),
             NoGrad(np.array([0.0, 2.0, 0.0])), grad=False)


def test_relaxed_bernoulli():
    t, p, lg = np.array(0.7), pos(2, 3, lo=0.1, hi=0.9), real(2, 3)
    y = pos(4, 2, 3, lo=0.05, hi=0.95)
    check_op(lambda L, t, p, y: L.distributions.RelaxedBernoulli(t, probs=p).log_prob(y), t, p, y, **TOL)
    check_op(lambda L, t, lg, y: L.distributions.RelaxedBernoulli(t, logits=lg).log_prob(y), t, lg, y, **TOL)
    check_op(lambda L, t, p: (L.distributions.RelaxedBernoulli(t, probs=p).logits,
                              L.distributions.RelaxedBernoulli(t, probs=p).temperature), t, p)
    check_op(lambda L, t, lg, x: L.distributions.RelaxedBernoulli(t, logits=lg).base_dist.log_prob(x), t, lg,
             real(4, 2, 3), **TOL)


def test_relaxed_one_hot_categorical():
    t, lg = np.array(0.6), real(2, 4)
    y = rng.dirichlet(np.ones(4), size=(3, 2))
    check_op(lambda L, t, lg, y: L.distributions.RelaxedOneHotCategorical(t, logits=lg).log_prob(y), t, lg, y,
             **TOL)
    check_op(lambda L, t, p, y: L.distributions.RelaxedOneHotCategorical(t, probs=p, validate_args=False).log_prob(y),
             t, rng.dirichlet(np.ones(4), size=2), y, **TOL)
    check_op(lambda L, t, lg: (L.distributions.RelaxedOneHotCategorical(t, logits=lg).probs,
                               L.distributions.RelaxedOneHotCategorical(t, logits=lg).logits), t, lg)


# ---------------------------------------------------------------- shapes, flags, expand
def _all(L):
    D, f = L.distributions, L.float64
    t = L.tensor(0.5, dtype=f)
    return {
        "LogNormal": D.LogNormal(L.zeros(2, 3, dtype=f), 1.0),
        "Cauchy": D.Cauchy(L.zeros(2, 3, dtype=f), 1.0),
        "Chi2": D.Chi2(L.full((2, 3), 3.0, dtype=f)),
        "StudentT": D.StudentT(L.full((2, 3), 3.0, dtype=f)),
        "Poisson": D.Poisson(L.full((2, 3), 2.0, dtype=f)),
        "Binomial": D.Binomial(L.full((2, 3), 5.0, dtype=f), L.full((2, 3), 0.3, dtype=f)),
        "Geometric": D.Geometric(L.full((2, 3), 0.3, dtype=f)),
        "RelaxedBernoulli": D.RelaxedBernoulli(t, L.full((2, 3), 0.3, dtype=f)),
        "RelaxedOneHotCategorical": D.RelaxedOneHotCategorical(t, logits=L.zeros(2, 3, 4, dtype=f)),
        "scalar Cauchy": D.Cauchy(0.0, 1.0),
    }


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 1)])
def test_sample_shapes_dtypes_flags_and_expand_match_torch(sample_shape):
    td, ed = _all(torch), _all(ember)
    for name in td:
        t, e = td[name], ed[name]
        assert (e.batch_shape, e.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)), name
        assert (e.has_rsample, e.has_enumerate_support) == (t.has_rsample, t.has_enumerate_support), name
        ts, es = t.sample(sample_shape), e.sample(sample_shape)
        assert tuple(es.shape) == tuple(ts.shape) and es.dtype.name == str(ts.dtype).split(".")[1], name
        assert not es.requires_grad and bool(e.support.check(es).all()), name
        if t.has_rsample:
            assert tuple(e.rsample(sample_shape).shape) == tuple(t.rsample(sample_shape).shape), name
        if e.batch_shape:
            x = e.expand((4,) + e.batch_shape)
            assert type(x) is type(e) and x.batch_shape == (4,) + e.batch_shape, name
            assert tuple(x.sample().shape) == (4,) + e.batch_shape + e.event_shape, name


def test_reprs_as_torch():
    for make in (lambda L: L.distributions.LogNormal(0.0, 1.0), lambda L: L.distributions.Cauchy(0.0, 1.0),
                 lambda L: L.distributions.Chi2(L.tensor([2.0])), lambda L: L.distributions.Poisson(3.0),
                 lambda L: L.distributions.Geometric(L.tensor([0.5]))):
        assert repr(make(ember)) == repr(make(torch))


# ---------------------------------------------------------------- rsample gradients, Ember's noise replayed in torch
def _replay(make_e, params, noise_of, make_t, w_shape):
    replay(make_e, params, noise_of, make_t, real(*w_shape))


def test_rsample_gradients_replayed_in_torch():
    _ = ember.manual_seed(2)
    m, s = real(2, 3), pos(2, 3)
    _replay(lambda m, s: ember.distributions.LogNormal(m, s).rsample((4,)), [m, s],
            lambda y, m, s: (np.log(y) - m) / s, lambda e, m, s: (m + s * e).exp(), (4, 2, 3))
    _replay(lambda m, s: ember.distributions.Cauchy(m, s).rsample((4,)), [m, s],
            lambda y, m, s: (y - m) / s, lambda e, m, s: m + s * e, (4, 2, 3))
    temp, lg = np.array(0.7), real(2, 3)
    _replay(lambda t, lg: ember.distributions.RelaxedBernoulli(t, logits=lg).rsample((4,)), [temp, lg],
            lambda y, t, lg: t * np.log(y / (1 - y)) - lg, lambda g, t, lg: ((g + lg) / t).sigmoid(), (4, 2, 3))
    lg4 = real(2, 4)
    _replay(lambda t, lg: ember.distributions.RelaxedOneHotCategorical(t, logits=lg).rsample((3,)), [temp, lg4],
            lambda y, t, lg: t * np.log(y) - (lg - np.log(np.exp(lg).sum(-1, keepdims=True))),
            lambda g, t, lg: ((lg.log_softmax(-1) + g) / t).softmax(-1), (3, 2, 4))


def test_student_t_rsample_gradient_is_torchs():
    # y = loc + scale * x / sqrt(z / df): x and z drawn again from the same seed; z's gradient in df is the
    # implicit one, which torch gives as _standard_gamma_grad (z = 2 g, g ~ Gamma(df / 2))
    df0, m0, s0 = np.array([0.8, 3.0, 12.0]), real(3), pos(3)
    _ = ember.manual_seed(9)
    df, m, s = (ember.tensor(v, requires_grad=True) for v in (df0, m0, s0))
    y = ember.distributions.StudentT(df, m, s).rsample((5,))
    w = real(5, 3)
    (y * ember.tensor(w)).sum().backward()
    _ = ember.manual_seed(9)
    x = ember.randn(5, 3, dtype=ember.float64)
    z = ember.distributions.Chi2(ember.tensor(df0)).sample((5,))
    tdf, tm, ts = (torch.tensor(v, requires_grad=True) for v in (df0, m0, s0))
    tz0 = torch.tensor(z.numpy())
    dz = torch._standard_gamma_grad(tdf.detach().expand(5, 3) / 2, tz0 / 2)   # dz/ddf = dg/dalpha
    tz = tz0 + dz * (tdf - tdf.detach())
    ty = tm + ts * torch.tensor(x.numpy()) * torch.rsqrt(tz / tdf)
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-10)
    # Gamma's dx/dalpha is a central difference of igamma, within 1e-4 of torch's (docs/distributions.md);
    # the sum over samples cancels, so compare with an absolute bound too
    np.testing.assert_allclose(df.grad.numpy(), tdf.grad.numpy(), rtol=1e-3, atol=1e-5)


# ---------------------------------------------------------------- sampling statistics
@pytest.mark.parametrize("name,make,mean,std", [
    ("log_normal", lambda: ember.distributions.LogNormal(ember.tensor([0.0, 0.5]), ember.tensor([0.25, 0.5])),
     [math.exp(0.25 ** 2 / 2), math.exp(0.5 + 0.125)],
     [(math.expm1(0.0625) * math.exp(0.0625)) ** 0.5, (math.expm1(0.25) * math.exp(1.25)) ** 0.5]),
    ("chi2", lambda: ember.distributions.Chi2(ember.tensor([1.0, 6.0])), [1.0, 6.0], [2 ** 0.5, 12 ** 0.5]),
    ("student_t", lambda: ember.distributions.StudentT(ember.tensor([30.0, 10.0]), ember.tensor([1.0, -2.0]),
                                                       ember.tensor([2.0, 0.5])),
     [1.0, -2.0], [2 * (30 / 28) ** 0.5, 0.5 * (10 / 8) ** 0.5]),
    ("poisson", lambda: ember.distributions.Poisson(ember.tensor([0.5, 7.0])), [0.5, 7.0], [0.5 ** 0.5, 7 ** 0.5]),
    ("binomial", lambda: ember.distributions.Binomial(ember.tensor([10.0, 3.0]), ember.tensor([0.3, 0.9])),
     [3.0, 2.7], [2.1 ** 0.5, 0.27 ** 0.5]),
    ("geometric", lambda: ember.distributions.Geometric(ember.tensor([0.2, 0.7])),
     [4.0, 3 / 7], [(4 / 0.2) ** 0.5, ((3 / 7) / 0.7) ** 0.5]),
])
def test_sample_mean_and_std(name, make, mean, std):
    _ = ember.manual_seed(0)
    d = make()
    x = d.sample((N,)).to(ember.float64).numpy()
    std = np.array(std)
    assert np.all(np.abs(x.mean(0) - mean) < 4 * std / N ** 0.5), (x.mean(0), mean)
    assert np.all(np.abs(x.std(0) / std - 1) < 0.02), (x.std(0), std)
    np.testing.assert_allclose(d.mean.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(d.stddev.numpy(), std, rtol=1e-6)
    if d.has_rsample:
        _ = ember.manual_seed(1)
        x = d.rsample((N,)).detach().to(ember.float64).numpy()
        assert np.all(np.abs(x.mean(0) - mean) < 4 * std / N ** 0.5)


def test_sample_quantiles_of_heavy_tails_and_relaxed_frequencies():
    _ = ember.manual_seed(0)
    # Cauchy has no moments: its quartiles are loc -+ scale
    x = ember.distributions.Cauchy(ember.tensor([1.0]), ember.tensor([2.0])).sample((N,)).numpy()[:, 0]
    se = (0.25 * 0.75 / N) ** 0.5
    assert abs((x < -1.0).mean() - 0.25) < 4 * se and abs((x < 3.0).mean() - 0.75) < 4 * se
    # a relaxed Bernoulli sample is above 1/2 with probability p, and the relaxed categorical's argmax
    # is distributed as the categorical (Gumbel-max), whatever the temperature
    p = np.array([0.2, 0.6])
    y = ember.distributions.RelaxedBernoulli(ember.tensor(0.3), probs=ember.tensor(p)).sample((N,)).numpy()
    assert np.all(np.abs((y > 0.5).mean(0) - p) < 4 * np.sqrt(p * (1 - p) / N))
    q = np.array([0.1, 0.3, 0.6])
    z = ember.distributions.RelaxedOneHotCategorical(ember.tensor(2.0), probs=ember.tensor(q)).sample((N,)).numpy()
    np.testing.assert_allclose(z.sum(-1), 1.0, rtol=1e-5)
    freq = np.bincount(z.argmax(-1), minlength=3) / N
    assert np.all(np.abs(freq - q) < 4 * np.sqrt(q * (1 - q) / N)), freq


# ---------------------------------------------------------------- validation
def test_validation_errors_as_torch():
    raises_as_torch(lambda L: L.distributions.LogNormal(0.0, -1.0), ValueError, "Expected parameter scale")
    raises_as_torch(lambda L: L.distributions.Cauchy(L.zeros(2), L.tensor([1.0, 0.0])), ValueError,
                    "to satisfy the constraint GreaterThan(lower_bound=0.0)")
    raises_as_torch(lambda L: L.distributions.StudentT(L.tensor([-1.0])), ValueError, "Expected parameter df")
    raises_as_torch(lambda L: L.distributions.Poisson(L.tensor([-1.0])), ValueError,
                    "to satisfy the constraint GreaterThanEq(lower_bound=0.0)")
    raises_as_torch(lambda L: L.distributions.Poisson(L.tensor([1.0])).log_prob(L.tensor([0.5])), ValueError,
                    "to be within the support (IntegerGreaterThan(lower_bound=0))")
    raises_as_torch(lambda L: L.distributions.Binomial(L.tensor([2.5]), L.tensor([0.5])), ValueError,
                    "Expected parameter total_count")
    raises_as_torch(lambda L: L.distributions.Binomial(3, probs=0.5, logits=0.0), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    raises_as_torch(lambda L: L.distributions.Binomial(L.tensor([3.0]), L.tensor([0.5])).log_prob(L.tensor([4.0])),
                    ValueError, "to be within the support (IntegerInterval(lower_bound=0, upper_bound=")
    raises_as_torch(lambda L: L.distributions.Binomial(L.tensor([3.0, 4.0]), L.tensor([0.5, 0.5])).entropy(),
                    NotImplementedError, "Inhomogeneous total count not supported by `entropy`.")
    raises_as_torch(lambda L: L.distributions.Geometric(L.tensor([0.0, 0.5])), ValueError,
                    "to be positive but found invalid values")
    raises_as_torch(lambda L: L.distributions.Geometric(), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    raises_as_torch(lambda L: L.distributions.RelaxedBernoulli(L.tensor(0.5), probs=L.tensor([1.5])), ValueError,
                    "Expected parameter probs")
    raises_as_torch(lambda L: L.distributions.RelaxedOneHotCategorical(L.tensor(0.5), probs=L.tensor([0.5, -0.5, 1.0])),
                    ValueError, "to satisfy the constraint Simplex()")
    e = raises_as_torch(lambda L: L.distributions.LogNormal(0.0, 1.0).log_prob(L.tensor(-1.0)), ValueError,
                        "to be within the support (GreaterThan(lower_bound=0.0))")
    assert "(at test_families.py:" in str(e)
