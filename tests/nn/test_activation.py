"""ember/nn/activation.py against torch (the modules and so the functional forms)."""
import numpy as np
import pytest

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
