"""torch.special's names: the special functions of Ember under torch's namespace.

Only re-exports: each name is the same function object as Ember's own where Ember has one
(`ember.special.gammaln is ember.lgamma`, `ember.special.expit is ember.sigmoid`); the rest live in
ember/ops/special.py.

>>> import ember
>>> ember.special.gammaln is ember.lgamma
True
>>> ember.special.ndtr(ember.tensor([0.0])).item()
0.5
"""
from __future__ import annotations

from .ops.math import erf, erfinv, exp2, expm1, log1p, log_softmax, logsumexp, round, sigmoid as expit, softmax
from .ops.pointwise import erfc, logit, sinc, xlogy
from .ops.special import (digamma, entr, erfcx, i0, i0e, i1, i1e, igamma as gammainc, igammac as gammaincc,
                          lgamma as gammaln, log_ndtr, mvlgamma as multigammaln, ndtr, ndtri, polygamma, xlog1py)

psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e",
           "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]
