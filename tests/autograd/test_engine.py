"""ember/autograd/engine.py and the public autograd API: graphs, accumulation, retain_graph, hooks,
grad modes, higher-order gradients, in-place version checks, a deep chain."""
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from helpers import check_op


def both(data, dtype="float64"):
    return (ember.tensor(data, dtype=getattr(ember, dtype), requires_grad=True),
            torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=True))


def close(e, t, tol=1e-10):
    np.testing.assert_allclose(np.asarray(e.detach()._data, dtype=np.float64),
                               t.detach().double().numpy(), atol=tol, rtol=tol)


# ------------------------------------------------------------------ graph shapes
@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,)), ((1, 1), (2, 3)),
                                    ((5, 1, 3), (4, 1))], ids=str)
def test_broadcasting_gradients_sum_back(shapes):
    check_op(lambda L, a, b: a * b + a - b / (b * b + 1), *shapes)


def test_diamond_graph():
    # x -> a, b -> c: both paths' gradients must add
    check_op(lambda L, x: (x.exp() * x.sin() + x.exp() / (1 + x * x)).sum(), (5,))
    e, t = both([0.3, -1.2])
    for L, x in ((ember, e), (torch, t)):
        a = x * 2
        b = a.tanh()
        c = a.sigmoid()
        (b * c + a).sum().backward()
    close(e.grad, t.grad)


def test_reuse_of_one_tensor_in_several_ops():
    check_op(lambda L, x, w: (x @ w + x.sum(-1, keepdim=True) * x[:, :1] + (x * x).mean()).relu(), (3, 4), (4, 4))
    e, t = both([1.0, 2.0, 3.0])
    for x in (e, t):
        (x * x * x + x.exp() * x).sum().backward()
    close(e.grad, t.grad)


def test_grad_accumulates_across_backward_calls():
    e, t = both([1.0, -2.0])
    for x in (e, t):
        (x * x).sum().backward()
        (3 * x).sum().backward()
    close(e.grad, t.grad)
    assert e.grad.tolist() == [5.0, -1.0]
    e.grad = None
    (e * 2).sum().backward()
    assert e.grad.tolist() == [2.0, 2.0] and e.grad.is_leaf and not e.grad.requires_grad


def test_backward_with_gradient_argument_and_errors():
    x = ember.ones(2, 3, requires_grad=True)
    y = x * 3
    y.backward(ember.full((2, 3), 2.0))
    assert x.grad.tolist() == [[6.0] * 3] * 2
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="gradient has shape"):
        (x * 2).backward(ember.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.ones(2).sum().backward()


def test_backward_inputs_argument():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * b * 2).sum().backward(inputs=[a])
    assert a.grad.tolist() == [2.0, 2.0] and b.grad is None


# ------------------------------------------------------------------ retain_graph
def test_retain_graph_and_second_backward_error():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad.tolist()
    y.backward()
    np.testing.assert_allclose(x.grad.tolist(), [2 * g for g in g1])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_second_backward_through_freed_shared_subgraph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x.tanh()
    h.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        (h * 2).sum().backward()


# ------------------------------------------------------------------ ember.autograd.grad
def test_autograd_grad_matches_torch_and_leaves_grad_alone():
    e, t = both([0.5, -1.5, 2.0])
    ge, = ember.autograd.grad((e.sin() * e).sum(), e)
    gt, = torch.autograd.grad((t.sin() * t).sum(), t)
    close(ge, gt)
    assert e.grad is None and not ge.requires_grad


def test_autograd_grad_non_leaf_input_and_allow_unused():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    z = ember.tensor([1.0], requires_grad=True)
    y = (h * h).sum()
    gh, = ember.autograd.grad(y, h, retain_graph=True)
    assert gh.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError, match="allow_unused"):
        ember.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = ember.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None and gx.tolist() == [18.0, 36.0]
    gx, gz = ember.autograd.grad(y, [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0]


def test_grad_with_grad_outputs_multiple_outputs():
    e, t = both([1.0, 2.0, 3.0])
    ve, vt = ember.tensor([1.0, -1.0, 0.5], dtype=ember.float64), torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)
    ge = ember.autograd.grad([e * e, e.exp().sum()], [e], grad_outputs=[ve, None])
    gt = torch.autograd.grad([t * t, t.exp().sum()], [t], grad_outputs=[vt, None])
    close(ge[0], gt[0])


# ------------------------------------------------------------------ double backward
SECOND_ORDER = {
    "tanh": lambda L, x, w: x.tanh(),
    "exp": lambda L, x, w: x.exp(),
    "mul": lambda L, x, w: x * w * x,
    "matmul": lambda L, x, w: (x @ w) * (x @ w),
    "softmax": lambda L, x, w: L.softmax(x * w, -1),
    "sigmoid": lambda L, x, w: x.sigmoid() * w,
    "log_softmax": lambda L, x, w: L.log_softmax(x @ w, 1),
    "div_pow": lambda L, x, w: (x / (w * w + 1)) ** 3,
    "sum_mean_var": lambda L, x, w: x.var(1) + (x * w).mean(),
    "sin_cos_log": lambda L, x, w: x.sin() * w.cos() + (x * x + 1).log(),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_double_backward_matches_torch(name):
    fn = SECOND_ORDER[name]
    rng = np.random.default_rng(0)
    xd, wd = rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, (3, 3))
    res = []
    for L in (ember, torch):
        x = L.tensor(xd, requires_grad=True)
        w = L.tensor(wd, requires_grad=True)
        y = fn(L, x, w)
        v = L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
        gx, = L.autograd.grad(y, x, grad_outputs=v, create_graph=True)
        assert gx.requires_grad
        # a Hessian-vector product: d/dx and d/dw of <gx, u>
        u = L.tensor(np.sin(np.arange(9.0)).reshape(3, 3))
        hx, hw = L.autograd.grad((gx * u).sum(), [x, w], allow_unused=True)
        res.append((gx, hx, hw))
    for a, b in zip(res[0], res[1]):
        if b is None:
            assert a is None or not np.any(a._data)
        else:
            close(a, b, 1e-9)


@pytest.mark.parametrize("name", ["tanh", "exp", "mul", "matmul", "softmax"])
def test_gradgradcheck(name):
    fn = SECOND_ORDER[name]
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.uniform(-1, 1, (2, 3)), dtype=ember.float64, requires_grad=True)
    w = ember.tensor(rng.uniform(-1, 1, (3, 3) if name == "matmul" else (2, 3)), dtype=ember.float64,
                     requires_grad=True)
    assert gradcheck(lambda x, w: fn(ember, x, w), (x, w))
    assert gradgradcheck(lambda x, w: fn(ember, x, w), (x, w))


def test_gradcheck_detects_a_wrong_backward():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3     # wrong: should be 2x

    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="gradcheck: Jacobian mismatch"):
        gradcheck(Bad.apply, (x,))
    assert gradcheck(Bad.apply, (x,), raise_exception=False) is False


def test_third_order():
    for L in (ember, torch):
        x = L.tensor(0.7, dtype=L.float64, requires_grad=True)
        y = x.sin() * x
        g1, = L.autograd.grad(y, x, create_graph=True)
        g2, = L.autograd.grad(g1, x, create_graph=True)
        g3, = L.autograd.grad(g2, x)
        if L is ember:
            e3 = g3.item()
        else:
            assert e3 == pytest.approx(g3.item(), abs=1e-12)


def test_create_graph_backward_grad_has_graph():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


# ------------------------------------------------------------------ hooks, retain_grad
def test_hooks_on_leaf_and_non_leaf():
    seen = {}
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 2
        hl = []
        h.register_hook(lambda g: hl.append(g.tolist()))
        h.register_hook(lambda g: g * 10)             # replaces the gradient flowing on
        handle = x.register_hook(lambda g: g + 1)
        (h * h).sum().backward()
        seen[L.__name__] = (hl, x.grad.tolist())
        handle.remove()
        x.grad = None
        (x * 1).sum().backward()
        assert x.grad.tolist() == [1.0, 1.0, 1.0]       # removed hook no longer runs
    assert seen["ember"] == seen["torch"]


def test_register_hook_requires_grad_error():
    with pytest.raises(RuntimeError, match="register_hook"):
        ember.ones(2).register_hook(lambda g: g)


def test_retain_grad():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        h.retain_grad()
        y = h * 3
        y.sum().backward()
        assert h.retains_grad and h.grad.tolist() == [3.0, 3.0]
    h2 = (ember.ones(2, requires_grad=True) * 2)
    (h2 * 2).sum().backward()
    assert h2.grad is None            # non-leaf without retain_grad keeps no grad


# ------------------------------------------------------------------ grad modes
def test_no_grad_enable_grad_set_grad_enabled_context():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        y = x * 2
        assert not ember.is_grad_enabled()
        with ember.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)            # as a plain call it takes effect at once
    try:
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_modes_as_decorators():
    x = ember.ones(2, requires_grad=True)

    @ember.no_grad()
    def f(a):
        return a * 2

    @ember.enable_grad()
    def g(a):
        return a * 2

    @ember.set_grad_enabled(False)
    def h(a):
        return a * 2

    @ember.inference_mode()
    def k(a):
        assert ember.is_inference_mode_enabled()
        return a * 2

    assert ember.is_grad_enabled()       # the decorator form did not switch grad off here
    assert not f(x).requires_grad and not h(x).requires_grad and not k(x).requires_grad
    with ember.no_grad():
        assert g(x).requires_grad
    assert not ember.is_inference_mode_enabled()


def test_inference_mode_context():
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        assert not (x * 2).requires_grad and ember.is_inference_mode_enabled()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad
    assert ember.is_grad_enabled()


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError
    assert ember.is_grad_enabled()


def test_update_under_no_grad_is_allowed_on_leaf():
    w = ember.ones(2, requires_grad=True)
    (w * 3).sum().backward()
    with ember.no_grad():
        w -= 0.5 * w.grad
        w.add_(1)
    assert w.tolist() == [0.5, 0.5] and w.is_leaf and w.requires_grad


# ------------------------------------------------------------------ in-place and versions
def test_inplace_on_leaf_requiring_grad_raises():
    x = ember.ones(2, requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(1.0),
               lambda: x.__setitem__(0, 5.0), lambda: x.__iadd__(1), lambda: x.uniform_()):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            op()
    assert x.tolist() == [1.0, 1.0] and x._version == 0


def test_inplace_version_error_names_op_and_tensor():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = h.exp()          # Exp saves its output
    y.mul_(3)            # ... which is now modified
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation \(mul_\).*Exp"):
        y.sum().backward()
    x2 = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x2 * 1
    b = a * a            # Mul saves its inputs
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"inplace operation \(add_\).*output of AddBackward.*version 1"
                                           r".*saved by Mul"):
        b.sum().backward()


def test_inplace_on_non_leaf_records_graph_like_torch():
    check_op(lambda L, x, w: ((x * w).add_(x).mul_(2).sub_(w) * 1).sum(), (3,), (3,))
    # exp_ saves its output and mul_ then overwrites it: torch refuses; ember's in-place ops write a
    # fresh result into the tensor, so the saved output is intact and the gradient is right
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (x * 2).exp_().mul_(2).sum().backward()
    x = ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64, requires_grad=True)
    (x * 2).exp_().mul_(2).sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), 4 * np.exp(2 * np.array([0.1, 0.2, 0.3])), rtol=1e-12)
    check_op(lambda L, x: (lambda h: (h.__setitem__(slice(0, 2), h[2:4] * 3), h)[1])(x * 1), (5,))
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h += 1
    assert h.grad_fn is not None and h._version == 1


def test_inplace_on_view_of_grad_tensor_unsupported_clearly():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    v = h[:2]
    with pytest.raises(NotImplementedError, match="in-place modification of a view"):
        v.mul_(2)
    assert h.tolist() == [1.0, 2.0, 3.0]


def test_out_of_place_after_inplace_is_fine():
    # ops that save a tensor *after* it was modified in place save the new version: backward is fine
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.add_(1)            # version 1
    y = h * h            # Mul saves h at version 1
    assert h._version == 1
    y.sum().backward()
    assert x.grad.tolist() == [12.0, 20.0]   # d/dx (2x + 1)^2 = 4 (2x + 1)
    check_op(lambda L, x: (lambda h: (h.mul_(3), h.exp() * h)[1])(x * 2), (3,))


def test_detach_shares_the_version_counter():
    # y saves its output; modifying it through a detached alias must be caught at backward (torch
    # raises too); were the counter not shared, backward would silently use the modified values
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2).exp()    # Exp saves its output
        d = y.detach()
        d.mul_(3)
        assert d._version == y._version == 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    # and the other way: an in-place op on the original bumps the detached alias's version too
    h = ember.tensor([1.0, 2.0]) * 1
    d = h.detach()
    h.add_(1)
    assert d._version == h._version == 1 and d.tolist() == [2.0, 3.0]


# ------------------------------------------------------------------ deep chain
def test_deep_chain_100k_ops():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0 + 0.0 if False else y + 0.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_deep_chain_mul_grad_value():
    x = ember.tensor(1.0, dtype=ember.float64, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 20_000, rel=1e-9)


def test_graph_freed_after_backward():
    import gc
    import weakref
    x = ember.ones(1000, requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    ref = weakref.ref(node)
    y.sum().backward()
    assert node._freed and node._out is None and node._saved == ()
    del y, node
    gc.collect()
    assert ref() is None


def test_bare_decorators_like_torch():
    x = ember.ones(2, requires_grad=True)

    @ember.no_grad
    def f(t):
        return t * 2

    @ember.inference_mode
    def g(t):
        return t * 2

    @ember.enable_grad
    def h(t):
        return t * 2
    assert not f(x).requires_grad and not g(x).requires_grad
    with ember.no_grad():
        assert h(x).requires_grad
    assert (x * 2).requires_grad   # nothing leaked out of the decorators


# ------------------------------------------------------------------ .grad owns its memory
def test_grad_never_aliases_the_gradient_argument_or_another_leaf():
    # Add hands one gradient array to both inputs, and here that array is the caller's `gradient=`:
    # each .grad must be its own copy, or accumulating into one changes the other and the caller's tensor
    res = {}
    for L in (ember, torch):
        x, y = L.ones(3, requires_grad=True), L.ones(3, requires_grad=True)
        g = L.ones(3)
        (x + y).backward(g)
        (x + y).backward(g)
        x.grad.mul_(10)                       # as clip_grad_norm_ does
        res[L.__name__] = (g.tolist(), x.grad.tolist(), y.grad.tolist())
        leaf = L.ones(2, requires_grad=True)
        g2 = L.ones(2)
        leaf.backward(g2)                     # a leaf as the root: its own gradient, copied
        leaf.grad.add_(1)
        assert g2.tolist() == [1.0, 1.0]
    assert res["ember"] == res["torch"] == ([1.0] * 3, [20.0] * 3, [2.0] * 3)


def test_grad_of_a_broadcast_backward_is_writeable_and_accumulates():
    for L in (ember, torch):
        x = L.ones(2, 3, requires_grad=True)
        x.sum().backward()                    # sum's backward broadcasts the gradient (a read-only view)
        x.grad.mul_(2)
        x.sum().backward()                    # in-place accumulation into that grad
        assert x.grad.tolist() == [[3.0] * 3] * 2


def test_grad_keeps_its_identity_and_version_counts_accumulation():
    versions = []
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        v0 = g._version
        (x * x).sum().backward()
        assert x.grad is g and g.tolist() == [4.0, 8.0]
        versions.append(g._version > v0)
    assert versions == [True, True]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_accumulation_with_create_graph_is_out_of_place():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        g1 = x.grad                            # 3x^2, with a graph
        (x ** 3).sum().backward(create_graph=True)
        assert g1.tolist() == [3.0, 12.0] and x.grad.tolist() == [6.0, 24.0] and x.grad.requires_grad
        g2 = x.grad
        (x * x).sum().backward()               # without create_graph: in place, as torch, even though
        assert x.grad is g2 and g2.tolist() == [8.0, 28.0] and g1.tolist() == [3.0, 12.0]   # g2 has a graph


def test_backward_through_a_custom_backward_returning_none():
    # None from a backward means "no gradient"; the input node below it still runs for its other
    # consumers (here h also feeds h * 3)
    res = {}
    for L in (ember, torch):
        class IgnoreFirst(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return None, g

        x, w = L.ones(2, requires_grad=True), L.ones(2, requires_grad=True)
        h = x * 2
        (IgnoreFirst.apply(h, w) + h * 3).sum().backward()
        k = L.ones(2, requires_grad=True)
        IgnoreFirst.apply(k * 2, w).sum().backward()    # only None reaches k's node: k gets no grad

        class IgnoreSecond(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g, None

        v = L.ones(2, requires_grad=True)
        IgnoreSecond.apply(v * 3, k * 2).sum().backward()   # the None node first, then v's still runs
        res[L.__name__] = (x.grad.tolist(), w.grad.tolist(), k.grad, v.grad.tolist())
    assert res["ember"] == res["torch"] == ([6.0, 6.0], [2.0, 2.0], None, [3.0, 3.0])


# ------------------------------------------------------------------ roots
def test_several_roots_same_root_twice_and_a_leaf_root():
    res = {}
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        L.autograd.backward([x, y, y], [L.tensor([1.0, 1.0]), L.tensor([1.0, 0.0]), L.tensor([0.0, 2.0])])
        res[L.__name__] = x.grad.tolist()
    assert res["ember"] == res["torch"] == [4.0, 7.0]


def test_autograd_backward_function_defaults_and_lists():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        L.autograd.backward(y)                          # no create_graph, graph freed
        assert not x.grad.requires_grad and x.grad.tolist() == [2.0, 4.0]
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            L.autograd.backward(y)
        z = (x * 2).sum()
        L.autograd.backward([z])                        # a list of one root
        assert x.grad.tolist() == [4.0, 6.0]


def test_scalar_backward_with_explicit_gradient_and_dtype_of_grads():
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward(L.tensor(3.0))
        assert x.grad.tolist() == [6.0, 12.0] and x.grad.dtype == L.float32
    for dt in (ember.float16, ember.float32):
        x = ember.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        (x * x).sum().backward()                               # the implicit ones has the output's dtype
        g, = ember.autograd.grad((x * x).sum(), x)
        assert x.grad.dtype == g.dtype == dt


def test_retain_graph_and_create_graph_on_the_general_path():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x                                             # non-scalar: backward takes gradient=
    y.backward(ember.ones(2), retain_graph=True)
    y.backward(ember.ones(2))
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(ember.ones(2))
    y = x * x
    y.backward(ember.ones(2), create_graph=True)          # create_graph retains the graph by default
    y.backward(ember.ones(2), create_graph=True)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(ember.ones(2), create_graph=True, retain_graph=False)
        y.backward(ember.ones(2))


def test_grad_mode_restored_when_backward_raises():
    x = ember.tensor([1.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward(create_graph=True)
    assert ember.is_grad_enabled()
    with ember.no_grad():
        with pytest.raises(RuntimeError):
            y.backward(create_graph=True)
        assert not ember.is_grad_enabled()


# ------------------------------------------------------------------ exact messages
AT = r" \(at \S+:\d+\)$"


def test_root_errors_name_the_call_and_the_line():
    x = ember.ones(2, 3, requires_grad=True)
    cases = [
        (lambda: (x * 2).backward(),
         r"^backward: grad can be implicitly created only for scalar outputs; the output has shape \(2, 3\): "
         r"pass `gradient=` of that shape" + AT),
        (lambda: (x[0, :2] * 2).backward(),           # two elements: not a scalar either
         r"^backward: grad can be implicitly created only for scalar outputs; the output has shape \(2,\)"),
        (lambda: (x * 2).backward(ember.ones(3)),
         r"^backward: gradient has shape \(3,\) but the output has shape \(2, 3\)" + AT),
        (lambda: ember.ones(2).sum().backward(),
         r"^backward: element 0 of tensors does not require grad and does not have a grad_fn \(did you "
         r"compute it under no_grad, or forget requires_grad=True\?\)" + AT),
        (lambda: ember.autograd.backward([x.sum()], [ember.ones(()), ember.ones(())]),
         r"^backward: got 2 gradients for 1 outputs" + AT),
        (lambda: ember.autograd.grad((x * 2), x),
         r"^grad: grad can be implicitly created only for scalar outputs"),
        (lambda: ember.autograd.grad(ember.ones(2).sum(), x),
         r"^grad: element 0 of tensors does not require grad"),
    ]
    for fn, pattern in cases:
        with pytest.raises(RuntimeError, match=pattern):
            fn()


def test_grad_input_errors_as_torch():
    msgs = {}
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        z = L.ones(1, requires_grad=True)
        c = L.ones(2)
        with pytest.raises(RuntimeError) as e1:
            L.autograd.grad((x * 2).sum(), [x, c])
        with pytest.raises(RuntimeError) as e2:
            L.autograd.grad((x * 2).sum(), [x, z])
        msgs[L.__name__] = (str(e1.value), str(e2.value))
    assert msgs["torch"] == ("One of the differentiated Tensors does not require grad",
                             "The differentiated Tensor at index 1 appears to not have been used in the graph. "
                             "Set allow_unused=True if this is the desired behavior.")
    assert msgs["ember"] == tuple("grad: " + m[0].lower() + m[1:] for m in msgs["torch"])


def test_grad_of_the_same_non_leaf_twice_and_no_reference_left_behind():
    import gc
    import weakref
    res = {}
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        gh = L.autograd.grad((h * h).sum(), [h, h])
        res[L.__name__] = [g.tolist() for g in gh]
    assert res["ember"] == res["torch"] == [[6.0, 12.0]] * 2
    # grad() marks a non-leaf input on its node while it runs; the mark must go, or the node would keep
    # its own output alive (a reference cycle only the garbage collector frees)
    gc.disable()
    try:
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        ember.autograd.grad((h * h).sum(), h)
        ref = weakref.ref(h)
        del h
        assert ref() is None
    finally:
        gc.enable()


# ------------------------------------------------------------------ grad modes: exceptions, decorators, nesting
MODES = {
    "no_grad": lambda L: L.no_grad(),
    "enable_grad": lambda L: L.enable_grad(),
    "set_grad_enabled(False)": lambda L: L.set_grad_enabled(False),
    "set_grad_enabled(True)": lambda L: L.set_grad_enabled(True),
    "inference_mode": lambda L: L.inference_mode(),
    "inference_mode(False)": lambda L: L.inference_mode(False),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_grad_modes_let_exceptions_through_and_restore(mode):
    for L in (ember, torch):
        for outer in (L.enable_grad, L.no_grad):
            with outer():
                before = (L.is_grad_enabled(), L.is_inference_mode_enabled())
                with pytest.raises(KeyError):
                    with MODES[mode](L):
                        raise KeyError("x")
                assert (L.is_grad_enabled(), L.is_inference_mode_enabled()) == before


@pytest.mark.parametrize("mode", list(MODES))
def test_grad_modes_inside_each_other_as_torch(mode):
    seen = {}
    for L in (ember, torch):
        rows = []
        for outer in ("no_grad", "inference_mode", "enable_grad"):
            with MODES[outer](L):
                with MODES[mode](L):
                    x = L.ones(2, requires_grad=True)
                    # inside inference mode torch records nothing even with grad re-enabled (its inference
                    # tensors); Ember has no inference tensors and records then: not compared
                    rec = None if outer == "inference_mode" else (x * 2).requires_grad
                    rows.append((L.is_grad_enabled(), L.is_inference_mode_enabled(), rec))
                rows.append((L.is_grad_enabled(), L.is_inference_mode_enabled()))
        seen[L.__name__] = rows
    assert seen["ember"] == seen["torch"]


@pytest.mark.parametrize("mode", list(MODES))
def test_grad_mode_decorators_keep_name_arguments_and_result(mode):
    for L in (ember, torch):
        @MODES[mode](L)
        def scaled(a, *, k):
            """doc"""
            return a * k, L.is_grad_enabled()

        x = L.ones(2, requires_grad=True)
        for outer in (L.enable_grad, L.no_grad):
            with outer():
                before = L.is_grad_enabled()
                y, inside = scaled(x, k=3)
                assert y.tolist() == [3.0, 3.0] and L.is_grad_enabled() == before
                assert inside == (mode in ("enable_grad", "set_grad_enabled(True)", "inference_mode(False)"))
                assert y.requires_grad == inside
        assert scaled.__name__ == "scaled" and scaled.__doc__ == "doc"


def test_set_grad_enabled_as_a_call_with_a_falsy_value():
    ember.set_grad_enabled(0)
    try:
        assert ember.is_grad_enabled() is False
    finally:
        ember.set_grad_enabled(True)
    assert ember.is_grad_enabled() is True


def test_bare_decorator_with_a_non_callable_argument():
    with pytest.raises(TypeError, match=r"^no_grad\(\) takes no arguments \(got 5\)$"):
        ember.no_grad(5)
    with pytest.raises(TypeError, match=r"^enable_grad\(\) takes no arguments \(got 'x'\)$"):
        ember.enable_grad("x")


# ------------------------------------------------------------------ retain_grad, hooks on several outputs, debug log
def test_retain_grad_accumulates_over_backwards_and_is_detached():
    res = {}
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        h.retain_grad()
        y = (h * h).sum()
        y.backward(retain_graph=True)
        y.backward()
        first = h.grad.tolist()
        # grad() w.r.t. the retained h: h's own node (freed above) is not needed and does not run, and
        # h.grad gets this gradient too (torch's retain_grad hook fires in grad() as well)
        gh, = L.autograd.grad((h * 3).sum(), h)
        res[L.__name__] = (first, h.grad.tolist(), h.grad.requires_grad, gh.tolist())
    assert res["ember"] == res["torch"] == ([8.0, 16.0], [11.0, 19.0], False, [3.0, 3.0])


def test_grad_runs_only_the_nodes_leading_to_its_inputs():
    res = {}
    for L in (ember, torch):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor([0.5, 1.0], requires_grad=True)
        b = w.exp()
        b.sum().backward()                          # frees Exp's saved output
        y = (a * b).sum()
        ga, = L.autograd.grad(y, a, retain_graph=True)  # does not go through the freed Exp
        with pytest.raises(RuntimeError, match="second time"):
            L.autograd.grad(y, w)                   # this one must
        c = a * 2
        d = c.exp()
        z = (d * c).sum()
        gc, gd = L.autograd.grad(z, [c, d], retain_graph=True)
        ga2, gd2 = L.autograd.grad(z, [a, d])       # both ends: the path through c still runs
        res[L.__name__] = [t.tolist() for t in (ga, gc, gd, ga2, gd2)]
    np.testing.assert_allclose(res["ember"], res["torch"], rtol=1e-6)


def test_hook_on_the_second_output_when_the_first_gets_no_gradient():
    res = {}
    for L in (ember, torch):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 3

        x = L.ones(2, requires_grad=True)
        a, b = Two.apply(x)
        seen = []
        def hook_a(g):                 # torch calls it with None here; Ember does not call it
            if g is not None:
                seen.append("a")
        a.register_hook(hook_a)
        b.register_hook(lambda g: seen.append("b") or g * 10)
        b.sum().backward()
        res[L.__name__] = (seen, x.grad.tolist())
    assert res["ember"] == res["torch"] == (["b"], [30.0, 30.0])


@pytest.mark.parametrize("level, logged", [(1, False), (2, True)])
def test_debug_level_2_logs_each_backward_node(monkeypatch, capsys, level, logged):
    from ember import _debug
    monkeypatch.setattr(_debug, "LEVEL", level)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x.exp() * 2).sum().backward()
    err = capsys.readouterr().err
    assert "ember: Exp((2,) float32) -> (2,) float32 at " in err       # level 1: each op, its output
    assert ("ember: backward Exp (forward at " in err) == logged
    assert ("ember: backward Mul (forward at " in err) == logged
    assert "(forward at ?)" not in err                                  # level 2 records forward lines


def test_inputs_without_grad_get_no_gradient():
    for L in (ember, torch):
        x = L.tensor([[1.0, 2.0]], requires_grad=True)
        c = L.tensor([[3.0], [4.0]])
        ((x * c).sum() + (c / x).sum() + (x @ c).sum() + (c - x).sum() + L.where(c > 3, x, c).sum()).backward()
        assert c.grad is None and x.grad is not None


def test_a_multi_output_node_that_gets_no_gradient_sends_none():
    # eigh's outputs both reach a backward that returns None: its node gets only Nones and must pass None on
    # (not run on zeros, which would give `a` a zero gradient)
    res = {}
    for lib in (torch, ember):
        class Drop(lib.autograd.Function):
            @staticmethod
            def forward(ctx, s):
                return s * 2

            @staticmethod
            def backward(ctx, g):
                return None

        a = lib.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=lib.float64, requires_grad=True)
        w, v = lib.linalg.eigh(a)
        (Drop.apply(w).sum() + Drop.apply(v).sum()).backward()
        res[lib.__name__] = a.grad
    assert res["torch"] is None and res["ember"] is None


def test_backward_create_graph_keeps_the_grads_graph():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # torch warns about the reference cycle
            (x * x).sum().backward(create_graph=True)
        assert x.grad.requires_grad and x.grad.grad_fn is not None, lib.__name__
        g, = (torch.autograd.grad if lib is torch else ember.autograd.grad)(x.grad.sum(), x)
        assert g.tolist() == [2.0, 2.0]


def test_the_first_backward_of_a_fresh_process():
    # the engine imports its Clone primitive on first use (ops imports the engine)
    code = ("import ember\nx = ember.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"
            "assert x.grad.tolist() == [3.0, 3.0], x.grad\n")
    root = os.path.dirname(os.path.dirname(ember.__file__))      # this ember (a mutation tester's copy too)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr


def test_create_graph_grad_does_not_share_memory_with_another_leafs():
    # Add passes one gradient array to both inputs: with create_graph Ember stored it as both .grads, and the
    # next in-place accumulation into x.grad changed w.grad too (torch clones: CopyBackwards)
    res = {}
    for lib in (torch, ember):
        x, w = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        g = lib.ones(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # torch warns about the reference cycle
            (x + w).sum().backward(create_graph=True)
            v = lib.ones(2, requires_grad=True)
            (v * 1).backward(g, create_graph=True)   # the caller's gradient= tensor
        (x * 1).sum().backward()
        (v * 1).sum().backward()
        res[lib.__name__] = (x.grad.tolist(), w.grad.tolist(), v.grad.tolist(), g.tolist())
    assert res["ember"] == res["torch"] == ([2.0, 2.0], [1.0, 1.0], [2.0, 2.0], [1.0, 1.0])


@pytest.mark.parametrize("cast", ["int", "long", "bool", "short", "char", "half", "double", "bfloat16"])
def test_only_floating_results_require_grad_as_torch(cast):
    # a cast to an integer dtype leaves the graph in torch: gradients never flow through .long()
    for lib in (torch, ember):
        x = lib.tensor([1.5, -2.0, 0.0], requires_grad=True)
        y = getattr(x * 2, cast)()
        want = cast in ("half", "double", "bfloat16")
        assert y.requires_grad is want and (y.grad_fn is not None) is want, (lib.__name__, cast)
        z = y.float() * x
        z.sum().backward()
        expect = [6.0, -8.0, 0.0] if want else [1.0, 1.0, 0.0] if cast == "bool" else [3.0, -4.0, 0.0]
        np.testing.assert_allclose(x.grad.tolist(), expect, err_msg=f"{lib.__name__} {cast}")


def test_grad_and_backward_take_inputs_as_torch_does():
    # MAML-style code passes `params.values()` or a dict of named parameters; torch 2.13 returns a dict then
    res = {}
    for L in (ember, torch):
        lin = L.nn.Linear(2, 1)
        with L.no_grad():
            lin.weight.copy_(L.tensor([[1.0, -2.0]]))
            lin.bias.fill_(0.5)
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]])
        params = dict(lin.named_parameters())
        g_dict = L.autograd.grad(lin(x).sum(), params)
        g_view = L.autograd.grad(lin(x).sum(), params.values())
        g_gen = L.autograd.grad(lin(x).sum(), (p for p in lin.parameters()), only_inputs=True)
        assert isinstance(g_dict, dict) and list(g_dict) == ["weight", "bias"]
        assert isinstance(g_view, tuple) and isinstance(g_gen, tuple)
        L.autograd.backward(lin(x).sum(), inputs={"b": lin.bias})
        res[L.__name__] = ([g.tolist() for g in g_dict.values()], [g.tolist() for g in g_view],
                           [g.tolist() for g in g_gen], lin.weight.grad, lin.bias.grad.tolist())
        for bad, exc, pattern in (([], RuntimeError, "`inputs` argument to `grad\\(\\)` cannot be empty"),
                                  (types.MappingProxyType(params), TypeError, "must be a dict, not mappingproxy")):
            with pytest.raises(exc, match=pattern):
                L.autograd.grad(lin(x).sum(), bad)
        with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
            lin(x).sum().backward(inputs=[])
        with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
            L.autograd.grad(lin(x).sum(), lin.bias, only_inputs=False)
        with pytest.warns(FutureWarning, match="grad_variables"):
            L.autograd.backward(lin(x).sum(), grad_variables=L.tensor(2.0), inputs=[lin.bias])
    assert res["ember"] == res["torch"]


def test_grad_materialize_grads_and_batched_grads_as_torch():
    res = {}
    for L in (ember, torch):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        unused = L.tensor([1.0], requires_grad=True)
        y = x ** 2
        gx, gu = L.autograd.grad(y.sum(), [x, unused], create_graph=True, materialize_grads=True)
        assert gu.requires_grad and gu.tolist() == [0.0]
        with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
            L.autograd.grad(y.sum(), [x, unused], materialize_grads=True, allow_unused=False)
        # rows of the identity: the whole Jacobian of y in one call
        (jac,) = L.autograd.grad(y, x, grad_outputs=L.eye(3), is_grads_batched=True, retain_graph=True)
        jac2, none = L.autograd.grad([y, x.sum()], [x, unused], grad_outputs=[L.eye(3), L.ones(3)],
                                     is_grads_batched=True, allow_unused=True)
        assert none is None
        res[L.__name__] = (gx.tolist(), jac.tolist(), jac2.tolist())
    assert res["ember"] == res["torch"]
