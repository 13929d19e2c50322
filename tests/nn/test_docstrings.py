"""The examples in ember.nn's docstrings run and print what they say."""
import doctest
import importlib
import math

import pytest

import ember

MODULES = ["ember.nn", "ember.nn.parameter", "ember.nn.module", "ember.nn.containers", "ember.nn.linear",
           "ember.nn.conv", "ember.nn.pooling", "ember.nn.normalization", "ember.nn.activation",
           "ember.nn.embedding", "ember.nn.rnn", "ember.nn.transformer", "ember.nn.loss", "ember.nn.padding", "ember.nn.pixelshuffle",
           "ember.nn.upsampling", "ember.nn.distance",
           "ember.nn.functional.linear", "ember.nn.functional.normalization", "ember.nn.functional.vision",
           "ember.nn.functional.activation",
           "ember.nn.functional.conv", "ember.nn.functional.loss", "ember.nn.functional.pooling",
           "ember.nn.init", "ember.nn.utils.clip_grad", "ember.nn.lazy", "ember.nn.utils.weight_norm",
           "ember.nn.utils.spectral_norm", "ember.nn.utils.parametrize", "ember.nn.utils.parametrizations",
           "ember.nn.utils.stateless", "ember.nn.utils.fusion", "ember.nn.utils.init", "ember.func", "ember.nn.modules",
           "ember.nn.modules.utils"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    globs = {"ember": ember, "nn": ember.nn, "F": ember.nn.functional, "math": math}
    result = doctest.testmod(importlib.import_module(name), extraglobs=globs, report=True)
    assert result.attempted > 0 and result.failed == 0
