"""torch's special functions: the gamma family (lgamma, digamma, polygamma, mvlgamma), the modified Bessel
functions i0, i0e, i1, i1e, the regularized incomplete gamma functions (igamma, igammac), the normal distribution (ndtr, ndtri, log_ndtr), erfcx, entr and xlog1py.

The functions with no accurate composite are primitives here, as Erfc and Erfinv in primitives.py: the
forward calls the backend's function (SciPy's on the CPU, with a NumPy fallback without SciPy; cupyx's on
CUDA), half precision computed in float32 as torch does; the backward is written in Tensor ops next to
it, so double backward works. Where SciPy's value differs from torch's (lgamma(-inf), polygamma at +inf,
trigamma at the poles), the forward gives torch's. The rest are composites. Public through `ember`
(lgamma, digamma, polygamma, i0, mvlgamma, also as Tensor methods) and `ember.special` (all of them).
"""
from __future__ import annotations

import math as _math
import numbers

import numpy as np

from .. import _dtype
from .._errors import op_error
from .._tensor import Tensor
from ..autograd.function import Primitive
from ..backends import array_module
from . import math as M
from .pointwise import _inf_slope_at_zero
from ._infer import _same

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "igamma", "igammac"]


def _backend_special(name, x, *args):
    """The backend's special function `name(*args, x)` in x's dtype: the CPU's (SciPy) or CUDA's (cupyx).
    SciPy and CuPy have no half-precision loops: float16 and bfloat16 are computed in float32, as torch."""
    from .. import backends
    be = backends.get("cpu" if array_module(x).__name__ == "numpy" else "cuda")
    with np.errstate(over="ignore"):   # a wider result rounded to x's dtype: inf where it overflows, as torch's
        if x.dtype.itemsize == 2:
            return getattr(be, name)(*args, x.astype(np.float32)).astype(x.dtype)
        return getattr(be, name)(*args, x).astype(x.dtype, copy=False)


def _trigamma(xp, x):
    """torch's trigamma (polygamma(1, x)): the reflection below 1/2, six steps of the recurrence, then the
    asymptotic series. At the negative integers sin(pi x) is not exactly 0, so the value is large but
    finite, as torch's (SciPy gives inf there)."""
    dt = x.dtype
    if dt.itemsize == 2:
        x = x.astype(np.float32)
    pi = x.dtype.type(np.pi)
    with np.errstate(all="ignore"):
        low = x < 0.5
        s = xp.sin(pi * x)
        out = xp.where(low, -(pi * pi) / (s * s), 0)
        x = xp.where(low, 1 - x, x)
        for _ in range(6):
            out = out + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        out = out + (1 + 1 / (2 * x) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / x
        return xp.where(low, -out, out).astype(dt)


class Lgamma(Primitive):
    """log|Gamma(x)|: +inf at the poles 0, -1, -2, ... and at +-inf; its derivative is digamma."""
    attrs = {}
    saves_inputs = True
    def forward(self, x):
        y = _backend_special("lgamma", x)
        return array_module(x).where(x == -np.inf, np.inf, y).astype(x.dtype, copy=False)   # SciPy: -inf
    def backward(self, g): return (g * Polygamma.apply(self.saved_tensors[0], n=0),)
    def infer(self, x): return _same(x)


class Polygamma(Primitive):
    """The n-th derivative of digamma (n = 0: digamma itself, n = 1: torch's trigamma series); its
    derivative is polygamma(n + 1, x)."""
    attrs = {"n": int}
    saves_inputs = True
    def forward(self, x):
        xp = array_module(x)
        if self.n == 0:
            return _backend_special("digamma", x)
        if self.n == 1:
            return _trigamma(xp, x)
        y = _backend_special("polygamma", x, self.n)
        return xp.where(x == np.inf, np.nan, y).astype(x.dtype, copy=False)   # torch: NaN, SciPy: 0
    def backward(self, g): return (g * Polygamma.apply(self.saved_tensors[0], n=self.n + 1),)
    def infer(self, x): return _same(x)


class I0(Primitive):
    """The modified Bessel function of the first kind, order 0; its derivative is i1."""
    attrs = {}
    saves_inputs = True
    def forward(self, x): return _backend_special("i0", x)
    def backward(self, g): return (g * I1.apply(self.saved_tensors[0]),)
    def infer(self, x): return _same(x)


class I0e(Primitive):
    """exp(-|x|) i0(x); its derivative is i1e(x) - sign(x) i0e(x)."""
    attrs = {}
    saves_inputs = True
    saves_output = True
    def forward(self, x): return _backend_special("i0e", x)
    def backward(self, g):
        x = self.saved_tensors[0]
        return (g * (I1e.apply(x) - M.sign(x) * self.saved_output()),)
    def infer(self, x): return _same(x)


def _not_tiny(x):
    """(|x| > eps, x with eps where not): i1' = i0 - i1/x is 0/0 at 0, where torch gives the limit 0.5."""
    ok = M.gt(M.abs(x), _dtype.finfo(x.dtype).eps)
    return ok, M.where(ok, x, _dtype.finfo(x.dtype).eps)


class I1(Primitive):
    """The modified Bessel function of the first kind, order 1; its derivative is i0(x) - i1(x)/x
    (0.5 at 0)."""
    attrs = {}
    saves_inputs = True
    saves_output = True
    def forward(self, x): return _backend_special("i1", x)
    def backward(self, g):
        ok, safe = _not_tiny(self.saved_tensors[0])
        return (g * M.where(ok, I0.apply(safe) - self.saved_output() / safe, 0.5),)
    def infer(self, x): return _same(x)


class I1e(Primitive):
    """exp(-|x|) i1(x); its derivative is i0e(x) - i1e(x) (sign(x) + 1/x) (0.5 at 0)."""
    attrs = {}
    saves_inputs = True
    saves_output = True
    def forward(self, x): return _backend_special("i1e", x)
    def backward(self, g):
        ok, safe = _not_tiny(self.saved_tensors[0])
        grad = I0e.apply(safe) - self.saved_output() * (M.sign(safe) + 1 / safe)
        return (g * M.where(ok, grad, 0.5),)
    def infer(self, x): return _same(x)


class Erfcx(Primitive):
    """exp(x^2) erfc(x), computed directly (the product overflows from x = 26 on, erfcx itself never);
    its derivative is 2 x erfcx(x) - 2/sqrt(pi)."""
    attrs = {}
    saves_inputs = True
    saves_output = True
    def forward(self, x): return _backend_special("erfcx", x)
    def backward(self, g):
        return (g * (2 * self.saved_tensors[0] * self.saved_output() - 2 / _math.sqrt(_math.pi)),)
    def infer(self, x): return _same(x)


class Igamma(Primitive):
    """The regularized incomplete gamma function of (a, x): lower P(a, x), or upper Q(a, x) = 1 - P with
    `upper` (a and x broadcast). Its derivative in x is +-x^(a-1) e^-x / Gamma(a), computed as torch's;
    in a it is not implemented, as torch's."""
    attrs = {"upper": bool}
    saves_inputs = True
    def forward(self, a, x):
        from .. import backends
        be = backends.get("cpu" if array_module(x).__name__ == "numpy" else "cuda")
        fn = be.gammaincc if self.upper else be.gammainc
        if x.dtype.itemsize == 2:   # no half-precision loops: computed in float32, as torch
            return fn(a.astype(np.float32), x.astype(np.float32)).astype(x.dtype)
        return fn(a, x).astype(x.dtype, copy=False)
    def backward(self, g):
        from .primitives import sum_to
        a, x = self.saved_tensors
        if self.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{'igammac' if self.upper else 'igamma'}: input' is not "
                                      f"implemented (as torch's); only other (x) is differentiable")
        gx = g * M.exp((a - 1) * M.log(x) - x - Lgamma.apply(a))
        return None, sum_to(-gx if self.upper else gx, x.shape)
    def infer(self, a, x): return tuple(np.broadcast_shapes(a.shape, x.shape)), x.dtype


class Ndtri(Primitive):
    """The inverse of the standard normal CDF (-inf at 0, +inf at 1, NaN outside [0, 1]), accurate in
    the tails where sqrt(2) erfinv(2p - 1) is not; its derivative is sqrt(2 pi) exp(ndtri(p)^2 / 2)."""
    attrs = {}
    saves_output = True
    def forward(self, x): return _backend_special("ndtri", x)
    def backward(self, g):
        y = self.saved_output()
        return (g * _math.sqrt(2 * _math.pi) * (y * y / 2).exp(),)
    def infer(self, x): return _same(x)


# ------------------------------------------------------------------ the public functions
def _float(op, input):
    """`input` as a float tensor: integers and bools in the default float dtype, as torch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input if input.dtype.is_floating_point else M.cast_for(op, input, _dtype.get_default_dtype().np)


def lgamma(input):
    """The natural logarithm of |Gamma(x)|, +inf at the poles 0, -1, -2, ...

    >>> round(ember.lgamma(ember.tensor([4.0])).item(), 4)   # log(3!)
    1.7918
    """
    return Lgamma.apply(_float("lgamma", input))


def digamma(input):
    """The logarithmic derivative of Gamma: -inf at 0, NaN at the negative integers (torch's values).

    >>> round(ember.digamma(ember.tensor([1.0])).item(), 4)   # minus the Euler-Mascheroni constant
    -0.5772
    """
    return Polygamma.apply(_float("digamma", input), n=0)


def polygamma(n, input):
    """The n-th derivative of digamma (n >= 0); no gradient with respect to n, as torch.

    >>> round(ember.polygamma(1, ember.tensor([1.0])).item(), 4)   # pi^2 / 6
    1.6449
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise op_error("polygamma", f"polygamma(n, x) does not support negative n (got n={n})")
    return Polygamma.apply(_float("polygamma", input), n=int(n))


def _igamma_operands(op, input, other):
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise op_error(op, f"is not implemented for {name} {t.dtype.name} {tuple(t.shape)} (floating point only, "
                               f"as torch); convert it with .float() first", NotImplementedError)
    dt = _dtype.promote_types(input.dtype, other.dtype)
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    except ValueError:
        raise op_error(op, f"shapes of input {tuple(input.shape)} and other {tuple(other.shape)} cannot be "
                           f"broadcast together") from None
    a, x = (t if t.dtype is dt else M.cast_for(op, t, dt.np) for t in (input, other))
    return a.expand(shape), x.expand(shape)


def igamma(input, other):
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a) of a = input and
    x = other (a, x >= 0; NaN outside). Differentiable in other only, as torch.

    >>> round(ember.igamma(ember.tensor([1.0]), ember.tensor([1.0])).item(), 6)   # 1 - e^-1
    0.632121
    """
    a, x = _igamma_operands("igamma", input, other)
    return Igamma.apply(a, x, upper=False)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), accurate where P is near 1.

    >>> round(ember.igammac(ember.tensor([1.0]), ember.tensor([20.0])).item() * 1e9, 4)   # e^-20
    2.0612
    """
    a, x = _igamma_operands("igammac", input, other)
    return Igamma.apply(a, x, upper=True)


def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension p: the sum of lgamma(x - j/2) for j < p, plus
    p (p - 1) / 4 log(pi).

    >>> round(ember.mvlgamma(ember.tensor([2.5]), 2).item(), 4)   # lgamma(2.5) + lgamma(2) + log(pi) / 2
    0.857
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Integral):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise op_error("mvlgamma", f"p has to be greater than or equal to 1 (got p={p})")
    x = _float("mvlgamma", input)
    out = lgamma(x)
    for j in range(1, p):
        out = out + lgamma(x - j / 2)
    return out + p * (p - 1) / 4 * _math.log(_math.pi)


def i0(input):
    """The modified Bessel function of the first kind, order 0.

    >>> round(ember.i0(ember.tensor([1.0])).item(), 4)
    1.2661
    """
    return I0.apply(_float("i0", input))


def i0e(input):
    """exp(-|x|) i0(x): finite where i0 overflows (from |x| = 713 in float64).

    >>> round(ember.special.i0e(ember.tensor([1000.0])).item(), 6)
    0.012617
    """
    return I0e.apply(_float("i0e", input))


def i1(input):
    """The modified Bessel function of the first kind, order 1.

    >>> round(ember.special.i1(ember.tensor([1.0])).item(), 4)
    0.5652
    """
    return I1.apply(_float("i1", input))


def i1e(input):
    """exp(-|x|) i1(x).

    >>> round(ember.special.i1e(ember.tensor([1.0])).item(), 4)
    0.2079
    """
    return I1e.apply(_float("i1e", input))


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x), finite where exp(x^2) overflows.

    >>> round(ember.special.erfcx(ember.tensor([30.0])).item(), 6)   # about 1 / (30 sqrt(pi))
    0.018796
    """
    return Erfcx.apply(_float("erfcx", input))


def ndtri(input):
    """The quantile function of the standard normal distribution: x with ndtr(x) = p.

    >>> round(ember.special.ndtri(ember.tensor([0.975])).item(), 4)
    1.96
    """
    return Ndtri.apply(_float("ndtri", input))


def ndtr(input):
    """The standard normal CDF, (1 + erf(x / sqrt(2))) / 2 as torch computes it.

    >>> ember.special.ndtr(ember.tensor([0.0])).item()
    0.5
    """
    x = _float("ndtr", input)
    return (1 + M.erf(x * _math.sqrt(0.5))) * 0.5


def log_ndtr(input):
    """log(ndtr(x)), accurate in both tails: log(erfcx(-x/sqrt(2)) / 2) - x^2 / 2 below -1, else
    log1p(-erfc(x/sqrt(2)) / 2), as torch.

    >>> round(ember.special.log_ndtr(ember.tensor([-40.0])).item(), 2)
    -804.61
    """
    from .pointwise import erfc
    x = _float("log_ndtr", input)
    t = x * _math.sqrt(0.5)
    low = M.lt(x, -1)
    # each branch on inputs where it is finite, so the other branch's gradient is not 0 * inf = NaN
    t_low, t_high = M.where(low, t, -1.0), M.where(low, 0.0, t)
    return M.where(low, M.log(erfcx(-t_low) / 2) - t_low * t_low, M.log1p(-erfc(t_high) / 2))


def entr(input):
    """The elementwise entropy -x log(x): 0 at 0, -inf below 0 (its gradient there is 0; torch's is
    inf at 0 and NaN below).

    >>> round(ember.special.entr(ember.tensor([0.5])).item(), 4)
    0.3466
    """
    x = _float("entr", input)
    pos = M.logical_or(M.gt(x, 0), M.isnan(x))
    safe = M.where(pos, x, 1.0)
    edge = M.where(M.eq(x, 0), 0.0, -_math.inf).to(x.dtype)
    return M.where(pos, -safe * M.log(safe), edge)


def xlog1py(input, other):
    """input * log1p(other), with 0 where input == 0 (also where other <= -1), NaN where other is NaN.

    >>> ember.special.xlog1py(ember.tensor([0.0, 2.0]), ember.tensor([-1.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"xlog1py(): expected a Tensor for input or other, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    x, y = M._float_operands(input, other, "xlog1py")
    # as xlogy: 0 where input == 0 and other <= -1 or inf; other's gradient g * input / (1 + other), so
    # NaN at input == 0, other == -1 (log1p's backward divides by 1 + other)
    zero = M.logical_and(M.eq(x, 0), M.logical_or(M.le(y, -1), M.eq(y, _math.inf)))
    return x * M.where(zero, 0.0, M.log1p(y)) + _inf_slope_at_zero(x, y)
