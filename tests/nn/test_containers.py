"""ember/nn/containers.py."""
from collections import OrderedDict

import pytest
import torch

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


def _names(lib, seq):
    """The module types in order, as names comparable across torch and ember."""
    return [type(m).__name__ for m in seq]


def _edit_sequential(lib):
    nn_ = lib.nn
    s = nn_.Sequential(nn_.Linear(2, 3), nn_.ReLU(), nn_.Linear(3, 1))
    s[1] = nn_.Tanh()
    s.insert(1, nn_.Identity())
    s.extend([nn_.Sigmoid(), nn_.ReLU()])
    del s[-2:]
    s2 = s + nn_.Sequential(nn_.Flatten())
    return _names(lib, s), list(s._modules), _names(lib, s2), list(s2._modules)


def _edit_module_list(lib):
    nn_ = lib.nn
    ml = nn_.ModuleList([nn_.ReLU(), nn_.Tanh()])
    ml += [nn_.Sigmoid()]
    ml[0] = nn_.Identity()
    ml.insert(1, nn_.Flatten())
    del ml[2]
    both = ml + nn_.ModuleList([nn_.ReLU()])
    return _names(lib, ml), list(ml._modules), _names(lib, both), [type(m).__name__ for m in ml[1:3]]


def _edit_module_dict(lib):
    nn_ = lib.nn
    md = nn_.ModuleDict([("a", nn_.ReLU()), ("b", nn_.Tanh())])
    md["c"] = nn_.Sigmoid()
    del md["a"]
    popped = type(md.pop("b")).__name__
    items = [(k, type(v).__name__) for k, v in md.items()]
    values = _names(lib, md.values())
    keys = list(iter(md))
    md.update({"d": nn_.Identity()})
    n = len(md)
    md.clear()
    return popped, items, values, keys, n, len(md), "c" in md


@pytest.mark.parametrize("edit", [_edit_sequential, _edit_module_list, _edit_module_dict])
def test_container_editing_matches_torch(edit):
    assert edit(ember) == edit(torch)


def test_parameter_containers_match_torch():
    def edit(lib):
        pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2))])
        pl += [lib.zeros(3)]
        pl[0] = lib.full((4,), 2.0)
        sizes = [tuple(p.shape) for p in pl] + [tuple(p.shape) for p in pl[1:]]
        pd = lib.nn.ParameterDict([("w", lib.ones(1))])
        pd["b"] = lib.zeros(2)
        del pd["w"]
        return (sizes, all(isinstance(p, lib.nn.Parameter) for p in pl), list(pd.keys()), "b" in pd,
                [k for k, _ in pd.items()], [tuple(v.shape) for v in pd.values()], list(iter(pd)), len(pd))
    assert edit(ember) == edit(torch)


def test_parameter_container_repr_like_torch():
    def reprs(lib):
        pl = lib.nn.ParameterList([lib.zeros(2, 3), lib.ones(1).double()])
        pd = lib.nn.ParameterDict({"a": lib.zeros(2, 3), "b": lib.nn.Parameter(lib.zeros(()).long(), False)})
        return [repr(c).replace(f"{lib.__name__}.float", "DT.float") for c in (pl, pd, lib.nn.ParameterDict())]
    assert reprs(ember) == reprs(torch)


def test_sequential_delete_slice_and_index_errors():
    s = nn.Sequential(*[nn.Identity() for _ in range(4)])
    del s[1:3]
    assert list(s._modules) == ["0", "1"]
    with pytest.raises(IndexError, match="out of range"):
        s[5] = nn.ReLU()
    with pytest.raises(IndexError, match="out of range"):
        nn.ModuleList([nn.ReLU()])[-2]


def test_container_list_and_dict_methods_like_torch():
    # Sequential.pop / += / * and ModuleList.pop, ParameterDict's dict methods (were missing)
    def edit(lib):
        nn = lib.nn
        s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
        popped = type(s.pop(0)).__name__
        s += nn.Sequential(nn.GELU())
        doubled = 2 * s
        s *= 2
        ml = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.ELU()])
        ml_popped = type(ml.pop(1)).__name__
        pd = nn.ParameterDict({"a": lib.ones(1), "b": lib.zeros(2), "c": lib.ones(3)})
        got = (tuple(pd.pop("b").shape), pd.get("b"), tuple(pd.get("a").shape),
               tuple(pd.setdefault("d", lib.zeros(4)).shape), tuple(pd.setdefault("a", lib.zeros(5)).shape))
        key, val = pd.popitem()
        merged = pd | nn.ParameterDict({"z": lib.ones(2)})
        pd |= {"y": lib.ones(1)}
        cp = pd.copy()
        cp.clear()
        fk = pd.fromkeys(["p", "q"], lib.nn.Parameter(lib.ones(1)))
        with pytest.raises(ValueError):
            s += nn.ModuleList([nn.ReLU()])
        with pytest.raises(ValueError):
            s * 0
        return (popped, [type(m).__name__ for m in s], [type(m).__name__ for m in doubled], doubled[0] is doubled[3],
                list(s._modules), ml_popped, list(ml._modules), got, (key, tuple(val.shape)), list(merged.keys()),
                list(pd.keys()), list(reversed(pd)), len(cp), list(fk.keys()))
    assert edit(ember) == edit(torch)
