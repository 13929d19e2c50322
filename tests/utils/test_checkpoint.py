"""ember.utils.checkpoint: activation checkpointing against torch.utils.checkpoint (values and the
gradients of inputs and parameters), and against the same Ember code run without checkpointing."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _block(lib, dropout=0.0):
    return lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.GELU(), lib.nn.Dropout(dropout), lib.nn.Linear(8, 4))


def _pair(dtype="float32", dropout=0.0):
    torch.manual_seed(0)
    t = _block(torch, dropout).to(getattr(torch, dtype))
    e = _block(ember, dropout).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(dtype)
    return t, e, torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)


def _grads(mod, x):
    return [x.grad.numpy()] + [p.grad.numpy() for p in mod.parameters()]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reentrant", [True, False])
def test_values_and_gradients_match_torch(dtype, reentrant):
    t, e, xt, xe = _pair(dtype)
    yt = torch.utils.checkpoint.checkpoint(t, xt, use_reentrant=reentrant)
    ye = ember.utils.checkpoint.checkpoint(e, xe, use_reentrant=reentrant)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal((5, 4)).astype(dtype)
    yt.backward(torch.tensor(g))
    ye.backward(ember.tensor(g))
    for a, b in zip(_grads(e, xe), _grads(t, xt)):
        np.testing.assert_allclose(a, b, **tol)
    assert ye.dtype == getattr(ember, dtype) and ye.requires_grad


def test_the_node_keeps_the_arguments_and_parameters_not_the_activations():
    _, e, _, xe = _pair()
    y = checkpoint(e, xe, use_reentrant=False)
    node = y.grad_fn
    assert type(node).__name__ == "_CheckpointBackward"
    kept = node.saved_tensors
    assert len(kept) == 1 + 4 and kept[0] is xe   # x, then the two Linears' weights and biases
    assert {id(t) for t in kept[1:]} == {id(p) for p in e.parameters()}
    parents = [p[0] for p in node.parents if p is not None and p[0] is not None]
    assert len(parents) == 5   # one edge per tensor: nothing of the inside of the block


@pytest.mark.parametrize("reentrant", [True, False])
def test_dropout_draws_the_same_masks_in_the_recomputation(reentrant):
    # gradients equal the plain run's: the RNG state of the first run is restored for the second
    _, e, _, xe = _pair(dropout=0.5)
    ember.manual_seed(3)
    y1 = e(xe)
    y1.sum().backward()
    plain = _grads(e, xe)
    e.zero_grad()
    xe.grad = None
    ember.manual_seed(3)
    y2 = checkpoint(e, xe, use_reentrant=reentrant)
    after = ember.rand(1)   # the draws after the checkpoint are not moved by the recomputation
    y2.sum().backward()
    np.testing.assert_array_equal(y2.detach().numpy(), y1.detach().numpy())
    for a, b in zip(_grads(e, xe), plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    ember.manual_seed(3)
    e(xe)
    assert ember.rand(1).item() == after.item()
    # preserve_rng_state=False: the recomputation draws new masks, so the gradients differ
    e.zero_grad()
    xe.grad = None
    ember.manual_seed(3)
    checkpoint(e, xe, use_reentrant=reentrant, preserve_rng_state=False).sum().backward()
    assert not np.allclose(_grads(e, xe)[1], plain[1])


def test_autograd_grad_towards_parameters_and_double_backward():
    t, e, xt, xe = _pair("float64")
    ye = checkpoint(e, xe, use_reentrant=False)
    yt = torch.utils.checkpoint.checkpoint(t, xt, use_reentrant=False)
    gw_e, = ember.autograd.grad(ye.pow(2).sum(), e[0].weight)
    gw_t, = torch.autograd.grad(yt.pow(2).sum(), t[0].weight)
    np.testing.assert_allclose(gw_e.numpy(), gw_t.numpy(), rtol=1e-10)
    assert e[0].weight.grad is None   # autograd.grad touches no .grad
    # a gradient penalty through the checkpointed block: d/dW |dy/dx|^2
    ye = checkpoint(e, xe, use_reentrant=False)
    yt = torch.utils.checkpoint.checkpoint(t, xt, use_reentrant=False)
    gx_e, = ember.autograd.grad(ye.sum(), xe, create_graph=True)
    gx_t, = torch.autograd.grad(yt.sum(), xt, create_graph=True)
    gx_e.pow(2).sum().backward()
    gx_t.pow(2).sum().backward()
    np.testing.assert_allclose(e[0].weight.grad.numpy(), t[0].weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_parameters_get_gradients_when_no_argument_requires_grad():
    t, e, xt, xe = _pair()
    xt, xe = xt.detach(), xe.detach()
    # use_reentrant=False: the parameters' gradients flow (torch's behaviour)
    checkpoint(e, xe, use_reentrant=False).sum().backward()
    torch.utils.checkpoint.checkpoint(t, xt, use_reentrant=False).sum().backward()
    np.testing.assert_allclose(e[0].weight.grad.numpy(), t[0].weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    # use_reentrant=True: as torch, a warning and an output that does not require grad
    for lib, fn, mod, x in ((torch, torch.utils.checkpoint.checkpoint, t, xt), (ember, checkpoint, e, xe)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = fn(mod, x, use_reentrant=True)
        assert not y.requires_grad, lib.__name__


def test_warnings_and_argument_errors_as_torch():
    _, e, _, xe = _pair()
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(e, xe)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential(e, 2, xe)
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            lib.utils.checkpoint.checkpoint(lambda a, scale: a * scale, x, use_reentrant=True, scale=2.0)
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            lib.utils.checkpoint.checkpoint(lambda a: a * 2, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be 'default' or 'none'"):
        checkpoint(e, xe, use_reentrant=False, determinism_check="strict")
    with pytest.raises(ValueError, match=r"segments must be an int from 1 to the number of functions \(4\)"):
        checkpoint_sequential(e, 5, xe, use_reentrant=False)


def test_keyword_arguments_non_tensors_and_structured_outputs():
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3, requires_grad=True)

    def f(a, k, *, shift):
        return {"y": (a * w + shift) * k, "pair": (a.sin(), a.argmax()), "n": 7}

    out = checkpoint(f, x, 2.0, shift=1.0, use_reentrant=False)
    assert out["n"] == 7 and out["pair"][1].dtype == ember.int64 and not out["pair"][1].requires_grad
    (out["y"].sum() + out["pair"][0].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), (2 * w + x.cos()).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), (2 * x).detach().numpy(), rtol=1e-6)


def test_a_recomputation_that_differs_is_an_error():
    calls = []

    def f(a):
        calls.append(1)
        return a * 2 if len(calls) == 1 else a.repeat(2)

    x = ember.ones(3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match=r"recomputation gave outputs \[\(\(6,\), ember.float32"):
        y.sum().backward()


def test_autocast_is_restored_for_the_recomputation():
    _, e, _, xe = _pair()
    with ember.autocast("cpu"):
        plain = e(xe)
    plain.float().sum().backward()
    want = _grads(e, xe)
    e.zero_grad()
    xe.grad = None
    with ember.autocast("cpu"):
        y = checkpoint(e, xe, use_reentrant=False)
    assert y.dtype == ember.bfloat16
    y.float().sum().backward()   # outside autocast: the recomputation must still run in bfloat16
    for a, b in zip(_grads(e, xe), want):
        np.testing.assert_array_equal(a, b)


def test_under_no_grad_it_just_runs():
    _, e, _, xe = _pair()
    with ember.no_grad():
        y = checkpoint(e, xe, use_reentrant=False)
    assert y.grad_fn is None and not y.requires_grad


@pytest.mark.parametrize("segments", [1, 2, 4])
def test_checkpoint_sequential_matches_torch(segments):
    t, e, xt, xe = _pair("float64")
    yt = torch.utils.checkpoint.checkpoint_sequential(t, segments, xt, use_reentrant=False)
    ye = checkpoint_sequential(e, segments, xe, use_reentrant=False)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    yt.sum().backward()
    ye.sum().backward()
    for a, b in zip(_grads(e, xe), _grads(t, xt)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # the last segment runs plainly: its output's node is the last layer's, not a checkpoint's
    assert type(ye.grad_fn).__name__ != "_CheckpointBackward"


def test_nested_checkpoints():
    _, e, _, xe = _pair("float64")
    e(xe).sum().backward()
    want = _grads(e, xe)
    e.zero_grad()
    xe.grad = None
    inner = lambda a: checkpoint(e[1], e[0](a), use_reentrant=False)  # noqa: E731
    y = checkpoint(lambda a: e[3](e[2](inner(a))), xe, use_reentrant=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.sum().backward()
    for a, b in zip(_grads(e, xe), want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_compiled_training_step_with_a_checkpoint_equals_eager():
    def make():
        ember.manual_seed(0)
        m = _block(ember, dropout=0.3)
        return m, ember.optim.SGD(m.parameters(), lr=0.1)

    def step(m, opt, x):
        opt.zero_grad()
        loss = checkpoint(m, x, use_reentrant=False).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    x = ember.randn(5, 6)
    (m1, o1), (m2, o2) = make(), make()
    ember.manual_seed(1)
    eager = [step(m1, o1, x).item() for _ in range(4)]
    ember.manual_seed(1)
    compiled = ember.compile(step)
    got = [compiled(m2, o2, x).item() for _ in range(4)]
    assert compiled.cache_info()["hits"] >= 2
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    for a, b in zip(m2.parameters(), m1.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_the_planner_sees_the_activations_saved_and_the_work_added():
    # the dry run on meta (ember.planner) runs checkpoint as it is: what the graph keeps for the
    # backward falls to the blocks' inputs, and each block's forward is counted twice
    from ember.planner.dryrun import dry_run_step

    class Net(ember.nn.Module):
        def __init__(self, ck):
            super().__init__()
            self.ck = ck
            self.blocks = ember.nn.ModuleList(
                [ember.nn.Sequential(ember.nn.Linear(64, 256), ember.nn.GELU(), ember.nn.Linear(256, 64))
                 for _ in range(3)])

        def forward(self, x):
            for b in self.blocks:
                x = checkpoint(b, x, use_reentrant=False) if self.ck else b(x)
            return x

    plain, ck = dry_run_step(Net(False), (64,), 32), dry_run_step(Net(True), (64,), 32)
    assert ck.saved < plain.saved / 4
    # forward 3 * 2 * 64 * 256 MACs per row, backward twice that: recomputing adds a quarter of forward+backward
    fwd = 32 * 3 * 2 * 64 * 256
    assert ck.step_macs - plain.step_macs == fwd


@pytest.mark.parametrize("name", ["ember.utils.checkpoint", "ember.backends.cudnn", "ember.backends.mps"])
def test_docstrings_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
