"""ember/nn/normalization.py against torch: outputs, gradients and running stats, train and eval."""
import pytest

import ember
from .nn_helpers import check_module

CASES = [
    ("bn1d_2d", lambda lib: lib.nn.BatchNorm1d(4), [(6, 4)]),
    ("bn1d_3d", lambda lib: lib.nn.BatchNorm1d(3, momentum=0.3), [(4, 3, 5)]),
    ("bn1d_noaffine", lambda lib: lib.nn.BatchNorm1d(3, affine=False), [(4, 3)]),
    ("bn1d_cumulative", lambda lib: lib.nn.BatchNorm1d(3, momentum=None), [(4, 3)]),
    ("bn1d_notrack", lambda lib: lib.nn.BatchNorm1d(3, track_running_stats=False), [(5, 3)]),
    ("bn2d", lambda lib: lib.nn.BatchNorm2d(3), [(2, 3, 4, 5)]),
    ("bn2d_nobias", lambda lib: lib.nn.BatchNorm2d(3, bias=False), [(2, 3, 4, 5)]),
    ("groupnorm_nobias", lambda lib: lib.nn.GroupNorm(2, 4, bias=False), [(3, 4, 5)]),
    ("bn2d_eps", lambda lib: lib.nn.BatchNorm2d(3, eps=1e-3), [(2, 3, 4, 5)]),
    ("layernorm", lambda lib: lib.nn.LayerNorm(6), [(3, 6)]),
    ("layernorm_2d_shape", lambda lib: lib.nn.LayerNorm((4, 5)), [(2, 3, 4, 5)]),
    ("layernorm_nobias", lambda lib: lib.nn.LayerNorm(6, bias=False), [(3, 6)]),
    ("layernorm_noaffine", lambda lib: lib.nn.LayerNorm(6, elementwise_affine=False, eps=1e-3), [(3, 6)]),
    ("groupnorm", lambda lib: lib.nn.GroupNorm(2, 4), [(3, 4, 5)]),
    ("groupnorm_4d", lambda lib: lib.nn.GroupNorm(3, 6), [(2, 6, 3, 3)]),
    ("groupnorm_noaffine", lambda lib: lib.nn.GroupNorm(1, 4, affine=False), [(2, 4, 3, 3)]),
    ("instancenorm1d", lambda lib: lib.nn.InstanceNorm1d(3), [(2, 3, 5)]),
    ("instancenorm1d_unbatched_affine", lambda lib: lib.nn.InstanceNorm1d(3, affine=True), [(3, 5)]),
    ("instancenorm2d_tracked", lambda lib: lib.nn.InstanceNorm2d(3, affine=True, track_running_stats=True,
                                                                 momentum=0.3), [(2, 3, 4, 5)]),
    ("instancenorm2d_unbatched_tracked", lambda lib: lib.nn.InstanceNorm2d(2, track_running_stats=True),
     [(2, 3, 3)]),
    ("instancenorm3d", lambda lib: lib.nn.InstanceNorm3d(2, affine=True, eps=1e-3), [(2, 2, 2, 3, 2)]),
    ("bn3d", lambda lib: lib.nn.BatchNorm3d(3), [(2, 3, 2, 3, 4)]),
    ("bn3d_momentum_noaffine", lambda lib: lib.nn.BatchNorm3d(2, momentum=0.3, affine=False), [(3, 2, 3, 1, 2)]),
    ("bn3d_cumulative_nobias", lambda lib: lib.nn.BatchNorm3d(2, momentum=None, bias=False), [(2, 2, 2, 2, 3)]),
    ("bn3d_notrack", lambda lib: lib.nn.BatchNorm3d(2, track_running_stats=False), [(2, 2, 3, 2, 2)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_normalization_layers(build, inputs):
    check_module(build, *inputs)


def test_batchnorm_running_stats_over_steps():
    import numpy as np
    import torch
    rng = np.random.default_rng(0)
    tm, em = torch.nn.BatchNorm2d(3), ember.nn.BatchNorm2d(3)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 2)) * 3 + 1
        tm(torch.tensor(x, dtype=torch.float32))
        em(ember.tensor(x, dtype=ember.float32))
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(em.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert em.num_batches_tracked.item() == 3


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="expected 4D"):
        ember.nn.BatchNorm2d(3)(ember.randn(2, 3))
    with pytest.raises(ValueError, match=r"BatchNorm3d: expected 5D input \(got 4D input of shape \(3, 2, 2, 2\)\)"):
        ember.nn.BatchNorm3d(3)(ember.randn(3, 2, 2, 2))   # torch has no unbatched form either
    with pytest.raises(ValueError, match="more than 1 value"):
        ember.nn.BatchNorm1d(3)(ember.randn(1, 3))


def test_batchnorm_reset_running_stats_and_parameters_like_torch():
    import torch
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.BatchNorm1d(3)
        m(lib.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, -1.0]]))
        with lib.no_grad():
            m.weight.fill_(2.0)
        after_step = [b.tolist() for b in m.buffers()]
        m.reset_running_stats()
        reset_stats = [b.tolist() for b in m.buffers()] + [m.weight.tolist()]
        m.reset_parameters()
        return after_step, reset_stats, m.weight.tolist(), m.bias.tolist()
    assert run(ember) == run(torch)
    untracked = ember.nn.BatchNorm2d(2, track_running_stats=False, affine=False)
    untracked.reset_parameters()                     # nothing to reset: no buffers, no parameters
    assert untracked.running_mean is None and list(untracked.parameters()) == []


def test_batchnorm_double_backward():
    # the fused BatchNorm primitive's gradient under create_graph (a Tensor-op composite)
    from helpers import check_op

    def fn(lib, x, w, b):
        y = lib.nn.functional.batch_norm(x, None, None, w, b, training=True)
        gx, gw = lib.autograd.grad((y * y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum()
    check_op(fn, (3, 2, 4, 3), (2,), (2,), dtypes=("float64",))


def test_batchnorm_train_and_eval_on_channels_last_input():
    # a conv's output is channels-last memory; BatchNorm reads and keeps that layout
    check_module(lambda lib: lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3, padding=1), lib.nn.BatchNorm2d(3)),
                 (2, 2, 5, 4))


# ------------------------------------------------------------------ the functional forms, every path
import numpy as np

from helpers import NoGrad, check_op

RNG = np.random.default_rng(9)
MEAN3, VAR3 = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3)


def _bn(training, affine, momentum=None, **kw):
    def fn(lib, x, *wb):
        m, v = lib.tensor(MEAN3).to(x.device, x.dtype), lib.tensor(VAR3).to(x.device, x.dtype)
        w, b = (wb + (None, None))[:2] if affine == "both" else ((wb[0], None) if affine == "weight" else
                                                                  ((None, wb[0]) if affine == "bias" else (None, None)))
        extra = {} if momentum is None else {"momentum": momentum}
        out = lib.nn.functional.batch_norm(x, m, v, w, b, training=training, **extra, **kw)
        return out, m, v          # the running statistics after the call too
    return fn


BN_CASES = [
    ("eval_affine", _bn(False, "both"), [(4, 3, 2), (3,), (3,)]),
    ("eval_bias_only", _bn(False, "bias"), [(4, 3, 2), (3,)]),
    ("eval_weight_only", _bn(False, "weight"), [(4, 3), (3,)]),
    ("train_plain_default_momentum", _bn(True, None), [(4, 3, 2)]),
    ("train_bias_only", _bn(True, "bias", 0.3), [(4, 3, 2), (3,)]),
    ("train_affine_fused", _bn(True, "both", 0.3), [(4, 3, 2), (3,), (3,)]),
    ("train_two_values_per_channel", _bn(True, None, 0.5), [(2, 3)]),
    ("train_eps", _bn(True, "both", eps=0.5), [(4, 3), (3,), (3,)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in BN_CASES], ids=[c[0] for c in BN_CASES])
def test_functional_batch_norm_paths(fn, inputs):
    check_op(fn, *inputs)


def test_batch_norm_one_channel_running_var():
    def fn(lib, x):
        m, v = lib.zeros(1, dtype=x.dtype, device=x.device), lib.ones(1, dtype=x.dtype, device=x.device)
        lib.nn.functional.batch_norm(x, m, v, training=True, momentum=0.5)
        return m, v
    check_op(fn, (5, 1, 2), grad=False)


@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_needs_two_values_per_channel(affine):
    w = (ember.ones(3), ember.zeros(3)) if affine else (None, None)
    with pytest.raises(ValueError) as e:
        ember.nn.functional.batch_norm(ember.zeros(1, 3), None, None, *w, training=True)
    assert str(e.value).startswith("Expected more than 1 value per channel when training, got input size (1, 3) (at ")


LN_GN_CASES = [
    ("layer_norm_weight_only", lambda lib, x, w: lib.nn.functional.layer_norm(x, (4,), w), [(3, 4), (4,)]),
    ("layer_norm_bias_only", lambda lib, x, b: lib.nn.functional.layer_norm(x, (4,), None, b), [(3, 4), (4,)]),
    ("layer_norm_eps", lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (2, 4), w, b, eps=0.3), [(3, 2, 4), (2, 4), (2, 4)]),
    ("group_norm_one_sample_one_group", lambda lib, x: lib.nn.functional.group_norm(x, 1), [(1, 4, 3)]),
    ("group_norm_affine_eps", lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b, eps=0.2), [(2, 4, 3), (4,), (4,)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in LN_GN_CASES], ids=[c[0] for c in LN_GN_CASES])
def test_functional_layer_and_group_norm_paths(fn, inputs):
    check_op(fn, *inputs)


def test_layer_norm_takes_an_int_shape():
    # torch's functional wants a tuple (its LayerNorm module takes an int); Ember's takes both
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(ember.nn.functional.layer_norm(x, 4).numpy(),
                                  ember.nn.functional.layer_norm(x, (4,)).numpy())


def test_batch_norm_fused_one_channel_running_var():
    def fn(lib, x, w, b):
        m, v = lib.zeros(1, dtype=x.dtype, device=x.device), lib.ones(1, dtype=x.dtype, device=x.device)
        out = lib.nn.functional.batch_norm(x, m, v, w, b, training=True, momentum=0.5)
        return out, m, v
    check_op(fn, (5, 1, 2), (1,), (1,))


def test_layer_norm_fused_gradient_is_not_differentiable():
    # LayerNormGrad is LayerNorm's first-order gradient; differentiating it again is refused by name
    from helpers import raises_exactly
    from ember.ops.layers import LayerNormGrad
    x = ember.randn(2, 3, requires_grad=True)
    gx = LayerNormGrad.apply(x, ember.randn(2, 3), n=1, eps=1e-5)
    raises_exactly(lambda: gx.sum().backward(), RuntimeError,
                   "layer_norm: the fused first-order gradient is not differentiable; use create_graph=True in "
                   "the first backward to differentiate it again", located=False)


@pytest.mark.parametrize("create_graph", [False, True], ids=["first_order", "create_graph"])
@pytest.mark.parametrize("alone", ["x", "w", "b"])
@pytest.mark.parametrize("norm", ["layer_norm", "batch_norm"])
def test_norm_gradient_of_one_input_alone(norm, alone, create_graph):
    # the fused LayerNorm/BatchNorm primitives compute only the gradients asked for (first order, and the
    # Tensor-op composite under create_graph): each one alone must still come, and be right
    from helpers import NoGrad

    def fn(lib, x, w, b):
        if norm == "layer_norm":
            y = lib.nn.functional.layer_norm(x, (4,), w, b)
        else:
            y = lib.nn.functional.batch_norm(x, None, None, w, b, training=True)
        if not create_graph:
            return y
        g, = lib.autograd.grad((y * y * y).sum(), {"x": x, "w": w, "b": b}[alone], create_graph=True)
        return g
    shapes = {"x": (3, 4), "w": (4,), "b": (4,)}
    check_op(fn, *[s if k == alone else NoGrad(s) for k, s in shapes.items()], dtypes=("float64",))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batch_norm_values_in_half_precision(dtype):
    # 2-byte floats take the NumPy forwards (a product and a sum per channel, not einsum): values as torch's
    check_op(lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
             (4, 3, 5), (3,), (3,), dtypes=(dtype,))


def test_batch_norm_double_backward_with_one_channel():
    # the create_graph composite divides by the elements per channel: all of them when there is one channel
    def fn(lib, x, w, b):
        y = lib.nn.functional.batch_norm(x, None, None, w, b, training=True)
        gx, gw = lib.autograd.grad((y * y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum()
    check_op(fn, (4, 1, 3), (1,), (1,), dtypes=("float64",))


def test_instance_norm_errors_as_torch():
    with pytest.raises(ValueError, match=r"InstanceNorm2d: expected 3D or 4D input \(got 2D input"):
        ember.nn.InstanceNorm2d(3)(ember.ones(3, 4))
    with pytest.raises(ValueError, match="match num_features \\(3\\), but got: 4"):
        ember.nn.InstanceNorm1d(3, affine=True)(ember.ones(2, 4, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        ember.nn.InstanceNorm1d(3)(ember.ones(2, 3, 1))


def test_functional_instance_norm_with_running_stats():
    from helpers import NoGrad, check_op
    import numpy as np
    mean, var = np.zeros(3), np.ones(3)
    check_op(lambda L, x, w, b: L.nn.functional.instance_norm(
        x, L.tensor(mean, dtype=x.dtype, device=x.device), L.tensor(var, dtype=x.dtype, device=x.device), w, b,
        momentum=0.2), (2, 3, 4), (3,), (3,))
    check_op(lambda L, x: L.nn.functional.instance_norm(x, eps=1e-3), (2, 3, 2, 2))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_group_norm_of_half_precision_inputs_computes_in_float32_as_torch(dt):
    import numpy as np
    import torch
    x = np.random.default_rng(0).random((4, 8, 512)) * 2
    t = torch.nn.functional.group_norm(torch.tensor(x).to(getattr(torch, dt)), 2).double().numpy()
    e = ember.nn.functional.group_norm(ember.tensor(x).to(getattr(ember, dt)), 2)
    assert e.dtype.name == dt   # statistics in bfloat16 gave twice torch's error (1.2 against 0.67 relative)
    np.testing.assert_allclose(e.double().numpy(), t, atol=4e-3)


# an infinite weight or bias: torch's batch/group/instance norm kernels compute x * alpha + beta with
# alpha = w / std, beta = b - mean * alpha (inf - inf = NaN where x > mean for w = inf, b = 0), not
# (x - mean) * alpha + b; the gradient's g - mean(g) first (0, then +-inf, where g is constant)
W_INF = np.array([np.inf, 1.5, -np.inf])
B_INF = np.array([0.5, np.inf, np.inf])
X_BN = np.random.default_rng(11).standard_normal((4, 3, 5))


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_with_an_infinite_weight_or_bias_as_torch(training):
    check_op(_bn(training, "both"), X_BN, NoGrad(W_INF), NoGrad(B_INF))
    check_op(_bn(training, "bias"), X_BN, NoGrad(B_INF))
    check_op(_bn(training, "weight"), X_BN, NoGrad(W_INF))
    if training:   # and the gradients at an infinite weight (both layouts of the float32 kernels)
        check_op(lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True), X_BN, W_INF,
                 B_INF)
        check_op(lambda L, x, w, b: L.nn.functional.batch_norm(_cl(x), None, None, w, b, training=True),
                 X_BN.reshape(2, 3, 2, 5), W_INF, B_INF)


def _cl(x):
    """x (N, C, H, W) channels-last in memory (BatchNorm's other kernel layout)."""
    return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


def test_group_and_instance_norm_with_an_infinite_weight_or_bias_as_torch():
    w4, b4 = np.array([np.inf, 1.0, -2.0, -np.inf]), np.array([1.0, np.inf, -np.inf, 0.0])
    x = np.random.default_rng(12).standard_normal((3, 4, 5))
    # group_norm's gradient there is not torch's (see below): values only
    check_op(lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b), x, NoGrad(w4), NoGrad(b4), grad=False)
    check_op(lambda L, x, w, b: L.nn.functional.group_norm(x, 4, w, b), x, NoGrad(w4), NoGrad(b4), grad=False)
    check_op(lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b), x, NoGrad(w4), NoGrad(b4))


# ------------------------------------------------------------------ RMSNorm and LocalResponseNorm
import numpy as np
import torch

from helpers import NoGrad, check_op, raises_exactly

RMS_CASES = [
    ("rmsnorm", lambda lib: lib.nn.RMSNorm(6), [(3, 6)]),
    ("rmsnorm_2d_shape", lambda lib: lib.nn.RMSNorm((4, 5)), [(2, 3, 4, 5)]),
    ("rmsnorm_list_shape_eps", lambda lib: lib.nn.RMSNorm([5], eps=1e-3), [(2, 3, 5)]),
    ("rmsnorm_noaffine", lambda lib: lib.nn.RMSNorm(6, elementwise_affine=False), [(3, 6)]),
    ("rmsnorm_empty_batch", lambda lib: lib.nn.RMSNorm(4), [(0, 4)]),
    ("rmsnorm_unbatched", lambda lib: lib.nn.RMSNorm(4), [(4,)]),
    ("lrn_3d", lambda lib: lib.nn.LocalResponseNorm(2), [(2, 5, 7)]),
    ("lrn_4d", lambda lib: lib.nn.LocalResponseNorm(3, alpha=0.5, beta=0.6, k=2.0), [(2, 6, 3, 4)]),
    ("lrn_5d_wide", lambda lib: lib.nn.LocalResponseNorm(5, alpha=1.0), [(1, 3, 2, 3, 2)]),
    ("lrn_size1", lambda lib: lib.nn.LocalResponseNorm(1, alpha=0.3), [(2, 3, 4)]),
    ("lrn_empty", lambda lib: lib.nn.LocalResponseNorm(2), [(0, 3, 4)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in RMS_CASES], ids=[c[0] for c in RMS_CASES])
def test_rms_and_local_response_norm_layers(build, inputs):
    check_module(build, *inputs, low=-3, high=3)


def test_functional_rms_norm():
    check_op(lambda L, x: L.nn.functional.rms_norm(x, (4,)), (3, 4))
    check_op(lambda L, x, w: L.nn.functional.rms_norm(x, [3, 4], w, 1e-2), (2, 3, 4), (3, 4))
    check_op(lambda L, x, w: L.nn.functional.rms_norm(x, [4], w), (2, 4), (4,))
    check_op(lambda L, x, w: L.nn.functional.rms_norm(x, (4,), w, eps=None), (2, 4), NoGrad((4,)))


def test_rms_norm_double_backward():
    def fn(lib, x, w):
        y = lib.nn.functional.rms_norm(x, (4,), w)
        gx, gw = lib.autograd.grad((y * y * y).sum(), (x, w), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum()
    check_op(fn, (3, 4), (4,), dtypes=("float64",))


def test_rms_norm_default_eps_is_torch_machine_epsilon_of_the_computation_dtype():
    # mean(x^2) = 1e-6 is below float16's and bfloat16's own eps: torch adds float32's eps for them (it computes
    # in float32), float64's for float64; a wrong eps moves the result from ~0.9 to ~0.03
    x = np.full((2, 4), 1e-3)
    for dt in ("float16", "bfloat16", "float32", "float64"):
        check_op(lambda L, a: L.nn.functional.rms_norm(a, (4,)), x, dtypes=(dt,))
        check_module(lambda lib: lib.nn.RMSNorm(4), x, dtypes=(dt,), modes=("train",))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_rms_norm_in_half_precision_computes_in_float32_as_torch(dt):
    check_op(lambda L, x, w: L.nn.functional.rms_norm(x, (64,), w), (8, 64), (64,), dtypes=(dt,), low=-4, high=4)
    check_module(lambda lib: lib.nn.RMSNorm(64), (8, 64), dtypes=(dt,), low=-4, high=4)
    # a float32 weight: torch's result keeps input's dtype (the product rounded once)
    x = np.random.default_rng(0).uniform(-2, 2, (5, 8))
    w = np.random.default_rng(1).uniform(-2, 2, (8,))
    t = torch.nn.functional.rms_norm(torch.tensor(x).to(getattr(torch, dt)), (8,), torch.tensor(w, dtype=torch.float32))
    e = ember.nn.functional.rms_norm(ember.tensor(x).to(getattr(ember, dt)), (8,), ember.tensor(w, dtype=ember.float32))
    assert e.dtype.name == dt
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


def test_rms_norm_under_compile_matches_eager_values_and_gradients():
    # a whole training step compiled (forward, backward, SGD) against the same step run eagerly
    rng = np.random.default_rng(0)

    def make():
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.RMSNorm(8))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            y = model(x)
            loss = (y * y * y).sum()
            loss.backward()
            opt.step()
            return y.detach()
        return model, step
    eager_model, eager_step = make()
    model, step = make()
    compiled = ember.compile(step, strict=True)
    for _ in range(4):    # traced, then replayed
        x = ember.tensor(rng.standard_normal((4, 8)), dtype=ember.float32)
        np.testing.assert_allclose(compiled(x).numpy(), eager_step(x).numpy(), rtol=1e-5, atol=1e-5)
        for p, q in zip(model.parameters(), eager_model.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.cache_info()["hits"] >= 2   # the second call retraces: .grad exists from then on


def test_functional_local_response_norm():
    check_op(lambda L, x: L.nn.functional.local_response_norm(x, 3), (2, 4, 5))
    check_op(lambda L, x: L.nn.functional.local_response_norm(x, 4, 0.2, 1.5, 0.5), (2, 5, 2, 3), low=-2, high=2)
    check_op(lambda L, x: L.nn.functional.local_response_norm(x, 8, 1.0), (1, 3, 4))   # wider than C


def test_rms_and_local_response_norm_reprs():
    for lib in (torch, ember):
        assert repr(lib.nn.RMSNorm(4)) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
        assert repr(lib.nn.RMSNorm([3, 4], 1e-5, False)) == "RMSNorm((3, 4), eps=1e-05, elementwise_affine=False)"
        assert lib.nn.RMSNorm(4, elementwise_affine=False).weight is None
        assert [k for k, _ in lib.nn.RMSNorm(4).named_parameters()] == ["weight"]
        assert repr(lib.nn.LocalResponseNorm(3)) == "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"
    m = ember.nn.RMSNorm(3, dtype=ember.float64)
    assert m.weight.dtype == ember.float64
    with ember.no_grad():
        m.weight.fill_(2.0)
    m.reset_parameters()
    np.testing.assert_array_equal(m.weight.detach().numpy(), 1.0)


RMS_ERRORS = [
    (lambda F: F.rms_norm(ember.zeros(3, 4), (5,)), RuntimeError,
     "rms_norm: expected input with trailing shape (5,), got (3, 4)"),
    (lambda F: F.rms_norm(ember.zeros(4), []), RuntimeError,
     "rms_norm: expected normalized_shape to have at least one element, got ()"),
    (lambda F: F.rms_norm(ember.zeros(4), (2, 4)), RuntimeError,
     "rms_norm: expected input with trailing shape (2, 4), got (4,)"),
    (lambda F: F.rms_norm(ember.zeros(3, 4), (4,), ember.ones(3)), RuntimeError,
     "rms_norm: expected weight of shape normalized_shape (4,), got (3,)"),
    (lambda F: F.rms_norm(ember.arange(4), (4,)), RuntimeError, "rms_norm: expected a floating point input, got int64"),
    (lambda F: F.local_response_norm(ember.zeros(2, 3), 2), ValueError,
     "local_response_norm: expected 3D or higher dimensionality input (got 2 dimensions, shape (2, 3))"),
    (lambda F: F.local_response_norm(ember.zeros(2, 3, 4), 0), RuntimeError,
     "local_response_norm: size must be a positive int, got 0"),
]


@pytest.mark.parametrize("k", range(len(RMS_ERRORS)))
def test_rms_and_local_response_norm_errors(k):
    call, exc, message = RMS_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message, located=False)


# ------------------------------------------------------------------ CrossMapLRN2d (torch's legacy LRN)
CROSS_MAP_CASES = [
    ("size3", lambda lib: lib.nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=1.0), [(2, 8, 3, 4)]),
    ("size5_defaults", lambda lib: lib.nn.CrossMapLRN2d(5), [(2, 7, 2, 3)]),
    ("size4_even", lambda lib: lib.nn.CrossMapLRN2d(4, alpha=1.0, beta=0.6, k=2.0), [(1, 9, 2, 2)]),
    ("size2", lambda lib: lib.nn.CrossMapLRN2d(2, alpha=0.8, beta=1.0, k=1.5), [(2, 5, 3, 2)]),
    ("window_wider_than_channels", lambda lib: lib.nn.CrossMapLRN2d(7, alpha=0.9), [(2, 3, 2, 2)]),
    ("one_channel", lambda lib: lib.nn.CrossMapLRN2d(3, alpha=0.9), [(2, 1, 2, 2)]),
    ("empty_batch", lambda lib: lib.nn.CrossMapLRN2d(3, alpha=0.9), [(0, 4, 2, 2)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CROSS_MAP_CASES], ids=[c[0] for c in CROSS_MAP_CASES])
def test_cross_map_lrn2d_matches_torch_forward_and_backward(build, inputs):
    # torch's backward is its own hand-written formula (not the exact gradient of its forward): Ember's
    # matches it, so the gradients compared here are torch's
    check_module(build, *inputs, low=-3, high=3)


def test_cross_map_lrn2d_differs_from_local_response_norm_where_torch_does():
    x = np.random.default_rng(0).standard_normal((1, 8, 2, 2))
    ours = ember.nn.CrossMapLRN2d(3, alpha=0.5)(ember.tensor(x)).numpy()
    lrn = ember.nn.LocalResponseNorm(3, alpha=0.5)(ember.tensor(x)).numpy()
    assert np.allclose(ours[:, :2], lrn[:, :2]) and not np.allclose(ours[:, 3:], lrn[:, 3:])   # channel 0 kept
    assert repr(ember.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3)) == \
        "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"


def test_cross_map_lrn2d_rejects_bad_input():
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead"):
        torch.nn.CrossMapLRN2d(3)(torch.ones(2, 3, 4))
    raises_exactly(lambda: ember.nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4)), ValueError,
                   "CrossMapLRN2d: Expected input to be 4D, got 3D instead (shape (2, 3, 4))")
    with pytest.raises(ValueError, match="CrossMapLRN2d: size must be a positive int, got 0"):
        ember.nn.CrossMapLRN2d(0)
