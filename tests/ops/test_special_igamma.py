"""igamma / igammac (torch.special.gammainc / gammaincc) against torch: values over a grid of edge values,
the gradient in x through check_op, torch's refusal of the gradient in a, methods and in-place forms."""
import numpy as np
import pytest

import ember
from helpers import NoGrad, check_op

A = np.array([0.0, 0.0, 0.5, 1, 2, 10, 100, 1e3, -1, np.inf, 2, 2, np.nan, 1e-5, 50])
X = np.array([1.0, 0.0, 0.0, 1, 3, 9, 120, 1000, 1, 1, np.inf, -1, 1, 1e-3, 1e-10])


@pytest.mark.parametrize("fn", ["igamma", "igammac"])
def test_igamma_values_at_the_edges(fn):
    check_op(lambda L, a, x: getattr(L, fn)(a, x), NoGrad(A), NoGrad(X), grad=False)


@pytest.mark.parametrize("fn", ["igamma", "igammac"])
def test_igamma_gradient_in_x(fn):
    check_op(lambda L, a, x: getattr(L, fn)(a, x), NoGrad((3, 1)), (4,), positive=True)
    check_op(lambda L, a, x: getattr(L.special, "gammainc" if fn == "igamma" else "gammaincc")(a, x),
             NoGrad((2, 3)), (2, 3), positive=True)
    check_op(lambda L, a, x: getattr(a, fn)(x), NoGrad((5,)), (5,), positive=True)
    check_op(lambda L, a, x: a.clone().igamma_(x) if fn == "igamma" else a.clone().igammac_(x), NoGrad((5,)), NoGrad((5,)),
             positive=True, grad=False)


def test_igamma_dtypes_and_promotion():
    check_op(lambda L, a, x: L.igamma(a, x.double()), NoGrad((4,)), (4,), positive=True)
    check_op(lambda L, a, x: L.igamma(a, x), NoGrad((0, 3)), (3,), positive=True)


def test_igamma_errors():
    a = ember.tensor([2.0], requires_grad=True)
    y = ember.igamma(a, ember.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        y.sum().backward()
    with pytest.raises(NotImplementedError, match="igammac: is not implemented for input int64"):
        ember.igammac(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="igamma\\(\\): argument 'other' must be Tensor, not float"):
        ember.igamma(ember.tensor([1.0]), 2.0)
    with pytest.raises(RuntimeError, match="igamma: shapes of input \\(2,\\) and other \\(3,\\) cannot be broadcast"):
        ember.igamma(ember.ones(2), ember.ones(3))


def test_igamma_numpy_fallback_matches_scipy():
    """The special_host series and continued fraction that run without SciPy."""
    import scipy.special
    from ember.backends import special_host
    with np.errstate(all="ignore"):
        for mine, ref in ((special_host.gammainc, scipy.special.gammainc),
                          (special_host.gammaincc, scipy.special.gammaincc)):
            np.testing.assert_allclose(mine(A, X), ref(A, X), rtol=1e-8, atol=1e-14)
