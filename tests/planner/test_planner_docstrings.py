"""The examples in the planner's docstrings run and print what they say."""
import doctest
import importlib

import pytest

import ember

MODULES = ["ember.planner", "ember.planner.devices", "ember.planner.report"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
