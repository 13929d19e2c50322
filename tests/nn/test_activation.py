"""ember/nn/activation.py against torch (the modules and so the functional forms)."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_exactly

from .nn_helpers import check_module

X = np.random.default_rng(2).uniform(-3, 3, (4, 5))
X[0, :3] = [25.0, -30.0, 0.5]   # softplus threshold, far negative

CASES = [
    ("relu", lambda lib: lib.nn.ReLU()),
    ("relu6", lambda lib: lib.nn.ReLU6()),
    ("leaky_relu", lambda lib: lib.nn.LeakyReLU()),
    ("leaky_relu_0.2", lambda lib: lib.nn.LeakyReLU(0.2)),
    ("elu", lambda lib: lib.nn.ELU()),
    ("elu_alpha", lambda lib: lib.nn.ELU(0.5)),
    ("selu", lambda lib: lib.nn.SELU()),
    ("gelu", lambda lib: lib.nn.GELU()),
    ("gelu_tanh", lambda lib: lib.nn.GELU(approximate="tanh")),
    ("silu", lambda lib: lib.nn.SiLU()),
    ("mish", lambda lib: lib.nn.Mish()),
    ("tanh", lambda lib: lib.nn.Tanh()),
    ("sigmoid", lambda lib: lib.nn.Sigmoid()),
    ("logsigmoid", lambda lib: lib.nn.LogSigmoid()),
    ("softplus", lambda lib: lib.nn.Softplus()),
    ("softplus_beta", lambda lib: lib.nn.Softplus(beta=2.0, threshold=5.0)),
    ("hardtanh", lambda lib: lib.nn.Hardtanh(-2.0, 2.0)),
    ("softmax", lambda lib: lib.nn.Softmax(dim=1)),
    ("softmax0", lambda lib: lib.nn.Softmax(dim=0)),
    ("log_softmax", lambda lib: lib.nn.LogSoftmax(dim=-1)),
    ("softmin", lambda lib: lib.nn.Softmin(dim=1)),
]


@pytest.mark.parametrize("build", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_activation_layers(build):
    check_module(build, X, modes=("train",))


@pytest.mark.parametrize("name", ["ReLU", "SiLU", "Mish", "ELU", "LeakyReLU"])
def test_inplace_without_grad(name):
    import ember
    import torch
    x = ember.tensor(X.copy())
    y = getattr(ember.nn, name)(inplace=True)(x)
    assert y is x
    np.testing.assert_allclose(x.numpy(), getattr(torch.nn, name)()(torch.tensor(X)).numpy(), rtol=1e-12)


def test_reprs():
    import ember.nn as nn
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.ReLU(True)) == "ReLU(inplace=True)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(nn.Softmax(1)) == "Softmax(dim=1)"


def test_bfloat16_gelu_returns_bfloat16():
    # issue 8 (2b): gelu gave float32 for bfloat16 (bfloat16 times a Python float is float32 in NumPy)
    from helpers import check_op
    check_op(lambda L, x: L.nn.functional.gelu(x), (3, 4), dtypes=("bfloat16",))
    check_module(lambda lib: lib.nn.GELU(), (3, 4), dtypes=("bfloat16",))


def test_functional_tanh_and_sigmoid():
    from helpers import check_op
    check_op(lambda lib, x: lib.nn.functional.tanh(x), X)
    check_op(lambda lib, x: lib.nn.functional.sigmoid(x), X * 20)     # saturated tails too


def test_activation_argument_errors():
    import pytest
    import ember
    F = ember.nn.functional
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'erf'"):
        F.gelu(ember.ones(2), approximate="erf")
    with pytest.raises(RuntimeError, match="softmax: expected a floating point input, got int64"):
        F.softmax(ember.arange(3), 0)
    with pytest.raises(IndexError, match=r"log_softmax: Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        F.log_softmax(ember.ones(2, 3), 2)


def test_softmax_implicit_dim_and_scalar_like_torch():
    from helpers import check_op
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # torch warns about the implicit dim
        for shape in [(), (4,), (2, 3), (2, 3, 4), (2, 3, 2, 2)]:
            check_op(lambda lib, x: lib.nn.functional.softmax(x, None), shape)
            check_op(lambda lib, x: lib.nn.functional.softmin(x, None), shape)


def test_gelu_on_inputs_larger_than_a_cache_block():
    # > backends.cpu.BLOCK elements, not a multiple of the block: GELU runs block by block and the pieces
    # (output and the saved cdf, then the gradient) must be stitched back in order
    from helpers import check_op
    check_op(lambda lib, x: lib.nn.functional.gelu(x), (301, 257), low=-4, high=4)


MORE = [
    ("hardshrink", lambda lib: lib.nn.Hardshrink()),
    ("hardshrink_1", lambda lib: lib.nn.Hardshrink(1.0)),
    ("softshrink", lambda lib: lib.nn.Softshrink(0.7)),
    ("tanhshrink", lambda lib: lib.nn.Tanhshrink()),
    ("softsign", lambda lib: lib.nn.Softsign()),
    ("threshold", lambda lib: lib.nn.Threshold(0.1, 20.0)),
    ("celu", lambda lib: lib.nn.CELU()),
    ("celu_alpha", lambda lib: lib.nn.CELU(0.5)),
    ("glu", lambda lib: lib.nn.GLU(0)),
    ("hardsigmoid", lambda lib: lib.nn.Hardsigmoid()),
    ("hardswish", lambda lib: lib.nn.Hardswish()),
    ("prelu", lambda lib: lib.nn.PReLU()),
    ("prelu_channels", lambda lib: lib.nn.PReLU(5, init=0.1)),
]


# torch's hardsigmoid backward multiplies by a float32 1/6 even in float64: relative error ~3e-8
LOOSE = {"grad_rtol": 1e-7, "grad_atol": 1e-8}


@pytest.mark.parametrize("name,build", MORE, ids=[c[0] for c in MORE])
def test_more_activation_layers(name, build):
    check_module(build, X, modes=("train",), **(LOOSE if name == "hardsigmoid" else {}))


def test_prelu_per_channel_on_images_and_functional_forms():
    from helpers import check_op
    check_module(lambda lib: lib.nn.PReLU(3), (2, 3, 4, 4), modes=("train",))
    check_op(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 5), (3,))
    check_op(lambda L, x: L.nn.functional.glu(x), (2, 6))
    for name in ["hardshrink", "softshrink", "tanhshrink", "softsign", "celu", "hardsigmoid", "hardswish"]:
        check_op(lambda L, x: getattr(L.nn.functional, name)(x), (3, 4), low=-4, high=4,
                 **(LOOSE if name == "hardsigmoid" else {}))
    check_op(lambda L, x: L.nn.functional.threshold(x, 0.5, -1.0), (3, 4))


@pytest.mark.parametrize("name", ["Hardsigmoid", "Hardswish", "CELU"])
def test_more_inplace(name):
    import ember
    import torch
    x = ember.tensor(X.copy())
    assert getattr(ember.nn, name)(inplace=True)(x) is x
    np.testing.assert_allclose(x.numpy(), getattr(torch.nn, name)()(torch.tensor(X)).numpy(), rtol=1e-12)
    x = ember.tensor(X.copy())
    assert ember.nn.Threshold(0.0, 2.0, inplace=True)(x) is x


def test_more_activation_reprs_and_errors():
    import ember
    import torch
    for lib in (torch, ember):
        assert repr(lib.nn.PReLU()) == "PReLU(num_parameters=1)" and repr(lib.nn.GLU()) == "GLU(dim=-1)"
        assert repr(lib.nn.Hardshrink()) == "Hardshrink(0.5)" and repr(lib.nn.Softsign()) == "Softsign()"
        assert repr(lib.nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
        assert repr(lib.nn.CELU()) == "CELU(alpha=1.0)"
        with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
            lib.nn.functional.glu(lib.ones(2, 3))
        with pytest.raises(RuntimeError, match="glu does not support scalars"):
            lib.nn.functional.glu(lib.ones(()))
        with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
            lib.nn.functional.celu(lib.ones(2), 0.0)
        with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
            lib.nn.functional.prelu(lib.ones(2, 3), lib.ones(2))
        with pytest.raises(RuntimeError, match="lambda must be in range"):
            lib.nn.functional.softshrink(lib.ones(2), -1.0)


# ------------------------------------------------------------------ functional defaults, kinks, inplace, errors
KINKS = np.array([[0.0, -1.0, 2.0, 0.5], [0.0, 1.0, -2.0, -0.5], [0.25, -0.25, 20.0, 21.0], [-3.0, 3.0, 6.0, -6.0]])
F_ACTS = [   # the functional forms with torch's defaults, at inputs on their kinks (0, thresholds)
    ("elu", lambda lib, x: lib.nn.functional.elu(x)),
    ("elu_alpha2", lambda lib, x: lib.nn.functional.elu(x, 2.0)),
    ("celu", lambda lib, x: lib.nn.functional.celu(x)),
    ("celu_alpha3", lambda lib, x: lib.nn.functional.celu(x, 3.0)),
    ("leaky_relu", lambda lib, x: lib.nn.functional.leaky_relu(x)),
    ("hardtanh", lambda lib, x: lib.nn.functional.hardtanh(x)),
    ("relu6", lambda lib, x: lib.nn.functional.relu6(x)),
    ("selu", lambda lib, x: lib.nn.functional.selu(x)),
    ("softplus", lambda lib, x: lib.nn.functional.softplus(x)),
    ("softplus_at_threshold", lambda lib, x: lib.nn.functional.softplus(x, 2.0, 1.0)),
    ("softshrink", lambda lib, x: lib.nn.functional.softshrink(x)),
    ("hardshrink", lambda lib, x: lib.nn.functional.hardshrink(x, 0.25)),
    ("threshold_at_value", lambda lib, x: lib.nn.functional.threshold(x, 0.5, -3.0)),
    ("hardswish", lambda lib, x: lib.nn.functional.hardswish(x)),
    ("glu_default_dim", lambda lib, x: lib.nn.functional.glu(x)),
    ("glu_dim0", lambda lib, x: lib.nn.functional.glu(x, 0)),
    ("log_softmax_implicit_3d", lambda lib, x: lib.nn.functional.log_softmax(x.reshape(4, 2, 2))),
    ("log_softmax_dtype", lambda lib, x: lib.nn.functional.log_softmax(x, 1, dtype=lib.float64)),
    ("softmin_dim", lambda lib, x: lib.nn.functional.softmin(x, 0)),
    ("softmin_dtype", lambda lib, x: lib.nn.functional.softmin(x, -1, dtype=lib.float64)),
]


@pytest.mark.parametrize("fn", [c[1] for c in F_ACTS], ids=[c[0] for c in F_ACTS])
def test_functional_activation_defaults_and_kinks(fn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # torch warns about an implicit softmax dim
        check_op(fn, KINKS)


@pytest.mark.parametrize("weight", [np.array([0.25]), np.array([0.25, -0.5, 2.0])])
def test_prelu_at_zero_and_per_channel(weight):
    """torch's gradient at x = 0 is the weight's (Ember gave 1): 0 is on the negative side."""
    x = np.array([[0.0, -1.0, 2.0, 0.0], [0.0, 1.0, -2.0, 0.5], [-0.5, 0.0, 3.0, -1.0]])
    check_op(lambda lib, a, w: lib.nn.functional.prelu(a, w), x.T.copy(), weight)
    check_op(lambda lib, a, w: lib.nn.functional.prelu(a, w), x.reshape(2, 3, 2), weight)


def test_prelu_unbatched_and_two_channels():
    check_op(lambda lib, a, w: lib.nn.functional.prelu(a, w), np.array([0.0, -1.0, 2.0]), np.array([0.3]))
    check_op(lambda lib, a, w: lib.nn.functional.prelu(a, w), (3, 2, 4), np.array([0.3, -0.2]))


INPLACE_DEFAULT = ["relu", "relu6", "hardtanh", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardsigmoid",
                   "hardswish"]


@pytest.mark.parametrize("name", INPLACE_DEFAULT + ["threshold"])
def test_functional_activations_are_out_of_place_by_default(name):
    fn = getattr(ember.nn.functional, name)
    args = (0.5, -3.0) if name == "threshold" else ()
    x = ember.tensor(KINKS)
    y = fn(x, *args)
    assert y is not x
    np.testing.assert_array_equal(x.numpy(), KINKS)
    z = ember.tensor(KINKS)
    assert fn(z, *args, inplace=True) is z
    np.testing.assert_allclose(z.numpy(), getattr(torch.nn.functional, name)(torch.tensor(KINKS), *args).numpy(),
                               rtol=1e-12)


ACT_ERRORS = [
    (lambda F: F.glu(ember.zeros(3, 5)), RuntimeError, "glu: Halving dimension must be even, but dimension 1 is size 5"),
    (lambda F: F.glu(ember.zeros(3, 4), -2), RuntimeError, "glu: Halving dimension must be even, but dimension 0 is size 3"),
    (lambda F: F.glu(ember.tensor(1.0)), RuntimeError, "glu: glu does not support scalars because halving size must be even"),
    (lambda F: F.glu(ember.zeros(2, 2), 2), IndexError, "glu: Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda F: F.celu(ember.zeros(2), 0.0), RuntimeError, "celu: ZeroDivisionError: alpha cannot be 0 for CELU"),
    (lambda F: F.softshrink(ember.zeros(2), -0.5), RuntimeError,
     "softshrink: lambda must be in range [0, inf) for input float32, but found -0.5"),
    (lambda F: F.prelu(ember.zeros(2, 3), ember.zeros(2)), RuntimeError,
     "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 3."),
    (lambda F: F.prelu(ember.zeros(3), ember.zeros(2)), RuntimeError,
     "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 1."),
]


@pytest.mark.parametrize("k", range(len(ACT_ERRORS)))
def test_activation_errors_exactly(k):
    call, exc, message = ACT_ERRORS[k]
    raises_exactly(lambda: call(ember.nn.functional), exc, message, located=False)


def test_hardsigmoid_flat_at_its_kinks():
    # torch's float64 backward multiplies by a float32 1/6 (3e-8 off): the tolerance says so
    check_op(lambda lib, x: lib.nn.functional.hardsigmoid(x), KINKS, grad_rtol=1e-7)


def test_softshrink_accepts_lambda_zero():
    check_op(lambda lib, x: lib.nn.functional.softshrink(x, 0.0), KINKS)


def test_gelu_gradient_differentiated_in_the_upstream_gradient():
    # GeluGrad(x, v) = v * GELU'(x): its gradient in v (GELU'(x) * gg) as well as in x
    from helpers import check_op

    def fn(lib, x, v):
        gx, = lib.autograd.grad(lib.nn.functional.gelu(x), x, v, create_graph=True)
        return gx
    check_op(fn, (3, 4), (3, 4), dtypes=("float64",))


@pytest.mark.parametrize("dim", [1, 0])
def test_softmax_gradient_differentiated_in_the_upstream_gradient(dim):
    # SoftmaxGrad(y, v) is linear in v: its gradient in v is SoftmaxGrad(y, gg) over the same dim
    from helpers import check_op

    def fn(lib, x, v):
        gx, = lib.autograd.grad(lib.nn.functional.softmax(x, dim), x, v, create_graph=True)
        return gx
    check_op(fn, (3, 4), (3, 4), dtypes=("float64",))


def test_gelu_on_the_fake_device_larger_than_a_cache_block(fake_cuda):
    # the host's cache blocking and its float32 erf polynomial are NumPy-only: a device array larger than
    # a block goes to the device's own erf in one call
    from helpers import check_op
    check_op(lambda lib, x: lib.nn.functional.gelu(x), (301, 257), low=-4, high=4, device="cuda")


# ------------------------------------------------------------------ Softmax2d, RReLU, the in-place functional forms
def test_softmax2d_over_channels_batched_and_unbatched():
    check_module(lambda lib: lib.nn.Softmax2d(), (2, 3, 4, 5), modes=("train",))
    check_module(lambda lib: lib.nn.Softmax2d(), (3, 4, 5), modes=("train",))
    for lib in (torch, ember):
        assert repr(lib.nn.Softmax2d()) == "Softmax2d()"
    raises_exactly(lambda: ember.nn.Softmax2d()(ember.zeros(2, 3)), ValueError,
                   "Softmax2d: expected input to be 3D or 4D, got 2D instead (shape (2, 3))")


@pytest.mark.parametrize("lower,upper", [(1.0 / 8, 1.0 / 3), (0.1, 0.6), (0.3, 0.3)])
def test_rrelu_eval_is_leaky_relu_with_the_mean_slope(lower, upper):
    build = (lambda lib: lib.nn.RReLU()) if lower == 1.0 / 8 else (lambda lib: lib.nn.RReLU(lower, upper))
    check_module(build, KINKS, modes=("eval",))
    check_op(lambda L, x: L.nn.functional.rrelu(x, lower, upper), KINKS)   # training=False by default
    check_op(lambda L, x: L.nn.functional.rrelu(x, lower, upper, False), (3, 4, 5))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rrelu_training_draws_one_slope_per_negative_element(dtype):
    lower, upper = 0.1, 0.6
    x = ember.tensor(np.random.default_rng(0).uniform(-3, 3, (200, 100)), dtype=getattr(ember, dtype))
    x[0, :3] = 0.0
    x.requires_grad_(True)
    ember.manual_seed(1)
    y = ember.nn.RReLU(lower, upper)(x)
    assert y.dtype == x.dtype
    y.sum().backward()
    xs, ys, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    neg, pos = xs < 0, xs > 0
    np.testing.assert_array_equal(ys[pos], xs[pos])
    np.testing.assert_array_equal(g[pos], 1.0)
    slope = ys[neg] / xs[neg]
    assert lower <= slope.min() and slope.max() < upper
    np.testing.assert_allclose(g[neg], slope, rtol=1e-6)    # the gradient is the drawn slope
    np.testing.assert_array_equal(ys[0, :3], 0.0)
    assert ((lower <= g[0, :3]) & (g[0, :3] < upper)).all()   # x = 0 takes a drawn slope too, as torch
    # uniform on [lower, upper): mean and variance as torch's draws (different streams, same law)
    t = torch.nn.functional.rrelu(torch.tensor(xs, dtype=torch.float64), lower, upper, training=True).numpy()
    t_slope = t[neg] / xs[neg]
    for s in (slope, t_slope):
        assert abs(s.mean() - (lower + upper) / 2) < 0.005
        assert abs(s.var() - (upper - lower) ** 2 / 12) < 0.001
    assert len(np.unique(slope)) > 0.99 * slope.size    # one draw per element, not one per tensor
    # the seed decides the draws; a new call draws new slopes
    ember.manual_seed(1)
    np.testing.assert_array_equal(ember.nn.functional.rrelu(x.detach(), lower, upper, True).numpy(), ys)
    assert not np.array_equal(ember.nn.functional.rrelu(x.detach(), lower, upper, True).numpy(), ys)


def test_rrelu_inplace_reprs_and_errors():
    for lib in (torch, ember):
        assert repr(lib.nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
        assert repr(lib.nn.RReLU(0.1, 0.3, True)) == "RReLU(lower=0.1, upper=0.3, inplace=True)"
    x = ember.tensor(KINKS.copy())
    assert ember.nn.RReLU(inplace=True).eval()(x) is x
    np.testing.assert_allclose(x.numpy(), torch.nn.functional.rrelu(torch.tensor(KINKS)).numpy(), rtol=1e-12)
    x = ember.tensor(KINKS.copy())
    assert ember.nn.functional.rrelu_(x, 0.2, 0.4, training=True) is x
    neg = KINKS < 0
    assert (x.numpy()[neg] / KINKS[neg] >= 0.2).all() and (x.numpy()[neg] / KINKS[neg] < 0.4).all()
    raises_exactly(lambda: ember.nn.functional.rrelu(ember.zeros(3), 0.5, 0.2), RuntimeError,
                   "rrelu: lower bound should be less than or equal to the upper bound, got lower=0.5, upper=0.2")
    raises_exactly(lambda: ember.nn.functional.rrelu(ember.arange(3), training=True), NotImplementedError,
                   "rrelu: expected a floating point input, got int64")


INPLACE_F = [   # (in-place function, extra arguments): against torch's out-of-place form, values and gradients
    ("relu_", ()), ("elu_", ()), ("elu_", (0.5,)), ("leaky_relu_", ()), ("leaky_relu_", (0.2,)), ("hardtanh_", ()),
    ("hardtanh_", (-2.0, 0.5)), ("selu_", ()), ("celu_", ()), ("celu_", (2.0,)), ("threshold_", (0.5, -3.0)),
    ("rrelu_", ()), ("rrelu_", (0.1, 0.5)),
]


@pytest.mark.parametrize("name,args", INPLACE_F, ids=[f"{n}{a}" for n, a in INPLACE_F])
def test_inplace_functional_forms(name, args):
    # x * 1: torch refuses an in-place op on a leaf that requires grad; on a non-leaf it records it
    check_op(lambda L, x: getattr(L.nn.functional, name)(x * 1, *args), KINKS)
    x = ember.tensor(KINKS.copy())
    assert getattr(ember.nn.functional, name)(x, *args) is x
    out_of_place = getattr(torch.nn.functional, name[:-1])
    np.testing.assert_allclose(x.numpy(), out_of_place(torch.tensor(KINKS), *args).numpy(), rtol=1e-12)


def test_inplace_functional_forms_refuse_a_leaf_that_requires_grad():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="relu_: a leaf Variable that requires grad"):
        ember.nn.functional.relu_(x)
    with pytest.raises(RuntimeError, match="threshold_: a leaf Variable that requires grad"):
        ember.nn.functional.threshold_(x, 0.0, 1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        torch.nn.functional.relu_(torch.ones(3, requires_grad=True))


# ------------------------------------------------------------------ Tensor.hardshrink / Tensor.prelu, gumbel_softmax
def test_tensor_hardshrink_and_prelu_methods():
    x = np.array([[-1.0, -0.5, -0.2, 0.0], [0.3, 0.5, 0.7, 2.0]])
    check_op(lambda lib, a: a.hardshrink(), x)
    check_op(lambda lib, a: a.hardshrink(0.25), x)
    check_op(lambda lib, a, w: a.prelu(w), (2, 3, 4), np.array([0.1, 0.2, 0.3]))
    check_op(lambda lib, a, w: a.prelu(w), (2, 3), np.array([0.25]))


def _gumbel_replay(x, seed, tau, hard, dim):
    """Ember's gumbel_softmax under `seed`, and torch's formula on the noise Ember drew (replayed)."""
    ember.manual_seed(seed)
    e_out = ember.nn.functional.gumbel_softmax(x, tau=tau, hard=hard, dim=dim)
    ember.manual_seed(seed)
    noise = -ember.zeros_like(x).exponential_().log()
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    y_soft = ((xt + torch.tensor(noise.numpy())) / tau).softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = torch.zeros_like(xt).scatter_(dim, index, 1.0)
        t_out = y_hard - y_soft.detach() + y_soft
    else:
        t_out = y_soft
    return e_out, t_out, xt


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("tau,dim", [(1.0, -1), (0.5, 0)])
def test_gumbel_softmax_matches_torchs_formula_on_the_same_noise(hard, tau, dim):
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    e_out, t_out, xt = _gumbel_replay(x, 3, tau, hard, dim)
    g = np.random.default_rng(0).standard_normal((4, 5))
    e_out.backward(ember.tensor(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    if hard:   # one-hot forward, and the gradient is the soft sample's (not zero)
        assert set(np.unique(e_out.detach().numpy())) == {0.0, 1.0}
        assert (e_out.detach().numpy().sum(dim) == 1).all() and np.abs(x.grad.numpy()).max() > 0


def test_gumbel_softmax_samples_follow_the_softmax():
    """The argmax of logits + Gumbel noise is a sample of softmax(logits): the one-hot frequencies over
    20000 draws match the probabilities (5 standard errors), as torch's do."""
    logits = ember.tensor([[1.0, 0.0, -1.0, 2.0]]).expand(20000, 4)
    ember.manual_seed(0)
    freq = ember.nn.functional.gumbel_softmax(logits, tau=0.3, hard=True).mean(0).numpy()
    p = torch.tensor([1.0, 0.0, -1.0, 2.0]).softmax(0).numpy()
    assert np.abs(freq - p).max() < 5 * np.sqrt(p * (1 - p) / 20000).max()
    soft = ember.nn.functional.gumbel_softmax(logits[:3], tau=2.0)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, atol=1e-6)
    assert soft.dtype == ember.float32 and soft.shape == (3, 4)
    with pytest.raises(RuntimeError, match="gumbel_softmax: expected floating point logits, got int64"):
        ember.nn.functional.gumbel_softmax(ember.tensor([1, 2]))
def test_threshold_keeps_nan_as_torch():
    # torch: x <= threshold ? value : x, so a NaN (never <= anything) stays NaN
    from helpers import check_op
    x = np.array([[np.nan, -np.inf, np.inf, 0.3], [0.2, 0.4, -1.0, np.nan]])
    t_out, _ = check_op(lambda lib, a: lib.nn.functional.threshold(a, 0.3, -1.0), x)
    assert np.isnan(t_out.detach().numpy()).sum() == 2
    check_op(lambda lib, a: lib.nn.Threshold(0.3, 5.0)(a), x)


SPECIALS = np.array([[np.nan, -np.inf, np.inf, 0.3, 25.0, -25.0], [0.0, 1.0, -1.0, np.nan, 2.0, 0.6]])


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
def test_shrink_keeps_nan_as_torch(name):
    # values only: torch's gradient at NaN depends on the element's position (scalar vs vector loop)
    x = np.array([[np.nan, -np.inf, np.inf, 0.3, 0.5, -0.5], [0.0, 1.0, -1.0, np.nan, 2.0, 0.6]])
    check_op(lambda L, a: getattr(L.nn.functional, name)(a, 0.5), x, grad=False)
    check_op(lambda L, a: getattr(L.nn.functional, name)(a, 0.5), (3, 4))


def test_hardsigmoid_gradient_at_nan_is_zero_as_torch():
    # torch: 0 unless -3 < x < 3, so 0 at NaN (relu6/hardtanh/hardswish are left: torch's own answer at
    # NaN there depends on the element's position, its scalar loop passing g, its vector loop not)
    x = np.array([[np.nan, -np.inf, np.inf, 0.3, 3.0, -3.0], [0.0, 1.0, -1.0, np.nan, 2.0, 5.0]])
    check_op(lambda L, a: L.nn.functional.hardsigmoid(a), x, **LOOSE)
    check_op(lambda L, a: L.nn.Hardsigmoid()(a), np.full((3, 40), np.nan), **LOOSE)


@pytest.mark.parametrize("fn", [lambda L, a: L.nn.functional.softplus(a),
                                lambda L, a: L.nn.functional.softplus(a, 2.0, 1.0),
                                lambda L, a: L.nn.functional.logsigmoid(a)], ids=["softplus", "beta_threshold", "logsigmoid"])
def test_softplus_gradient_at_nan_is_nan_as_torch(fn):
    # clamp's gradient is 0 at NaN; torch's softplus backward gives NaN there
    check_op(fn, SPECIALS)
