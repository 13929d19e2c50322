"""functional_call (ember/nn/utils/stateless.py, ember/func.py), fuse_conv_bn_eval / fuse_linear_bn_eval
(ember/nn/utils/fusion.py) and skip_init (ember/nn/utils/init.py), against torch."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import check_op

warnings.filterwarnings("ignore", message=".*stateless.functional_call.* is deprecated", category=FutureWarning)


def _net(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(4, 5), L.nn.BatchNorm1d(5), L.nn.Tanh(), L.nn.Linear(5, 2))


NAMES = ["0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"]


@pytest.mark.parametrize("api", ["func", "stateless"])
def test_functional_call_values_and_gradients(api):
    # the given tensors replace the module's own for the call; gradients flow to them, and the BatchNorm's
    # running stats (buffers, not given) are updated in place as torch's
    def fn(L, x, *params):
        m = _net(L).to(device=x.device, dtype=x.dtype)
        call = L.func.functional_call if api == "func" else L.nn.utils.stateless.functional_call
        out = call(m, dict(zip(NAMES, params)), (x,))
        return out, tuple(b.detach() for b in m.buffers())
    shapes = [(5, 4), (5, 4), (5,), (5,), (5,), (2, 5), (2,)]
    check_op(fn, *shapes)


def test_functional_call_leaves_the_module_as_it_was_and_takes_buffers_and_kwargs():
    m = ember.nn.Linear(3, 2)
    w, b = m.weight, m.bias
    x = ember.randn(4, 3)
    new_w = ember.ones(2, 3, requires_grad=True)
    out = ember.func.functional_call(m, {"weight": new_w}, x)          # one non-tuple arg
    np.testing.assert_allclose(out.detach().numpy(), (x.sum(1, keepdim=True) + b).detach().numpy(), rtol=1e-6)
    assert m.weight is w and m.bias is b and m._parameters["weight"] is w
    out.sum().backward()
    assert new_w.grad is not None and w.grad is None
    bn = ember.nn.BatchNorm1d(3).eval()
    y = ember.func.functional_call(bn, ({"running_mean": ember.ones(3)}, {"running_var": ember.ones(3) * 4}), (x,))
    np.testing.assert_allclose(y.detach().numpy(), ((x - 1) / (4 + 1e-5) ** 0.5).numpy(), rtol=1e-5)
    assert float(bn.running_mean.abs().sum()) == 0

    class K(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3)

        def forward(self, x, *, scale=1.0):
            return self.lin(x) * scale

    k = K()
    out = ember.func.functional_call(k, {"lin.bias": ember.zeros(3)}, (x,), {"scale": 0.0})
    assert float(out.abs().sum()) == 0


def test_functional_call_tied_weights_and_strict_as_torchs():
    def tied(L):
        a, b = L.nn.Linear(3, 3, bias=False), L.nn.Linear(3, 3, bias=False)
        b.weight = a.weight
        with L.no_grad():
            a.weight.copy_(L.tensor(np.arange(9.0).reshape(3, 3) / 9 - 0.5, dtype=L.float32))
        return L.nn.Sequential(a, b)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    eye = np.eye(3, dtype=np.float32) * 2
    for tie in (True, False):
        outs = []
        for L in (torch, ember):
            m = tied(L)
            outs.append(L.func.functional_call(m, {"0.weight": L.tensor(eye)}, (L.tensor(x),), tie_weights=tie)
                        .detach().numpy())
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys \['0.weight', '1.weight'\], "
                                         r"which are tied. Consider using tie_weights=False"):
        ember.func.functional_call(tied(ember), {"0.weight": ember.ones(3, 3), "1.weight": ember.zeros(3, 3)},
                                   (ember.zeros(1, 3),))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Linear:\n\tUnexpected key\(s\): "
                                           r"'w'.\n\tMissing key\(s\): 'bias', 'weight'."):
        ember.func.functional_call(ember.nn.Linear(2, 2), {"w": ember.zeros(2)}, (ember.zeros(1, 2),), strict=True)
    with pytest.raises(ValueError, match=r"\['weight'\] appeared in multiple dictionaries; behavior of functional "
                                         r"call is ambiguous"):
        ember.func.functional_call(ember.nn.Linear(2, 2), [{"weight": ember.zeros(2, 2)}] * 2, (ember.zeros(1, 2),))
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts"):
        ember.func.functional_call(ember.nn.Linear(2, 2), 3, (ember.zeros(1, 2),))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        ember.func.functional_call(ember.nn.Linear(2, 2), [3], (ember.zeros(1, 2),))
    m = ember.nn.Linear(2, 2)
    with pytest.raises(RuntimeError):   # an error inside the call still puts the weights back
        ember.func.functional_call(m, {"weight": ember.zeros(5, 5)}, (ember.zeros(1, 2),))
    assert m.weight.shape == (2, 2) and type(m.weight) is ember.nn.Parameter


CONV_BN = [
    ("conv2d", lambda L: L.nn.Conv2d(3, 4, 3, padding=1), lambda L: L.nn.BatchNorm2d(4), (2, 3, 5, 5), False),
    ("conv1d_nobias", lambda L: L.nn.Conv1d(3, 4, 3, bias=False), lambda L: L.nn.BatchNorm1d(4), (2, 3, 6), False),
    ("convT2d", lambda L: L.nn.ConvTranspose2d(3, 4, 3), lambda L: L.nn.BatchNorm2d(4), (2, 3, 4, 4), True),
    ("bn_noaffine", lambda L: L.nn.Conv2d(3, 4, 1), lambda L: L.nn.BatchNorm2d(4, affine=False), (1, 3, 2, 2),
     False),
]


@pytest.mark.parametrize("conv,bn,shape,transpose", [c[1:] for c in CONV_BN], ids=[c[0] for c in CONV_BN])
def test_fuse_conv_bn_eval(conv, bn, shape, transpose):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    outs = {}
    for L in (torch, ember):
        torch.manual_seed(0)
        c, b = conv(L), bn(L)
        if L is ember:   # same weights and statistics as torch's
            c.load_state_dict({k: v.numpy() for k, v in tc.state_dict().items()})
            b.load_state_dict({k: v.numpy() for k, v in tb.state_dict().items()})
        else:
            with torch.no_grad():
                b.running_mean.copy_(torch.tensor(rng.standard_normal(4)))
                b.running_var.copy_(torch.tensor(rng.uniform(0.5, 2, 4)))
                if b.weight is not None:
                    b.weight.copy_(torch.tensor(rng.standard_normal(4)))
                    b.bias.copy_(torch.tensor(rng.standard_normal(4)))
            tc, tb = c, b
        c.eval(), b.eval()
        fused = L.nn.utils.fuse_conv_bn_eval(c, b, transpose=transpose)
        assert type(fused) is type(c) and fused is not c
        outs[L] = [fused(L.tensor(x, dtype=L.float32)).detach().numpy(), b(c(L.tensor(x, dtype=L.float32))).detach().numpy(),
                   fused.weight.detach().numpy(), fused.bias.detach().numpy()]
    for a, b in zip(outs[ember], outs[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[ember][0], outs[ember][1], rtol=1e-5, atol=1e-5)   # fused == bn(conv(x))
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        ember.nn.utils.fuse_conv_bn_eval(conv(ember), bn(ember))


def test_fuse_linear_bn_eval():
    lin, bn = ember.nn.Linear(3, 4).eval(), ember.nn.BatchNorm1d(4)
    bn(ember.randn(8, 4) * 3 + 1)
    bn.eval()
    x = ember.randn(5, 3)
    fused = ember.nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    w, b = ember.nn.utils.fuse_linear_bn_weights(lin.weight, lin.bias, bn.running_mean, bn.running_var, bn.eps,
                                                 bn.weight, bn.bias)
    np.testing.assert_allclose(w.detach().numpy(), fused.weight.detach().numpy())
    w, b = ember.nn.utils.fuse_conv_bn_weights(lin.weight, None, bn.running_mean, bn.running_var, bn.eps, None, None)
    assert type(w) is ember.nn.Parameter and b.shape == (4,)


def test_skip_init_as_torchs():
    m = ember.nn.utils.skip_init(ember.nn.Linear, 5, 3, bias=False)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 5, 3, bias=False)
    assert type(m) is ember.nn.Linear and m.weight.shape == tuple(t.weight.shape) and m.bias is None
    assert m.weight.device == ember.device("cpu") and type(m.weight) is ember.nn.Parameter
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        ember.nn.utils.skip_init(ember.nn.ReLU)
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        ember.nn.utils.skip_init(int)
