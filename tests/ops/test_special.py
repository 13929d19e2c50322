"""ember/ops/special.py and the `ember.special` namespace against torch: values and gradients (and second
derivatives) of lgamma, digamma, polygamma, mvlgamma, i0/i0e/i1/i1e, erfcx, ndtri, ndtr, log_ndtr, entr,
xlog1py; torch's values at the poles, +-inf and NaN; the Tensor methods and their `_` in-place forms; the
NumPy fallbacks the CPU backend uses without SciPy."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
import ember.special
from ember.backends import cpu
from helpers import check_op, raises_exactly

NAN, INF = float("nan"), float("inf")
POLES = np.array([0.0, -0.0, -1.0, -2.0, -7.0, INF, -INF, NAN])   # lgamma: inf; digamma: -inf, inf, nan
AWKWARD = np.array([-2.5, -0.5, 1e-30, 0.5, 1.0, 1.4616321449683622, 2.0, 37.25, 200.0, -100.5, 1e10])
BESSEL = np.array([0.0, -0.0, 1e-8, -3.5, 29.0, 31.0, -40.0, 700.0, -720.0, 1e4, INF, -INF, NAN])


def _torch_special(name):
    return getattr(torch.special, name)


def _grad_of(lib, fn, x):
    """d/dx sum(fn(x)) with create_graph, so check_op compares the second derivative too."""
    g, = lib.autograd.grad(fn(lib, x).sum(), x, create_graph=True)
    return g


# ------------------------------------------------------------------ the gamma family
def test_lgamma_matches_torch_at_poles_negative_and_large_x():
    check_op(lambda L, x: L.lgamma(x), (3, 4), low=-6, high=6)
    check_op(lambda L, x: x.lgamma(), AWKWARD)
    check_op(lambda L, x: L.lgamma(x), POLES)   # inf at the poles and at -inf (SciPy: -inf); -inf, NaN gradients
    check_op(lambda L, x: L.lgamma(x), np.array([0, 1, 5, -3], dtype=np.int64))
    check_op(lambda L, x: L.special.gammaln(x), (0, 3))


def test_digamma_matches_torch_at_poles_negative_and_large_x():
    check_op(lambda L, x: L.digamma(x), (3, 4), low=-6, high=6)
    check_op(lambda L, x: x.digamma(), AWKWARD, rtol=1e-6)   # near its root at 1.4616 only atol holds
    check_op(lambda L, x: L.special.psi(x), POLES)   # -inf at +0, inf at -0, NaN at -1, -2, -inf
    check_op(lambda L, x: L.digamma(x), np.array([1, 2, 0], dtype=np.int64))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch(n):
    check_op(lambda L, x: L.polygamma(n, x), (3, 4), low=-4, high=6, rtol=1e-6, grad_rtol=1e-6)
    check_op(lambda L, x: L.special.polygamma(n, x), AWKWARD[AWKWARD < 1e10], rtol=1e-6, grad_rtol=1e-6)
    # the poles (trigamma: torch's large finite values, from sin(pi x) != 0) and +-inf (n >= 2 at +inf: NaN)
    check_op(lambda L, x: x.polygamma(n), POLES, rtol=1e-6, grad=n > 0)
    check_op(lambda L, x: L.polygamma(n, x), np.array([1, 3], dtype=np.int64))


def test_second_derivatives_of_the_gamma_family():
    check_op(lambda L, x: _grad_of(L, lambda L, x: L.lgamma(x), x), (3, 4), low=-3, high=5)
    check_op(lambda L, x: _grad_of(L, lambda L, x: L.polygamma(2, x), x), (5,), positive=True)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma_matches_torch(p):
    check_op(lambda L, x: L.mvlgamma(x, p), (3, 4), low=(p - 1) / 2 + 0.1, high=8)
    check_op(lambda L, x: L.special.multigammaln(x, p=p), (4,), low=(p - 1) / 2 + 0.1, high=3)
    check_op(lambda L, x: x.mvlgamma(p), np.array([3, 4, 7], dtype=np.int64))


def test_gamma_family_errors_as_torch():
    x = ember.tensor([1.5])
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, torch.tensor([1.5]))
    raises_exactly(lambda: ember.polygamma(-1, x), RuntimeError,
                   "polygamma: polygamma(n, x) does not support negative n (got n=-1)")
    raises_exactly(lambda: ember.polygamma(1.5, x), TypeError,
                   "polygamma(): argument 'n' (position 1) must be int, not float", located=False)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        torch.mvlgamma(torch.tensor([1.5]), 0)
    raises_exactly(lambda: ember.mvlgamma(x, 0), RuntimeError,
                   "mvlgamma: p has to be greater than or equal to 1 (got p=0)")
    raises_exactly(lambda: ember.mvlgamma(x, 2.0), TypeError,
                   "mvlgamma(): argument 'p' (position 2) must be int, not float", located=False)
    raises_exactly(lambda: ember.lgamma([1.0]), TypeError,
                   "lgamma(): argument 'input' (position 1) must be Tensor, not list", located=False)


# ------------------------------------------------------------------ the modified Bessel functions
BESSEL_FNS = {
    "i0": lambda L, x: L.special.i0(x), "i0e": lambda L, x: L.special.i0e(x),
    "i1": lambda L, x: L.special.i1(x), "i1e": lambda L, x: L.special.i1e(x),
}


@pytest.mark.parametrize("name", sorted(BESSEL_FNS))
def test_bessel_functions_match_torch(name):
    fn = BESSEL_FNS[name]
    check_op(fn, (3, 4), low=-10, high=10, rtol=1e-6)
    check_op(fn, BESSEL, rtol=1e-6)     # i1's gradient at 0 is torch's limit 0.5; overflow to inf; NaN at inf
    check_op(fn, np.array([0, 2, -3], dtype=np.int64))
    check_op(lambda L, x: _grad_of(L, fn, x), (6,), low=-4, high=4, rtol=1e-6, grad_rtol=1e-6)


def test_i0_is_ember_i0_and_a_tensor_method():
    check_op(lambda L, x: L.i0(x), (2, 3), low=-5, high=5)
    check_op(lambda L, x: x.i0(), np.array([0.0, 1.0]))
    assert ember.special.i0 is ember.i0


# ------------------------------------------------------------------ the normal distribution, erfcx
def test_erfcx_matches_torch_far_into_both_tails():
    check_op(lambda L, x: L.special.erfcx(x), (3, 4), low=-4, high=8)
    tails = np.array([-30.0, -26.0, -5.0, 0.0, 5.0, 9.5, 10.5, 30.0, 1e3, 1e10, INF, -INF, NAN])
    check_op(lambda L, x: L.special.erfcx(x), tails, rtol=1e-6, grad_rtol=1e-6)
    check_op(lambda L, x: _grad_of(L, lambda L, x: L.special.erfcx(x), x), (5,), low=-2, high=3)


def test_ndtri_matches_torch_in_the_tails():
    check_op(lambda L, x: L.special.ndtri(x), (3, 4), low=0.01, high=0.99)
    check_op(lambda L, x: L.special.ndtri(x), np.array([1e-30, 1e-10, 0.5, 1 - 1e-7]), dtypes=("float64",),
             rtol=1e-9)
    check_op(lambda L, x: L.special.ndtri(x), np.array([0.0, 1.0, -0.1, 1.1, NAN]))
    check_op(lambda L, x: _grad_of(L, lambda L, x: L.special.ndtri(x), x), (5,), low=0.05, high=0.95)
    check_op(lambda L, x: L.special.ndtri(x), np.array([0, 1], dtype=np.int64))


def test_ndtr_and_log_ndtr_match_torch():
    check_op(lambda L, x: L.special.ndtr(x), (3, 4), low=-5, high=5)
    check_op(lambda L, x: L.special.ndtr(x), np.array([-40.0, -10.0, 0.0, 10.0, INF, -INF, NAN]))
    check_op(lambda L, x: L.special.log_ndtr(x), (3, 4), low=-6, high=6)
    check_op(lambda L, x: L.special.log_ndtr(x), np.array([-40.0, -1.0, -0.999, 0.0, 3.0, 30.0]), rtol=1e-6,
             grad_rtol=1e-4)
    check_op(lambda L, x: L.special.log_ndtr(x), np.array([INF, -INF, NAN]), grad=False)
    t, e = check_op(lambda L, x: L.special.log_ndtr(x), np.array([-200.0]), dtypes=("float64",), rtol=1e-12)
    assert np.isfinite(e.item()) and e.item() < -2e4   # log(ndtr) where ndtr itself is 0
    check_op(lambda L, x: _grad_of(L, lambda L, x: L.special.log_ndtr(x), x), (5,), low=-3, high=3)


# ------------------------------------------------------------------ entr, xlog1py
def test_entr_matches_torch():
    check_op(lambda L, x: L.special.entr(x), (3, 4), low=0.01, high=3)
    check_op(lambda L, x: L.special.entr(x), np.array([0.0, -1.0, -INF, INF, NAN]), grad=False)
    check_op(lambda L, x: L.special.entr(x), np.array([NAN, 2.0]))   # the gradient at NaN is NaN
    check_op(lambda L, x: L.special.entr(x), np.array([0, 1, 3], dtype=np.int64))
    # torch's gradient is inf at 0 and NaN below; the function is constant there and Ember gives 0
    x = ember.tensor([0.0, -1.0], requires_grad=True)
    ember.special.entr(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_xlog1py_gradients_at_zero_nan_and_inf_as_torch():
    # other's gradient g * x / (1 + y): NaN at x == 0, y == -1, as torch
    x = np.array([0.0, 0.0, 1.0, 0.0, NAN, 1.0, 0.0, INF, 2.0, 0.0])
    y = np.array([-1.0, 0.0, -1.0, NAN, -1.0, INF, -INF, 0.0, -2.0, -3.0])
    check_op(lambda L, x, y: L.special.xlog1py(x, y), x, y)


def test_xlog1py_matches_torch():
    check_op(lambda L, x, y: L.special.xlog1py(x, y), (3, 4), (4,), low=-0.9, high=3)
    x = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0])
    y = np.array([-1.0, -2.0, 0.5, NAN, -1.0, NAN, 1.0])
    check_op(lambda L, x, y: L.special.xlog1py(x, y), x, y, grad=False)
    check_op(lambda L, x, y: L.special.xlog1py(x, y), x[[2, 6]], y[[2, 6]])
    check_op(lambda L, y: L.special.xlog1py(2, y), (3,), positive=True)
    check_op(lambda L, x: L.special.xlog1py(x, 2.5), (3,))
    check_op(lambda L, x, y: L.special.xlog1py(x, y), np.array([1, 0], dtype=np.int64), np.array([2, 3]))
    with pytest.raises(TypeError):
        torch.special.xlog1py(2, 3)
    raises_exactly(lambda: ember.special.xlog1py(2, 3), TypeError,
                   "xlog1py(): expected a Tensor for input or other, got int and int", located=False)


# ------------------------------------------------------------------ half precision, in-place forms
@pytest.mark.parametrize("name", ["gammaln", "digamma", "i0", "i0e", "i1", "i1e"])   # torch's CPU: no half erfcx, ndtri
def test_half_precision_is_computed_in_float32_as_torch(name):
    x = np.array([0.1, 0.5, 0.9, 2.5, 7.0])
    for dt in ("float16", "bfloat16"):
        t = getattr(torch.special, name)(torch.tensor(x).to(getattr(torch, dt)))
        e = getattr(ember.special, name)(ember.tensor(x).to(getattr(ember, dt)))
        assert e.dtype.name == dt
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=1e-2 if dt == "float16" else 1e-1)


def test_polygamma_in_half_precision():
    x = np.array([0.5, 2.5, -1.5])
    for n in (1, 2):
        t = torch.polygamma(n, torch.tensor(x, dtype=torch.float16))
        e = ember.polygamma(n, ember.tensor(x, dtype=ember.float16))
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-2)


IN_PLACE = {"lgamma_": (), "digamma_": (), "polygamma_": (2,), "i0_": (), "mvlgamma_": (2,)}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_match_torch(name):
    x, args = np.array([1.5, 2.0, 3.25]), IN_PLACE[name]
    t, e = torch.tensor(x), ember.tensor(x)
    getattr(t, name)(*args)
    assert getattr(e, name)(*args) is e
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    check_op(lambda L, x: getattr(x * 1, name)(*args), (3,), low=1.5, high=4)   # and keep the graph


# ------------------------------------------------------------------ the namespace
def test_special_namespace_has_torch_special_names_as_ember_functions():
    assert ember.special.gammaln is ember.lgamma and ember.special.psi is ember.digamma is ember.special.digamma
    assert ember.special.expit is ember.sigmoid and ember.special.multigammaln is ember.mvlgamma
    for name in ("erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "log_softmax", "logsumexp", "logit",
                 "round", "sinc", "softmax", "xlogy", "polygamma", "i0"):
        assert getattr(ember.special, name) is getattr(ember, name), name
    missing = sorted(set(ember.special.__all__) - set(dir(torch.special)))
    assert not missing, f"not torch.special names: {missing}"


@pytest.mark.parametrize("name", ["expit", "logit", "exp2", "expm1", "log1p", "round", "sinc", "erf", "erfc"])
def test_reexported_unary_functions_match_torch_special(name):
    check_op(lambda L, x: getattr(L.special, name)(x), (3, 4), low=0.05, high=0.95)


def test_reexported_reductions_and_binary_functions_match_torch_special():
    check_op(lambda L, x: L.special.softmax(x, 1), (3, 4))
    check_op(lambda L, x: L.special.log_softmax(x, dim=0), (3, 4))
    check_op(lambda L, x: L.special.logsumexp(x, 1, keepdim=True), (3, 4))
    check_op(lambda L, x: L.special.erfinv(x), (3, 4), low=-0.9, high=0.9)
    check_op(lambda L, x: L.special.round(x, decimals=1), (3, 4), grad=False)
    check_op(lambda L, x, y: L.special.xlogy(x, y), (3, 4), (4,), positive=True)
    check_op(lambda L, x: L.special.logit(x, eps=0.1), (5,), low=0.0, high=1.0)


def test_import_ember_does_not_import_scipy():
    code = "import sys, ember; ember.special.i0e; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ------------------------------------------------------------------ the NumPy fallbacks (no SciPy)
@pytest.fixture
def without_scipy(monkeypatch):
    """The CPU backend as on a machine without SciPy: `import scipy.special` fails, so the special
    functions come from ember/backends/special_host.py."""
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    cpu._special.clear()
    yield
    cpu._special.clear()


FALLBACK = {   # name: (fn, inputs as in check_op)
    "lgamma": (lambda L, x: L.lgamma(x), np.concatenate([AWKWARD, POLES])),
    "digamma": (lambda L, x: L.digamma(x), np.concatenate([AWKWARD, POLES, [-1e3 + 0.25]])),
    "polygamma2": (lambda L, x: L.polygamma(2, x), np.concatenate([AWKWARD[:-1], POLES, [-30.25]])),
    "polygamma5": (lambda L, x: L.polygamma(5, x), np.array([-3.75, 0.3, 1.0, 9.0, 50.0, 1e3])),
    "i0": (lambda L, x: L.special.i0(x), BESSEL),
    "i0e": (lambda L, x: L.special.i0e(x), BESSEL),
    "i1": (lambda L, x: L.special.i1(x), BESSEL),
    "i1e": (lambda L, x: L.special.i1e(x), BESSEL),
    "erfcx": (lambda L, x: L.special.erfcx(x), np.array([-26.0, -3.0, 0.0, 0.5, 9.99, 10.01, 40.0, 1e8, INF, NAN])),
    "ndtri": (lambda L, x: L.special.ndtri(x), np.array([1e-300, 1e-20, 1e-3, 0.3, 0.5, 0.77, 1 - 1e-12, 0.0, 1.0,
                                                         -0.5, NAN])),
}


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_fallbacks_without_scipy_match_torch(name, without_scipy):
    fn, x = FALLBACK[name]
    check_op(fn, x, dtypes=("float64",), rtol=1e-9, grad_rtol=1e-8)
    check_op(fn, x, dtypes=("float32",), rtol=1e-6, grad_rtol=1e-5)
    check_op(fn, (4, 5), low=0.02, high=0.98, dtypes=("float32", "float64"))
    from ember.backends import special_host
    assert cpu._scipy_special("gammaln", "lgamma") is special_host.lgamma   # the fallback really ran


def test_fallbacks_agree_with_scipy_over_a_wide_range(without_scipy):
    from ember.backends import special_host as H
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-30, 30, 3000), rng.uniform(0, 2, 500), 10.0 ** rng.uniform(-8, 3, 500)])
    x = x[np.abs(x - np.round(x)) > 1e-6]   # off the poles
    tx = torch.tensor(x)
    cases = {"lgamma": (H.lgamma(x), torch.lgamma(tx)), "digamma": (H.digamma(x), torch.digamma(tx)),
             "polygamma3": (H.polygamma(3, x), torch.polygamma(3, tx)),
             "i0e": (H.i0e(x), torch.special.i0e(tx)), "i1e": (H.i1e(x), torch.special.i1e(tx)),
             "erfcx": (H.erfcx(x[x > -25]), torch.special.erfcx(tx[tx > -25]))}
    p = 10.0 ** -rng.uniform(0, 250, 1000)
    cases["ndtri"] = (H.ndtri(p), torch.special.ndtri(torch.tensor(p)))
    for name, (ours, theirs) in cases.items():
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-11, atol=1e-12, err_msg=name)


def test_docstring_examples():
    import doctest
    import ember.ops.special
    for mod in (ember.ops.special, ember.special):
        result = doctest.testmod(mod, extraglobs={"ember": ember})
        assert result.attempted >= 1 and result.failed == 0, mod.__name__
