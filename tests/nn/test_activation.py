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
