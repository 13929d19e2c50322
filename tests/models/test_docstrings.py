"""The examples in ember.models' (and ember.utils.image's) docstrings run and print what they say."""
import doctest
import importlib

import pytest

import ember

MODULES = ["ember.models", "ember.models.lenet", "ember.models.alexnet", "ember.models.vgg", "ember.models.resnet",
           "ember.models.mobilenetv2", "ember.models.gpt", "ember.models.transfer", "ember.utils.image"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    globs = {"ember": ember, "resnet18": ember.models.resnet18}
    result = doctest.testmod(importlib.import_module(name), extraglobs=globs, report=True)
    assert result.attempted > 0 and result.failed == 0
