"""Lazy modules (ember/nn/lazy.py, LazyLinear, LazyConv*, LazyBatchNorm*, LazyInstanceNorm*) and
UninitializedParameter / UninitializedBuffer (ember/nn/parameter.py), against torch."""
import copy
import math
import pickle

import numpy as np
import pytest
import torch

import ember
from helpers import raises_exactly
from .nn_helpers import check_module


def _dry(module, lib, shape):
    """The lazy module after one forward on zeros of `shape` (it is then the regular module)."""
    module(lib.zeros(*shape))
    return module


CASES = [
    ("linear", lambda L: L.nn.LazyLinear(3), (4, 5)),
    ("linear_nobias_3d", lambda L: L.nn.LazyLinear(3, bias=False), (2, 4, 5)),
    ("conv1d", lambda L: L.nn.LazyConv1d(4, 3, padding=1), (2, 3, 7)),
    ("conv2d", lambda L: L.nn.LazyConv2d(4, 3, stride=2, groups=2), (2, 6, 7, 7)),
    ("conv2d_unbatched", lambda L: L.nn.LazyConv2d(4, 2), (3, 5, 5)),
    ("conv3d", lambda L: L.nn.LazyConv3d(2, 2, bias=False), (1, 3, 4, 4, 4)),
    ("convT1d", lambda L: L.nn.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 5)),
    ("convT2d", lambda L: L.nn.LazyConvTranspose2d(4, 3, groups=2, output_padding=1, stride=2), (2, 4, 4, 4)),
    ("convT3d", lambda L: L.nn.LazyConvTranspose3d(2, 2), (1, 3, 3, 3, 3)),
    ("bn1d", lambda L: L.nn.LazyBatchNorm1d(), (4, 3)),
    ("bn2d", lambda L: L.nn.LazyBatchNorm2d(momentum=None), (4, 3, 2, 2)),
    ("bn3d_noaffine", lambda L: L.nn.LazyBatchNorm3d(affine=False), (2, 3, 2, 2, 2)),
    ("bn1d_nobias", lambda L: L.nn.LazyBatchNorm1d(bias=False), (4, 3, 5)),
    ("in1d", lambda L: L.nn.LazyInstanceNorm1d(), (2, 3, 5)),
    ("in2d", lambda L: L.nn.LazyInstanceNorm2d(track_running_stats=False), (2, 3, 4, 4)),
    ("in3d", lambda L: L.nn.LazyInstanceNorm3d(affine=False), (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize("build,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lazy_module_after_its_first_forward_is_torchs(build, shape):
    # the dry run infers the input size: parameter shapes (and names), running stats after it, the output
    # and every gradient are torch's, in train and eval mode
    check_module(lambda L: _dry(build(L), L, shape), shape)


@pytest.mark.parametrize("build,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lazy_module_becomes_the_regular_class(build, shape):
    t, e = build(torch), build(ember)
    assert repr(e) == repr(t)                                  # LazyConv2d(0, 4, kernel_size=...)
    assert [type(p).__name__ for p in e.parameters()] == [type(p).__name__ for p in t.parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    _dry(t, torch, shape), _dry(e, ember, shape)
    assert type(e).__name__ == type(t).__name__ and type(e) is getattr(ember.nn, type(t).__name__)
    assert repr(e) == repr(t)                                  # Conv2d(3, 4, kernel_size=...)
    assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert all(type(p) is ember.nn.Parameter for p in e.parameters())
    assert all(type(b) is ember.Tensor for b in e.buffers())
    assert not e._forward_pre_hooks


def test_lazy_linear_is_initialised_by_reset_parameters():
    m = ember.nn.LazyLinear(50)
    m(ember.zeros(3, 100))
    bound = 1 / math.sqrt(100)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound and np.abs(w).std() > 0
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    bn = ember.nn.LazyBatchNorm2d()
    bn(ember.randn(4, 3, 2, 2))
    np.testing.assert_array_equal(bn.weight.detach().numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(bn.bias.detach().numpy(), np.zeros(3, np.float32))


def test_lazy_dtype_and_device_follow_module_to():
    m = ember.nn.LazyLinear(3, dtype=ember.float64)
    assert m.weight.dtype == ember.float64 and m.weight.device == ember.device("cpu")
    m = ember.nn.LazyLinear(3).double()
    assert m.weight.dtype == ember.float64 and type(m.weight) is ember.nn.UninitializedParameter
    m(ember.zeros(2, 4, dtype=ember.float64))
    assert m.weight.dtype == ember.float64 and m.weight.shape == (3, 4)
    bn = ember.nn.LazyBatchNorm1d().to(ember.float64)
    assert bn.running_mean.dtype == ember.float64 and bn.num_batches_tracked.dtype == ember.int64


def test_optimizer_made_before_the_first_forward_trains_as_torchs():
    # torch materializes the Parameter in place, so the optimizer built on the placeholders works
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    models = {}
    for L in (torch, ember):
        m = L.nn.LazyLinear(3)
        params = list(m.parameters())
        assert [repr(p) for p in params] == ["<UninitializedParameter>"] * 2
        opt = L.optim.SGD(params, lr=0.1, momentum=0.9)
        opt.step()                                 # no grads yet: nothing happens, no error
        m(L.zeros(1, 5))
        assert m.weight is params[0] and type(m.weight).__name__ == "Parameter"
        models[L] = (m, opt)
    (mt, ot), (me, oe) = models[torch], models[ember]
    with torch.no_grad():
        mt.weight.copy_(torch.tensor(me.weight.detach().numpy()))
        mt.bias.copy_(torch.tensor(me.bias.detach().numpy()))
    for _ in range(3):
        for L, m, opt in ((torch, mt, ot), (ember, me, oe)):
            opt.zero_grad()
            (m(L.tensor(x)) ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(me.weight.detach().numpy(), mt.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(me.bias.detach().numpy(), mt.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_uninitialized_parameter_errors_as_torchs():
    m = ember.nn.LazyLinear(3)
    with pytest.raises(ValueError, match=r"^Attempted to use an uninitialized parameter \(UninitializedParameter\)"
                                         r".*Call `forward` with a dummy batch"):
        m.weight + 1
    with pytest.raises(ValueError, match="uninitialized parameter"):
        sum(p.numel() for p in m.parameters())          # torch raises here too
    with pytest.raises(RuntimeError, match=r"^Can't access the shape of an uninitialized parameter or buffer"):
        m.weight.shape
    # ops that read the shape first raise the shape error (torch: ValueError); both say to run a forward
    with pytest.raises(RuntimeError, match="uninitialized parameter.*Call `forward`"):
        ember.nn.utils.parameters_to_vector(m.parameters())
    raises_exactly(lambda: ember.nn.LazyConv2d(4, 3, groups=2)(ember.zeros(1, 3, 5, 5)), ValueError,
                   "in_channels must be divisible by groups (LazyConv2d: in_channels 3 from input (1, 3, 5, 5), "
                   "groups 2)", located=False)
    raises_exactly(lambda: ember.nn.LazyConv2d(4, 3)(ember.zeros(3, 5)), RuntimeError,
                   "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: (3, 5)",
                   located=False)
    for L in (torch, ember):   # torch raises the same kinds
        with pytest.raises(ValueError):
            L.nn.LazyConv2d(4, 3, groups=2)(L.zeros(1, 3, 5, 5))
        with pytest.raises(RuntimeError):
            L.nn.LazyConv2d(4, 3)(L.zeros(3, 5))
    with pytest.raises(RuntimeError, match="Can't access the shape"):   # a lazy checkpoint into a built model
        ember.nn.Linear(5, 3).load_state_dict(ember.nn.LazyLinear(3).state_dict())


def test_lazy_state_dict_round_trips():
    src = ember.nn.LazyLinear(3)
    src(ember.randn(2, 5))
    dst = ember.nn.LazyLinear(3)
    dst.load_state_dict(src.state_dict())           # materializes with the checkpoint's shapes
    assert type(dst) is ember.nn.LazyLinear and dst.weight.shape == (3, 5) and dst.in_features == 0
    np.testing.assert_array_equal(dst.weight.detach().numpy(), src.weight.detach().numpy())
    dst(ember.zeros(1, 5))                           # the forward then only finishes the swap (torch's)
    assert type(dst) is ember.nn.Linear and dst.in_features == 5
    with pytest.raises(RuntimeError, match="in_features inferred from input: 4 is not equal to in_features "
                                           "from self.weight: 5"):
        m = ember.nn.LazyLinear(3)
        m.load_state_dict(src.state_dict())
        m(ember.zeros(1, 4))
    lazy = ember.nn.LazyBatchNorm1d()
    lazy.load_state_dict(ember.nn.LazyBatchNorm1d().state_dict())   # lazy into lazy: nothing to copy
    assert repr(lazy.running_mean) == "<UninitializedBuffer>"


def test_uninitialized_tensors_copy_and_pickle():
    p = ember.nn.UninitializedParameter(dtype=ember.float64)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is ember.nn.UninitializedParameter and q.dtype == ember.float64 and q.requires_grad
    m = copy.deepcopy(ember.nn.LazyConv1d(2, 3))
    m(ember.zeros(1, 4, 6))
    assert type(m) is ember.nn.Conv1d and m.weight.shape == (2, 4, 3)
    b = ember.nn.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad and b.persistent
    b.materialize((2, 3), dtype=ember.float64)
    assert type(b) is ember.Tensor and b.shape == (2, 3) and b.dtype == ember.float64


def test_lazy_model_then_summary_and_compile():
    torch.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.LazyConv2d(4, 3, padding=1), ember.nn.LazyBatchNorm2d(), ember.nn.ReLU(),
                                ember.nn.Flatten(), ember.nn.LazyLinear(10))
    x = ember.randn(2, 3, 8, 8)
    model(x)
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    report = ember.summary(model, (3, 8, 8), batch_size=2, verbose=False)
    assert report.total_params == 4 * 3 * 9 + 4 + 2 * 4 + 256 * 10 + 10
    with pytest.raises(ValueError, match=r"summary: the model has uninitialized parameters \(0.weight, 0.bias\) "
                                         r"of lazy modules .* run one forward with a dummy batch first"):
        ember.summary(ember.nn.Sequential(ember.nn.LazyLinear(3)), (5,), verbose=False)
    model.eval()
    eager = model(x)
    compiled = ember.compile(model)
    np.testing.assert_allclose(compiled(x).detach().numpy(), eager.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_norm_reprs_and_instance_norm_bias_are_torchs():
    for args, kw in [((3,), {}), ((3,), {"affine": True}), ((3,), {"affine": True, "bias": False})]:
        for name in ("InstanceNorm2d", "BatchNorm1d"):
            t, e = getattr(torch.nn, name)(*args, **kw), getattr(ember.nn, name)(*args, **kw)
            assert repr(e) == repr(t)
            assert [k for k, _ in e.named_parameters()] == [k for k, _ in t.named_parameters()]


def test_a_lazy_module_of_ones_own_with_lazy_module_mixin():
    class LazyScale(ember.nn.LazyModuleMixin, ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.nn.UninitializedParameter()

        def initialize_parameters(self, x, *, offset=0.0):
            self.scale.materialize(x.shape[-1:])
            self.scale.fill_(2.0 + offset)

        def forward(self, x, *, offset=0.0):
            return x * self.scale

    m = LazyScale()
    assert m.has_uninitialized_params()
    out = m(ember.ones(2, 3), offset=1.0)            # the pre-hook gets the kwargs too (with_kwargs)
    assert out.tolist() == [[3.0] * 3] * 2 and type(m) is LazyScale and not m.has_uninitialized_params()
    assert not m._forward_pre_hooks                  # no class to become: only the hook goes away

    class Incomplete(ember.nn.LazyModuleMixin, ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            pass

    with pytest.raises(RuntimeError, match="module Incomplete has not been fully initialized"):
        Incomplete()(ember.ones(1))


def test_uninitialized_tensors_cuda_takes_non_blocking_as_tensor_cuda(fake_cuda):
    # the override took only device= (mypy: incompatible with Tensor.cuda(device=None, non_blocking=False))
    for t in (ember.nn.UninitializedParameter(), ember.nn.UninitializedBuffer()):
        c = t.cuda(non_blocking=True)
        assert type(c) is type(t) and c.device.type == "cuda"
