"""The examples in ember.distributions' docstrings run and print what they say."""
import doctest
import importlib
import math

import pytest

import ember

MODULES = ["ember.distributions", "ember.distributions.constraints", "ember.distributions.distribution",
           "ember.distributions.exp_family", "ember.distributions.utils", "ember.distributions.normal",
           "ember.distributions.uniform", "ember.distributions.bernoulli", "ember.distributions.categorical",
           "ember.distributions.one_hot_categorical", "ember.distributions.multivariate_normal",
           "ember.distributions.independent", "ember.distributions.exponential", "ember.distributions.laplace",
           "ember.distributions.gamma", "ember.distributions.beta", "ember.distributions.dirichlet",
           "ember.distributions.mixture_same_family", "ember.distributions.kl", "ember.distributions.transforms",
           "ember.distributions.transformed_distribution", "ember.distributions.log_normal",
           "ember.distributions.cauchy", "ember.distributions.chi2", "ember.distributions.student_t",
           "ember.distributions.poisson", "ember.distributions.geometric", "ember.distributions.binomial",
           "ember.distributions.relaxed_bernoulli", "ember.distributions.relaxed_categorical",
           "ember.distributions.half_normal", "ember.distributions.half_cauchy", "ember.distributions.gumbel",
           "ember.distributions.pareto", "ember.distributions.weibull", "ember.distributions.kumaraswamy",
           "ember.distributions.logistic_normal", "ember.distributions.inverse_gamma",
           "ember.distributions.multinomial", "ember.distributions.negative_binomial",
           "ember.distributions.constraint_registry", "ember.distributions.continuous_bernoulli",
           "ember.distributions.lowrank_multivariate_normal", "ember.distributions.fishersnedecor",
           "ember.distributions.von_mises"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    globs = {"ember": ember, "math": math}
    result = doctest.testmod(importlib.import_module(name), extraglobs=globs, report=True)
    assert result.attempted > 0 and result.failed == 0
