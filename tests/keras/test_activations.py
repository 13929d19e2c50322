"""ember.keras.activations: every named activation against torch (values and gradients, float32 and
float64), Keras 3's defaults (exact gelu, leaky_relu's 0.2, hard_sigmoid = relu6(x + 3) / 6), relu's
options (Keras 3's `activations.relu` examples), `get` and `serialize`."""
import numpy as np
import pytest
import torch

import ember
from ember.keras import activations as A
from ember.keras import layers

from tests.helpers import check_op


def pick(lib, torch_fn, ember_fn):
    return torch_fn if lib is torch else ember_fn


F = torch.nn.functional
CASES = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "linear": lambda x: x,
    "softmax": lambda x: torch.softmax(x, -1), "log_softmax": lambda x: torch.log_softmax(x, -1),
    "elu": F.elu, "selu": F.selu, "gelu": F.gelu, "silu": F.silu, "swish": F.silu, "softplus": F.softplus,
    "softsign": F.softsign, "leaky_relu": lambda x: F.leaky_relu(x, 0.2), "relu6": F.relu6,
    "exponential": torch.exp, "hard_sigmoid": F.hardsigmoid, "mish": F.mish,
}


def test_every_name_is_tested():
    assert sorted(CASES) == sorted(A.ALL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_named_activation_against_torch(name):
    # torch's hardsigmoid backward multiplies by the float literal 1.0f / 6.0f, also in float64 (3e-8 off)
    check_op(lambda lib, x: pick(lib, CASES[name], A.get(name))(x), (3, 5), low=-4.0, high=4.0,
             grad_rtol=1e-7 if name == "hard_sigmoid" else None)


def test_keras3_defaults_and_options_against_torch():
    check_op(lambda lib, x: F.gelu(x, approximate="tanh") if lib is torch else A.gelu(x, approximate=True), (7,))
    check_op(lambda lib, x: F.elu(x, 0.5) if lib is torch else A.elu(x, alpha=0.5), (7,))
    check_op(lambda lib, x: F.leaky_relu(x, 0.05) if lib is torch else A.leaky_relu(x, negative_slope=0.05), (7,))
    check_op(lambda lib, x: torch.softmax(x, 0) if lib is torch else A.softmax(x, axis=0), (4, 3))
    check_op(lambda lib, x: torch.log_softmax(x, 0) if lib is torch else A.log_softmax(x, axis=0), (4, 3))
    x = ember.tensor([-1.0, 0.0, 1.0])
    # Keras 3's `activations.gelu(x)` is the exact (erf) one: 0.8413447 at 1, the tanh form gives 0.8411920
    np.testing.assert_allclose(A.gelu(x).numpy(), [-0.15865529, 0.0, 0.8413447], rtol=1e-6)
    np.testing.assert_allclose(A.leaky_relu(x).numpy(), [-0.2, 0.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(A.hard_sigmoid(ember.tensor([-3.0, 0.0, 1.5, 3.0])).numpy(), [0, 0.5, 0.75, 1])


def test_relu_options_as_keras3_documents():
    x = ember.tensor([-10.0, -5.0, 0.0, 5.0, 10.0])
    assert A.relu(x).tolist() == [0, 0, 0, 5, 10]
    assert A.relu(x, negative_slope=0.5).tolist() == [-5, -2.5, 0, 5, 10]
    assert A.relu(x, max_value=5.0).tolist() == [0, 0, 0, 5, 5]
    assert A.relu(x, threshold=5.0).tolist() == [0, 0, 0, 0, 10]
    assert A.relu(x, max_value=6.0).tolist() == [0, 0, 0, 5, 6]
    # all three: x above 1, clipped at 6, minus 0.5 * relu(1 - x)
    assert A.relu(x, negative_slope=0.5, max_value=6.0, threshold=1.0).tolist() == [-5.5, -3.0, -0.5, 5.0, 6.0]
    assert A.relu(x, negative_slope=0.5, threshold=-6.0).tolist() == [-2.0, -5.0, 0.0, 5.0, 10.0]
    assert A.relu(x, threshold=1.0).tolist() == [0, 0, 0, 5, 10]
    assert A.relu(ember.tensor([0.5, 1.0, 1.5]), threshold=1.0).tolist() == [0.0, 0.0, 1.5]   # not 0.5 above 0
    assert A.relu(x, negative_slope=1.0).tolist() == [-10, -5, 0, 5, 10]                  # slope 1: the identity


def relu_torch(x, slope, max_value, threshold):
    out = x * (x > threshold).to(x.dtype) if threshold != 0 else F.relu(x)
    if max_value is not None:
        out = out.clamp(0.0, max_value)
    return out - slope * F.relu(threshold - x)


@pytest.mark.parametrize("slope,max_value,threshold", [(0.3, None, 0.0), (0.0, 1.5, 0.0), (0.0, None, 0.5),
                                                       (1.0, None, 0.0), (0.0, None, 1.0), (1.0, 2.0, 1.0),
                                                       (0.1, 1.0, -0.5), (0.2, 6.0, 0.0)])
def test_relu_options_gradients_against_torch(slope, max_value, threshold):
    check_op(lambda lib, x: relu_torch(x, slope, max_value, threshold) if lib is torch else
             A.relu(x, negative_slope=slope, max_value=max_value, threshold=threshold), (4, 6), low=-3.0, high=3.0)


def test_get_and_serialize():
    assert A.get(None) is A.linear and A.get("swish") is A.silu and A.get("relu") is A.relu
    fn = lambda x: x * 2                                                   # noqa: E731
    assert A.get(fn) is fn
    for name, f in A.ALL.items():
        assert A.serialize(f) == ("silu" if name == "swish" else name)
        assert A.get(A.serialize(f)) is f
    with pytest.raises(ValueError, match=r"^Could not interpret activation function identifier: 'Relu'\. Known "
                                         r"activations: elu, exponential, .*, tanh, or a callable$"):
        A.get("Relu")
    with pytest.raises(ValueError, match=r"^Could not interpret activation function identifier: 3\."):
        A.get(3)
    with pytest.raises(ValueError, match=r"^activation <function .*<lambda> at .*> is not one of Keras's named "
                                         r"activations and cannot be saved; use one of elu, exponential, "):
        A.serialize(fn)


def test_an_activation_saved_by_name_in_a_layer_config():
    d = layers.Dense(2, activation="gelu")
    assert d.get_config()["activation"] == "gelu"
    assert layers.Dense.from_config(d.get_config()).activation is A.gelu
