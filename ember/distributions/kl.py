"""KL divergences: `kl_divergence(p, q)` and the `register_kl` table, as torch.distributions.kl.

The rule for a pair of types is the registered one whose types are the most specific superclasses of
(type(p), type(q)); an ambiguous choice warns, as torch's. Pairs with no rule raise NotImplementedError.
"""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ember
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform
from .utils import _sum_rightmost

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY: dict = {}   # (type_p, type_q) -> function: the rules as registered
_KL_MEMOIZE: dict = {}    # (type(p), type(q)) -> the rule dispatch chose for them


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for p of type_p and q of type_q (and subclasses).

    >>> from ember.distributions import Normal, kl_divergence, register_kl
    >>> class MyNormal(Normal):
    ...     pass
    >>> @register_kl(MyNormal, MyNormal)
    ... def _kl_mine(p, q):
    ...     return ember.zeros(())
    >>> kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0)).item()
    0.0
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()   # the choice for a pair may have changed
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered (type_p, type_q) ordered by specificity, for picking the closest rule."""
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the batch shapes (closed forms, differentiable
    with respect to both distributions' parameters).

    >>> from ember.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item()
    0.5
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _batch_trace_XXT(bmat):
    """trace(X X^T) of each matrix of a batch."""
    n, m = bmat.shape[-1], bmat.shape[-2]
    return bmat.reshape(-1, m * n).pow(2).sum(-1).reshape(tuple(bmat.shape[:-2]))


def _softplus(x):
    from ember.nn.functional import softplus
    return softplus(x)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = ember.where(p.probs == 0, 0.0, ember.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = ember.where(p.probs == 1, 0.0, ember.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * ember.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), math.inf, t)
    t = ember.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman divergence of the log normalizer, for two members of one family
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  "be computed using Bregman divergences")
    p_nparams = [nat.detach().requires_grad_() for nat in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         f"computed: {p.event_shape} vs {q.event_shape}")
    half_term1 = (q._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
                  - p._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1))
    combined_batch_shape = ember.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                                  tuple(p._unbroadcasted_scale_tril.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(combined_batch_shape + (n, n))
    p_scale_tril = p._unbroadcasted_scale_tril.expand(combined_batch_shape + (n, n))
    term2 = _batch_trace_XXT(ember.linalg.solve_triangular(q_scale_tril, p_scale_tril, upper=False))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, (q.loc - p.loc))
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return ember.where((q.low > p.low) | (q.high < p.high), math.inf, result)
