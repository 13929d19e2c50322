"""kl_divergence rules added after the first set (tests/distributions/test_distributions.py has those):
Binomial, Cauchy, Geometric, Gumbel, HalfNormal, Pareto, Poisson and TransformedDistribution pairs, and
torch's rules between families (closed forms and the +inf ones), against torch for values and gradients,
with their +inf, NaN and NotImplementedError cases."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_as_torch

rng = np.random.default_rng(44)
TOL = dict(atol=1e-5, rtol=1e-5, grad_atol=1e-4, grad_rtol=1e-4)
SHAPE = (2, 3)
ETOL = dict(atol=1e-5, rtol=1e-5, grad=False)   # python-number parameters are float32 in both


def real(lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=SHAPE)


def pos(lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, size=SHAPE)


def D(L):
    return L.distributions


# name: (make(L, *params) -> (p, q), params); every rule's value and gradients in every parameter
CASES = {
    # same family
    "poisson": (lambda L, a, b: (D(L).Poisson(a), D(L).Poisson(b)), [pos(), pos()]),
    "binomial": (lambda L, a, b: (D(L).Binomial(5, probs=a), D(L).Binomial(5, logits=b)), [pos(0.05, 0.95), real()]),
    "geometric": (lambda L, a, b: (D(L).Geometric(probs=a), D(L).Geometric(logits=b)), [pos(0.05, 0.95), real()]),
    "cauchy": (lambda L, a, b, c, d: (D(L).Cauchy(a, c), D(L).Cauchy(b, d)), [real(), real(), pos(), pos()]),
    "gumbel": (lambda L, a, b, c, d: (D(L).Gumbel(a, c), D(L).Gumbel(b, d)), [real(), real(), pos(), pos()]),
    "half_normal": (lambda L, a, b: (D(L).HalfNormal(a), D(L).HalfNormal(b)), [pos(), pos()]),
    "pareto": (lambda L, a, b, c, d: (D(L).Pareto(a, c), D(L).Pareto(a - b, d)), [pos(1, 2), pos(0, 0.5), pos(), pos()]),
    "log_normal (transformed)": (lambda L, a, b, c, d: (D(L).LogNormal(a, c), D(L).LogNormal(b, d)),
                                 [real(), real(), pos(), pos()]),
    "affine (transformed)": (lambda L, a, b, c: (
        D(L).TransformedDistribution(D(L).Exponential(a), [D(L).transforms.AffineTransform(1.0, c)]),
        D(L).TransformedDistribution(D(L).Exponential(b), [D(L).transforms.AffineTransform(1.0, c)])),
        [pos(), pos(), pos()]),
    "chi2-exponential (Gamma's rule)": (lambda L, a, b: (D(L).Chi2(a), D(L).Exponential(b)), [pos(1, 4), pos()]),
    # between families
    "bernoulli-poisson": (lambda L, a, b: (D(L).Bernoulli(probs=a), D(L).Poisson(b)), [pos(0.05, 0.95), pos()]),
    "beta-exponential": (lambda L, a, b, c: (D(L).Beta(a, b), D(L).Exponential(c)), [pos(), pos(), pos()]),
    "beta-gamma": (lambda L, a, b, c, d: (D(L).Beta(a, b), D(L).Gamma(c, d)), [pos(), pos(), pos(), pos()]),
    "beta-normal": (lambda L, a, b, c, d: (D(L).Beta(a, b), D(L).Normal(c, d)), [pos(), pos(), real(), pos()]),
    "beta-uniform": (lambda L, a, b, c, d: (D(L).Beta(a, b), D(L).Uniform(-c, 1 + d)), [pos(), pos(), pos(), pos()]),
    "exponential-gamma": (lambda L, a, b, c: (D(L).Exponential(a), D(L).Gamma(b, c)), [pos(), pos(), pos()]),
    "exponential-gumbel": (lambda L, a, b, c: (D(L).Exponential(a), D(L).Gumbel(b, c)), [pos(), real(), pos()]),
    "exponential-normal": (lambda L, a, b, c: (D(L).Exponential(a), D(L).Normal(b, c)), [pos(), real(), pos()]),
    "gamma-exponential": (lambda L, a, b, c: (D(L).Gamma(a, b), D(L).Exponential(c)), [pos(), pos(), pos()]),
    "gamma-gumbel": (lambda L, a, b, c, d: (D(L).Gamma(a, b), D(L).Gumbel(c, d)), [pos(), pos(), real(), pos()]),
    "gamma-normal": (lambda L, a, b, c, d: (D(L).Gamma(a, b), D(L).Normal(c, d)), [pos(), pos(), real(), pos()]),
    "gumbel-normal": (lambda L, a, b, c, d: (D(L).Gumbel(a, b), D(L).Normal(c, d)), [real(), pos(), real(), pos()]),
    "laplace-normal": (lambda L, a, b, c, d: (D(L).Laplace(a, b), D(L).Normal(c, d)), [real(), pos(), real(), pos()]),
    "normal-gumbel": (lambda L, a, b, c, d: (D(L).Normal(a, b), D(L).Gumbel(c, d)), [real(), pos(), real(), pos()]),
    "normal-laplace": (lambda L, a, b, c, d: (D(L).Normal(a, b), D(L).Laplace(c, d)), [real(), pos(), real(), pos()]),
    "pareto-exponential": (lambda L, a, b, c: (D(L).Pareto(a, b), D(L).Exponential(c)), [pos(), pos(1.5, 4), pos()]),
    "pareto-gamma": (lambda L, a, b, c, d: (D(L).Pareto(a, b), D(L).Gamma(c, d)), [pos(), pos(1.5, 4), pos(), pos()]),
    "pareto-normal": (lambda L, a, b, c, d: (D(L).Pareto(a, b), D(L).Normal(c, d)), [pos(), pos(2.5, 5), real(), pos()]),
    "uniform-beta": (lambda L, a, b, c, d: (D(L).Uniform(a, b), D(L).Beta(c, d)),
                     [pos(0.05, 0.45), pos(0.55, 0.95), pos(), pos()]),
    "uniform-exponential": (lambda L, a, b, c: (D(L).Uniform(a, a + b), D(L).Exponential(c)), [pos(), pos(), pos()]),
    "uniform-gamma": (lambda L, a, b, c, d: (D(L).Uniform(a, a + b), D(L).Gamma(c, d)), [pos(), pos(), pos(), pos()]),
    "uniform-gumbel": (lambda L, a, b, c, d: (D(L).Uniform(a, a + b), D(L).Gumbel(c, d)),
                       [real(), pos(), real(), pos()]),
    "uniform-normal": (lambda L, a, b, c, d: (D(L).Uniform(a, a + b), D(L).Normal(c, d)),
                       [real(), pos(), real(), pos()]),
    "uniform-pareto": (lambda L, a, b, c, d: (D(L).Uniform(c + a, c + a + b), D(L).Pareto(c, d)),
                       [pos(0, 1), pos(), pos(), pos()]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kl_values_and_gradients(name):
    make, params = CASES[name]
    check_op(lambda L, *a: D(L).kl_divergence(*make(L, *a)), *params, **TOL)


INFINITE = [   # p has mass where q has none: +inf everywhere, as torch
    (lambda L, x: D(L).Normal(x, 1.0), ["Beta", "Exponential", "Gamma", "Pareto", "Uniform"]),
    (lambda L, x: D(L).Laplace(x, 1.0), ["Beta", "Exponential", "Gamma", "Pareto", "Uniform"]),
    (lambda L, x: D(L).Gumbel(x, 1.0), ["Beta", "Exponential", "Gamma", "Pareto", "Uniform"]),
    (lambda L, x: D(L).Exponential(x.abs() + 1), ["Beta", "Pareto", "Uniform"]),
    (lambda L, x: D(L).Gamma(x.abs() + 1, 1.0), ["Beta", "Pareto", "Uniform"]),
    (lambda L, x: D(L).Pareto(x.abs() + 1, 2.0), ["Beta", "Uniform"]),
    (lambda L, x: D(L).Beta(x.abs() + 1, 2.0), ["Pareto"]),
    (lambda L, x: D(L).Poisson(x.abs() + 1), ["Bernoulli", "Binomial"]),
]
Q = {"Beta": lambda L: D(L).Beta(2.0, 3.0), "Exponential": lambda L: D(L).Exponential(1.0),
     "Gamma": lambda L: D(L).Gamma(2.0, 1.0), "Pareto": lambda L: D(L).Pareto(1.0, 2.0),
     "Uniform": lambda L: D(L).Uniform(0.0, 1.0), "Bernoulli": lambda L: D(L).Bernoulli(0.3),
     "Binomial": lambda L: D(L).Binomial(4, 0.3)}


@pytest.mark.parametrize("i", range(len(INFINITE)))
def test_kl_infinite_between_families(i):
    make_p, qs = INFINITE[i]
    for q in qs:
        t, e = check_op(lambda L, x: D(L).kl_divergence(make_p(L, x), Q[q](L)), real(), grad=False)
        assert bool(torch.isinf(t).all()), q


def test_kl_infinite_and_nan_cases_in_closed_forms():
    # Pareto p with alpha <= 1 (<= 2 against a Normal): inf; p's lower bound below q's: inf
    alpha = np.array([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]])
    for q in ("Exponential(1.0)", "Gamma(2.0, 1.0)", "Normal(0.0, 1.0)"):
        check_op(lambda L, a: D(L).kl_divergence(D(L).Pareto(1.0, a), eval("D(L)." + q)), alpha, **ETOL)
    check_op(lambda L, s, a: D(L).kl_divergence(D(L).Pareto(s, a), D(L).Pareto(1.0, 2.0)),
             np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), **ETOL)
    # Uniform p outside q's support: inf (and the support edges themselves, finite via xlogy at 0)
    lo, hi = np.array([-0.5, 0.0, 0.2, 0.5]), np.array([0.5, 1.0, 1.2, 0.7])
    check_op(lambda L, lo, hi: D(L).kl_divergence(D(L).Uniform(lo, hi), D(L).Beta(2.0, 3.0)), lo, hi, **ETOL)
    for q in ("Exponential(1.0)", "Gamma(2.0, 1.0)", "Pareto(0.1, 2.0)"):
        check_op(lambda L, lo, hi: D(L).kl_divergence(D(L).Uniform(lo, hi), eval("D(L)." + q)), lo, hi, **ETOL)
    check_op(lambda L, lo, hi: D(L).kl_divergence(D(L).Beta(2.0, 3.0), D(L).Uniform(lo, hi)), lo, hi, **ETOL)
    # Binomial p with more trials than q: inf; Poisson rate 0: 0 log 0 is NaN in torch's formula, so here
    n = np.array([5.0, 6.0, 8.0])
    check_op(lambda L, n, p: D(L).kl_divergence(D(L).Binomial(n, p), D(L).Binomial(5, 0.4)), n,
             np.array([0.2, 0.5, 0.7]), **ETOL)
    check_op(lambda L, r: D(L).kl_divergence(D(L).Poisson(r), D(L).Poisson(1.0)), np.array([0.0, 1.0]), **ETOL)


def test_kl_not_implemented_as_torch():
    raises_as_torch(lambda L: D(L).kl_divergence(D(L).Binomial(3, 0.5), D(L).Binomial(5, 0.5)), NotImplementedError,
                    "KL between Binomials where q.total_count > p.total_count is not implemented")

    def affine(L, loc):
        return D(L).TransformedDistribution(D(L).Normal(0.0, 1.0), [D(L).transforms.AffineTransform(loc, 2.0)])
    for L in (torch, ember):
        with pytest.raises(NotImplementedError):
            D(L).kl_divergence(affine(L, 0.0), affine(L, 1.0))      # different transforms
        with pytest.raises(NotImplementedError):
            D(L).kl_divergence(D(L).LogNormal(0.0, 1.0), D(L).HalfNormal(1.0))   # AbsTransform != ExpTransform
        with pytest.raises(NotImplementedError):
            D(L).kl_divergence(D(L).Gumbel(0.0, 1.0), D(L).Laplace(0.0, 1.0))    # no rule in torch either
    # the same transforms, even Weibull's, reduce to the bases' KL (0 here), as torch
    for L in (torch, ember):
        w = D(L).Weibull(L.tensor([1.0, 2.0]), L.tensor([1.5, 1.5]))
        assert D(L).kl_divergence(w, w).tolist() == [0.0, 0.0]
