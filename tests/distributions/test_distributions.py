"""ember.distributions against torch.distributions: values and gradients of log_prob, entropy, moments,
cdf/icdf and KL through check_op on the same parameters; sample/rsample shapes; sampling statistics with a
fixed seed (tight enough that a wrong scale fails); argument validation; RL- and VAE-style losses."""
import math

import numpy as np
import pytest
import torch

import ember
from helpers import Const, NoGrad, check_op, raises_as_torch
from .dist_helpers import draws

rng = np.random.default_rng(0)
real, pos, _ = draws(rng)


def ints(high, *shape):
    return rng.integers(0, high, size=shape)


# torch's simplex check (|sum - 1| < 1e-6) rejects normalised float16 probabilities: the float16 dtype
# passes of probs= cases run without validation
NV = False
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)


# ---------------------------------------------------------------- Normal
def test_normal_log_prob_broadcast_and_moments():
    loc, scale, x = real(2, 3), pos(2, 3), real(4, 2, 3)
    check_op(lambda L, m, s, v: L.distributions.Normal(m, s).log_prob(v), loc, scale, x)
    check_op(lambda L, m, s: L.distributions.Normal(m, s).log_prob(m[0]), loc, scale)   # value broadcast up
    check_op(lambda L, m, s: L.distributions.Normal(m, s).entropy(), loc, scale)
    check_op(lambda L, m, s: (L.distributions.Normal(m, s).mean, L.distributions.Normal(m, s).variance,
                              L.distributions.Normal(m, s).stddev, L.distributions.Normal(m, s).mode), loc, scale)
    check_op(lambda L, m, s: L.distributions.Normal(m, s).perplexity(), loc, scale)


def test_normal_cdf_icdf():
    loc, scale = real(5), pos(5)
    check_op(lambda L, m, s, v: L.distributions.Normal(m, s).cdf(v), loc, scale, real(3, 5))
    check_op(lambda L, m, s, u: L.distributions.Normal(m, s).icdf(u), loc, scale, pos(3, 5, lo=0.05, hi=0.95))


def test_normal_python_number_parameters():
    check_op(lambda L, v: L.distributions.Normal(0.5, 2.0).log_prob(v), real(4))
    d = ember.distributions.Normal(0.5, 2.0)
    assert d.batch_shape == () and d.loc.dtype == ember.float32
    assert ember.distributions.Normal(ember.zeros(2, dtype=ember.float64), 1.0).scale.dtype == ember.float64


def test_exponential_family_entropy_by_bregman_divergence():
    # the base class's entropy (autograd of the log normalizer) equals the closed forms, as torch's
    check_op(lambda L, m, s: L.distributions.ExponentialFamily.entropy(L.distributions.Normal(m, s)),
             real(3), pos(3), **TOL)
    check_op(lambda L, c, r: L.distributions.ExponentialFamily.entropy(L.distributions.Gamma(c, r)),
             pos(3), pos(3), dtypes=("float64",), **TOL)


# ---------------------------------------------------------------- Uniform
def test_uniform():
    low, width = real(2, 3), pos(2, 3)

    def make(L, lo, w, **kw):
        return L.distributions.Uniform(lo, lo + w, **kw)
    check_op(lambda L, lo, w, u: make(L, lo, w).log_prob(lo + u * w), low, width, pos(4, 2, 3, lo=0.05, hi=0.95))
    check_op(lambda L, lo, w: (make(L, lo, w).entropy(), make(L, lo, w).mean, make(L, lo, w).variance,
                               make(L, lo, w).stddev), low, width)
    check_op(lambda L, lo, w, u: make(L, lo, w, validate_args=False).cdf(lo + u * w), low, width,
             pos(2, 3, lo=-0.5, hi=1.5))
    check_op(lambda L, lo, w, u: make(L, lo, w).icdf(u), low, width, pos(2, 3, lo=0.0, hi=1.0))
    # outside the support without validation: log_prob -inf, as torch
    check_op(lambda L, v: L.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(v),
             np.array([-0.5, 0.5, 1.0, 1.5]), grad=False)
    assert math.isnan(ember.distributions.Uniform(0.0, 1.0).mode.item())


# ---------------------------------------------------------------- Bernoulli
def test_bernoulli_probs_and_logits():
    p, lg, v = pos(2, 3, lo=0.05, hi=0.95), real(2, 3), ints(2, 4, 2, 3).astype(np.float64)
    check_op(lambda L, p, v: L.distributions.Bernoulli(probs=p).log_prob(v), p, v)
    check_op(lambda L, lg, v: L.distributions.Bernoulli(logits=lg).log_prob(v), lg, v)
    check_op(lambda L, p: (L.distributions.Bernoulli(probs=p).entropy(), L.distributions.Bernoulli(probs=p).logits,
                           L.distributions.Bernoulli(probs=p).variance), p)
    check_op(lambda L, lg: (L.distributions.Bernoulli(logits=lg).entropy(), L.distributions.Bernoulli(logits=lg).probs,
                            L.distributions.Bernoulli(logits=lg).mean), lg)
    check_op(lambda L, p: L.distributions.Bernoulli(probs=p).mode, np.array([0.2, 0.5, 0.7]), grad=False)
    check_op(lambda L, p: L.distributions.Bernoulli(probs=p).enumerate_support(), NoGrad(p), grad=False)
    # Python-number parameters are CPU tensors (as torch's), so the value is made on the CPU too
    check_op(lambda L: L.distributions.Bernoulli(0.3).log_prob(L.tensor(1.0)), device="cpu")
    assert ember.distributions.Bernoulli(probs=0.3).param_shape == ()


# ---------------------------------------------------------------- Categorical / OneHotCategorical
def test_categorical_probs_are_normalised_and_logits_too():
    w, lg = pos(2, 3, 4), real(2, 3, 4)
    a = ints(4, 5, 2, 3)
    check_op(lambda L, w, a: L.distributions.Categorical(probs=w, validate_args=NV).log_prob(a), w, a)
    check_op(lambda L, lg, a: L.distributions.Categorical(logits=lg).log_prob(a), lg, a)
    check_op(lambda L, lg: L.distributions.Categorical(logits=lg).log_prob(L.tensor([1, 2, 0], device=lg.device)), lg)  # broadcast
    check_op(lambda L, w: (L.distributions.Categorical(probs=w, validate_args=NV).probs, L.distributions.Categorical(probs=w, validate_args=NV).logits,
                           L.distributions.Categorical(probs=w, validate_args=NV).entropy()), w)
    check_op(lambda L, lg: (L.distributions.Categorical(logits=lg).probs,
                            L.distributions.Categorical(logits=lg).logits,
                            L.distributions.Categorical(logits=lg).entropy()), lg)
    check_op(lambda L, lg: (L.distributions.Categorical(logits=lg).mode, L.distributions.Categorical(logits=lg).mean,
                            L.distributions.Categorical(logits=lg).variance,
                            L.distributions.Categorical(logits=lg).enumerate_support(),
                            L.distributions.Categorical(logits=lg).enumerate_support(expand=False)),
             lg, grad=False)
    # a zero probability: entropy stays finite (logits clamped to finfo.min), as torch
    check_op(lambda L, w: L.distributions.Categorical(probs=w, validate_args=NV).entropy(), np.array([0.0, 1.0, 3.0]))


def test_one_hot_categorical():
    lg = real(2, 4)
    v = np.eye(4)[ints(4, 3, 2)]
    check_op(lambda L, lg, v: L.distributions.OneHotCategorical(logits=lg).log_prob(v), lg, NoGrad(v))
    check_op(lambda L, w: (L.distributions.OneHotCategorical(probs=w, validate_args=NV).entropy(),
                           L.distributions.OneHotCategorical(probs=w, validate_args=NV).mean,
                           L.distributions.OneHotCategorical(probs=w, validate_args=NV).variance),
             np.array([[0.125, 0.25, 0.5, 0.125], [0.25, 0.25, 0.25, 0.25]]))   # the inner Categorical validates
    check_op(lambda L, lg: (L.distributions.OneHotCategorical(logits=lg).mode,
                            L.distributions.OneHotCategorical(logits=lg).enumerate_support()), lg, grad=False)
    d = ember.distributions.OneHotCategorical(logits=ember.tensor(lg, dtype=ember.float32))
    assert d.param_shape == (2, 4) and d.logits.shape == (2, 4) and d.probs.shape == (2, 4)


def test_one_hot_categorical_validates_derived_probs():
    # probs is a plain property of OneHotCategorical (not a lazy one), so validation checks the probs derived
    # from logits against Simplex: in bfloat16 their sum is often 1 +- 2^-8 and both libraries refuse them
    from helpers import DEVICE
    logits = np.random.default_rng(1).uniform(-2, 2, size=(200, 3))
    refused = []
    for row in logits:
        t = torch.tensor(row).to(torch.bfloat16)
        e = ember.tensor(t.double().numpy()).to(ember.bfloat16).to(DEVICE)
        outcome = []
        for L, x in ((torch, t), (ember, e)):
            try:
                L.distributions.OneHotCategorical(logits=x)
                outcome.append(False)
            except ValueError as err:
                assert "to satisfy the constraint Simplex()" in str(err)
                outcome.append(True)
        assert outcome[0] == outcome[1], (row, outcome)
        refused.append(outcome[0])
    assert 0 < sum(refused) < len(refused)


# ---------------------------------------------------------------- MultivariateNormal
def _spd(L, a):
    """a (..., n, n) -> a a^T + I: a positive definite matrix, differentiable in a."""
    return a @ a.mT + L.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _tril(L, a, d):
    """strictly lower part of a plus a positive diagonal d: a Cholesky factor."""
    return a.tril(-1) + L.diag_embed(d)


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal(param):
    def make(L, loc, a, d):
        m = _tril(L, a, d) if param == "scale_tril" else _spd(L, a)
        return L.distributions.MultivariateNormal(loc, **{param: m})
    loc, a, d = real(2, 3), real(2, 3, 3), pos(2, 3)
    check_op(lambda L, loc, a, d, x: make(L, loc, a, d).log_prob(x), loc, a, d, real(4, 2, 3), **TOL)
    check_op(lambda L, loc, a, d: (make(L, loc, a, d).entropy(), make(L, loc, a, d).variance,
                                   make(L, loc, a, d).mean), loc, a, d, **TOL)
    check_op(lambda L, loc, a, d: (make(L, loc, a, d).covariance_matrix, make(L, loc, a, d).precision_matrix,
                                   make(L, loc, a, d).scale_tril), loc, a, d, **TOL)


def test_multivariate_normal_broadcasts_loc_and_matrix():
    # one matrix for a batch of means, and a batch of matrices for one mean
    check_op(lambda L, loc, a, x: L.distributions.MultivariateNormal(loc, _spd(L, a)).log_prob(x),
             real(4, 3), real(3, 3), real(5, 4, 3), **TOL)
    check_op(lambda L, loc, a, x: L.distributions.MultivariateNormal(loc, scale_tril=_tril(L, a, L.ones(3, dtype=a.dtype, device=a.device)))
             .log_prob(x), real(3), real(2, 3, 3), real(5, 1, 3), **TOL)
    d = ember.distributions.MultivariateNormal(ember.zeros(4, 3), ember.eye(3))
    assert d.batch_shape == (4,) and d.event_shape == (3,) and d.rsample((2,)).shape == (2, 4, 3)


# ---------------------------------------------------------------- Independent
def test_independent():
    loc, scale = real(2, 3, 4), pos(2, 3, 4)
    check_op(lambda L, m, s, x: L.distributions.Independent(L.distributions.Normal(m, s), 2).log_prob(x),
             loc, scale, real(5, 2, 3, 4))
    check_op(lambda L, m, s: (L.distributions.Independent(L.distributions.Normal(m, s), 1).entropy(),
                              L.distributions.Independent(L.distributions.Normal(m, s), 1).mean,
                              L.distributions.Independent(L.distributions.Normal(m, s), 1).variance), loc, scale)
    d = ember.distributions.Independent(ember.distributions.Normal(ember.zeros(2, 3, 4), 1.0), 2)
    assert (d.batch_shape, d.event_shape, d.has_rsample, d.has_enumerate_support) == ((2,), (3, 4), True, False)
    assert repr(d.support) == "IndependentConstraint(Real(), 2)"
    b = ember.distributions.Independent(ember.distributions.Bernoulli(probs=ember.full((3,), 0.5)), 0)
    assert b.has_enumerate_support and b.enumerate_support().shape == (2, 3)


# ---------------------------------------------------------------- Exponential, Laplace, Gamma, Beta, Dirichlet
def test_exponential():
    r = pos(2, 3)
    check_op(lambda L, r, x: L.distributions.Exponential(r).log_prob(x), r, pos(4, 2, 3))
    check_op(lambda L, r: (L.distributions.Exponential(r).entropy(), L.distributions.Exponential(r).mean,
                           L.distributions.Exponential(r).variance, L.distributions.Exponential(r).stddev), r)
    check_op(lambda L, r, x: L.distributions.Exponential(r).cdf(x), r, pos(2, 3))
    check_op(lambda L, r, u: L.distributions.Exponential(r).icdf(u), r, pos(2, 3, lo=0.05, hi=0.95))


def test_laplace():
    m, s = real(2, 3), pos(2, 3)
    check_op(lambda L, m, s, x: L.distributions.Laplace(m, s).log_prob(x), m, s, real(4, 2, 3))
    check_op(lambda L, m, s: (L.distributions.Laplace(m, s).entropy(), L.distributions.Laplace(m, s).variance,
                              L.distributions.Laplace(m, s).stddev, L.distributions.Laplace(m, s).mean), m, s)
    check_op(lambda L, m, s, x: L.distributions.Laplace(m, s).cdf(x), m, s, real(2, 3))
    check_op(lambda L, m, s, u: L.distributions.Laplace(m, s).icdf(u), m, s, pos(2, 3, lo=0.05, hi=0.95))


def test_gamma():
    c, r = pos(2, 3, lo=0.5, hi=3.0), pos(2, 3)
    check_op(lambda L, c, r, x: L.distributions.Gamma(c, r).log_prob(x), c, r, pos(4, 2, 3), **TOL)
    check_op(lambda L, c, r: (L.distributions.Gamma(c, r).entropy(), L.distributions.Gamma(c, r).mean,
                              L.distributions.Gamma(c, r).variance, L.distributions.Gamma(c, r).mode), c, r, **TOL)
    check_op(lambda L, c, r, x: L.distributions.Gamma(c, r).cdf(x), NoGrad(c), r, pos(2, 3), **TOL)


def test_beta_and_dirichlet():
    a, b = pos(2, 3), pos(2, 3)
    check_op(lambda L, a, b, x: L.distributions.Beta(a, b).log_prob(x), a, b, pos(4, 2, 3, lo=0.05, hi=0.95), **TOL)
    check_op(lambda L, a, b: (L.distributions.Beta(a, b).entropy(), L.distributions.Beta(a, b).mean,
                              L.distributions.Beta(a, b).variance), a, b, **TOL)
    check_op(lambda L, a, b: L.distributions.Beta(a, b).mode, pos(3, lo=1.5, hi=3), pos(3, lo=1.5, hi=3), grad=False)
    c = pos(2, 4)
    x = rng.dirichlet(np.ones(4), size=(3, 2))
    check_op(lambda L, c, x: L.distributions.Dirichlet(c).log_prob(x), c, x, **TOL)
    check_op(lambda L, c: (L.distributions.Dirichlet(c).entropy(), L.distributions.Dirichlet(c).mean,
                           L.distributions.Dirichlet(c).variance), c, **TOL)
    # mode: interior point, and the vertex when every concentration is below 1
    check_op(lambda L, c: L.distributions.Dirichlet(c).mode, np.array([[2.0, 3.0, 1.5], [0.3, 0.9, 0.5]]),
             grad=False)
    check_op(lambda L: L.distributions.Beta(2.0, 3.0).log_prob(L.tensor(0.25)), device="cpu")   # CPU parameters


def test_mixture_same_family():
    lg, m, s = real(2, 3), real(2, 3), pos(2, 3)

    def gmm(L, lg, m, s):
        return L.distributions.MixtureSameFamily(L.distributions.Categorical(logits=lg), L.distributions.Normal(m, s))
    check_op(lambda L, lg, m, s, x: gmm(L, lg, m, s).log_prob(x), lg, m, s, real(4, 2))
    check_op(lambda L, lg, m, s: (gmm(L, lg, m, s).mean, gmm(L, lg, m, s).variance), lg, m, s)
    check_op(lambda L, lg, m, s, x: gmm(L, lg, m, s).cdf(x), lg, m, s, real(2))

    def mvn_mix(L, lg, m):   # components with an event dim
        return L.distributions.MixtureSameFamily(
            L.distributions.Categorical(logits=lg),
            L.distributions.Independent(L.distributions.Normal(m, L.ones_like(m)), 1))
    check_op(lambda L, lg, m, x: mvn_mix(L, lg, m).log_prob(x), real(3), real(3, 2), real(5, 2))
    check_op(lambda L, lg, m: (mvn_mix(L, lg, m).mean, mvn_mix(L, lg, m).variance), real(3), real(3, 2))
    d = gmm(ember, *(ember.tensor(t, dtype=ember.float32) for t in (lg, m, s)))
    assert d.sample((5,)).shape == (5, 2) and mvn_mix(ember, ember.zeros(3), ember.zeros(3, 2)).sample((4,)).shape == (4, 2)


# ---------------------------------------------------------------- expand
def test_expand_matches_torch():
    check_op(lambda L, m, s, x: L.distributions.Normal(m, s).expand((4, 3)).log_prob(x), real(3), pos(3), real(4, 3))
    check_op(lambda L, lg, a: L.distributions.Categorical(logits=lg).expand((2, 5)).log_prob(a), real(5, 4),
             ints(4, 2, 5))
    check_op(lambda L, p: L.distributions.Bernoulli(probs=p).expand((2, 3)).entropy(), pos(3, lo=0.1, hi=0.9))
    check_op(lambda L, loc, a: L.distributions.MultivariateNormal(loc, _spd(L, a)).expand((2,)).entropy(),
             real(3), real(3, 3), **TOL)
    check_op(lambda L, m: L.distributions.Independent(L.distributions.Normal(m, 1.0), 1).expand((2,)).log_prob(m),
             real(3))
    for d in (ember.distributions.Uniform(0.0, 1.0), ember.distributions.Exponential(1.0),
              ember.distributions.Laplace(0.0, 1.0), ember.distributions.Gamma(1.0, 1.0),
              ember.distributions.Beta(1.0, 1.0), ember.distributions.Dirichlet(ember.ones(3)),
              ember.distributions.OneHotCategorical(logits=ember.zeros(3))):
        e = d.expand((2, 3))
        assert type(e) is type(d) and e.batch_shape == (2, 3) and e.sample().shape == (2, 3) + d.event_shape


# ---------------------------------------------------------------- KL
KL_CASES = {
    "normal": (lambda L, a, b, c, d: (L.distributions.Normal(a, c), L.distributions.Normal(b, d)), "rrpp"),
    "bernoulli": (lambda L, a, b: (L.distributions.Bernoulli(probs=a), L.distributions.Bernoulli(logits=b)), "ur"),
    "categorical": (lambda L, a, b: (L.distributions.Categorical(probs=a, validate_args=NV),
                                     L.distributions.Categorical(logits=b)), "pr"),
    # validate_args=NV: OneHotCategorical validates the probs it derives from logits, which torch's simplex
    # check (|sum - 1| < 1e-6) refuses for some bfloat16 logits (test_one_hot_categorical_validates_derived_probs)
    "onehot": (lambda L, a, b: (L.distributions.OneHotCategorical(logits=a, validate_args=NV),
                                L.distributions.OneHotCategorical(logits=b, validate_args=NV)), "rr"),
    "uniform": (lambda L, a, b: (L.distributions.Uniform(a, a + b), L.distributions.Uniform(a - 1, a + b + 1)), "rp"),
    "exponential": (lambda L, a, b: (L.distributions.Exponential(a), L.distributions.Exponential(b)), "pp"),
    "laplace": (lambda L, a, b, c, d: (L.distributions.Laplace(a, c), L.distributions.Laplace(b, d)), "rrpp"),
    "gamma": (lambda L, a, b, c, d: (L.distributions.Gamma(a, c), L.distributions.Gamma(b, d)), "pppp"),
    "beta": (lambda L, a, b, c, d: (L.distributions.Beta(a, c), L.distributions.Beta(b, d)), "pppp"),
    "dirichlet": (lambda L, a, b: (L.distributions.Dirichlet(a), L.distributions.Dirichlet(b)), "pp"),
    "independent": (lambda L, a, b, c, d: (L.distributions.Independent(L.distributions.Normal(a, c), 1),
                                           L.distributions.Independent(L.distributions.Normal(b, d), 1)), "rrpp"),
    "mvn": (lambda L, a, b, c, d: (L.distributions.MultivariateNormal(a, _spd(L, c)),
                                   L.distributions.MultivariateNormal(b, scale_tril=_tril(L, d, L.ones_like(a)))),
            "rrMM"),
}


@pytest.mark.parametrize("name", sorted(KL_CASES))
def test_kl_divergence(name):
    make, kinds = KL_CASES[name]
    shape = (2, 3)
    gen = {"r": lambda: real(*shape), "p": lambda: pos(*shape), "u": lambda: pos(*shape, lo=0.05, hi=0.95),
           "M": lambda: real(2, 3, 3)}
    args = [gen[k]() for k in kinds]
    check_op(lambda L, *a: L.distributions.kl_divergence(*make(L, *a)), *args, **TOL)


def test_kl_infinite_and_zero_cases():
    # q misses mass that p has: +inf; p has no mass where q is 0 or 1: the term is 0, as torch
    check_op(lambda L, p, q: L.distributions.kl_divergence(L.distributions.Bernoulli(probs=p),
                                                           L.distributions.Bernoulli(probs=q)),
             np.array([0.0, 1.0, 0.5, 0.5]), np.array([0.5, 0.5, 0.0, 1.0]), grad=False)
    check_op(lambda L, p, q: L.distributions.kl_divergence(L.distributions.Categorical(probs=p),
                                                           L.distributions.Categorical(probs=q)),
             np.array([[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]]), np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]), grad=False)
    check_op(lambda L, lo, hi: L.distributions.kl_divergence(L.distributions.Uniform(lo, hi),
                                                             L.distributions.Uniform(L.zeros_like(lo), L.ones_like(hi))),
             np.array([0.2, -0.5, 0.5]), np.array([0.8, 0.5, 1.5]), grad=False)


def test_kl_unregistered_pairs_and_register_kl():
    def call(L):
        return L.distributions.kl_divergence(L.distributions.Categorical(logits=L.zeros(3)),
                                             L.distributions.Normal(0.0, 1.0))
    raises_as_torch(call, NotImplementedError, "No KL(p || q) is implemented for p type Categorical and q type Normal")

    def cross(L):   # two exponential families: the Bregman rule refuses, as torch
        return L.distributions.kl._kl_expfamily_expfamily(L.distributions.Normal(0.0, 1.0),
                                                          L.distributions.Exponential(1.0))
    raises_as_torch(cross, NotImplementedError, "The cross KL-divergence between different exponential families")
    # the Bregman rule itself, for one family, equals the closed form
    check_op(lambda L, a, b, c, d: L.distributions.kl._kl_expfamily_expfamily(L.distributions.Normal(a, c),
                                                                              L.distributions.Normal(b, d)),
             real(3), real(3), pos(3), pos(3), dtypes=("float64",), **TOL)

    class Shifted(ember.distributions.Normal):
        pass
    p, q = Shifted(0.0, 1.0), Shifted(1.0, 2.0)
    assert ember.distributions.kl_divergence(p, q).item() == pytest.approx(
        ember.distributions.kl_divergence(ember.distributions.Normal(0.0, 1.0),
                                          ember.distributions.Normal(1.0, 2.0)).item())   # inherits Normal's rule

    @ember.distributions.register_kl(Shifted, Shifted)
    def _kl_shifted(p, q):
        return ember.tensor(-1.0)
    assert ember.distributions.kl_divergence(p, q).item() == -1.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        ember.distributions.register_kl(int, Shifted)
    with pytest.raises(ValueError, match="different event shapes"):
        ember.distributions.kl_divergence(ember.distributions.MultivariateNormal(ember.zeros(2), ember.eye(2)),
                                          ember.distributions.MultivariateNormal(ember.zeros(3), ember.eye(3)))


# ---------------------------------------------------------------- sample / rsample shapes
def _all(L):
    D = L.distributions
    f = L.float64
    return {
        "Normal": D.Normal(L.zeros(2, 3, dtype=f), L.ones(3, dtype=f)),
        "Uniform": D.Uniform(L.zeros(2, 3, dtype=f), 1.0),
        "Bernoulli": D.Bernoulli(probs=L.full((2, 3), 0.3, dtype=f)),
        "Categorical": D.Categorical(logits=L.zeros(2, 3, 4, dtype=f)),
        "OneHotCategorical": D.OneHotCategorical(probs=L.ones(2, 3, 4, dtype=f)),
        "MultivariateNormal": D.MultivariateNormal(L.zeros(2, 3, 4, dtype=f), L.eye(4, dtype=f)),
        "Independent": D.Independent(D.Normal(L.zeros(2, 3, dtype=f), 1.0), 1),
        "Exponential": D.Exponential(L.ones(2, 3, dtype=f)),
        "Laplace": D.Laplace(L.zeros(2, 3, dtype=f), 1.0),
        "Gamma": D.Gamma(L.ones(2, 3, dtype=f), 2.0),
        "Beta": D.Beta(L.ones(2, 3, dtype=f), 2.0),
        "Dirichlet": D.Dirichlet(L.ones(2, 3, dtype=f)),
        "MixtureSameFamily": D.MixtureSameFamily(D.Categorical(logits=L.zeros(2, 4, dtype=f)),
                                                 D.Normal(L.zeros(2, 4, dtype=f), 1.0)),
        "scalar Normal": D.Normal(0.0, 1.0),
    }


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 1)])
def test_sample_shapes_dtypes_and_flags_match_torch(sample_shape):
    td, ed = _all(torch), _all(ember)
    for name in td:
        t, e = td[name], ed[name]
        assert (e.batch_shape, e.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)), name
        assert e.has_rsample == t.has_rsample, name
        ts, es = t.sample(sample_shape), e.sample(sample_shape)
        assert tuple(es.shape) == tuple(ts.shape) and es.dtype.name == str(ts.dtype).split(".")[1], name
        assert not es.requires_grad, name
        if t.has_rsample:
            assert tuple(e.rsample(sample_shape).shape) == tuple(t.rsample(sample_shape).shape), name


def test_rsample_is_differentiable_and_sample_is_not():
    loc = ember.zeros(3, requires_grad=True)
    scale = ember.ones(3, requires_grad=True)
    for make in (lambda: ember.distributions.Normal(loc, scale),
                 lambda: ember.distributions.Laplace(loc, scale),
                 lambda: ember.distributions.Uniform(loc, loc + scale),
                 lambda: ember.distributions.Exponential(scale),
                 lambda: ember.distributions.Gamma(scale, scale),
                 lambda: ember.distributions.Beta(scale, scale),
                 lambda: ember.distributions.Dirichlet(scale),
                 lambda: ember.distributions.MultivariateNormal(loc, scale_tril=ember.diag_embed(scale))):
        d = make()
        assert d.rsample((2,)).requires_grad and not d.sample((2,)).requires_grad
    # Normal: d rsample / d loc = 1 and d rsample / d scale = eps = (x - loc) / scale
    _ = ember.manual_seed(1)
    loc2 = ember.tensor([1.0, -2.0], requires_grad=True)
    scale2 = ember.tensor([0.5, 3.0], requires_grad=True)
    x = ember.distributions.Normal(loc2, scale2).rsample((4,))
    x.sum().backward()
    eps = (x.detach() - loc2.detach()) / scale2.detach()
    assert loc2.grad.tolist() == [4.0, 4.0]
    np.testing.assert_allclose(scale2.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5)


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    # for the sampled x, d x / d alpha equals torch's _standard_gamma_grad at (alpha, x), and d/d rate = -x/rate
    from ember.distributions.gamma import _standard_gamma_grad
    _ = ember.manual_seed(0)
    alpha = ember.tensor([0.3, 0.9, 1.0, 2.5, 7.0, 40.0], dtype=ember.float64, requires_grad=True)
    rate = ember.tensor([1.0, 2.0, 0.5, 1.0, 3.0, 1.0], dtype=ember.float64, requires_grad=True)
    x = ember.distributions.Gamma(alpha, rate).rsample()
    x.sum().backward()
    xs = (x * rate).detach()   # the standard gamma sample
    want = torch._standard_gamma_grad(torch.tensor(alpha.tolist(), dtype=torch.float64),
                                      torch.tensor(xs.tolist(), dtype=torch.float64)) / torch.tensor(rate.tolist())
    np.testing.assert_allclose(alpha.grad.numpy(), want.numpy(), rtol=1e-4)
    np.testing.assert_allclose(rate.grad.numpy(), (-x / rate).detach().numpy(), rtol=1e-10)
    g32 = _standard_gamma_grad(ember.tensor([2.0]), ember.tensor([1.5]))
    assert g32.dtype == ember.float32


# ---------------------------------------------------------------- sampling statistics
N = 200_000


def _stats(x, dim=0):
    x = x.to(ember.float64)
    return x.mean(dim).numpy(), x.std(dim).numpy()


def test_sampling_is_reproducible_with_manual_seed():
    d = ember.distributions.Normal(ember.zeros(3), 1.0)
    _ = ember.manual_seed(123)
    a = d.sample((4,))
    _ = ember.manual_seed(123)
    b = d.sample((4,))
    assert (a == b).all().item() and not (a == d.sample((4,))).all().item()
    _ = ember.manual_seed(5)
    c1 = ember.distributions.Categorical(logits=ember.zeros(5)).sample((10,))
    g1 = ember.distributions.Gamma(ember.ones(5), 1.0).sample()
    _ = ember.manual_seed(5)
    assert (ember.distributions.Categorical(logits=ember.zeros(5)).sample((10,)) == c1).all().item()
    assert (ember.distributions.Gamma(ember.ones(5), 1.0).sample() == g1).all().item()


@pytest.mark.parametrize("name,make,mean,std", [
    ("normal", lambda: ember.distributions.Normal(ember.tensor([2.0, -1.0]), ember.tensor([3.0, 0.5])),
     [2.0, -1.0], [3.0, 0.5]),
    ("uniform", lambda: ember.distributions.Uniform(ember.tensor([-1.0, 2.0]), ember.tensor([3.0, 2.5])),
     [1.0, 2.25], [4 / 12 ** 0.5, 0.5 / 12 ** 0.5]),
    ("bernoulli", lambda: ember.distributions.Bernoulli(logits=ember.tensor([0.0, 2.0])),
     [0.5, 1 / (1 + math.exp(-2))], [0.5, (1 / (1 + math.exp(-2)) * (1 - 1 / (1 + math.exp(-2)))) ** 0.5]),
    ("exponential", lambda: ember.distributions.Exponential(ember.tensor([0.5, 4.0])), [2.0, 0.25], [2.0, 0.25]),
    ("laplace", lambda: ember.distributions.Laplace(ember.tensor([1.0, 0.0]), ember.tensor([2.0, 0.1])),
     [1.0, 0.0], [2 * 2 ** 0.5, 0.1 * 2 ** 0.5]),
    ("gamma", lambda: ember.distributions.Gamma(ember.tensor([0.5, 3.0, 20.0]), ember.tensor([1.0, 2.0, 0.5])),
     [0.5, 1.5, 40.0], [0.5 ** 0.5, 3 ** 0.5 / 2, 20 ** 0.5 / 0.5]),
    ("beta", lambda: ember.distributions.Beta(ember.tensor([0.5, 2.0]), ember.tensor([0.5, 5.0])),
     [0.5, 2 / 7], [(0.25 / 2) ** 0.5, (10 / (49 * 8)) ** 0.5]),
])
def test_sample_mean_and_std(name, make, mean, std):
    # with 200k samples the standard error of the mean is std / 447 and of the std below 1%: 4 sigma bounds
    _ = ember.manual_seed(0)
    d = make()
    m, s = _stats(d.sample((N,)))
    std = np.array(std)
    assert np.all(np.abs(m - np.array(mean)) < 4 * std / N ** 0.5 + 1e-12), (m, mean)
    assert np.all(np.abs(s / std - 1) < 0.015), (s, std)
    np.testing.assert_allclose(d.mean.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(d.stddev.numpy(), std, rtol=1e-6)
    if d.has_rsample:
        _ = ember.manual_seed(1)
        m, s = _stats(d.rsample((N,)).detach())
        assert np.all(np.abs(m - np.array(mean)) < 4 * std / N ** 0.5 + 1e-12) and np.all(np.abs(s / std - 1) < 0.015)


def test_categorical_and_one_hot_frequencies():
    _ = ember.manual_seed(0)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    d = ember.distributions.Categorical(probs=ember.tensor(probs * 3))    # unnormalised on purpose
    s = d.sample((N,))
    assert s.dtype == ember.int64 and s.shape == (N, 2)
    freq = np.stack([(s.numpy() == k).mean(0) for k in range(3)], -1)
    assert np.all(np.abs(freq - probs) < 4 * np.sqrt(probs * (1 - probs) / N) + 1e-12), freq
    oh = ember.distributions.OneHotCategorical(probs=ember.tensor(probs)).sample((N,))
    assert np.all(np.abs(oh.numpy().mean(0) - probs) < 4 * np.sqrt(probs * (1 - probs) / N) + 1e-12)


def test_multivariate_normal_and_dirichlet_sample_moments():
    _ = ember.manual_seed(0)
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    loc = np.array([1.0, -2.0, 0.5])
    for kw in ({"covariance_matrix": cov}, {"precision_matrix": np.linalg.inv(cov)},
               {"scale_tril": np.linalg.cholesky(cov)}):
        d = ember.distributions.MultivariateNormal(ember.tensor(loc),
                                                   **{k: ember.tensor(v) for k, v in kw.items()})
        x = d.rsample((N,)).detach().numpy()
        assert np.all(np.abs(x.mean(0) - loc) < 4 * np.sqrt(np.diag(cov) / N)), kw
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.02)
    alpha = np.array([1.0, 2.0, 5.0])
    x = ember.distributions.Dirichlet(ember.tensor(alpha)).sample((N,)).numpy()
    a0 = alpha.sum()
    var = alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1))
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.abs(x.mean(0) - alpha / a0) < 4 * np.sqrt(var / N))
    np.testing.assert_allclose(x.var(0), var, rtol=0.02)


def test_mixture_sample_frequencies():
    _ = ember.manual_seed(0)
    d = ember.distributions.MixtureSameFamily(ember.distributions.Categorical(probs=ember.tensor([0.25, 0.75])),
                                              ember.distributions.Normal(ember.tensor([-10.0, 10.0]), 1.0))
    x = d.sample((N,)).numpy()
    assert abs((x > 0).mean() - 0.75) < 4 * (0.75 * 0.25 / N) ** 0.5
    assert abs(x.mean() - d.mean.item()) < 0.05 and abs(x.var() / d.variance.item() - 1) < 0.02


# ---------------------------------------------------------------- validation
def test_validate_args_errors_as_torch():
    raises_as_torch(lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0])), ValueError,
                    "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(")
    raises_as_torch(lambda L: L.distributions.Normal(L.tensor([0.0]), L.tensor([-1.0])), ValueError,
                    "to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values")
    raises_as_torch(lambda L: L.distributions.Bernoulli(probs=L.tensor([1.5])), ValueError,
                    "to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0)")
    raises_as_torch(lambda L: L.distributions.Bernoulli(probs=0.5, logits=0.0), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    raises_as_torch(lambda L: L.distributions.Categorical(), ValueError,
                    "Either `probs` or `logits` must be specified, but not both.")
    raises_as_torch(lambda L: L.distributions.Categorical(probs=L.tensor(1.0)), ValueError,
                    "`probs` parameter must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.Categorical(logits=L.tensor(1.0)), ValueError,
                    "`logits` parameter must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.Categorical(probs=L.tensor([0.5, -0.5, 1.0])), ValueError,
                    "to satisfy the constraint Simplex()")
    raises_as_torch(lambda L: L.distributions.Uniform(L.tensor([1.0]), L.tensor([0.0])), ValueError,
                    "Expected parameter low (Tensor of shape (1,)) of distribution Uniform(")
    raises_as_torch(lambda L: L.distributions.Dirichlet(L.tensor(1.0)), ValueError,
                    "`concentration` parameter must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.Gamma(L.tensor([1.0]), L.tensor([0.0])), ValueError,
                    "Expected parameter rate")
    raises_as_torch(lambda L: L.distributions.Independent(L.distributions.Normal(L.zeros(2), 1.0), 2), ValueError,
                    "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 2 vs 1")


def test_validate_args_multivariate_normal():
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.tensor(0.0), L.eye(1)), ValueError,
                    "loc must be at least one-dimensional.")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2)), ValueError,
                    "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2), scale_tril=L.eye(2)),
                    ValueError, "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.ones(2)), ValueError,
                    "covariance_matrix must be at least two-dimensional, with optional leading batch dimensions")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), scale_tril=L.ones(2)), ValueError,
                    "scale_tril matrix must be at least two-dimensional")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [2.0, 1.0]])),
                    ValueError, "to satisfy the constraint PositiveDefinite()")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 0.5], [0.0, 1.0]])),
                    ValueError, "to satisfy the constraint PositiveDefinite()")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), scale_tril=L.tensor([[1.0, 1.0],
                                                                                                  [0.0, 1.0]])),
                    ValueError, "to satisfy the constraint LowerCholesky()")
    with pytest.raises(ValueError, match=r"MultivariateNormal: covariance_matrix of shape \(3, 3\) does not match loc"):
        ember.distributions.MultivariateNormal(ember.zeros(2), ember.eye(3))


def test_validate_sample_errors_as_torch():
    raises_as_torch(lambda L: L.distributions.Bernoulli(probs=L.tensor([0.5])).log_prob(L.tensor([0.5])),
                    ValueError, "to be within the support (Boolean()) of the distribution Bernoulli(")
    raises_as_torch(lambda L: L.distributions.Categorical(logits=L.zeros(3)).log_prob(L.tensor(3)), ValueError,
                    "to be within the support (IntegerInterval(lower_bound=0, upper_bound=2))")
    raises_as_torch(lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(L.tensor(1.5)), ValueError,
                    "Expected value argument (Tensor of shape ()) to be within the support (Interval(")
    raises_as_torch(lambda L: L.distributions.Exponential(1.0).cdf(L.tensor(-1.0)), ValueError,
                    "to be within the support (GreaterThanEq(lower_bound=0.0))")
    raises_as_torch(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2)).log_prob(L.zeros(3)),
                    ValueError, "The right-most size of value must match event_shape:")
    raises_as_torch(lambda L: L.distributions.Normal(L.zeros(3), 1.0).log_prob(L.zeros(2)), ValueError,
                    "Value is not broadcastable with batch_shape+event_shape:")
    raises_as_torch(lambda L: L.distributions.Normal(0.0, 1.0).log_prob(0.5), ValueError,
                    "The value argument to log_prob must be a Tensor")
    raises_as_torch(lambda L: L.distributions.Dirichlet(L.ones(3)).log_prob(L.tensor([0.5, 0.6, 0.1])), ValueError,
                    "to be within the support (Simplex())")
    e = raises_as_torch(lambda L: L.distributions.Normal(0.0, -1.0), ValueError, "Expected parameter scale")
    assert "(at test_distributions.py:" in str(e)   # names the user's line


def test_validate_args_off():
    # validate_args=False skips the checks (torch then computes whatever the formula gives)
    check_op(lambda L, s: L.distributions.Normal(L.zeros(2, dtype=s.dtype), s, validate_args=False).entropy(),
             NoGrad(np.array([-1.0, 2.0])), grad=False)
    check_op(lambda L, p: L.distributions.Bernoulli(probs=p, validate_args=False).log_prob(p),
             NoGrad(np.array([0.5])), grad=False)
    old = ember.distributions.Distribution._validate_args
    try:
        ember.distributions.Distribution.set_default_validate_args(False)
        ember.distributions.Normal(0.0, -1.0)     # no error
        ember.distributions.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            ember.distributions.Normal(0.0, -1.0)
        with pytest.raises(ValueError, match="expected True or False, got 'yes'"):
            ember.distributions.Distribution.set_default_validate_args("yes")
    finally:
        ember.distributions.Distribution.set_default_validate_args(old)


def test_constraints_check_as_torch():
    C = "constraints"
    vals = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, np.nan, 1.0, 0.0]])
    for name in ("real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer",
                 "positive_integer", "real_vector", "simplex", "one_hot"):
        check_op(lambda L, v: getattr(getattr(L.distributions, C), name).check(v), NoGrad(vals), grad=False)
    for make in (lambda L: L.distributions.constraints.interval(0.0, 1.0),
                 lambda L: L.distributions.constraints.half_open_interval(0.0, 1.0),
                 lambda L: L.distributions.constraints.greater_than(0.5),
                 lambda L: L.distributions.constraints.greater_than_eq(0.5),
                 lambda L: L.distributions.constraints.less_than(0.5),
                 lambda L: L.distributions.constraints.integer_interval(0, 1),
                 lambda L: L.distributions.constraints.multinomial(2),
                 lambda L: L.distributions.constraints.independent(L.distributions.constraints.positive, 1)):
        check_op(lambda L, v: make(L).check(v), NoGrad(vals), grad=False)
        assert repr(make(ember)) == repr(make(torch))
    mats = np.array([[[2.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.5], [0.5, 1.0]]])
    for name in ("lower_triangular", "lower_cholesky", "square", "symmetric", "positive_definite",
                 "positive_semidefinite"):
        check_op(lambda L, m: getattr(L.distributions.constraints, name).check(m), NoGrad(mats), grad=False)
        assert repr(getattr(ember.distributions.constraints, name)) == repr(getattr(torch.distributions.constraints, name))
    dep = ember.distributions.constraints.dependent
    assert ember.distributions.constraints.is_dependent(dep) and not ember.distributions.constraints.is_dependent(
        ember.distributions.constraints.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        dep.check(ember.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        dep.event_dim
    assert dep(is_discrete=True, event_dim=1).event_dim == 1
    assert isinstance(ember.distributions.constraints.Constraint(), ember.distributions.constraints.Constraint)
    mix = ember.distributions.constraints.MixtureSameFamilyConstraint(ember.distributions.constraints.positive)
    tmix = torch.distributions.constraints.MixtureSameFamilyConstraint(torch.distributions.constraints.positive)
    check_op(lambda L, v: (mix if L is ember else tmix).check(v), NoGrad(vals), grad=False)
    assert repr(mix) == repr(tmix)
    assert ember.distributions.Categorical(logits=ember.zeros(3)).support.event_dim == 0

    class Above(ember.distributions.Normal):   # a support that depends on the parameters, as torch's Uniform
        @ember.distributions.constraints.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return ember.distributions.constraints.greater_than(self.loc)
    assert ember.distributions.constraints.is_dependent(vars(Above)["support"])
    assert vars(Above)["support"].event_dim == 0 and not vars(Above)["support"].is_discrete
    assert Above(ember.tensor([0.0, 1.0]), 1.0).support.check(ember.tensor([0.5, 0.5])).tolist() == [True, False]
    assert ember.distributions.Uniform(0.0, 1.0).support.check(ember.tensor([0.0, 1.0, 1.5])).tolist() == [True, True,
                                                                                                             False]


def test_utils_and_repr():
    from ember.distributions.utils import broadcast_all, clamp_probs, logits_to_probs, probs_to_logits, lazy_property
    check_op(lambda L, p: L.distributions.utils.probs_to_logits(p, is_binary=True), pos(3, lo=0.1, hi=0.9))
    check_op(lambda L, p: L.distributions.utils.probs_to_logits(p), pos(3, lo=0.1, hi=0.9))
    check_op(lambda L, lg: L.distributions.utils.logits_to_probs(lg), real(2, 3))
    check_op(lambda L, lg: L.distributions.utils.logits_to_probs(lg, is_binary=True), real(2, 3))
    check_op(lambda L, p: L.distributions.utils.clamp_probs(p), NoGrad(np.array([0.0, 0.5, 1.0])), grad=False)
    check_op(lambda L, a: L.distributions.utils.broadcast_all(a, 2.0, 3), real(2, 1))
    assert [tuple(v.shape) for v in broadcast_all(1.0, 2.0)] == [(), ()]
    assert callable(logits_to_probs) and callable(clamp_probs) and callable(probs_to_logits)
    assert isinstance(vars(ember.distributions.Categorical)["logits"], lazy_property)
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number"):
        broadcast_all(ember.zeros(1), "a")
    assert repr(ember.distributions.Normal(ember.zeros(2), ember.ones(2))) == "Normal(loc: (2,), scale: (2,))"
    assert repr(ember.distributions.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    assert repr(ember.distributions.Normal(ember.tensor([0.5]), 1.0)) == "Normal(loc: tensor([0.5000]), scale: tensor([1.]))"
    # probs is derived from logits only when asked, and then kept
    d = ember.distributions.Categorical(logits=ember.zeros(3))
    assert "probs" not in vars(d) and d.probs is d.probs


# ---------------------------------------------------------------- losses of RL and VAE code
def test_reinforce_loss_backpropagates_as_torch():
    # policy-gradient loss -(log pi(a|s) * advantage).mean() for a linear policy over 4 actions
    states, actions, adv = real(6, 5), ints(4, 6), real(6)

    def loss(L, w, b, s, a, adv):
        logits = s @ w + b
        dist = L.distributions.Categorical(logits=logits)
        return -(dist.log_prob(a) * adv).mean() - 0.01 * dist.entropy().mean()
    check_op(loss, real(5, 4), real(4), NoGrad(states), actions, NoGrad(adv))

    def gaussian_policy(L, w, log_std, s, a, adv):   # continuous actions: Independent(Normal) over 2 dims
        dist = L.distributions.Independent(L.distributions.Normal(s @ w, log_std.exp()), 1)
        return -(dist.log_prob(a) * adv).mean()
    check_op(gaussian_policy, real(5, 2), real(2), NoGrad(states), NoGrad(real(6, 2)), NoGrad(adv))


def test_vae_loss_through_rsample_backpropagates_as_torch():
    # reconstruction through z = rsample() plus KL(q || N(0, I)); torch replays Ember's noise
    x_target = real(4, 3)
    mu0, log_sigma0 = real(4, 3), real(4, 3, lo=-1.0, hi=0.5)
    _ = ember.manual_seed(3)
    mu = ember.tensor(mu0, requires_grad=True)
    log_sigma = ember.tensor(log_sigma0, requires_grad=True)
    q = ember.distributions.Normal(mu, log_sigma.exp())
    z = q.rsample()
    prior = ember.distributions.Normal(ember.zeros_like(mu), ember.ones_like(mu))
    loss = ((z - ember.tensor(x_target)) ** 2).sum(-1).mean() + ember.distributions.kl_divergence(q, prior).sum(-1).mean()
    loss.backward()
    eps = ((z.detach() - mu.detach()) / log_sigma.exp().detach()).numpy()

    tmu = torch.tensor(mu0, dtype=torch.float32, requires_grad=True)
    tls = torch.tensor(log_sigma0, dtype=torch.float32, requires_grad=True)
    tq = torch.distributions.Normal(tmu, tls.exp())
    tz = tmu + torch.tensor(eps) * tls.exp()
    tprior = torch.distributions.Normal(torch.zeros_like(tmu), torch.ones_like(tmu))
    tloss = ((tz - torch.tensor(x_target, dtype=torch.float32)) ** 2).sum(-1).mean() + \
        torch.distributions.kl_divergence(tq, tprior).sum(-1).mean()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(mu.grad.numpy(), tmu.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(log_sigma.grad.numpy(), tls.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_distributions_is_lazy():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "import sys, ember; print('ember.distributions' in sys.modules); "
                        "ember.distributions.Normal; print('ember.distributions' in sys.modules)"],
                       capture_output=True, text=True)
    assert r.stdout.split() == ["False", "True"], r.stdout + r.stderr


def test_const_passthrough_helper_is_used():
    # Independent over a Categorical batch: log_prob sums over the reinterpreted dim
    check_op(lambda L, lg, a, n: L.distributions.Independent(L.distributions.Categorical(logits=lg), n).log_prob(a),
             real(2, 3, 4), ints(4, 2, 3), Const(1))
