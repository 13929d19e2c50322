"""Multinomial, NegativeBinomial, OneHotCategoricalStraightThrough, ContinuousBernoulli,
LowRankMultivariateNormal, FisherSnedecor and VonMises against torch: log_prob, entropy, moments and
cdf/icdf through check_op (values and gradients), rsample gradients, sampling statistics with a fixed
seed, KL rules and validation errors."""
import math

import numpy as np
import pytest
import torch

import ember
from helpers import NoGrad, check_op, raises_as_torch
from .dist_helpers import draws

rng = np.random.default_rng(33)
real, pos, counts = draws(rng)
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)
N = 200_000


# ---------------------------------------------------------------- Multinomial
@pytest.mark.parametrize("param", ["probs", "logits"])
def test_multinomial(param):
    p = pos(2, 4) if param == "probs" else real(2, 4)

    def d(L, p, n=5):
        return L.distributions.Multinomial(n, **{param: p})
    x = NoGrad(rng.multinomial(5, [0.1, 0.2, 0.3, 0.4], size=(3, 2)).astype(np.float64))
    check_op(lambda L, p, x: d(L, p).log_prob(x), p, x, **TOL)
    check_op(lambda L, p: (d(L, p).mean, d(L, p).variance, d(L, p).probs, d(L, p).logits, d(L, p).entropy()),
             p, **TOL)
    # log_prob takes the count from the value: total_count need not match
    check_op(lambda L, p, x: L.distributions.Multinomial(**{param: p}, validate_args=False).log_prob(x), p,
             NoGrad(counts(4, 3, 2, 4)), **TOL)


def test_multinomial_zero_probability_category():
    # probability 0 drawn 0 times: 0 * -inf counts as 0; drawn once: -inf
    check_op(lambda L, p, x: L.distributions.Multinomial(3, probs=p).log_prob(x), NoGrad(np.array([0.0, 0.5, 0.5])),
             NoGrad(np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])), grad=False)
    check_op(lambda L, p: L.distributions.Multinomial(3, probs=p).entropy(), NoGrad(np.array([0.0, 0.5, 0.5])),
             grad=False, atol=1e-7, rtol=1e-7)


# ---------------------------------------------------------------- NegativeBinomial
@pytest.mark.parametrize("param", ["probs", "logits"])
def test_negative_binomial(param):
    p = pos(2, 3, lo=0.1, hi=0.9) if param == "probs" else real(2, 3)
    n = pos(2, 3, lo=0.5, hi=6.0)

    def d(L, n, p):
        return L.distributions.NegativeBinomial(n, **{param: p})
    check_op(lambda L, n, p, k: d(L, n, p).log_prob(k), n, p, NoGrad(counts(8, 4, 2, 3)), **TOL)
    check_op(lambda L, n, p: (d(L, n, p).mean, d(L, n, p).variance, d(L, n, p).probs, d(L, n, p).logits), n, p,
             **TOL)
    check_op(lambda L, n, p: d(L, n, p).mode, NoGrad(n), p, grad=False)
    # total_count 0: probability 1 at 0; probs 0: probability 1 at 0 too
    check_op(lambda L, n, p, k: L.distributions.NegativeBinomial(n, probs=p).log_prob(k),
             NoGrad(np.array([0.0, 0.0, 2.0, 2.0])), NoGrad(np.array([0.5, 0.5, 0.0, 0.0])),
             NoGrad(np.array([0.0, 1.0, 0.0, 1.0])), grad=False)


# ---------------------------------------------------------------- OneHotCategoricalStraightThrough
def test_one_hot_straight_through_rsample_gradient_is_probs():
    lg = real(2, 4)
    _ = ember.manual_seed(3)
    e_lg = ember.tensor(lg, requires_grad=True)
    y = ember.distributions.OneHotCategoricalStraightThrough(logits=e_lg).rsample((5,))
    w = real(5, 2, 4)
    (y * ember.tensor(w)).sum().backward()
    t_lg = torch.tensor(lg, requires_grad=True)
    t_probs = torch.distributions.OneHotCategoricalStraightThrough(logits=t_lg).probs
    ty = torch.tensor(y.detach().numpy()) + (t_probs - t_probs.detach())
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy().sum(-1), 1.0)
    np.testing.assert_allclose(e_lg.grad.numpy(), t_lg.grad.numpy(), rtol=1e-10)
    check_op(lambda L, lg, x: L.distributions.OneHotCategoricalStraightThrough(logits=lg).log_prob(x), lg,
             NoGrad(np.eye(4)[[0, 3]]), **TOL)
    for L in (torch, ember):
        assert L.distributions.OneHotCategoricalStraightThrough(logits=L.zeros(3)).has_rsample


# ---------------------------------------------------------------- shapes, flags, expand
def _all(L):
    D, f = L.distributions, L.float64
    return {
        "Multinomial": D.Multinomial(6, probs=L.full((2, 3, 4), 0.25, dtype=f)),
        "NegativeBinomial": D.NegativeBinomial(L.full((2, 3), 3.0, dtype=f), L.full((2, 3), 0.4, dtype=f)),
        "OneHotCategoricalStraightThrough": D.OneHotCategoricalStraightThrough(logits=L.zeros(2, 3, 4, dtype=f)),
        "ContinuousBernoulli": D.ContinuousBernoulli(L.full((2, 3), 0.3, dtype=f)),
        "LowRankMultivariateNormal": D.LowRankMultivariateNormal(L.zeros(2, 3, dtype=f), L.ones(3, 2, dtype=f),
                                                                 L.ones(2, 3, dtype=f)),
        "FisherSnedecor": D.FisherSnedecor(L.full((2, 3), 3.0, dtype=f), 5.0),
        "VonMises": D.VonMises(L.zeros(2, 3, dtype=f), 2.0),
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
        x = e.expand((4,) + e.batch_shape)
        assert type(x) is type(e) and x.batch_shape == (4,) + e.batch_shape, name
        assert tuple(x.sample().shape) == (4,) + e.batch_shape + e.event_shape, name


# ---------------------------------------------------------------- sampling statistics
@pytest.mark.parametrize("name,make,mean,std", [
    ("multinomial", lambda: ember.distributions.Multinomial(10, probs=ember.tensor([0.2, 0.3, 0.5])),
     [2.0, 3.0, 5.0], [1.6 ** 0.5, 2.1 ** 0.5, 2.5 ** 0.5]),
    ("negative_binomial", lambda: ember.distributions.NegativeBinomial(ember.tensor([3.0, 0.7]),
                                                                     ember.tensor([0.4, 0.8])),
     [2.0, 2.8], [(2.0 / 0.6) ** 0.5, (2.8 / 0.2) ** 0.5]),
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


def test_multinomial_samples_sum_to_total_count():
    _ = ember.manual_seed(1)
    x = ember.distributions.Multinomial(7, logits=ember.zeros(3, 5)).sample((4,))
    np.testing.assert_array_equal(x.numpy().sum(-1), 7.0)
    assert ember.distributions.Multinomial(0, logits=ember.zeros(5)).sample().tolist() == [0.0] * 5


# ---------------------------------------------------------------- KL
def test_kl_straight_through_takes_one_hot_categoricals_rule():
    check_op(lambda L, a, b: L.distributions.kl_divergence(L.distributions.OneHotCategoricalStraightThrough(logits=a),
                                                           L.distributions.OneHotCategorical(logits=b)),
             real(2, 4), real(2, 4), **TOL)
    for L in (torch, ember):
        with pytest.raises(NotImplementedError):
            L.distributions.kl_divergence(L.distributions.Multinomial(2, logits=L.zeros(3)),
                                          L.distributions.Multinomial(2, logits=L.zeros(3)))


# ---------------------------------------------------------------- validation
def test_validation_errors_as_torch():
    raises_as_torch(lambda L: L.distributions.Multinomial(L.tensor(3), probs=L.ones(2)), NotImplementedError,
                    "inhomogeneous total_count is not supported")
    raises_as_torch(lambda L: L.distributions.Multinomial(3, probs=L.tensor([0.5, -0.5, 1.0])), ValueError,
                    "to satisfy the constraint Simplex()")
    raises_as_torch(lambda L: L.distributions.Multinomial(3, probs=L.tensor([0.5, 0.5])).log_prob(L.tensor([2.0, 2.0])),
                    ValueError, "to be within the support (Multinomial())")
    raises_as_torch(lambda L: L.distributions.Multinomial(3, probs=L.tensor(1.0)), ValueError,
                    "`probs` parameter must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.NegativeBinomial(L.tensor([-1.0]), L.tensor([0.5])), ValueError,
                    "Expected parameter total_count")
    raises_as_torch(lambda L: L.distributions.NegativeBinomial(L.tensor([2.0]), L.tensor([1.0])), ValueError,
                    "to satisfy the constraint HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)")
    raises_as_torch(lambda L: L.distributions.NegativeBinomial(2.0), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    e = raises_as_torch(lambda L: L.distributions.NegativeBinomial(2.0, L.tensor([0.5])).log_prob(L.tensor([0.5])),
                        ValueError, "to be within the support (IntegerGreaterThan(lower_bound=0))")
    assert "(at test_families_more.py:" in str(e)


# ---------------------------------------------------------------- ContinuousBernoulli
# probabilities on both sides of the Taylor region (0.499, 0.501], 1/2 itself and one inside it
CB_PROBS = np.array([[0.05, 0.3, 0.4995], [0.5, 0.7, 0.97]])


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_continuous_bernoulli(param):
    p = CB_PROBS if param == "probs" else np.log(CB_PROBS / (1 - CB_PROBS))

    def d(L, p):
        return L.distributions.ContinuousBernoulli(**{param: p})
    check_op(lambda L, p, x: d(L, p).log_prob(x), p, pos(4, 2, 3, lo=0.0, hi=1.0), **TOL)
    check_op(lambda L, p: (d(L, p).mean, d(L, p).variance, d(L, p).entropy(), d(L, p).probs, d(L, p).logits), p,
             dtypes=("float64",), **TOL)
    check_op(lambda L, p, x: d(L, p).cdf(x), p, np.array([[0.9, 0.0, 0.2], [0.6, 1.0, 0.1]]), dtypes=("float64",),
             **TOL)
    # outside [0, 1] (without validation): 0 below, 1 above
    check_op(lambda L, p, x: L.distributions.ContinuousBernoulli(**{param: p}, validate_args=False).cdf(x), p,
             np.array([[-0.5, -0.1, 1.2], [1.5, 2.0, -3.0]]), dtypes=("float64",), **TOL)
    check_op(lambda L, p, u: d(L, p).icdf(u), p, pos(2, 3, lo=0.05, hi=0.95), dtypes=("float64",), **TOL)
    # the exponential-family log normalizer, through which ExponentialFamily's generic entropy would go
    check_op(lambda L, p, x: d(L, p)._log_normalizer(x), p, np.array([[-3.0, -0.5, -0.0005], [0.0, 0.001, 4.0]]),
             dtypes=("float64",), **TOL)


def test_continuous_bernoulli_rsample_is_icdf_of_a_uniform_draw():
    p0 = CB_PROBS
    _ = ember.manual_seed(4)
    p = ember.tensor(p0, requires_grad=True)
    y = ember.distributions.ContinuousBernoulli(probs=p).rsample((5,))
    w = real(5, 2, 3)
    (y * ember.tensor(w)).sum().backward()
    _ = ember.manual_seed(4)
    u = torch.tensor(ember.rand(5, 2, 3, dtype=ember.float64).numpy())
    tp = torch.tensor(p0, requires_grad=True)
    ty = torch.distributions.ContinuousBernoulli(probs=tp).icdf(u)
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-8)


def test_continuous_bernoulli_sample_statistics():
    _ = ember.manual_seed(0)
    d = ember.distributions.ContinuousBernoulli(probs=ember.tensor([0.2, 0.5, 0.9], dtype=ember.float64))
    x = d.sample((N,)).numpy()
    mean, std = d.mean.numpy(), d.stddev.numpy()
    assert np.all((x >= 0) & (x <= 1))
    assert np.all(np.abs(x.mean(0) - mean) < 4 * std / N ** 0.5), (x.mean(0), mean)
    assert np.all(np.abs(x.std(0) / std - 1) < 0.02), (x.std(0), std)


@pytest.mark.parametrize("pair", ["cb-cb", "beta-cb", "uniform-cb", "cb-exponential", "cb-normal", "cb-uniform",
                                  "cb-pareto", "normal-cb", "exponential-cb", "gamma-cb", "gumbel-cb", "laplace-cb",
                                  "pareto-cb"])
def test_kl_continuous_bernoulli(pair):
    def make(L, a, b):
        D = L.distributions
        cb_a, cb_b = D.ContinuousBernoulli(probs=a.sigmoid()), D.ContinuousBernoulli(logits=b)
        return {
            "cb-cb": (cb_a, cb_b),
            "beta-cb": (D.Beta(a.exp(), b.exp()), cb_b),
            # Uniform(0.2, 0.7) and Uniform(0, 1): inside, and touching the support's ends (+inf, as torch)
            "uniform-cb": (D.Uniform(L.stack([a * 0 + 0.2, a * 0]), L.stack([a * 0 + 0.7, a * 0 + 1])),
                           D.ContinuousBernoulli(logits=L.stack([b, b]))),
            "cb-exponential": (cb_a, D.Exponential(b.exp())),
            "cb-normal": (cb_a, D.Normal(b, a.exp())),
            "cb-uniform": (D.ContinuousBernoulli(logits=L.stack([a, a])),
                           D.Uniform(L.stack([a * 0 - 0.5, a * 0]), L.stack([a * 0 + 1.5, a * 0 + 2]))),
            "cb-pareto": (cb_a, D.Pareto(b.exp(), 2.0)),
            "normal-cb": (D.Normal(a, b.exp()), cb_b),
            "exponential-cb": (D.Exponential(a.exp()), cb_b),
            "gamma-cb": (D.Gamma(a.exp(), 1.0), cb_b),
            "gumbel-cb": (D.Gumbel(a, b.exp()), cb_b),
            "laplace-cb": (D.Laplace(a, b.exp()), cb_b),
            "pareto-cb": (D.Pareto(a.exp(), 2.0), cb_b),
        }[pair]
    check_op(lambda L, a, b: L.distributions.kl_divergence(*make(L, a, b)), real(3), real(3),
             dtypes=("float64",), **TOL)


def test_continuous_bernoulli_validation_as_torch():
    raises_as_torch(lambda L: L.distributions.ContinuousBernoulli(L.tensor([1.5]), validate_args=True), ValueError,
                    "The parameter probs has invalid values")
    raises_as_torch(lambda L: L.distributions.ContinuousBernoulli(L.tensor([0.5])).log_prob(L.tensor([1.5])),
                    ValueError, "to be within the support (Interval(lower_bound=0.0, upper_bound=1.0))")
    raises_as_torch(lambda L: L.distributions.ContinuousBernoulli(), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    for L in (torch, ember):   # without validate_args, probs is clamped into (0, 1) first, as torch
        assert float(L.distributions.ContinuousBernoulli(L.tensor([1.5])).probs) < 1


# ---------------------------------------------------------------- LowRankMultivariateNormal
def _lowrank(L, m, W, D):
    return L.distributions.LowRankMultivariateNormal(m, W, D.exp())


def test_lowrank_multivariate_normal():
    m, W, D = real(2, 3), real(2, 3, 2), real(3)   # loc batched, cov_diag broadcast
    check_op(lambda L, m, W, D, x: _lowrank(L, m, W, D).log_prob(x), m, W, D, real(4, 2, 3), **TOL)
    check_op(lambda L, m, W, D: (_lowrank(L, m, W, D).entropy(), _lowrank(L, m, W, D).mean,
                                 _lowrank(L, m, W, D).mode, _lowrank(L, m, W, D).variance,
                                 _lowrank(L, m, W, D).covariance_matrix, _lowrank(L, m, W, D).precision_matrix,
                                 _lowrank(L, m, W, D).scale_tril), m, W, D, **TOL)
    # one unbatched factor for a batch of locs, and the scalar-batch case
    check_op(lambda L, m, W, D, x: _lowrank(L, m, W, D).log_prob(x), m, real(3, 1), D, real(2, 3), **TOL)
    check_op(lambda L, m, W, D: _lowrank(L, m, W, D).entropy(), real(3), real(3, 2), D, **TOL)


def test_lowrank_rsample_gradient_replayed_in_torch():
    m0, W0, D0 = real(2, 3), real(3, 2), pos(3)
    _ = ember.manual_seed(6)
    m, W, D = (ember.tensor(v, requires_grad=True) for v in (m0, W0, D0))
    y = ember.distributions.LowRankMultivariateNormal(m, W, D).rsample((4,))
    w = real(4, 2, 3)
    (y * ember.tensor(w)).sum().backward()
    _ = ember.manual_seed(6)
    eps_W = torch.tensor(ember.randn(4, 2, 2, dtype=ember.float64).numpy())
    eps_D = torch.tensor(ember.randn(4, 2, 3, dtype=ember.float64).numpy())
    tm, tW, tD = (torch.tensor(v, requires_grad=True) for v in (m0, W0, D0))
    ty = tm + (tW @ eps_W.unsqueeze(-1)).squeeze(-1) + tD.sqrt() * eps_D
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
    for e, t in ((m, tm), (W, tW), (D, tD)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_lowrank_sample_covariance():
    _ = ember.manual_seed(0)
    d = ember.distributions.LowRankMultivariateNormal(ember.tensor([1.0, -1.0, 0.0], dtype=ember.float64),
                                                      ember.tensor([[1.0], [0.5], [-1.0]], dtype=ember.float64),
                                                      ember.tensor([0.5, 1.0, 0.2], dtype=ember.float64))
    x = d.sample((N,)).numpy()
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0, 0.0], atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), d.covariance_matrix.numpy(), atol=0.03)


@pytest.mark.parametrize("pair", ["lr-lr", "mvn-lr", "lr-mvn"])
def test_kl_lowrank(pair):
    def make(L, m1, W1, D1, m2, W2, D2):
        def mvn(m, W, D):
            return L.distributions.MultivariateNormal(m, scale_tril=W.tril(-1) + D.exp().diag_embed())
        p = _lowrank(L, m1, W1, D1) if pair.startswith("lr") else mvn(m1, W1, D1)
        q = _lowrank(L, m2, W2, D2) if pair.endswith("lr") else mvn(m2, W2, D2)
        return p, q

    def args(lr):
        return (real(2, 3), real(2, 3, 2) if lr else real(2, 3, 3), real(2, 3))
    p_args = args(pair.startswith("lr"))
    q_args = args(pair.endswith("lr"))
    check_op(lambda L, *a: L.distributions.kl_divergence(*make(L, *a)), *p_args, *q_args, **TOL)
    for L in (torch, ember):
        with pytest.raises(ValueError, match="different event shapes"):
            L.distributions.kl_divergence(L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(2)),
                                          L.distributions.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(3)))


def test_lowrank_validation_as_torch():
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.tensor(0.0), L.ones(1, 1), L.ones(1)),
                    ValueError, "loc must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(2), L.ones(2)),
                    ValueError, "cov_factor must be at least two-dimensional")
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(3, 1), L.ones(2)),
                    ValueError, "cov_factor must be a batch of matrices with shape 2 x m")
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(3)),
                    ValueError, "cov_diag must be a batch of vectors with shape")
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(4, 2), L.ones(3, 2, 1), L.ones(2)),
                    ValueError, "Incompatible batch shapes")
    raises_as_torch(lambda L: L.distributions.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.tensor([1.0, 0.0])),
                    ValueError, "Expected parameter cov_diag")


# ---------------------------------------------------------------- FisherSnedecor
def test_fisher_snedecor():
    # df on both sides of 2 and 4: mean NaN for df2 <= 2, mode NaN for df1 <= 2, variance NaN for df2 <= 4
    df1 = np.array([[1.5, 3.0, 6.0], [0.8, 10.0, 2.5]])
    df2 = np.array([[1.0, 3.0, 5.0], [8.0, 2.5, 12.0]])

    def d(L, a, b):
        return L.distributions.FisherSnedecor(a, b)
    check_op(lambda L, a, b, x: d(L, a, b).log_prob(x), df1, df2, pos(4, 2, 3, lo=0.1, hi=4.0), **TOL)
    check_op(lambda L, a, b: (d(L, a, b).mean, d(L, a, b).mode, d(L, a, b).variance), df1, df2, **TOL)
    for L in (torch, ember):
        with pytest.raises(NotImplementedError):
            L.distributions.FisherSnedecor(1.0, 2.0).entropy()


def test_fisher_snedecor_rsample_is_a_ratio_of_gamma_rsamples():
    # Gamma's rsample (and its implicit gradient) is checked against torch in test_families.py: here the
    # F draw must be X1 / X2 of the same two Gamma draws, with the same gradients
    df1_0, df2_0 = np.array([2.0, 5.0, 9.0]), np.array([3.0, 7.0, 20.0])
    _ = ember.manual_seed(5)
    a, b = ember.tensor(df1_0, requires_grad=True), ember.tensor(df2_0, requires_grad=True)
    y = ember.distributions.FisherSnedecor(a, b).rsample((4,))
    y.sum().backward()
    _ = ember.manual_seed(5)
    a2, b2 = ember.tensor(df1_0, requires_grad=True), ember.tensor(df2_0, requires_grad=True)
    x1 = ember.distributions.Gamma(a2 * 0.5, a2).rsample((4,))
    x2 = ember.distributions.Gamma(b2 * 0.5, b2).rsample((4,))
    (x1 / x2).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), (x1 / x2).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), a2.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), b2.grad.numpy(), rtol=1e-10)


def test_fisher_snedecor_sample_statistics():
    _ = ember.manual_seed(0)
    d = ember.distributions.FisherSnedecor(ember.tensor([5.0, 12.0], dtype=ember.float64),
                                           ember.tensor([30.0, 40.0], dtype=ember.float64))
    x = d.sample((N,)).numpy()
    mean, std = d.mean.numpy(), d.stddev.numpy()
    assert np.all(np.abs(x.mean(0) - mean) < 4 * std / N ** 0.5), (x.mean(0), mean)
    assert np.all(np.abs(x.std(0) / std - 1) < 0.03), (x.std(0), std)
    # torch's inner Gamma(df2 / 2, df2) is built (and validated) first
    raises_as_torch(lambda L: L.distributions.FisherSnedecor(L.tensor([1.0]), L.tensor([0.0])), ValueError,
                    "Expected parameter concentration")


# ---------------------------------------------------------------- VonMises
def test_von_mises():
    # concentrations on both sides of 3.75, where the Bessel approximations switch
    m, k = real(2, 3, lo=-5, hi=5), np.array([[0.1, 1.0, 3.7], [3.8, 10.0, 50.0]])

    def d(L, m, k):
        return L.distributions.VonMises(m, k)
    check_op(lambda L, m, k, x: d(L, m, k).log_prob(x), m, k, real(4, 2, 3, lo=-8, hi=8), **TOL)
    check_op(lambda L, m, k: (d(L, m, k).mean, d(L, m, k).mode, d(L, m, k).variance), m, k, **TOL)
    for L in (torch, ember):
        assert not L.distributions.VonMises(0.0, 1.0).has_rsample
        with pytest.raises(NotImplementedError):
            L.distributions.VonMises(L.zeros(1), L.ones(1)).entropy()
    raises_as_torch(lambda L: L.distributions.VonMises(L.zeros(2), L.tensor([1.0, 0.0])), ValueError,
                    "Expected parameter concentration")


def test_von_mises_sample_circular_moments():
    # E[cos(x - loc)] = I1/I0 = 1 - variance and E[cos 2(x - loc)] = I2/I0 = 1 - 2 I1 / (k I0); sin moments 0
    _ = ember.manual_seed(0)
    loc, k = np.array([0.5, 3.0, -2.0, 1.0]), np.array([1e-6, 0.5, 2.0, 30.0])
    d = ember.distributions.VonMises(ember.tensor(loc, dtype=ember.float32), ember.tensor(k, dtype=ember.float32))
    x = d.sample((N,)).numpy()
    assert x.dtype == np.float32 and np.all((x >= -math.pi) & (x <= math.pi))
    r1 = 1 - ember.distributions.VonMises(ember.tensor(loc), ember.tensor(k)).variance.numpy()   # float64
    r2 = 1 - 2 * r1 / k
    bound = 4 / N ** 0.5
    assert np.all(np.abs(np.cos(x - loc).mean(0) - r1) < bound), (np.cos(x - loc).mean(0), r1)
    assert np.all(np.abs(np.cos(2 * (x - loc)).mean(0) - r2) < bound), (np.cos(2 * (x - loc)).mean(0), r2)
    assert np.all(np.abs(np.sin(x - loc).mean(0)) < bound)
    assert tuple(d.expand((3, 4)).sample((2,)).shape) == (2, 3, 4)
