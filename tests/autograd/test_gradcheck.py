"""ember/autograd/gradcheck.py: gradcheck and gradgradcheck, with their tolerances, eps and inputs that do
not require grad, on Functions whose backward is off by a known amount."""
import warnings

import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def square_off_by(scale=1.0, offset=0.0):
    """x**2 whose backward returns (2x * scale + offset) * g: wrong by a known relative or absolute amount."""
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return (2 * x * scale + offset) * g
    return Square.apply


def cube_third_second_off_by(s):
    """x**3 / 3 with an exact first derivative x**2 whose own derivative is wrong by `s` (2x + s)."""
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x / 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return (x * x + s * (x - x.detach())) * g   # value x**2 g; d/dx: (2x + s) g
    return Cube.apply


def f64(values):
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


def test_gradcheck_default_rtol_and_atol():
    x = f64([1.0, -0.5])
    assert gradcheck(square_off_by(), (x,))
    # 1% wrong: over the default rtol=1e-3, within rtol=0.1
    assert gradcheck(square_off_by(scale=1.01), (x,), raise_exception=False) is False
    assert gradcheck(square_off_by(scale=1.01), (x,), rtol=0.1)
    # 1e-4 relative at a gradient of 20: within the default rtol (numpy's own 1e-5 would refuse it)
    assert gradcheck(square_off_by(scale=1 + 1e-4), (f64([10.0]),))
    assert gradcheck(square_off_by(scale=1 + 1e-4), (f64([10.0]),), rtol=1e-5, raise_exception=False) is False
    # at x = 0 the true gradient is 0: an absolute error of 1e-3 is over atol=1e-5, within atol=1e-2
    z = f64([0.0, 0.0])
    assert gradcheck(square_off_by(offset=1e-3), (z,), raise_exception=False) is False
    assert gradcheck(square_off_by(offset=1e-3), (z,), atol=1e-2)


def test_gradcheck_error_names_input_and_max_abs_error():
    x = ember.tensor(0.0, dtype=ember.float64)
    y = f64([1.0])
    with pytest.raises(RuntimeError, match=r"^gradcheck: Jacobian mismatch for input 1 \(max abs error 0\.02\)\n"
                                           r"numerical:\n\[\[2\.\]\]\nanalytical:\n\[\[2\.02\]\]$"):
        gradcheck(lambda a, b: a + square_off_by(scale=1.01)(b), (x, y))


def test_gradcheck_eps_is_the_finite_difference_step():
    x = f64([1.0])
    quartic = lambda t: t ** 4         # central difference of x**4: 4x**3 + 4 eps**2 x
    assert gradcheck(quartic, (x,))
    assert gradcheck(quartic, (x,), eps=0.1, raise_exception=False) is False
    assert gradcheck(quartic, (x,), eps=0.1, atol=0.05)


def test_gradcheck_skips_inputs_that_do_not_require_grad_and_checks_the_rest():
    c = ember.tensor([3.0], dtype=ember.float64)
    bad = square_off_by(scale=1.5)
    # a constant tensor and a Python number first: the input after them is still checked
    with pytest.raises(RuntimeError, match="Jacobian mismatch for input 2"):
        gradcheck(lambda k, a, b: bad(b) * k + a, (2.0, c, f64([1.0])))
    assert gradcheck(lambda k, a, b: b * b * k + a, (2.0, c, f64([1.0])))


def test_gradcheck_accepts_a_bare_tensor_as_torch():
    x = f64([0.3, 0.7])
    assert gradcheck(lambda t: t.sin(), x)
    assert gradcheck(square_off_by(scale=2.0), x, raise_exception=False) is False


def test_gradcheck_function_with_empty_or_constant_output():
    x = f64([0.3, 0.7])
    assert gradcheck(lambda t: t[:0], (x,))                      # no output element at all
    assert gradcheck(lambda t: (t.sin(), ember.zeros(2, dtype=ember.float64)), (x,))


def test_gradcheck_warns_for_non_float64_inputs_only():
    with pytest.warns(UserWarning, match=r"^gradcheck: input 0 is float32, not float64; the check may fail "
                                         r"from rounding alone$"):
        gradcheck(lambda t: t * 2, (ember.tensor([1.0], requires_grad=True),), eps=1e-2, atol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda t: t * 2, (f64([1.0]),))


# ------------------------------------------------------------------ gradgradcheck
def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = f64([0.5, -1.0])
    v = (ember.ones(2, dtype=ember.float64),)
    assert gradgradcheck(cube_third_second_off_by(0.0), (x,), v)
    assert gradcheck(cube_third_second_off_by(0.5), (x,))        # first derivatives are right
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradgradcheck(cube_third_second_off_by(0.5), (x,), v)
    assert gradgradcheck(cube_third_second_off_by(0.5), (x,), v, raise_exception=False) is False
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):   # random grad_outputs by default
        gradgradcheck(cube_third_second_off_by(0.5), (x,))


def test_gradgradcheck_tolerances_and_eps():
    v = (ember.ones(1, dtype=ember.float64),)
    one, zero = f64([1.0]), f64([0.0])
    # second derivative 2 at x=1, off by 0.02 (1%): over rtol=1e-3, within rtol=0.1
    assert gradgradcheck(cube_third_second_off_by(0.02), (one,), v, raise_exception=False) is False
    assert gradgradcheck(cube_third_second_off_by(0.02), (one,), v, rtol=0.1)
    # off by 2e-4 (1e-4 relative): within the default rtol, not within rtol=1e-5
    assert gradgradcheck(cube_third_second_off_by(2e-4), (one,), v)
    assert gradgradcheck(cube_third_second_off_by(2e-4), (one,), v, rtol=1e-5, raise_exception=False) is False
    # at x=0 the second derivative is 0: off by 1e-3 is over atol=1e-5, within atol=1e-2
    assert gradgradcheck(cube_third_second_off_by(1e-3), (zero,), v, raise_exception=False) is False
    assert gradgradcheck(cube_third_second_off_by(1e-3), (zero,), v, atol=1e-2)
    # eps: the central difference of d/dx x**4 = 4x**3 is 12x**2 + 4 eps**2
    assert gradgradcheck(lambda t: t ** 4, (one,), v)
    assert gradgradcheck(lambda t: t ** 4, (one,), v, eps=0.1, raise_exception=False) is False


def test_gradgradcheck_with_non_tensor_and_constant_inputs():
    c = ember.tensor([3.0], dtype=ember.float64)
    x = f64([0.5])
    assert gradgradcheck(lambda k, a, b: (b ** 3) * k * a, (2.0, c, x))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradgradcheck(lambda k, a, b: cube_third_second_off_by(0.5)(b) * k * a, (2.0, c, x))



def test_gradgradcheck_with_an_unused_input_after_a_non_tensor():
    a, b = f64([0.5]), f64([0.7])           # a requires grad but func does not use it
    assert gradgradcheck(lambda k, a, b: (b ** 3) * k, (2.0, a, b))


def test_gradcheck_and_gradgradcheck_on_the_cuda_device(fake_cuda):
    import ember
    x = ember.tensor([0.3, -1.2, 2.0], dtype=ember.float64, device="cuda", requires_grad=True)
    assert gradcheck(lambda a: (a * a).sin(), (x,))
    assert gradgradcheck(lambda a: (a * a * a).sum(), (x,))
    with pytest.raises(RuntimeError, match=r"max abs error"):
        gradcheck(square_off_by(scale=1.01), (x,))
