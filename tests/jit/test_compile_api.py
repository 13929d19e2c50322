"""`ember.compile`'s own contract: the decorator with and without arguments, argument checks with exact
messages and torch-like defaults, the compiled callable's name and docs, warnings that point at the
caller's line, and the guard messages' spelling (mutation testing of jit/compiler.py, docs/testing.md)."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.jit import GuardError


def _double(x):
    """Twice x."""
    return x * 2


def test_decorator_with_arguments_passes_each_of_them():
    @ember.compile(strict=True)
    def f(x):
        return x + 1
    f(ember.ones(2))
    with pytest.raises(GuardError):
        f(ember.ones(3))

    @ember.compile(dynamic=True, cache_size=2, passes=["dce"])
    def g(x):
        return (x * 2).sum(1)
    for n in (2, 3, 5, 6):
        assert g(ember.ones(n, 4)).tolist() == [8.0] * n
    assert g.cache_info().traces == 2 and g.cache_size == 2 and g.passes == ["dce"]
    assert "Fused" not in str(g.graph)       # passes=["dce"]: no fusion


def test_defaults():
    f = ember.compile(_double)
    assert (f.dynamic, f.strict, f.passes, f.cache_size) == (False, False, None, 8)
    assert (f.__name__, f.__doc__, f.__wrapped__) == ("_double", "Twice x.", _double)
    m = ember.compile(nn.Linear(2, 2))
    assert m.__name__ == "Linear"


def test_argument_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"^ember.compile: expected a function or an nn.Module, got int$"):
        ember.compile(3)
    with pytest.raises(ValueError, match=r"^ember.compile: cache_size must be a positive int, got 0$"):
        ember.compile(_double, cache_size=0)
    with pytest.raises(ValueError, match=r"got 2.0$"):
        ember.compile(_double, cache_size=2.0)
    assert ember.compile(_double, cache_size=1).cache_size == 1
    with pytest.raises(TypeError, match=r"^ember.compile: dynamic must be a bool or a dict \{argument: dim\}, "
                                        r"got 'x'$"):
        ember.compile(_double, dynamic="x")


def test_warnings_point_at_the_callers_line():
    f = ember.compile(_double)
    f(ember.ones(2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f(ember.ones(3)); line = __import__("inspect").currentframe().f_lineno
    assert len(w) == 1 and w[0].category is UserWarning
    assert (w[0].filename, w[0].lineno) == (__file__, line)


def test_guard_messages_show_requires_grad_and_summarise_long_tuples():
    f = ember.compile(_double)
    f(ember.ones(2))
    with pytest.warns(UserWarning, match=r"shape \(2,\) float32 cpu -> shape \(2,\) float32 cpu requires_grad$"):
        f(ember.ones(2, requires_grad=True))
    model = nn.Sequential(*[nn.Identity() for _ in range(8)])      # 9 training flags
    g = ember.compile(model)
    g(ember.ones(1))
    model.eval()
    with pytest.warns(UserWarning, match=r"Sequential.training: <9 entries> -> <9 entries>"):
        g(ember.ones(1))
    small = nn.Sequential(*[nn.Identity() for _ in range(7)])       # 8: shown as they are
    h = ember.compile(small)
    h(ember.ones(1))
    small.eval()
    with pytest.warns(UserWarning, match=r"training: \(True, True, True, True, True, True, True, True\) -> "):
        h(ember.ones(1))


def test_dynamic_dict_takes_dims_of_nested_arguments_and_several_dims():
    f = ember.compile(lambda xs: xs[0].sum() + xs[1].sum(), dynamic={"xs": 0})
    for n in (2, 3, 4):
        assert f([ember.ones(n, 2), ember.ones(n, 3)]).item() == 5 * n
    assert f.cache_info().traces == 2
    g = ember.compile(lambda x: x.sum(), dynamic={"x": (0, 1)})
    for n in (2, 3, 4):
        assert g(ember.ones(n, n)).item() == n * n
    assert g.cache_info().traces == 2
    h = ember.compile(lambda x: x.sum(), dynamic=True)
    assert [h(ember.tensor(float(v))).item() for v in (1, 2)] == [1.0, 2.0]    # 0-d: nothing symbolic


def test_cache_info_counts_entries_and_says_why_one_runs_eagerly():
    @ember.compile
    def f(x):
        (x * x).sum().backward()
    with pytest.warns(UserWarning):
        f(ember.ones(2, requires_grad=True))
    info = f.cache_info()
    assert (info.entries, info.eager_entries) == (1, ["side effect"])
    np.testing.assert_array_equal(info["entries"], 1)


def test_past_a_full_cache_calls_run_eagerly_with_their_keyword_arguments():
    f = ember.compile(lambda x, *, k: x * k, cache_size=2)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        out = [f(ember.ones(1), k=float(k)).item() for k in range(5)]
    assert out == [0.0, 1.0, 2.0, 3.0, 4.0]
    info = f.cache_info()
    assert (info.traces, info.retraces, info.eager_calls) == (2, 1, 3)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        g = ember.compile(lambda x, k: x * k, cache_size=4)
        for k in range(4):
            g(ember.ones(1), float(k))
    assert g.cache_info().retraces == 3


def test_modules_and_optimizers_passed_as_keyword_arguments_are_found():
    def run(compiled):
        ember.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, *, model, opt):
            opt.zero_grad()
            loss = model(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = ember.compile(step) if compiled else step
        x = ember.ones(4, 3)
        return [f(x, model=model, opt=opt).item() for _ in range(4)], model.weight.detach().numpy()
    (le, we), (lc, wc) = run(False), run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    np.testing.assert_allclose(wc, we, rtol=1e-6)
    assert len(set(lc)) == 4


def test_a_function_that_changes_train_mode_runs_eagerly_naming_it():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).eval()

    def f(x):
        model.train()
        return model(x)
    g = ember.compile(f)
    with pytest.warns(UserWarning, match=r"the function changed Sequential.training while it ran"):
        g(ember.ones(1, 2))
    model.eval()
    g(ember.ones(1, 2))
    assert g.cache_info().eager_calls == 1


def test_a_read_after_an_in_place_write_runs_eagerly_or_raises_with_strict():
    s = ember.zeros(3)

    def f(x):
        s.add_(1)
        return x * 2 if s.sum() > 3 else x     # the read sees this call's write
    g = ember.compile(f)
    with pytest.warns(UserWarning, match=r"^ember.compile\(f\): a value read .* depends on an in-place write "
                                         r"made earlier in the same call; this call signature runs eagerly$"):
        assert g(ember.ones(2)).tolist() == [1.0, 1.0]
    assert g(ember.ones(2)).tolist() == [2.0, 2.0]           # eager: s is 6 now
    info = g.cache_info()
    assert (info.eager_calls, len(info.eager_entries)) == (1, 1) and "in-place write" in info.eager_entries[0]
    with pytest.raises(GuardError, match=r"^ember.compile\(f\): a value read .* in-place write"):
        ember.compile(f, strict=True)(ember.ones(2))


def test_a_trace_on_another_device_runs_eagerly_saying_so():
    f = ember.compile(_double)
    with pytest.warns(UserWarning, match=r"^ember.compile\(_double\): compiled code runs on the CPU only for now; "
                                         r"device \['meta'\] runs eagerly$"):
        y = f(ember.ones(2, device="meta"))
    assert y.device.type == "meta" and f.cache_info().eager_entries == ["device ['meta']"]


def test_positional_varargs_are_named_by_position():
    f = ember.compile(lambda *xs: xs[0] + xs[1])
    f(ember.ones(2), ember.ones(2))
    with pytest.warns(UserWarning, match=r"guard failed: args\[1\]: shape \(2,\)"):
        f(ember.ones(2), ember.ones(3, 2))


def test_save_before_any_trace_says_so(tmp_path):
    with pytest.raises(RuntimeError, match=r"^ember.compile\(_double\).save: no compiled trace to save$"):
        ember.compile(_double).save(tmp_path / "f.ember")
    assert not (tmp_path / "f.ember").exists()


def test_jit_trace_takes_passes():
    traced = ember.jit.trace(lambda x: (x * 2).relu() + 1, ember.ones(3), passes=[])
    assert "Fused" not in str(traced.graph) and traced(ember.ones(3)).tolist() == [3.0] * 3
    fused = ember.jit.trace(lambda x: (x * 2).relu() + 1, ember.ones(3))
    assert "Fused" in str(fused.graph)


def test_graphless_outputs_are_announced_once_and_a_whole_step_is_quiet():
    m = nn.Linear(2, 1)
    f = ember.compile(lambda x: m(x))
    x = ember.ones(3, 2)
    f(x)                                         # the trace: eager, with a graph
    with pytest.warns(UserWarning, match="outputs carry no autograd graph"):
        out = f(x)
    assert not out.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # once per compiled function
        f(x)
        with ember.no_grad():
            g = ember.compile(lambda x: m(x))
            g(x); g(x)                           # no graph eagerly either: nothing to announce
    opt = ember.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        return loss
    s = ember.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s(x)
        for _ in range(3):                       # the steady-state retrace says nothing either
            s(x)


def test_a_step_whose_backward_accumulates_into_existing_grads_is_quiet():
    w = ember.ones(2, 1).requires_grad_()
    w.grad = ember.zeros(2, 1)                   # .grad already there: backward writes into it

    def step(x):
        loss = x.mm(w).sum()
        loss.backward()
        with ember.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad.zero_()
        return loss
    s = ember.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            s(ember.ones(3, 2))
