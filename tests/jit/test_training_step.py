"""A whole training step compiled: after N compiled steps the parameters, buffers (BatchNorm running
stats), optimizer state and gradients equal N eager steps, bit for bit (the replay runs the same forwards,
and the fused kernels keep their ufunc loops and memory order); dropout draws fresh numbers every call and
the same ones as eager under manual_seed; a scheduler's rate changes between calls reach the step."""
import warnings

import numpy as np
import pytest

import ember
from tests.jit.models import make, step_fn

KINDS = ["mlp", "cnn", "lstm", "gpt", "zoo_gpt"]


def _run(kind, compiled, n=5, sched=True):
    model, opt, x, y = make(kind)
    s = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) if sched else None
    step = step_fn(model, opt)
    if compiled:
        step = ember.compile(step)
    losses = []
    ember.manual_seed(123)   # dropout's stream, the same for both runs
    for _ in range(n):
        losses.append(step(x, y).item())
        if s is not None:
            s.step()
    return model, opt, losses, step


@pytest.mark.parametrize("kind", KINDS)
def test_n_compiled_steps_equal_n_eager_steps(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a training loop compiles without a retrace warning
        m1, o1, l1, step = _run(kind, True)
    m0, o0, l0, _ = _run(kind, False)
    assert step.cache_info()["hits"] >= 3
    np.testing.assert_allclose(l1, l0, rtol=1e-5, atol=1e-6)
    for (name, p0), (_, p1) in zip(m0.named_parameters(), m1.named_parameters()):
        np.testing.assert_allclose(p1.detach().numpy(), p0.detach().numpy(), rtol=0, atol=0, err_msg=name)
        np.testing.assert_allclose(p1.grad.numpy(), p0.grad.numpy(), rtol=0, atol=0, err_msg=name)
    for (name, b0), (_, b1) in zip(m0.named_buffers(), m1.named_buffers()):
        np.testing.assert_allclose(b1.numpy(), b0.numpy(), rtol=0, atol=0, err_msg=name)
    for p0, p1 in zip(m0.parameters(), m1.parameters()):
        for k in o0.state[p0]:
            np.testing.assert_allclose(o1.state[p1][k].numpy(), o0.state[p0][k].numpy(), rtol=1e-5, atol=1e-6)


NEWER_OPTIMIZERS = [("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)), ("NAdam", dict(weight_decay=0.1)),
                    ("RAdam", dict()),   # rho_t > 5 from step 6: both of its updates within the 8 steps
                    ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)), ("Adamax", dict(weight_decay=0.1)),
                    ("ASGD", dict(t0=3, lambd=0.01)),   # the average copies the weights, then blends them in
                    ("Rprop", dict())]


@pytest.mark.parametrize("name,kwargs", NEWER_OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NEWER_OPTIMIZERS)])
def test_compiled_steps_with_the_newer_optimizers_equal_eager(name, kwargs):
    # their step-dependent factors (bias corrections, RAdam's rectification, NAdam's mu product, ASGD's eta
    # and mu) are computed from state tensors, so one replayed graph serves every step, the scheduler's too
    def run(compiled):
        model, _, x, y = make("mlp")
        opt = getattr(ember.optim, name)(model.parameters(), lr=1e-2, **kwargs)
        sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        step = step_fn(model, opt)
        if compiled:
            step = ember.compile(step)
        ember.manual_seed(123)
        losses = []
        for _ in range(8):
            losses.append(step(x, y).item())
            sched.step()
        return model, opt, losses, step

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m1, o1, l1, step = run(True)
    m0, o0, l0, _ = run(False)
    assert step.cache_info()["hits"] >= 6
    assert l1 == l0
    for (pname, p0), (_, p1) in zip(m0.named_parameters(), m1.named_parameters()):
        np.testing.assert_array_equal(p1.detach().numpy(), p0.detach().numpy(), err_msg=pname)
        for key, value in o0.state[p0].items():
            np.testing.assert_array_equal(o1.state[p1][key].numpy(), value.numpy(), err_msg=f"{pname} {key}")
    assert o1.state[next(m1.parameters())]["step"].item() == 8


def test_dropout_is_fresh_every_call_and_reproducible():
    model, opt, x, y = make("mlp")
    model.eval()
    model[2].train()     # only the dropout draws
    f = ember.compile(lambda x: model(x))
    outs = [f(x).detach().numpy().copy() for _ in range(4)]
    assert f.cache_info()["hits"] == 3
    assert not np.array_equal(outs[2], outs[3])       # a replay draws new numbers
    ember.manual_seed(7)
    a = f(x).detach().numpy().copy()
    ember.manual_seed(7)
    b = model(x).detach().numpy()                       # eager, same seed: the same mask
    np.testing.assert_array_equal(a, b)


def test_rng_state_advances_like_eager():
    model, opt, x, y = make("mlp")
    f = ember.compile(lambda x: model(x))
    ember.manual_seed(3)
    for _ in range(3):
        f(x)
    after_compiled = ember.default_generator._offset
    ember.manual_seed(3)
    for _ in range(3):
        model(x)
    assert ember.default_generator._offset == after_compiled


def test_scheduler_between_calls_changes_the_rate():
    """The learning rate is a state input: halving it between calls halves the SGD update."""
    w = ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    s = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    @ember.compile
    def step():
        opt.zero_grad()
        (w * w).sum().backward()     # grad 2w
        opt.step()
    vals = []
    for _ in range(4):
        before = w.detach().numpy().copy()
        step()
        vals.append((before - w.detach().numpy())[0] / (2 * before[0]))
        s.step()
    np.testing.assert_allclose(vals, [0.1, 0.05, 0.025, 0.0125], rtol=1e-5)


def test_scheduler_inside_the_step_is_not_silently_frozen():
    w = ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    s = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        s.step()
    f = ember.compile(step)
    with pytest.warns(UserWarning, match="lr.*side effects are not replayed"):
        f()
    w0 = ember.ones(3, requires_grad=True)
    opt0 = ember.optim.SGD([w0], lr=0.1)
    s0 = ember.optim.lr_scheduler.StepLR(opt0, step_size=1, gamma=0.5)
    for _ in range(3):
        opt0.zero_grad(); (w0 * w0).sum().backward(); opt0.step(); s0.step()
    f(); f()
    np.testing.assert_allclose(w.detach().numpy(), w0.detach().numpy())
    with pytest.raises(ember.jit.GuardError, match="side effects"):
        ember.compile(step, strict=True)()


def test_compiled_outputs_match_eager_inference():
    model, opt, x, y = make("gpt")
    model.eval()
    f = ember.compile(model)
    with ember.no_grad():
        ref = model(x).numpy()
        f(x)
        out = f(x)
    assert f.cache_info()["hits"] == 1
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)


def _split_run(compiled, accum, opt_name, clip):
    """Backward and the update compiled as two functions (a trainer with gradient accumulation):
    the gradients live in the parameters' `.grad` slots between the calls, and `zero_grad(set_to_none=True)`
    empties them; losses and parameters after 4 steps."""
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2))
    name, _, option = opt_name.partition("-")
    opt = getattr(ember.optim, name)(m.parameters(), lr=0.1, **({option: True} if option else {}))

    def micro(x, y):
        loss = ((m(x) - y) ** 2).mean()
        (loss / accum).backward()
        return loss.detach()

    def update():
        if clip:
            ember.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
        opt.zero_grad(set_to_none=True)
    if compiled:
        micro, update = ember.compile(micro), ember.compile(update)
    g = ember.Generator().manual_seed(1)
    losses = []
    for _ in range(4):
        for _ in range(accum):
            losses.append(float(micro(ember.randn(5, 3, generator=g), ember.randn(5, 2, generator=g))))
        update()
        assert all(p.grad is None for p in m.parameters())
    return losses, [p.detach().numpy().copy() for p in m.parameters()], micro, update


@pytest.mark.parametrize("accum", [1, 2])
@pytest.mark.parametrize("opt_name,clip", [("SGD", False), ("AdamW", True), ("Adam-amsgrad", False),
                                           ("NAdam-decoupled_weight_decay", True), ("RAdam", False),
                                           ("Adamax", False), ("ASGD", True), ("Rprop", False)])
def test_backward_and_update_compiled_apart_equal_eager(accum, opt_name, clip):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the retraces while the gradients and Adam's state appear
        l0, p0, _, _ = _split_run(False, accum, opt_name, clip)
        l1, p1, micro, update = _split_run(True, accum, opt_name, clip)
    assert l1 == l0
    for a, b in zip(p1, p0):
        np.testing.assert_array_equal(a, b)
    assert micro.cache_info()["hits"] >= 4 * accum - 2 and update.cache_info()["hits"] >= 2


def test_a_loose_leaf_gets_its_gradient_from_a_compiled_backward():
    w = ember.ones(2, requires_grad=True)      # no module, no optimizer: found in the closure
    opt = ember.optim.SGD([w], lr=0.1)

    @ember.compile
    def backward(x):
        (w * x).sum().backward()

    @ember.compile
    def update():
        opt.step()
        opt.zero_grad(set_to_none=True)
    for i in range(3):
        backward(ember.tensor([1.0 + i, 2.0]))
        np.testing.assert_array_equal(w.grad.numpy(), [1.0 + i, 2.0])
        update()
        assert w.grad is None
    np.testing.assert_allclose(w.detach().numpy(), [1 - 0.1 * (1 + 2 + 3), 1 - 0.1 * 6], rtol=1e-6)
    assert backward.cache_info()["hits"] == 2 and update.cache_info()["hits"] == 2


def test_a_gradient_of_an_argument_runs_eagerly_with_a_warning():
    @ember.compile
    def f(x):
        (x * x).sum().backward()
    x = ember.full((3,), 1.0, requires_grad=True)
    with pytest.warns(UserWarning, match=r"x\.grad"):
        f(x)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0] * 3)
    for v in (2.0, 3.0):     # then eager, without a retrace and without holding the old argument
        x = ember.full((3,), v, requires_grad=True)
        f(x)
        np.testing.assert_array_equal(x.grad.numpy(), [2 * v] * 3)   # each call's own argument
    info = f.cache_info()
    assert (info["traces"], info["eager_calls"], f.loose) == (1, 2, [])


def test_embedding_bounds_check_does_not_retrace_per_batch():
    emb = ember.nn.Embedding(10, 3)

    @ember.compile
    def f(idx):
        return emb(idx).sum()
    g = ember.Generator().manual_seed(0)
    for _ in range(4):
        idx = ember.randint(0, 10, (6,), generator=g)
        assert f(idx).item() == pytest.approx(float(emb(idx).sum()), rel=1e-6)
    assert f.cache_info()["traces"] == 1
    with pytest.raises(IndexError, match=r"embedding.*\[0, 10\).*\[0, 12\]"), \
            pytest.warns(UserWarning, match="retracing"):      # another shape: a new trace, which raises
        f(ember.tensor([0, 12, 3]))


# --- replay contracts mutation testing found untested (docs/testing.md, "jit") -------------------------

def test_rebinding_data_inside_the_step_is_replayed():
    """`p.data = ...` (an old-style manual update) rebinds a parameter's array during the call; each
    replay reads the array the tensor holds then and rebinds it again (it used to read the array of the
    trace: the same loss every call, and the parameters updated once)."""
    w = ember.ones(3, requires_grad=True)     # a loose leaf in the closure, and a module's parameters

    def run(compiled):
        ember.manual_seed(0)
        m = ember.nn.Linear(3, 2)
        w.data = ember.ones(3)

        def step(x):
            loss = m(x * w).pow(2).sum()
            loss.backward()
            for p in (*m.parameters(), w):
                p.data = p.data - 0.01 * p.grad
                p.grad = None
            return loss
        f = ember.compile(step) if compiled else step
        x = ember.ones(4, 3)
        losses = [f(x).item() for _ in range(4)]
        return losses, [p.detach().numpy().copy() for p in (*m.parameters(), w)]
    (le, pe), (lc, pc) = run(False), run(True)
    assert len(set(le)) == 4
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_replayed_outputs_keep_their_structure():
    """Tuples, lists, dicts, read Python values and None come back from every replay as from eager."""
    lin = ember.nn.Linear(2, 2)

    def f(x):
        y = lin(x)
        return (y, [y.sum(), {"m": y.mean(), "n": None}], y.max().item(), 3)
    g = ember.compile(f)
    for v in (1.0, 2.0, 3.0):
        x = ember.full((2, 2), v)
        e, c = f(x), g(x)
        assert type(c) is tuple and type(c[1]) is list and type(c[1][1]) is dict
        np.testing.assert_allclose(c[0].detach().numpy(), e[0].detach().numpy(), rtol=1e-6)
        assert c[1][0].item() == pytest.approx(e[1][0].item(), rel=1e-6)
        assert c[1][1]["m"].item() == pytest.approx(e[1][1]["m"].item(), rel=1e-6)
        assert c[1][1]["n"] is None and c[3] == 3
        assert isinstance(c[2], float) and c[2] == pytest.approx(e[2], rel=1e-6)
    assert g.cache_info().hits == 2


def test_a_tensor_made_inside_and_written_in_place_starts_fresh_every_call():
    def f(x):
        buf = ember.tensor([0.0, 0.0, 0.0])   # from Python data: a constant of the graph
        buf.add_(x)
        return buf * 2
    g = ember.compile(f)
    x = ember.ones(3)
    assert [g(x).tolist() for _ in range(3)] == [[2.0, 2.0, 2.0]] * 3


def test_a_tensor_made_inside_written_and_returned_is_each_calls_own():
    # alive after the call (returned, or through a returned view), it was taken for state the caller
    # holds: every replay wrote into the first call's tensor, [0, 10, 10, 0] for all four calls
    def scatter(x):
        out = ember.zeros(4)
        out[1:3] += x
        return out

    def through_view(x):
        c = ember.ones(3)
        d = c.reshape(3)
        d.add_(x)
        return d
    for fn, want in ((scatter, lambda i: [0.0, i, i, 0.0]), (through_view, lambda i: [1.0 + i] * 3)):
        g = ember.compile(fn)
        outs = [g(ember.ones(2 if fn is scatter else 3) * i) for i in range(1, 5)]
        assert [o.tolist() for o in outs] == [want(i) for i in range(1, 5)], fn.__name__
        assert g.cache_info().hits == 3


def test_a_tensor_made_inside_written_and_kept_on_an_object_is_each_calls_own():
    class Holder:
        pass
    h = Holder()

    def f(x):
        h.buf = ember.zeros(3)   # made by the call, written, not returned: rebound by every replay
        h.buf.add_(x)
        return x.sum()
    g = ember.compile(f)
    seen = []
    for i in range(1, 4):
        g(ember.ones(3) * i)
        seen.append(h.buf.tolist())
    assert seen == [[1.0] * 3, [2.0] * 3, [3.0] * 3] and g.cache_info().hits == 2


def test_an_eager_entry_gets_the_keyword_arguments():
    @ember.compile
    def f(x, *, scale):
        (x * x).sum().backward()     # an argument's gradient: this signature runs eagerly
        return x.grad * scale
    with pytest.warns(UserWarning, match=r"x\.grad"):
        f(ember.full((2,), 1.0, requires_grad=True), scale=ember.tensor(1.0))
    out = f(ember.full((2,), 1.0, requires_grad=True), scale=ember.tensor(5.0))
    assert out.tolist() == [10.0, 10.0]
    assert f.cache_info()["eager_calls"] == 1


def test_a_computed_tensor_kept_on_an_object_is_updated_by_every_replay():
    class Holder:
        pass
    h = Holder()

    def f(x):
        h.last = x * 2          # not returned: an escape, rebound to each call's value
        return x.sum()
    g = ember.compile(f)
    for v in (1.0, 2.0, 3.0):
        g(ember.full((2,), v))
        assert h.last.tolist() == [2 * v, 2 * v]
    assert g.cache_info().hits == 2
