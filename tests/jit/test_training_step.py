"""A whole training step compiled: after N compiled steps the parameters, buffers (BatchNorm running
stats), optimizer state and gradients equal N eager steps, bit for bit (the replay runs the same forwards,
and the fused kernels keep their ufunc loops and memory order); dropout draws fresh numbers every call and
the same ones as eager under manual_seed; a scheduler's rate changes between calls reach the step."""
import warnings

import numpy as np
import pytest

import ember
from tests.jit.models import make, step_fn

KINDS = ["mlp", "cnn", "lstm", "gpt"]


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
