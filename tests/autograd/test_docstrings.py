"""The examples in ember.autograd's docstrings run and print what they say."""
import doctest
import importlib

import pytest

import ember

MODULES = ["ember.autograd", "ember.autograd.functional", "ember.autograd.variable"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
