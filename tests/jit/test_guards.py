"""Guards: each kind retraces (with a warning naming it) or, with strict=True, raises naming it and the
user's line; a guard-less replay would have given a stale result."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.jit import GuardError
from ember.jit.codegen import Runner


def _calls(f, *argsets):
    return [f(*a) for a in argsets]


def test_input_shape_retraces_with_a_warning_naming_the_guard():
    f = ember.compile(lambda x: x * 2)
    f(ember.ones(4, 3))
    f(ember.ones(4, 3))
    with pytest.warns(UserWarning, match=r"retrace 1\): guard failed: x: shape \(4, 3\).*-> shape \(5, 3\)"):
        out = f(ember.ones(5, 3))
    assert out.shape == (5, 3)
    info = f.cache_info()
    assert (info.traces, info.hits, info.retraces) == (2, 1, 1)
    assert "x: shape (4, 3)" in info.reasons[0]


def test_dtype_retraces():
    f = ember.compile(lambda x: x + 1)
    f(ember.ones(3))
    with pytest.warns(UserWarning, match="float32.*-> shape \\(3,\\) float64"):
        y = f(ember.ones(3, dtype=ember.float64))
    assert y.dtype == ember.float64


def test_device_retraces():
    f = ember.compile(lambda x: x + 1)
    f(ember.ones(3))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = f(ember.ones(3, device="meta"))
    assert y.device.type == "meta"
    assert any("cpu -> shape (3,) float32 meta" in str(x.message) for x in w), [str(x.message) for x in w]


def test_python_scalar_is_a_guard():
    f = ember.compile(lambda x, k: x * k)
    assert f(ember.ones(2), 2.0).tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match=r"k: \('float', 2.0\) -> \('float', 3.0\)"):
        assert f(ember.ones(2), 3.0).tolist() == [3.0, 3.0]
    assert f(ember.ones(2), 2.0).tolist() == [2.0, 2.0]     # the first trace is still cached
    assert f.cache_info().hits == 1


def test_module_training_flag_is_a_guard():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    f = ember.compile(model)
    x = ember.ones(2, 4)
    f(x)
    model.eval()
    with pytest.warns(UserWarning, match=r"Sequential.training: \(True, True, True\) -> \(False, False, False\)"):
        y = f(x)
    with ember.no_grad():
        np.testing.assert_allclose(y.detach().numpy(), model(x).numpy())   # eval: no dropout


def test_replaced_parameter_is_a_guard():
    model = nn.Sequential(nn.Linear(3, 2))
    f = ember.compile(model)
    x = ember.ones(1, 3)
    f(x)
    model[0] = nn.Linear(3, 2)
    with pytest.warns(UserWarning, match="Sequential.parameters"):
        y = f(x)
    np.testing.assert_allclose(y.detach().numpy(), model(x).detach().numpy())


def test_parameter_values_changed_in_place_are_not_stale():
    """State is read from the live tensors at every call, so load_state_dict / in-place edits count."""
    model = nn.Linear(3, 2)
    f = ember.compile(model)
    x = ember.ones(1, 3)
    f(x)
    with ember.no_grad():
        model.weight.fill_(1.0)
        model.bias.zero_()
    assert f(x).tolist() == [[3.0, 3.0]]


def test_optimizer_hyper_parameter_is_a_guard():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.0)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    f = ember.compile(step)
    f(); f(); f()
    opt.param_groups[0]["weight_decay"] = 0.5
    with pytest.warns(UserWarning, match="AdamW.hyper_parameters"):
        f()


def _branchy(x):
    if x.sum() > 0:        # bool(t): a value read
        return x * 2
    return x - 100


def test_value_read_guard_retraces_and_a_guardless_trace_is_stale():
    f = ember.compile(_branchy)
    pos, neg = ember.ones(3), -ember.ones(3)
    f(pos)
    f(pos)
    # the guard-less replay of the first trace: the branch taken for `pos`, silently wrong for `neg`
    g = f.graph
    stale = Runner(_without_checks(g))([neg._data if v.kind == "input" else g.consts[v.id]
                                        for v in g.leaves])[0][0]
    assert stale.tolist() == [-2.0, -2.0, -2.0]
    with pytest.warns(UserWarning, match=r"value of %\d+ read by item\(\) at test_guards.py:\d+: was True"):
        out = f(neg)
    assert out.tolist() == [-101.0, -101.0, -101.0]      # eager's answer
    assert f(pos).tolist() == [2.0, 2.0, 2.0]
    assert f(neg).tolist() == [-101.0, -101.0, -101.0]
    assert f.cache_info().traces == 2


def _without_checks(g):
    import copy
    h = copy.copy(g)
    h.checks = []
    return h


def test_strict_raises_naming_the_guard_and_the_line():
    f = ember.compile(_branchy, strict=True)
    f(ember.ones(3))
    with pytest.raises(GuardError, match=r"value of %\d+ read by item\(\) at test_guards.py:\d+.*strict"):
        f(-ember.ones(3))
    with pytest.raises(GuardError, match=r"x: shape \(3,\).*-> shape \(4,\).*\(at test_guards.py:\d+\)"):
        f(ember.ones(4))


@pytest.mark.parametrize("read", [lambda t: int(t), lambda t: float(t), lambda t: t.tolist(),
                                  lambda t: t.numpy().sum(), lambda t: t.item()])
def test_every_kind_of_value_read_is_guarded(read):
    def fn(x):
        n = read(x.sum().detach())
        return x * n
    f = ember.compile(fn)
    f(ember.ones(2))
    assert f(ember.ones(2)).tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="read by"):
        assert f(ember.full((2,), 2.0)).tolist() == [8.0, 8.0]


def test_a_read_value_that_is_only_returned_is_an_output_not_a_guard():
    f = ember.compile(lambda x: (x * 2).sum().item())
    assert f(ember.ones(3)) == 6.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(ember.full((3,), 2.0)) == 12.0
    assert f.cache_info().traces == 1


def test_cache_is_bounded_then_runs_eagerly():
    f = ember.compile(lambda x, k: x * k, cache_size=3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for k in range(6):
            assert f(ember.ones(1), float(k)).tolist() == [float(k)]
    msgs = [str(x.message) for x in w]
    assert sum("retracing" in m for m in msgs) == 2
    assert sum("cache full" in m for m in msgs) == 1
    info = f.cache_info()
    assert (info.traces, info.eager_calls) == (3, 3)


def test_trace_is_strict():
    traced = ember.jit.trace(nn.Linear(3, 2), ember.ones(4, 3))
    assert traced(ember.ones(4, 3)).shape == (4, 2)
    with pytest.raises(GuardError, match="shape"):
        traced(ember.ones(5, 3))
