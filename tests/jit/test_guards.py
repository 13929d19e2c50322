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


# --- guards mutation testing found untested (docs/testing.md, "jit") ---------------------------------

def test_argument_structure_is_a_guard():
    """A list where a tuple was (same tensors): the function may branch on the container's type."""
    def f(xs):
        return xs[0] * 2 if isinstance(xs, tuple) else xs[0] - 1
    g = ember.compile(f)
    x = ember.ones(2)
    assert g((x,)).tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="structure"):
        assert g([x]).tolist() == [0.0, 0.0]
    assert g((x,)).tolist() == [2.0, 2.0]
    # the same tensors with a None more or less: in a list, and under a dict key
    h = ember.compile(lambda xs: xs[0] * len(xs))
    assert h([x, None]).tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="structure"):
        assert h([x]).tolist() == [1.0, 1.0]
    d = ember.compile(lambda b: b["x"] * 3 if "mask" in b else b["x"])
    assert d({"x": x, "mask": None}).tolist() == [3.0, 3.0]
    with pytest.warns(UserWarning, match="structure"):
        assert d({"x": x}).tolist() == [1.0, 1.0]
    assert (g.cache_info().retraces, h.cache_info().retraces) == (1, 1)


def test_unhashable_hyper_parameter_is_a_guard():
    """Adam's betas given as a list (not hashable): a change of one of its items still retraces."""
    def run(compiled):
        w = ember.ones(2, requires_grad=True)
        opt = ember.optim.Adam([w], lr=0.1)
        opt.param_groups[0]["betas"] = [0.9, 0.999]     # a list from the first call on

        def step():
            opt.zero_grad()
            (w * w * ember.tensor([1.0, 3.0])).sum().backward()
            opt.step()
        f = ember.compile(step) if compiled else step
        f(); f(); f()
        opt.param_groups[0]["betas"] = [0.5, 0.999]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(); f()
        return w.detach().numpy(), [str(c.message) for c in caught]
    eager, _ = run(False)
    compiled, caught = run(True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert any("Adam.hyper_parameters" in m for m in caught), caught


def test_replaced_buffer_is_a_guard():
    bn = nn.BatchNorm1d(2).eval()
    f = ember.compile(bn)
    x = ember.ones(3, 2)
    f(x); f(x)
    bn.running_mean = ember.tensor([1.0, 2.0])    # a new tensor, not an in-place edit
    with pytest.warns(UserWarning, match="BatchNorm1d.parameters"):
        y = f(x)
    with ember.no_grad():
        np.testing.assert_allclose(y.detach().numpy(), bn(x).numpy(), rtol=1e-6)
    assert y[0, 1].item() < 0    # (1 - 2) / sqrt(1 + eps): the new mean, not the traced one


def test_parameters_given_to_the_optimizer_are_a_guard():
    """The optimizer is pointed at another parameter of the same shape (train the second layer now): the
    module's parameters and the hyper-parameters are unchanged."""
    def run(compiled):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
        opt = ember.optim.SGD([model[0].weight], lr=0.1)

        def step(x):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        f = ember.compile(step) if compiled else step
        x = ember.ones(2, 3)
        f(x); f(x)
        opt.param_groups[0]["params"][0] = model[1].weight
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(x); f(x)
        return [p.detach().numpy().copy() for p in model.parameters()], [str(c.message) for c in caught]
    eager, _ = run(False)
    compiled, caught = run(True)
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert any("SGD.params" in m for m in caught), caught


def test_dynamic_dims_leave_the_other_dims_guarded():
    f = ember.compile(lambda x: x.sum(1), dynamic=True)
    f(ember.ones(2, 3)); f(ember.ones(4, 3))
    assert f(ember.ones(5, 3)).tolist() == [3.0] * 5          # dim 0 is symbolic
    with pytest.warns(UserWarning, match=r"x: shape \('\*', 3\).*-> shape \('\*', 4\)"):
        assert f(ember.ones(5, 4)).tolist() == [4.0] * 5      # dim 1 is not


@pytest.mark.parametrize("guard", ["grad_enabled", "default_dtype"])
def test_global_modes_are_guards(guard):
    f = ember.compile(lambda x: x * 2 + ember.ones(2))
    x = ember.ones(2)
    f(x); f(x)
    with pytest.warns(UserWarning, match=f"{guard}: "):
        if guard == "grad_enabled":
            with ember.no_grad():
                y = f(x)
        else:
            prev = ember.get_default_dtype()
            ember.set_default_dtype(ember.float64)
            try:
                y = f(x)
            finally:
                ember.set_default_dtype(prev)
    assert y.dtype == (ember.float32 if guard == "grad_enabled" else ember.float64)


def test_loose_tensor_gradient_slots_are_a_guard():
    """Whether a loose leaf's .grad exists decides whether backward writes or accumulates: one trace
    each, both cached."""
    w = ember.ones(2, requires_grad=True)
    w.grad = ember.zeros(2)
    f = ember.compile(lambda: (w * 3).sum().backward())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for expected in ([3.0, 3.0], [6.0, 6.0], None, [3.0, 3.0], [6.0, 6.0], None, [3.0, 3.0]):
            if expected is None:
                w.grad = None
                continue
            f()
            np.testing.assert_array_equal(w.grad.numpy(), expected)
    assert any("tensors.grads" in str(c.message) for c in caught), [str(c.message) for c in caught]
    assert f.cache_info().traces == 2


def test_a_state_tensor_of_another_shape_retraces_naming_it():
    """`p.data = ...` of another shape keeps the parameter (same id, same key): the replay finds the
    shape as it starts (it used to fail with an IndexError from the value-guard table)."""
    lin = nn.Linear(3, 2)
    f = ember.compile(lambda x: lin(x))
    x = ember.ones(4, 3)
    f(x); f(x)
    lin.bias.data = ember.full((1,), 5.0)
    with pytest.warns(UserWarning, match=r"guard failed: bias: shape \(2,\) -> \(1,\)"):
        y = f(x)
    np.testing.assert_allclose(y.detach().numpy(), lin(x).detach().numpy(), rtol=1e-6)
    s = ember.compile(lambda x: lin(x), strict=True)
    s(x); s(x)
    lin.bias.data = ember.zeros(2)
    with pytest.raises(GuardError, match=r"bias: shape \(1,\) -> \(2,\)"):
        s(x)


def test_reads_and_draws_of_another_thread_are_not_part_of_a_trace():
    """While one thread traces, another thread's `.item()` and random draws are its own business: no
    value guard and no RNG leaf come from them."""
    import threading
    started, done = threading.Event(), threading.Event()
    other = ember.ones(3)
    seen = {}

    def elsewhere():
        started.wait(5)
        seen["item"] = other.sum().item()
        seen["draw"] = ember.rand(2).shape
        done.set()
    t = threading.Thread(target=elsewhere)
    t.start()

    def f(x):
        started.set()
        assert done.wait(5)
        return x * 2
    g = ember.compile(f)
    assert g(ember.ones(2)).tolist() == [2.0, 2.0]
    t.join()
    assert seen == {"item": 3.0, "draw": (2,)}
    assert g.graph.checks == [] and all(v.kind != "rng" for v in g.graph.leaves)
    assert g(ember.ones(2)).tolist() == [2.0, 2.0] and g.cache_info().hits == 1


def _compiled_momentum_step():
    """A compiled SGD-with-momentum step whose first call makes the gradients and momentum buffers."""
    m = nn.Linear(3, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
    return ember.compile(step)


def test_state_made_by_the_first_call_retraces_quietly_and_later_guards_still_warn():
    f = _compiled_momentum_step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            f(ember.ones(4, 3))
    assert caught == []          # the gradients and momentum buffers the first call made: expected
    info = f.cache_info()
    assert (info.traces, info.retraces) == (2, 1)
    assert info.reasons == ["state initialised by the traced call (Linear.grads: (True, True) -> (False, False))"]
    with pytest.warns(UserWarning, match=r"retracing \(retrace 2\): guard failed: x: shape \(4, 3\) float32 cpu "
                                         r"-> shape \(5, 3\) float32 cpu$"):
        f(ember.ones(5, 3))


def test_a_guard_broken_right_after_the_state_making_call_still_warns():
    f = _compiled_momentum_step()
    f(ember.ones(4, 3))          # makes the gradients: the next call with these inputs retraces quietly
    with pytest.warns(UserWarning, match=r"guard failed: x: shape \(4, 3\) float32 cpu -> shape \(5, 3\)"):
        f(ember.ones(5, 3))      # but this one changed something else too


def test_state_leaves_are_named_after_what_holds_them():
    """The names a printed graph, a guard message and a saved graph use for state (parameters, their
    gradients, optimizer state and rates), with one module and optimizer and with several."""
    import re
    m = nn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad(set_to_none=False)
        m(x).sum().backward()
        opt.step()
    f = ember.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            f(ember.ones(3, 2))
    assert sorted({v.src for v in f.graph.leaves if v.kind == "state"}) == [
        "bias", "bias.grad", "opt.lr[0]", "opt.state[bias].momentum_buffer", "opt.state[weight].momentum_buffer",
        "weight", "weight.grad"]

    a, b = nn.Linear(2, 2), nn.Linear(2, 1)
    o1, o2 = ember.optim.SGD(a.parameters(), lr=0.1, momentum=0.9), ember.optim.Adam(b.parameters(), lr=0.1)
    extra = ember.ones(1, requires_grad=True)
    o3 = ember.optim.SGD([extra], lr=0.1)     # a tensor no module holds: named after its optimizer

    def step2(x):
        o1.zero_grad(set_to_none=False)
        o2.zero_grad(set_to_none=False)
        (b(a(x)).sum() * extra).sum().backward()
        o1.step(); o2.step(); o3.step()
    g = ember.compile(step2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            g(ember.ones(3, 2))
    names = {v.src for v in g.graph.leaves if v.kind == "state"}
    pattern = (r"m\d\.(weight|bias)(\.grad)?|opt\d\.lr\[0\]|opt\d\.param\d+(\.grad)?"
               r"|opt\d\.state\[(m\d\.(weight|bias)|opt\d\.param\d+)\]\.(momentum_buffer|exp_avg|exp_avg_sq|step)")
    assert names and all(re.fullmatch(pattern, n) for n in names), sorted(names)
    assert len({n.split(".")[0] for n in names if n.startswith("opt")}) == 3
    assert sum(n.endswith("momentum_buffer") for n in names) == 2 and sum(n.endswith("exp_avg") for n in names) == 2


@pytest.mark.parametrize("read", ["tolist", "numpy", "bool", "int"])
def test_each_kind_of_value_read_guards_its_branch(read):
    def fn(x):
        if read == "tolist":
            pos = x.tolist()[0] > 0
        elif read == "numpy":
            pos = bool((x.numpy() > 0).all())
        elif read == "bool":
            pos = bool(x[0] > 0)
        else:
            pos = int(x[0]) > 0
        return x * 2 if pos else x * -1
    f = ember.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in (1.0, -1.0, 2.0, -3.0, 1.0):
            x = ember.tensor([v, 1.0])
            assert f(x).tolist() == fn(x).tolist(), (read, v)
    info = f.cache_info()
    assert info.traces >= 2 and info.hits >= 1     # the last call reads what the first did: a cache hit


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_half_precision_graph_keeps_its_dtype_and_eagers_values(dtype):
    def fn(x):
        return ((x * 0.5).exp() + x.softmax(-1)).sum(0) @ x.t()
    x = ember.randn(3, 4).to(getattr(ember, dtype))
    f = ember.compile(fn)
    for i in (1, 2, 3):
        got, want = f(x * i), fn(x * i)
        assert got.dtype == want.dtype == getattr(ember, dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


SCALE = 2.0
COUNT = 0
NAN = float("nan")


def _scaled(x):
    return x * SCALE


def test_a_global_python_value_is_guarded():
    # baked into the trace as a constant: without the guard the compiled call kept returning x * 2.0
    global SCALE
    f = ember.compile(_scaled)
    assert f(ember.ones(1)).tolist() == [2.0]
    try:
        SCALE = 3.0
        with pytest.warns(UserWarning, match=r"guard failed: global SCALE: 2\.0 -> 3\.0"):
            assert f(ember.ones(1)).tolist() == [3.0]
        strict = ember.compile(_scaled, strict=True)
        strict(ember.ones(1))
        SCALE = 4.0
        with pytest.raises(GuardError, match="global SCALE: 3.0 -> 4.0"):
            strict(ember.ones(1))
    finally:
        SCALE = 2.0
    assert f(ember.ones(1)).tolist() == [2.0] and f.cache_info().hits == 1   # the first trace again


def test_a_closure_value_and_a_list_in_it_are_guarded():
    k, scale = [2.0], 1.5

    def g(x):
        return x * k[0] + scale
    f = ember.compile(g)
    f(ember.ones(1))
    k[0] = 5.0
    with pytest.warns(UserWarning, match=r"k \(closure of g\): \(2\.0,\) -> \(5\.0,\)"):
        assert f(ember.ones(1)).tolist() == [6.5]


def test_a_dict_of_settings_is_guarded_and_one_the_function_fills_runs_eagerly():
    cfg, seen = {"scale": 2.0, "shift": 0}, {}

    def g(x):
        return x * cfg["scale"] + cfg["shift"]
    f = ember.compile(g)
    assert f(ember.ones(1)).tolist() == [2.0]
    cfg["scale"] = 3.0                     # the trace's constant was 2.0: a stale replay said 2.0
    with pytest.warns(UserWarning, match=r"cfg \(closure of g\): \{'scale': 2\.0, 'shift': 0\} -> \{'scale': 3\.0"):
        assert f(ember.ones(1)).tolist() == [3.0]

    def h(x):
        seen["calls"] = seen.get("calls", 0) + 1
        return x * 2
    f = ember.compile(h)
    with pytest.warns(UserWarning, match=r"changed seen \(closure of h\) while it ran"):
        f(ember.ones(1))
    f(ember.ones(1))
    assert seen["calls"] == 2


def test_numpy_arrays_read_by_name_are_guarded():
    weights = np.ones(3, np.float32)              # small: by value (ember.tensor copies it: a constant)
    cfg = type("Cfg", (), {})()
    cfg.mask = np.ones(100, np.float32)           # large: by identity

    def g(x):
        return x * ember.tensor(weights)
    f = ember.compile(g)
    f(ember.ones(3))
    weights[:] = 7.0                              # a stale replay said [1, 1, 1]
    with pytest.warns(UserWarning, match=r"weights \(closure of g\): array\(\[1\.0, 1\.0, 1\.0\], dtype=float32\) "
                                         r"-> array\(\[7\.0"):
        assert f(ember.ones(3)).tolist() == [7.0] * 3

    def h(x):
        return x * ember.tensor(cfg.mask).sum()
    f = ember.compile(h)
    f(ember.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(ember.ones(1)).tolist() == [100.0] and f.cache_info().hits == 1
    cfg.mask = np.zeros(100, np.float32)          # rebound: a stale replay said 100
    with pytest.warns(UserWarning, match=r"cfg.mask: <ndarray \(100,\) at 0x[0-9a-f]+> -> <ndarray"):
        assert f(ember.ones(1)).tolist() == [0.0]


def test_a_python_attribute_of_a_module_or_submodule_is_guarded():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.0))
            self.temperature, self._shift = 1.0, 0.0

        def forward(self, x):
            return self.body(x) / self.temperature + self._shift
    m = Scaled()
    f = ember.compile(m)
    x = ember.ones(1, 2)
    f(x)
    m.temperature = 2.0
    with pytest.warns(UserWarning, match=r"Scaled\.temperature: 1\.0 -> 2\.0"):
        np.testing.assert_array_equal(f(x).detach().numpy(), m(x).detach().numpy())
    m.body[1].p = 0.5
    with pytest.warns(UserWarning, match=r"Scaled\.body\.1\.p: 0\.0 -> 0\.5"):
        f(x)
    m.body[1].p, m._shift = 0.0, 1.0       # a private attribute is as much a constant of the trace
    with pytest.warns(UserWarning, match=r"Scaled\._shift: 0\.0 -> 1\.0"):
        np.testing.assert_array_equal(f(x).detach().numpy(), m(x).detach().numpy())


def test_a_global_the_function_changes_runs_eagerly_saying_so():
    def step(x):
        global COUNT
        COUNT += 1              # a Python side effect: a replay would not count
        return x * 2
    f = ember.compile(step)
    before = COUNT
    with pytest.warns(UserWarning, match="changed global COUNT while it ran"):
        f(ember.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once: later calls run eagerly, no retrace per count
        f(ember.ones(1)); f(ember.ones(1))
    assert COUNT == before + 3 and f.cache_info().traces == 1 and f.cache_info().eager_calls == 2


def test_a_nan_global_does_not_retrace():
    global NAN
    f = ember.compile(lambda x: x + NAN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            NAN = float("nan")      # a new NaN object each time: equal to nothing, hashed by identity
            f(ember.ones(1))
    assert f.cache_info().traces == 1


def test_a_global_int_that_becomes_an_equal_float_retraces():
    global SCALE
    f = ember.compile(_scaled)
    try:
        SCALE = 2
        assert f(ember.arange(3)).dtype == ember.int64
        SCALE = 2.0                 # == 2, but an int tensor times a float is float
        with pytest.warns(UserWarning, match="global SCALE: 2 -> 2.0"):
            out = f(ember.arange(3))
        assert out.dtype == _scaled(ember.arange(3)).dtype and out.tolist() == [0.0, 2.0, 4.0]
    finally:
        SCALE = 2.0


class _Config:
    pass


CFG = _Config()
CFG.scale, CFG.unused = 2.0, 1


def _by_config(x):
    return x * CFG.scale


def test_attributes_of_a_plain_object_the_code_reads_are_guarded_and_others_not():
    f = ember.compile(_by_config)
    f(ember.ones(1))
    try:
        CFG.unused = 5                       # not a name the code uses: no retrace
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert f(ember.ones(1)).tolist() == [2.0]
        CFG.scale = 3.0
        with pytest.warns(UserWarning, match=r"CFG\.scale: 2\.0 -> 3\.0"):
            assert f(ember.ones(1)).tolist() == [3.0]
    finally:
        CFG.scale, CFG.unused = 2.0, 1

    class Trainer:
        def __init__(self):
            self.temperature, self.iteration = 2.0, 0

        def step(self, x):
            return x / self.temperature
    t = Trainer()
    g = ember.compile(t.step)
    g(ember.ones(1))
    t.iteration += 1                         # a counter the step does not read
    assert g(ember.ones(1)).tolist() == [0.5] and g.cache_info().traces == 1
    t.temperature = 4.0
    with pytest.warns(UserWarning, match=r"self\.temperature: 2\.0 -> 4\.0"):
        assert g(ember.ones(1)).tolist() == [0.25]


class _GlobalScaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 1)

    def forward(self, x):
        return self.lin(x) * SCALE       # a global read by a module's forward, not by the compiled fn


def test_a_global_read_by_a_modules_forward_is_guarded():
    global SCALE
    m = _GlobalScaled()
    f = ember.compile(m)
    g = ember.compile(lambda x, mod: mod(x) + 0)     # the module passed as an argument
    x = ember.ones(1, 1)
    f(x); g(x, m)
    try:
        SCALE = 3.0
        with pytest.warns(UserWarning, match=r"global SCALE: 2\.0 -> 3\.0"):
            assert f(x).item() == m(x).item()
        with pytest.warns(UserWarning, match=r"global SCALE: 2\.0 -> 3\.0"):
            assert g(x, m).item() == m(x).item()
    finally:
        SCALE = 2.0


def test_freezing_a_layer_between_calls_retraces():
    # the trace computed and applied the frozen layer's gradients: it kept training, and the rest of
    # the model moved differently from eager
    from tests.jit.models import step_fn

    def run(compiled):
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2))
        step = step_fn(m, ember.optim.SGD(m.parameters(), lr=0.1))
        f = ember.compile(step) if compiled else step
        x, y = ember.randn(4, 2), ember.tensor([0, 1, 1, 0])
        f(x, y); f(x, y); f(x, y)
        m[0].weight.requires_grad_(False)
        frozen = m[0].weight.detach().numpy().copy()
        f(x, y); f(x, y)
        return frozen, [p.detach().numpy() for p in m.parameters()]
    frozen, want = run(False)
    with pytest.warns(UserWarning, match=r"Sequential\.0\.weight\.requires_grad: True -> False"):
        frozen_c, got = run(True)
    np.testing.assert_array_equal(got[0], frozen_c)            # not updated once frozen
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_hooks_added_or_removed_between_calls_retrace():
    m = nn.Linear(2, 2)
    f = ember.compile(m)
    x = ember.ones(1, 2)
    f(x)
    h = m.register_forward_hook(lambda mod, inp, out: out * 0)   # ignored by a replay of the old trace
    with pytest.warns(UserWarning, match="Linear: a forward, pre-forward or gradient hook was added or removed"):
        assert f(x).tolist() == [[0.0, 0.0]]
    h.remove()
    assert f(x).tolist() == m(x).tolist()          # the first trace again
    m.register_forward_pre_hook(lambda mod, inp: (inp[0] * 2,))
    with pytest.warns(UserWarning, match="hook was added or removed"):
        assert f(x).tolist() == m(x).tolist()
    m.weight.register_hook(lambda g: g * 0)
    with pytest.warns(UserWarning, match="hook was added or removed"):
        f(x)


def test_a_submodule_swapped_for_another_without_parameters_retraces():
    m = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    f = ember.compile(m)
    x = ember.ones(1, 2)
    f(x)
    m[1] = nn.Sigmoid()                    # same parameters, same attributes: only the type tells
    with pytest.warns(UserWarning, match=r"Sequential\.1: Tanh -> Sigmoid"):
        np.testing.assert_array_equal(f(x).detach().numpy(), m(x).detach().numpy())


def test_optimizer_state_loaded_between_calls_retraces():
    # load_state_dict puts new state tensors in: the replay kept updating the old ones
    import copy

    def scenario(compiled):
        ember.manual_seed(0)
        m = nn.Linear(2, 2)
        opt = ember.optim.Adam(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            m(x).pow(2).sum().backward()
            opt.step()
        f = ember.compile(step) if compiled else step
        x = ember.ones(3, 2)
        for _ in range(3):
            f(x)
        saved = copy.deepcopy(m.state_dict()), copy.deepcopy(opt.state_dict())
        f(x); f(x)
        m.load_state_dict(saved[0])
        opt.load_state_dict(saved[1])
        f(x); f(x)
        return m.weight.detach().numpy()
    want = scenario(False)
    with pytest.warns(UserWarning, match=r"Adam\.state: its tensors were replaced"):
        got = scenario(True)
    np.testing.assert_array_equal(got, want)


def _positive_sum(x):
    return x[x > 0].sum() * 2


@pytest.mark.parametrize("fn,what", [(_positive_sum, "index at"), (lambda x: ember.nonzero(x > 0).float().sum(), "nonzero at"),
                                     (lambda x: ember.unique(x.round()).sum(), "unique at")])
def test_a_shape_that_depends_on_values_runs_eagerly(fn, what):
    # x[x > 0] has as many elements as x has positives: a replay kept the traced shape and raised
    # CompileError at the first call with another count (or, from the generated code, went on with it)
    xs = [ember.tensor(np.random.default_rng(i).standard_normal(12)) for i in range(4)]
    f = ember.compile(fn)
    with pytest.warns(UserWarning, match=rf"shape of a result depends on tensor values \({what} .*runs eagerly"):
        got = [f(x).item() for x in xs]
    np.testing.assert_allclose(got, [fn(x).item() for x in xs], rtol=1e-12)
    assert f.cache_info().eager_entries == ["shapes that depend on values"]
    with pytest.raises(GuardError, match=rf"shape of a result depends on tensor values \({what}"):
        ember.compile(fn, strict=True)(xs[0])
    with pytest.raises(GuardError, match="depends on tensor values"):
        ember.jit.trace(fn, xs[0])


def test_a_mask_set_and_masked_fill_keep_shapes_and_stay_compiled():
    def f(x):
        y = x.clone()
        y[y < 0] = 0.0            # the result's shape is x's: no value decides it
        return y.masked_fill(x > 1, 1.0).sum()
    xs = [ember.tensor(np.random.default_rng(i).standard_normal(12)) for i in range(3)]
    c = ember.compile(f, strict=True)
    assert [c(x).item() for x in xs] == [f(x).item() for x in xs]
    assert c.cache_info().hits == 2


def test_a_state_tensor_returned_as_it_is_is_read_at_each_replay():
    # W.detach() records no primitive: its array became an output leaf that was never classified, and
    # the first replay failed with KeyError
    w = ember.ones(3, requires_grad=True)
    f = ember.compile(lambda x: (w.detach(), x * 2))
    for k in range(3):
        a, b = f(ember.ones(2))
        assert a.tolist() == [1.0 + k] * 3 and b.tolist() == [2.0, 2.0]
        with ember.no_grad():
            w.add_(1.0)
    assert f.cache_info().hits == 2
