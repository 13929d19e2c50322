"""ember.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks, against torch."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd.graph import saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks


def _logging_hooks(lib, log):
    """Identity hooks that note each call with the tensor's element count (a weight may be saved
    transposed by one library and not the other: the count is the same)."""
    def pack(t):
        assert isinstance(t, lib.Tensor)
        log.append(("pack", t.numel()))
        return ("packed", t)

    def unpack(p):
        log.append(("unpack", p[1].numel()))
        return p[1]
    return pack, unpack


class _MulSave:
    """A custom Function saving an input and its own output; backward reads ctx.saved_tensors twice."""
    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        x, y = ctx.saved_tensors
        return g * y / x, g * x


class TorchMulSave(torch.autograd.Function):
    forward, backward = _MulSave.forward, _MulSave.backward


class EmberMulSave(ember.autograd.Function):
    forward, backward = _MulSave.forward, _MulSave.backward


def _mlp(lib, arrays, x_grad, **device):
    w1, b1, w2, b2, x = (lib.tensor(a, requires_grad=i < 4 or x_grad, **device) for i, a in enumerate(arrays))
    nnf = lib.nn.functional
    out = nnf.linear(lib.relu(nnf.linear(x, w1, b1)), w2, b2)
    return lib.tanh(out).sum(), (w1, b1, w2, b2, x)


def _conv(lib, arrays, x_grad):
    w, b, x = (lib.tensor(a, requires_grad=i < 2 or x_grad) for i, a in enumerate(arrays))
    y = lib.nn.functional.conv2d(x, w, b, padding=1)
    return lib.sigmoid(y).sum(), (w, b, x)


def _custom(lib, arrays, x_grad):
    x, w = (lib.tensor(a, requires_grad=i == 1 or x_grad) for i, a in enumerate(arrays))
    fn = TorchMulSave if lib is torch else EmberMulSave
    return (fn.apply(x, w) * 2).sum(), (x, w)


def _scalars(lib, arrays, x_grad):
    x, = (lib.tensor(a, requires_grad=True) for a in arrays)
    return ((x ** 3 * 3 / 2 - 1).exp() + x.sin() / 4).sum(), (x,)   # x ** 2 is x * x: two saves


def _linalg(name):
    def build(lib, arrays, x_grad):
        a, = (lib.tensor(x, requires_grad=True) for x in arrays)
        if name == "eigh":
            out = lib.linalg.eigh(a @ a.mT)[1]
        elif name == "qr":
            out = sum(lib.linalg.qr(a))
        else:
            out = lib.linalg.lu_factor(a)[0]
        return out.sum(), (a,)
    return build


_rng = np.random.default_rng(0)
CASES = {
    "mlp": (_mlp, [_rng.standard_normal(s) for s in [(5, 4), (5,), (3, 5), (3,), (2, 4)]]),
    "conv": (_conv, [_rng.standard_normal(s) for s in [(3, 2, 3, 3), (3,), (1, 2, 5, 5)]]),
    "scalars": (_scalars, [_rng.standard_normal(3)]),
    "eigh": (_linalg("eigh"), [_rng.standard_normal((3, 3))]),
    "qr": (_linalg("qr"), [_rng.standard_normal((3, 3))]),
    "lu_factor": (_linalg("lu_factor"), [_rng.standard_normal((3, 3))]),
    "custom": (_custom, [_rng.uniform(0.5, 2, (3,)), _rng.standard_normal(3)]),
}


@pytest.mark.parametrize("x_grad", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_pack_and_unpack_calls_match_torch(case, x_grad):
    build, arrays = CASES[case]
    logs, grads = {}, {}
    for lib in (torch, ember):
        log = logs[lib] = []
        with saved_tensors_hooks(*_logging_hooks(ember, log)) if lib is ember else \
                torch.autograd.graph.saved_tensors_hooks(*_logging_hooks(torch, log)):
            loss, leaves = build(lib, arrays, x_grad)
        log.append("backward")
        loss.backward()
        grads[lib] = [t.grad.detach().numpy() for t in leaves if t.requires_grad]
    assert logs[ember] == logs[torch]
    for e, t in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)


def test_save_on_cpu_with_batch_norm_and_attention(fake_cuda):
    # multi-output primitives: the outputs backward reads (batch statistics, attention weights) are saved too
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in [(4, 3, 2, 2), (2, 4, 8)]]
    grads = {}
    for lib, device in ((torch, "cpu"), (ember, "cuda")):
        x, q = (lib.tensor(a, requires_grad=True, device=device) for a in arrays)
        bn = lib.nn.BatchNorm2d(3).double().to(device)
        packed = []
        hooks = lib.autograd.graph.save_on_cpu()
        pack = hooks.pack_hook
        hooks.pack_hook = lambda t: packed.append(pack(t)) or packed[-1]
        with hooks:
            loss = bn(x).tanh().sum() + lib.nn.functional.scaled_dot_product_attention(q, q * 1, q * 1).sum()
        assert all(t.device.type == "cpu" for _, t in packed)
        if lib is ember:
            assert len(packed) == 9 and {d.type for d, _ in packed} == {"cuda"}   # torch: 12 (docs/internals.md)
        loss.backward()
        grads[lib] = [t.grad.cpu().numpy() for t in (x, q)]
    for e, t in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)


def test_hooks_change_what_backward_reads():
    # the packed value is what backward gets: doubling it doubles d(x*x)/dx's saved factor
    for lib, graph in ((torch, torch.autograd.graph), (ember, ember.autograd.graph)):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            (x * x).sum().backward()
        assert x.grad.tolist() == [4.0, 8.0]


def test_innermost_hooks_win_and_outer_come_back():
    log = []
    x = ember.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: log.append("p1") or t, lambda t: log.append("u1") or t):
        with saved_tensors_hooks(lambda t: log.append("p2") or t, lambda t: log.append("u2") or t):
            y = x * x
        z = y.exp()
    (y.sum() + z.sum()).backward()
    assert log == ["p2", "p2", "p1", "u1", "u2", "u2"]


def test_no_pack_without_a_graph():
    log = []
    with saved_tensors_hooks(lambda t: log.append(t) or t, lambda t: t):
        ember.ones(2) * ember.ones(2)
        with ember.no_grad():
            ember.ones(2, requires_grad=True).exp()
        EmberMulSave.apply(ember.ones(2), ember.ones(2))
    assert log == []


def test_unpack_must_return_a_tensor():
    x = ember.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: 1, lambda p: p):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
        y.backward()


def test_graph_is_freed_after_backward():
    x = ember.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_disable_saved_tensors_hooks_raises_torchs_error():
    for graph in (torch.autograd.graph, ember.autograd.graph):
        with graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            with graph.disable_saved_tensors_hooks("inner"):
                with pytest.raises(RuntimeError, match="inner"):
                    with graph.save_on_cpu():
                        pass
            with pytest.raises(RuntimeError, match="no hooks here"):   # the outer message is back
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):   # enabled again
            with pytest.raises(RuntimeError, match="while open"):    # disabling inside hooks raises
                with graph.disable_saved_tensors_hooks("while open"):
                    pass


def test_hooks_belong_to_the_thread():
    import threading
    log = []
    x = ember.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: log.append(t) or t, lambda t: t):
        th = threading.Thread(target=lambda: x * x)
        th.start()
        th.join()
    assert log == []


def test_save_on_cpu_moves_saved_tensors_and_backward_matches(fake_cuda):
    arrays = CASES["mlp"][1]
    loss_t, leaves_t = _mlp(torch, arrays, True)
    loss_t.backward()
    hooks = save_on_cpu()
    packed, pack = [], hooks.pack_hook
    hooks.pack_hook = lambda t: packed.append(pack(t)) or packed[-1]
    with hooks:
        loss, leaves = _mlp(ember, arrays, True, device="cuda")
    assert len(packed) == 6 and all(dev.type == "cuda" and t.device.type == "cpu" for dev, t in packed)
    loss.backward()
    for e, t in zip(leaves, leaves_t):
        assert e.grad.device.type == "cuda"
        np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_save_on_cpu_on_cpu_matches_torch():
    arrays = CASES["conv"][1]
    res = {}
    for lib in (torch, ember):
        with lib.autograd.graph.save_on_cpu(pin_memory=True):
            loss, leaves = _conv(lib, arrays, True)
        loss.backward()
        res[lib] = [t.grad.numpy() for t in leaves]
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


def test_grad_fn_name_is_torchs_method_and_embers_str():
    x, xt = ember.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert (x * 2).grad_fn.name() == (xt * 2).grad_fn.name() == "MulBackward0"
    assert (x * 2).grad_fn.name == "Mul"   # Ember's own uses (messages, profiler) read the str
    assert EmberMulSave.apply(x, x).grad_fn.name() == TorchMulSave.apply(xt, xt).grad_fn.name().replace(
        "Torch", "Ember")
    assert EmberMulSave.apply(x, x).grad_fn.name == "EmberMulSave"
    acc, acc_t = (x * 2).grad_fn.next_functions[0][0], (xt * 2).grad_fn.next_functions[0][0]
    assert acc.name() == acc_t.name() == "torch::autograd::AccumulateGrad" and acc.name == "AccumulateGrad"


def test_graph_module_is_lazy():
    import subprocess
    import sys
    code = "import sys, ember; print('ember.autograd.graph' in sys.modules); ember.autograd.graph.save_on_cpu"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("op", ["sin_", "exp_", "mul_"])
def test_save_on_cpu_with_an_inplace_op_matches_torch(op):
    # save_on_cpu keeps a CPU tensor itself: the in-place op's saved old value must be a copy
    grads = {}
    for lib in (torch, ember):
        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([3.0, -1.0, 0.5], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.save_on_cpu():
            y = x * 1
            getattr(y, op)(w) if op == "mul_" else getattr(y, op)()
            y.sum().backward()
        grads[lib] = [t.grad.numpy() for t in (x, w) if t.grad is not None]
    assert len(grads[ember]) == len(grads[torch])
    for e, t in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-12)
