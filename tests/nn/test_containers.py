"""ember/nn/containers.py."""
from collections import OrderedDict

import pytest

import ember
import ember.nn as nn


def test_sequential_indexing_slicing_ordereddict():
    s = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU()), ("out", nn.Linear(3, 1))]))
    assert isinstance(s[0], nn.Linear) and s[-1] is s.out and len(s) == 3
    sub = s[1:]
    assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["act", "out"]
    assert s(ember.randn(4, 2)).shape == (4, 1)
    assert list(s.state_dict()) == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    with pytest.raises(IndexError, match="out of range"):
        s[3]
    s.append(nn.Tanh())
    del s[0]
    assert len(s) == 3 and list(s._modules) == ["0", "1", "2"]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.ReLU())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6 and isinstance(ml[-1], nn.ReLU)
    assert len(ml[:2]) == 2
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert "a" in md and list(md.keys()) == ["a", "b"] and len(list(md.parameters())) == 2


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    assert [k for k, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"w": nn.Parameter(ember.ones(1))})
    assert list(pd.state_dict()) == ["w"]
