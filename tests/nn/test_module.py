"""ember/nn/module.py and parameter.py: registration, iteration, state_dict, modes, conversions, hooks."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("scratch", ember.zeros(2), persistent=False)
        self.scale = nn.Parameter(ember.ones(1))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


class TBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)
        self.bn = torch.nn.BatchNorm1d(4)
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


def test_parameter_is_leaf_tensor():
    p = nn.Parameter(ember.zeros(2))
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(ember.zeros(2), requires_grad=False).requires_grad


def test_registration_and_iteration_match_torch():
    e, t = Block(), TBlock()
    assert [k for k, _ in e.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert [k for k, _ in e.named_buffers()] == [k for k, _ in t.named_buffers()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert [k for k, _ in e.named_modules()] == [k for k, _ in t.named_modules()]
    assert [type(c).__name__ for c in e.children()] == ["Linear", "BatchNorm1d"]
    assert len(list(e.parameters())) == 5 and len(list(e.modules())) == 3


def test_registration_errors():
    m = nn.Module()
    with pytest.raises(TypeError, match="parameter 'w'"):
        m.w = nn.Parameter(ember.ones(1))
        m.w = ember.ones(1)
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ember.ones(1))
    with pytest.raises(TypeError, match="buffer"):
        m.register_buffer("buf", 3)

    class Early(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        nn.Linear(1, 1).nope


def _module_with_everything(lib):
    m = lib.nn.Module()
    m.w = lib.nn.Parameter(lib.ones(2))
    m.sub = lib.nn.Linear(2, 2)
    m.register_buffer("buf", lib.zeros(2))
    m.plain = 1
    return m


class _EarlyParameter:
    def __init__(self, lib):
        class Early(lib.nn.Module):
            def __init__(self):
                self.w = lib.nn.Parameter(lib.ones(1))
        Early()


MISUSES = {   # the same misuse must raise the same exception type as torch
    "tensor_as_parameter": lambda L, m: setattr(m, "w", L.zeros(2)),
    "int_as_submodule": lambda L, m: setattr(m, "sub", 3),
    "int_as_buffer": lambda L, m: setattr(m, "buf", 3),
    "dotted_parameter_name": lambda L, m: m.register_parameter("a.b", None),
    "empty_module_name": lambda L, m: m.add_module("", L.nn.ReLU()),
    "non_string_buffer_name": lambda L, m: m.register_buffer(3, None),
    "tensor_registered_as_parameter": lambda L, m: m.register_parameter("p", L.ones(1)),
    "non_leaf_parameter": lambda L, m: m.register_parameter("p", L.nn.Parameter(L.ones(1)) * 2),
    "buffer_named_like_a_parameter": lambda L, m: m.register_buffer("w", L.ones(1)),
    "buffer_named_like_an_attribute": lambda L, m: m.register_buffer("plain", L.ones(1)),
    "non_module_added": lambda L, m: m.add_module("x", L.ones(1)),
    "missing_submodule": lambda L, m: m.get_submodule("sub.nope"),
    "missing_parameter": lambda L, m: m.get_parameter("sub.nope"),
    "parameter_before_init": lambda L, m: _EarlyParameter(L),
}


@pytest.mark.parametrize("name", list(MISUSES))
def test_registration_misuse_raises_like_torch(name):
    raised = {}
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            MISUSES[name](lib, _module_with_everything(lib))
        raised[lib.__name__] = type(info.value)
    assert raised["ember"] is raised["torch"]


def test_none_assignment_and_deletion_like_torch():
    def edit(lib):
        m = _module_with_everything(lib)
        m.w, m.sub, m.buf = None, None, None
        state = (m._parameters["w"], m._modules["sub"], m._buffers["buf"])
        del m.w, m.sub, m.buf, m.plain
        m.register_module("late", lib.nn.ReLU())
        return state, dict(m.named_children()).keys() == {"late"}, [k for k, _ in m.named_parameters()], \
            hasattr(m, "plain"), type(m.get_submodule("late")).__name__
    assert edit(ember) == edit(torch)


def test_setattr_replaces_in_place_like_torch():
    # swapping layers while looping over named_children() (module surgery) keeps their order; Ember
    # popped and re-inserted the name: "OrderedDict mutated during iteration", and the layer moved last
    def swap(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Linear(2, 2), lib.nn.ReLU6())
        for name, child in m.named_children():
            if isinstance(child, (lib.nn.ReLU, lib.nn.ReLU6)):
                setattr(m, name, lib.nn.SiLU())
        m.p1, m.p2 = lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))
        m.p1 = lib.nn.Parameter(lib.zeros(1))
        return [type(c).__name__ for c in m], [n for n, _ in m.named_parameters()][-2:]
    assert swap(ember) == swap(torch)


def test_shared_parameters_counted_once():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2


def test_state_dict_round_trip_and_torch_interop():
    t = TBlock()
    e = Block()
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    t.eval(), e.eval()
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    e2 = Block()
    e2.load_state_dict(e.state_dict())
    for (k, a), (_, b) in zip(e.state_dict().items(), e2.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    sd = e.state_dict()
    assert not sd["fc.weight"].requires_grad and "scratch" not in sd


def test_strict_load_reports_everything_and_changes_nothing():
    e = Block()
    before = {k: v.numpy().copy() for k, v in e.state_dict().items()}
    sd = OrderedDict((k, v.clone()) for k, v in Block().state_dict().items())
    del sd["fc.bias"]
    sd["extra"] = ember.zeros(1)
    sd["fc.weight"] = ember.zeros(5, 3)
    with pytest.raises(RuntimeError) as err:
        e.load_state_dict(sd)
    msg = str(err.value)
    assert 'Missing key(s) in state_dict: "fc.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    assert "size mismatch for fc.weight: copying a param with shape (5, 3)" in msg
    for k, v in e.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)   # nothing changed


def test_non_strict_load():
    e = Block()
    sd = Block().state_dict()
    del sd["scale"]
    sd["extra"] = ember.zeros(1)
    res = e.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(e.fc.weight.detach().numpy(), sd["fc.weight"].numpy())
    sd["fc.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError, match="size mismatch"):   # shapes are checked even when not strict
        e.load_state_dict(sd, strict=False)


def test_train_eval_requires_grad_zero_grad():
    e = Block()
    assert e.training and e.bn.training
    e.eval()
    assert not e.training and not e.bn.training
    e.train()
    e(ember.randn(4, 3)).sum().backward()
    assert e.fc.weight.grad is not None
    e.zero_grad(set_to_none=False)
    assert not e.fc.weight.grad.numpy().any()
    e.zero_grad()
    assert e.fc.weight.grad is None
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())


def test_dtype_conversions_keep_parameter_identity():
    e = Block()
    w = e.fc.weight
    e.double()
    assert e.fc.weight is w and w.dtype is ember.float64 and isinstance(w, nn.Parameter)
    assert e.bn.num_batches_tracked.dtype is ember.int64     # integer buffers keep their dtype
    e.to(ember.float16)
    assert w.dtype is ember.float16
    e.half().float()
    assert w.dtype is ember.float32
    e.to("cpu").cpu()
    with pytest.raises(TypeError, match="floating point"):
        e.to(ember.int32)


def test_apply_and_init():
    e = Block()
    seen = []
    e.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "BatchNorm1d", "Block"]
    e.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert not e.fc.weight.detach().numpy().any()


def test_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    y = m(ember.ones(3, 2))
    np.testing.assert_allclose(y.detach().numpy(), (m.bias.detach().numpy() + 1)[None].repeat(3, 0), rtol=1e-6)
    assert calls == [(3, 2)]
    h1.remove(), h2.remove()
    assert not m._forward_hooks and not m._forward_pre_hooks
    m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(sorted(kwargs)), with_kwargs=True)
    nn.Sequential(nn.Identity())(ember.ones(1))
    m(input=ember.ones(2))
    assert calls[-1] == ["input"]


def test_repr_matches_torch():
    e = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.1)),
                      nn.BatchNorm2d(4), nn.LayerNorm(4), nn.Embedding(5, 2, padding_idx=0),
                      nn.LSTM(3, 4, 2), nn.MaxPool2d(2), nn.GELU(), nn.Flatten(), nn.GroupNorm(2, 4),
                      nn.MultiheadAttention(4, 2), nn.CrossEntropyLoss())
    t = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(),
                            torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.1)),
                            torch.nn.BatchNorm2d(4), torch.nn.LayerNorm(4), torch.nn.Embedding(5, 2, padding_idx=0),
                            torch.nn.LSTM(3, 4, 2), torch.nn.MaxPool2d(2), torch.nn.GELU(), torch.nn.Flatten(),
                            torch.nn.GroupNorm(2, 4), torch.nn.MultiheadAttention(4, 2), torch.nn.CrossEntropyLoss())
    assert repr(e) == repr(t)


def test_missing_forward():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


def test_parameter_construction_pickling_and_deepcopy():
    import copy
    import pickle
    empty = nn.Parameter()
    assert empty.shape == (0,) and empty.requires_grad and isinstance(empty, nn.Parameter)
    assert tuple(torch.nn.Parameter().shape) == (0,)
    with pytest.raises(TypeError, match="Parameter: data must be a Tensor, got list"):
        nn.Parameter([1.0])
    frozen = nn.Parameter(ember.ones(2), requires_grad=False)
    assert not frozen.requires_grad and repr(frozen).startswith("Parameter containing:\ntensor(")
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    p.grad = ember.tensor([0.5, 0.5])
    back = pickle.loads(pickle.dumps(p))
    assert isinstance(back, nn.Parameter) and back.requires_grad and back.tolist() == [1.0, 2.0]
    twin = copy.deepcopy({"a": p, "b": p})
    assert twin["a"] is twin["b"] and twin["a"] is not p           # shared once, as torch
    assert twin["a"].grad.tolist() == [0.5, 0.5] and twin["a"].data_ptr() != p.data_ptr()
