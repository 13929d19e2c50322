"""The examples in ember.keras's docstrings run and print what they say."""
import doctest
import importlib

import numpy as np
import pytest

import ember
from ember import keras

MODULES = ["ember.keras", "ember.keras.backend", "ember.keras.utils", "ember.keras.layers.base", "ember.keras.layers.core",
           "ember.keras.layers.conv", "ember.keras.layers.rnn", "ember.keras.models"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    keras.clear_session()
    globs = {"ember": ember, "np": np}
    result = doctest.testmod(importlib.import_module(name), extraglobs=globs, report=True)
    assert result.attempted > 0 and result.failed == 0
