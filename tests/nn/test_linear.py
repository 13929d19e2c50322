"""ember/nn/linear.py against torch: Linear, Bilinear, Identity, Flatten, Unflatten."""
import pytest

from .nn_helpers import check_module

CASES = [
    ("linear", lambda lib: lib.nn.Linear(5, 3), [(4, 5)]),
    ("linear_nobias", lambda lib: lib.nn.Linear(5, 3, bias=False), [(4, 5)]),
    ("linear_3d", lambda lib: lib.nn.Linear(5, 3), [(2, 4, 5)]),
    ("linear_1d", lambda lib: lib.nn.Linear(5, 3), [(5,)]),
    ("bilinear", lambda lib: lib.nn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    ("bilinear_nobias", lambda lib: lib.nn.Bilinear(3, 4, 2, bias=False), [(2, 5, 3), (2, 5, 4)]),
    ("identity", lambda lib: lib.nn.Identity(3, foo=1), [(2, 3)]),
    ("flatten", lambda lib: lib.nn.Flatten(), [(2, 3, 4, 5)]),
    ("flatten_range", lambda lib: lib.nn.Flatten(0, 2), [(2, 3, 4, 5)]),
    ("unflatten", lambda lib: lib.nn.Unflatten(1, (2, 6)), [(3, 12)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_linear_layers(build, inputs):
    check_module(build, *inputs)


def test_linear_init_bounds():
    import math
    import ember
    m = ember.nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    assert float(m.weight.abs().max()) <= bound and float(m.weight.abs().max()) > 0.8 * bound
    assert float(m.bias.abs().max()) <= bound
    assert repr(m) == "Linear(in_features=100, out_features=50, bias=True)"


def test_bfloat16_linear_returns_bfloat16():
    # issue 8 (2b): F.linear and nn.Linear gave float32 for bfloat16 (NumPy's bfloat16 matmul is float32);
    # check_op compares the output's and the gradients' dtype with torch's (bfloat16)
    from helpers import check_op
    check_op(lambda L, x, w, b: L.nn.functional.linear(x, w, b), (4, 5), (3, 5), (3,), dtypes=("bfloat16",))
    check_module(lambda lib: lib.nn.Linear(5, 3), (2, 4, 5), dtypes=("bfloat16",))


def test_functional_linear_mixed_dtypes_and_shape_errors():
    import torch
    import ember
    x, w = ember.randn(2, 3, 4), ember.randn(5, 4, dtype=ember.float64)
    with pytest.raises(RuntimeError):    # torch refuses mixed dtypes too
        torch.nn.functional.linear(torch.randn(2, 3, 4), torch.randn(5, 4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="same dtype.*float32.*float64"):
        ember.nn.functional.linear(x, w)
    with pytest.raises(RuntimeError, match=r"linear: input's last dim 4 != weight's in_features 3 "
                                           r"\(input \(2, 3, 4\), weight \(5, 3\)\)"):
        ember.nn.functional.linear(x, ember.randn(5, 3))


def test_linear_bias_of_another_dtype_raises_as_in_torch():
    import torch
    import ember
    x, w = torch.randn(2, 3), torch.randn(4, 3)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(x, w, torch.randn(4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"^linear: expected bias of dtype float32 .* got float64"):
        ember.nn.functional.linear(ember.randn(2, 3), ember.randn(4, 3), ember.randn(4).double())


def test_linear_general_path_with_a_2d_bias():
    # a (1, out) bias is not the fused kernel's (1-D): the general matmul + bias path, as torch broadcasts it
    from helpers import check_op
    check_op(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), (2, 3, 4), (5, 4), (1, 5))


@pytest.mark.parametrize("grads", ["x", "w", "b"])
def test_functional_linear_gradient_of_one_input_alone(grads):
    # the fused Linear primitive computes only the gradients asked for: each one alone must still come
    from helpers import NoGrad, check_op
    shapes = {"x": (4, 3), "w": (5, 3), "b": (5,)}
    args = [s if k == grads else NoGrad(s) for k, s in shapes.items()]
    check_op(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), *args)
