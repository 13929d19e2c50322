"""The examples in the docstrings of ember.optim and ember.serialization run and print what they say."""
import doctest
import importlib

import pytest

import ember

MODULES = ["ember.optim", "ember.optim.optimizer", "ember.optim.sgd", "ember.optim.adam", "ember.optim.nadam",
           "ember.optim.radam", "ember.optim.adamax", "ember.optim.rmsprop", "ember.optim.asgd", "ember.optim.rprop",
           "ember.optim.adagrad", "ember.optim.adadelta", "ember.optim.lbfgs", "ember.optim.lr_scheduler",
           "ember.optim.swa_utils", "ember.serialization"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
