"""ember/nn/module.py's backward, state_dict and load_state_dict hooks, extra state, get_buffer, set_submodule,
share_memory and compile, each against torch with the same module and inputs (ember/nn/_backward_hooks.py)."""
import re
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _np(g):
    return None if g is None else g.detach().numpy().copy()


def _same(a, b, tol=1e-5):
    """Two nested tuples of gradients (or None) are equal: same Nones, same values."""
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None), (a, b)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _pair(make):
    """The same module in both frameworks: `make(lib)` builds it, torch's weights are copied into Ember's."""
    t, e = make(torch.nn), make(nn)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return t, e


def _two(lib):
    class Two(lib.Module):
        """Two tensor inputs and a non-tensor, two outputs, a keyword tensor (ignored by the hooks)."""
        def __init__(self):
            super().__init__()
            self.fc = lib.Linear(3, 3)

        def forward(self, a, b, c, k=None):
            out = self.fc(a) * 2 + b
            if k is not None:
                out = out + k
            return out, a * c
    return Two()


def _record(log, tag):
    def hook(m, *grads):
        log.append((tag,) + tuple(tuple(_np(g) for g in gs) for gs in grads))
    return hook


@pytest.mark.parametrize("use_second", [False, True])
@pytest.mark.parametrize("b_grad", [False, True])
def test_full_backward_hook_gradients_match_torch(use_second, b_grad):
    tm, em = _pair(_two)
    logs = []
    for lib, m in ((torch, tm), (ember, em)):
        log = []
        m.register_full_backward_pre_hook(_record(log, "pre"))
        m.register_full_backward_hook(_record(log, "full"))
        rng = np.random.default_rng(0)
        a = lib.tensor(rng.standard_normal((2, 3)), dtype=lib.float64 if lib is torch else ember.float64)
        a = a.float().requires_grad_()
        b = lib.tensor(rng.standard_normal((2, 3))).float().requires_grad_(b_grad)
        k = lib.ones(2, 3, requires_grad=True)
        o1, o2 = m(a, b, 5.0, k=k)
        loss = o1.pow(2).sum() + (o2.sum() if use_second else 0)
        loss.backward()
        logs.append((log, _np(a.grad), _np(k.grad), _np(m.fc.weight.grad)))
    (tl, ta, tk, tw), (el, ea, ek, ew) = logs
    assert [r[0] for r in el] == [r[0] for r in tl] == ["pre", "full"]
    for t, e in zip(tl, el):
        for tg, eg in zip(t[1:], e[1:]):
            _same(eg, tg)
    _same((ea, ek, ew), (ta, tk, tw))


def test_hooks_replace_gradients_like_torch():
    results = []
    for lib in (torch, ember):
        torch.manual_seed(0)
        t = torch.nn.Linear(3, 2)
        m = t if lib is torch else nn.Linear(3, 2)
        if lib is ember:
            m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0.5,))
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
        x = lib.ones(4, 3, requires_grad=True)
        m(x).sum().backward()
        results.append((_np(x.grad), _np(m.weight.grad), _np(m.bias.grad)))
    _same(results[1], results[0])
    np.testing.assert_allclose(results[1][2], [2.0, 2.0])   # the pre-hook halved grad_output


def test_hook_order_prepend_nesting_and_removal_like_torch():
    orders = []
    for lib in (torch, ember):
        order = []
        inner = lib.nn.Linear(2, 2)
        outer = lib.nn.Sequential(inner, lib.nn.Tanh())
        for m, name in ((inner, "inner"), (outer, "outer")):
            m.register_full_backward_hook(lambda *a, n=name: order.append(n + ".h1"))
            m.register_full_backward_hook(lambda *a, n=name: order.append(n + ".h0"), prepend=True)
            m.register_full_backward_pre_hook(lambda *a, n=name: order.append(n + ".p1"))
            m.register_full_backward_pre_hook(lambda *a, n=name: order.append(n + ".p0"), prepend=True)
        gone = inner.register_full_backward_hook(lambda *a: order.append("removed"))
        gone.remove()
        with inner.register_full_backward_pre_hook(lambda *a: order.append("ctx")):
            pass
        x = lib.ones(1, 2, requires_grad=True)
        outer(x).sum().backward()
        outer(x * 2).sum().backward()   # and again: the hooks fire once per backward
        orders.append(order)
    assert orders[1] == orders[0]
    assert orders[1][:4] == ["outer.p0", "outer.p1", "inner.p0", "inner.p1"] and "removed" not in orders[1]


def test_module_called_twice_fires_twice_with_each_calls_gradients():
    logs = []
    for lib in (torch, ember):
        log = []
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        lin.register_full_backward_hook(_record(log, "h"))
        x = lib.ones(1, 2, requires_grad=True)
        (lin(x) + lin(x * 2) * 3).sum().backward()
        logs.append(log)
    assert len(logs[1]) == len(logs[0]) == 2
    for t, e in zip(*logs):
        _same(e[1], t[1]), _same(e[2], t[2])


def test_no_input_requires_grad_fires_at_the_outputs_with_a_warning():
    for lib in (torch, ember):
        lin = lib.nn.Linear(2, 2)
        seen = []
        lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with "
                                             "respect to module outputs since no inputs require gradients"):
            lin(lib.ones(3, 2)).sum().backward()
        assert seen[0][0] == (None,) and tuple(seen[0][1]) == (3, 2)
        bad = lib.nn.Linear(2, 2)
        bad.register_full_backward_hook(lambda m, gi, go: (lib.ones(1),))
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Backward hook for Modules where no "
                                                       "input requires gradient should always return None"):
            bad(lib.ones(3, 2)).sum().backward()
        with lib.no_grad():   # no graph: no hook, no identity around the tensors
            y = lin(lib.ones(1, 2, requires_grad=True))
        assert y.grad_fn is None


def _message(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001 (the message is compared with torch's)
        return type(e).__name__, str(e)
    return None


def test_errors_match_torch():
    class InPlace:
        def __init__(self, lib):
            class M(lib.nn.Module):
                def forward(self, x, y):
                    x.mul_(2)
                    return x + y
            self.m = M()

    for build, call in [
        (lambda lib: (lib.nn.Linear(2, 2), lambda m, g, go: (g[0], g[0]), "full"),
         lambda lib, m: m(lib.ones(1, 2, requires_grad=True)).sum().backward()),
        (lambda lib: (lib.nn.Linear(2, 2), lambda m, go: (go[0], go[0]), "pre"),
         lambda lib, m: m(lib.ones(1, 2, requires_grad=True)).sum().backward()),
        (lambda lib: (lib.nn.Linear(2, 2), lambda m, g, go: None, "full"),   # the output changed in place
         lambda lib, m: m(lib.ones(1, 2, requires_grad=True)).add_(1)),
        (lambda lib: (lib.nn.Linear(2, 2), lambda m, g, go: None, "full"),   # the input, after the call
         lambda lib, m: _after(lib, m)),
        (lambda lib: (InPlace(lib).m, lambda m, g, go: None, "full"),        # the input, inside forward
         lambda lib, m: m(lib.ones(2, requires_grad=True) * 1, lib.ones(2))),
        (lambda lib: (InPlace(lib).m, lambda m, g, go: None, "full"),        # two views: the other message
         lambda lib, m: m(lib.ones(2, requires_grad=True) * 1, lib.ones(2, requires_grad=True))),
    ]:
        msgs = []
        for lib in (torch, ember):
            m, hook, kind = build(lib)
            (m.register_full_backward_hook if kind == "full" else m.register_full_backward_pre_hook)(hook)
            msgs.append(_message(lambda: call(lib, m)))
        assert msgs[0] is not None and msgs[1] == msgs[0], msgs
    for lib in (torch, ember):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            lin.register_backward_hook(lambda *a: None)
        relu = lib.nn.ReLU()
        relu.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            relu.register_full_backward_hook(lambda *a: None)


def _after(lib, m):
    x = lib.ones(1, 2, requires_grad=True) * 1
    y = m(x)
    x.mul_(2)
    y.sum().backward()


def test_views_changed_where_torch_allows_it():
    msgs = []
    for lib in (torch, ember):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda *a: None)
        y = lin(lib.ones(1, 2, requires_grad=True))
        y.detach().add_(1)                  # allowed (but it changes y's version)
        with lib.no_grad():
            y.add_(1)                       # not recorded: allowed
        msgs.append(_message(lambda: (y * 2).sum().backward()))
    assert msgs[1] is None and msgs[0] is not None   # torch refuses this backward; Ember need not


def test_non_tensor_outputs_warn_and_skip_the_hooks():
    for lib in (torch, ember):
        class D(lib.nn.Module):
            def forward(self, x):
                return {"y": x * 2}
        d = D()
        seen = []
        d.register_full_backward_hook(lambda *a: seen.append(1))
        with pytest.warns(UserWarning, match="For backward hooks to be called, module output should be a Tensor "
                                             "or a tuple of Tensors but received <class 'dict'>"):
            out = d(lib.ones(2, requires_grad=True))
        out["y"].sum().backward()
        assert seen == []


@pytest.mark.parametrize("make", [lambda lib: lib.nn.ReLU(), lambda lib: lib.nn.Sigmoid(), lambda lib: lib.nn.Tanh()])
def test_deprecated_backward_hook_on_single_op_modules_matches_torch(make):
    logs = []
    for lib in (torch, ember):
        log = []
        m = make(lib)
        m.register_backward_hook(_record(log, "h"))
        m.register_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
        x = lib.tensor([[-1.0, 0.5, 2.0]], requires_grad=True)
        h = x * 1
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = m(h)
        assert not [x for x in w if issubclass(x.category, FutureWarning)]   # one node after another's
        (y * lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        with pytest.warns(FutureWarning, match="the forward contains multiple autograd Nodes"):
            m(x)   # a leaf input: torch warns, as its next_functions hold an AccumulateGrad
        logs.append((log, _np(x.grad)))
    (tl, tx), (el, ex) = logs
    _same(el[0][1], tl[0][1]), _same(el[0][2], tl[0][2]), _same((ex,), (tx,))


def test_forward_hooks_prepend_and_always_call_like_torch():
    for lib in (torch, ember):
        class Boom(lib.nn.Module):
            def forward(self, x, **kwargs):
                raise ValueError("boom")
        order = []
        m = Boom()
        m.register_forward_hook(lambda mod, a, out: order.append("plain"))
        m.register_forward_hook(lambda mod, a, out: order.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, a, k, out: order.append(("kw", k)), always_call=True, with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, a: order.append("pre1"))
        m.register_forward_pre_hook(lambda mod, a: order.append("pre0"), prepend=True)
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1), flag=1)
        assert order == ["pre0", "pre1", ("always", None), ("kw", {"flag": 1})], order
        lin = lib.nn.Linear(1, 1)
        order.clear()
        h = lin.register_forward_hook(lambda *a: order.append("a"), always_call=True)
        lin.register_forward_hook(lambda *a: order.append("b"), prepend=True)
        lin(lib.ones(1))
        assert order == ["b", "a"]
        h.remove()
        assert h.id not in lin._forward_hooks_always_called


def _tree(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.BatchNorm1d(2)))


def test_state_dict_hooks_signatures_order_and_effect_like_torch():
    logs = []
    for lib in (torch, ember):
        log = []
        m = _tree(lib)
        for name, sub in m.named_modules():
            sub.register_state_dict_pre_hook(lambda mod, prefix, keep_vars, n=name: log.append(("pre", n, prefix,
                                                                                                 keep_vars)))

            def post(mod, sd, prefix, meta, n=name):
                log.append(("post", n, prefix, dict(meta), list(sd)))
                sd.pop(prefix + "num_batches_tracked", None)
            sub.register_state_dict_post_hook(post)
        sd = m.state_dict(keep_vars=True)
        log.append(("keys", list(sd), dict(sd._metadata)))
        logs.append(log)
        bad = lib.nn.Linear(1, 1)
        bad.register_state_dict_post_hook(lambda *a: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            bad.state_dict()
    assert logs[1] == logs[0]


def test_load_state_dict_hooks_like_torch():
    results = []
    for lib in (torch, ember):
        log = []
        m = _tree(lib)
        src = _tree(lib).state_dict()
        src["0.w_old"] = src.pop("0.weight")   # an old checkpoint: the pre-hook renames the key

        def pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
            log.append(("pre", prefix, dict(meta), strict, list(missing), sorted(sd)))
            if prefix + "w_old" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "w_old")
        for name, sub in m.named_modules():
            sub.register_load_state_dict_pre_hook(pre)
            sub.register_load_state_dict_post_hook(
                lambda mod, keys, n=name: log.append(("post", n, list(keys.missing_keys), list(keys.unexpected_keys))))
        out = m.load_state_dict(src)
        log.append(repr(out))
        np.testing.assert_allclose(_np(m[0].weight), _np(src["0.w_old"]))
        # a post-hook that forgives the missing key: no error with strict
        lin = lib.nn.Linear(2, 2)
        lin.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
        log.append(repr(lin.load_state_dict({"weight": lib.zeros(2, 2)})))
        assert not _np(lin.weight).any()
        lin2 = lib.nn.Linear(2, 2)
        lin2.register_load_state_dict_post_hook(lambda mod, keys: keys.unexpected_keys.append("x"))
        log.append(_message(lambda: lin2.load_state_dict(lin2.state_dict())))
        log.append(repr(lin2.load_state_dict({"weight": lib.zeros(2, 2)}, strict=False)))
        results.append(log)
    assert results[1] == results[0]


def test_extra_state_like_torch():
    def make(lib):
        class Counter(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(1, 1)
                self.steps = 3

            def get_extra_state(self):
                return {"steps": self.steps}

            def set_extra_state(self, state):
                self.steps = state["steps"]
        return lib.nn.Sequential(Counter())
    for lib in (torch, ember):
        m = make(lib)
        sd = m.state_dict()
        assert list(sd) == ["0._extra_state", "0.fc.weight", "0.fc.bias"] and sd["0._extra_state"] == {"steps": 3}
        m2 = make(lib)
        m2[0].steps = 0
        sd["0._extra_state"] = {"steps": 7}
        m2.load_state_dict(sd)
        assert m2[0].steps == 7
        del sd["0._extra_state"]
        assert _message(lambda: m2.load_state_dict(sd))[1] == \
            'Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: "0._extra_state". '
        plain = lib.nn.Sequential(lib.nn.Linear(1, 1))
        assert repr(plain.load_state_dict({**plain.state_dict(), "0._extra_state": 1}, strict=False)) == \
            "_IncompatibleKeys(missing_keys=[], unexpected_keys=['0._extra_state'])"
        with pytest.raises(RuntimeError, match="should never be called"):
            plain.get_extra_state()
        with pytest.raises(RuntimeError, match="should never be called"):
            plain.set_extra_state(None)


def test_get_buffer_and_set_submodule_like_torch():
    for lib in (torch, ember):
        m = lib.nn.Sequential(lib.nn.BatchNorm1d(2), lib.nn.Sequential(lib.nn.Linear(2, 2)))
        assert m.get_buffer("0.running_mean") is m[0].running_mean
        msgs = [_message(lambda t=t: m.get_buffer(t)) for t in ("0.weight", "0.nothing")]
        assert msgs == [("AttributeError", "`weight` is not a buffer"),
                        ("AttributeError", "BatchNorm1d has no attribute `nothing`")]
        new = lib.nn.Tanh()
        m.set_submodule("1.0", new)
        assert m[1][0] is new
        m.set_submodule("1.extra", lib.nn.ReLU())
        assert isinstance(m[1].extra, lib.nn.ReLU)
        assert _message(lambda: m.set_submodule("1.other", lib.nn.ReLU(), strict=True)) == \
            ("AttributeError", "Sequential has no attribute `other`")
        assert _message(lambda: m.set_submodule("", lib.nn.ReLU())) == \
            ("ValueError", "Cannot set the submodule without a target name!")
        assert _message(lambda: m.set_submodule("0.weight", lib.nn.ReLU())) == \
            ("AttributeError", "`weight` is not an nn.Module")
        assert re.fullmatch(r"`module` is not an nn.Module, found <class 'int'>",
                            _message(lambda: m.set_submodule("0", 3))[1])


def test_share_memory_returns_self():
    m = nn.Linear(2, 2)
    w = m.weight
    assert m.share_memory() is m and m.weight is w and m.weight.is_shared()   # torch: True


def test_compile_in_place_keeps_hooks_and_values():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    x = ember.randn(5, 3)
    want = m(x).detach().numpy()
    seen = []
    m.register_forward_hook(lambda mod, a, out: seen.append(1))
    assert m.compile() is None
    with ember.no_grad():
        for _ in range(3):
            np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-6)
    assert m._compiled_call.cache_info()["hits"] == 2 and seen == [1]   # traced once, replayed twice
    assert m.forward(x).shape == (5, 4)   # forward itself is not compiled


def test_backward_hooks_under_data_parallel():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 3), nn.Tanh())
    x = ember.randn(6, 5, requires_grad=True)
    model(x).sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    seen = []
    model[0].register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape))
    dp = nn.DataParallel(model, device_ids=["cpu:0", "cpu:1"], output_device="cpu")
    dp(x).sum().backward()
    assert sorted(seen) == [(3, 3), (3, 3)]   # once per replica's share of the batch
    for p, g in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-6)
