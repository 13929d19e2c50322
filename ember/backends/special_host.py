"""NumPy stand-ins for the SciPy special functions the CPU backend uses when SciPy is not installed.

Each takes and returns a float array (computed in float64, returned in the input's dtype) and keeps
SciPy's values at the edges (poles, +-inf, NaN); the primitives in ember/ops/special.py then apply
torch's rules where SciPy's differ. Accuracy: a few ulps of float64, far inside what float32 needs.

- lgamma: `math.lgamma` per element (correctly rounded; +inf at the poles, where it raises);
- digamma: reflection below 0, the recurrence up to x >= 10, then the asymptotic series;
- polygamma (n >= 1): (-1)^(n+1) n! zeta(n + 1, x) with Cephes' Euler-Maclaurin Hurwitz zeta;
- i0, i0e, i1, i1e: the power series up to |x| = 30, Hankel's asymptotic series above;
- erfcx: exp(x^2) erfc(x) (`math.erfc` per element) below 10, the asymptotic series above;
- ndtri: a rational first guess (Abramowitz & Stegun 26.2.23) refined by Newton steps on ndtr;
- gammainc, gammaincc: the power series below x = a + 1, Lentz's continued fraction above (per element).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["lgamma", "digamma", "polygamma", "i0", "i0e", "i1", "i1e", "erfcx", "ndtri", "gammainc", "gammaincc"]


def _float64(x):
    return np.asarray(x, dtype=np.float64)


def _lgamma1(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:   # a pole (0, -1, -2, ...)
        return math.inf


_vlgamma = np.vectorize(_lgamma1, otypes=[np.float64])
_verfc = np.vectorize(math.erfc, otypes=[np.float64])


def lgamma(x):
    """log|Gamma(x)|."""
    return _vlgamma(_float64(x)).astype(x.dtype)


def digamma(x):
    """The logarithmic derivative of Gamma: -inf at +0, +inf at -0, NaN at the negative integers."""
    dt, x = x.dtype, _float64(x)
    with np.errstate(all="ignore"):
        neg = x < 0
        # psi(x) = psi(1 - x) - pi / tan(pi x); x - round(x) is exact, so tan gets an exact argument
        reflect = np.where(neg, np.pi / np.tan(np.pi * (x - np.round(x))), 0.0)
        z = np.where(neg, 1 - x, x)
        acc = np.zeros_like(z)
        for _ in range(10):   # psi(z) = psi(z + 1) - 1/z, until z >= 10
            low = z < 10
            acc = acc - np.where(low, 1 / z, 0.0)
            z = np.where(low, z + 1, z)
        zz = 1 / (z * z)
        # ln z - 1/(2z) - sum B_2k / (2k z^2k)
        tail = zz * (1 / 12 - zz * (1 / 120 - zz * (1 / 252 - zz * (1 / 240 - zz * (1 / 132 - zz * 691 / 32760)))))
        out = acc + np.log(z) - 0.5 / z - tail - reflect
        out = np.where(neg & (x == np.round(x)), np.nan, out)
        out = np.where(x == 0, np.where(np.signbit(x), np.inf, -np.inf), out)
        out = np.where(x == np.inf, np.inf, out)
    return out.astype(dt)


# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin coefficients of Cephes' zeta
_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]
_ZETA_A = [float(math.factorial(2 * k + 2) / b) for k, b in enumerate(_BERNOULLI)]


def _hurwitz_zeta(s: float, q):
    """sum over k >= 0 of (q + k)^-s for an integer s >= 2, as Cephes' zeta: terms up to q + k > 9 (at
    least 9 of them), then Euler-Maclaurin. +inf at the poles q = 0, -1, -2, ...; 0 at q = +inf. Below
    q = -10^5 the terms stop there (a loose value; SciPy's and torch's keep adding)."""
    with np.errstate(all="ignore"):
        finite = np.isfinite(q)
        a = np.where(finite, q, 10.0)
        total = a ** -s
        for i in range(1, 100_000):
            more = (a <= 9) | (i < 9)
            if not more.any():
                break
            a = np.where(more, a + 1, a)
            total = total + np.where(more, a ** -s, 0.0)
        w = a   # the last term, w^-s, is in the sum: Euler-Maclaurin from w on adds its other half back
        total = total + w ** (1 - s) / (s - 1) - 0.5 * w ** -s
        fac, k = 1.0, 0.0
        t = w ** -s
        for j in range(12):   # - sum B_2j / (2j)! f^(2j-1)(w), f = x^-s
            fac = fac * (s + k)
            t = t / w
            total = total + fac * t / _ZETA_A[j]
            k += 1
            fac = fac * (s + k)
            t = t / w
            k += 1
        total = np.where((q <= 0) & (q == np.floor(q)), np.inf, total)
        total = np.where(q == np.inf, 0.0, total)
        return np.where(finite | (q == np.inf) | (q == -np.inf), total, np.nan)


def polygamma(n, x):
    """The n-th derivative of digamma, n >= 1."""
    x64 = _float64(x)
    sign = 1.0 if n % 2 else -1.0
    return (sign * math.factorial(n) * _hurwitz_zeta(float(n + 1), x64)).astype(x.dtype)


def _bessel_scaled(nu: int, ax):
    """(exp(-ax) I_nu(ax), I_nu(ax)) for ax >= 0 (NaN passes through)."""
    with np.errstate(all="ignore"):
        small = ax <= 30
        # the power series sum_k (ax/2)^(2k+nu) / (k! (k+nu)!): positive terms, converged by k = 64 at 30
        a = np.where(small, ax, 0.0)
        q = (a / 2) ** 2
        term = (a / 2) ** nu
        series = term.copy()
        for k in range(1, 64):
            term = term * q / (k * (k + nu))
            series = series + term
        # Hankel: e^x / sqrt(2 pi x) sum_k prod_j ((2j-1)^2 - 4 nu^2) / (8 j x), below 1e-20 by k = 30
        b = np.where(small, 31.0, ax)
        term = np.ones_like(b)
        hankel = term.copy()
        for k in range(1, 30):
            term = term * ((2 * k - 1) ** 2 - 4 * nu * nu) / (8 * k * b)
            hankel = hankel + term
        hankel = hankel / np.sqrt(2 * np.pi * b)
        half = np.exp(b / 2)   # e^b as e^(b/2) twice: overflows only where I_nu itself does
        scaled = np.where(small, series * np.exp(-a), hankel)
        plain = np.where(small, series, hankel * half * half)
        return scaled, plain


def _bessel(x, nu, scaled):
    x64 = _float64(x)
    s, p = _bessel_scaled(nu, np.abs(x64))
    out = s if scaled else p
    if nu == 1:   # I_1 is odd
        out = np.where(x64 < 0, -out, out)
    return out.astype(x.dtype)


def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    return _bessel(x, 0, False)


def i0e(x):
    """exp(-|x|) i0(x)."""
    return _bessel(x, 0, True)


def i1(x):
    """The modified Bessel function of the first kind, order 1."""
    return _bessel(x, 1, False)


def i1e(x):
    """exp(-|x|) i1(x)."""
    return _bessel(x, 1, True)


def erfcx(x):
    """exp(x^2) erfc(x), the scaled complementary error function."""
    x64 = _float64(x)
    with np.errstate(all="ignore"):
        small = x64 < 10
        a = np.where(small, x64, 0.0)
        direct = np.exp(a * a) * _verfc(a)
        # 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, below 1e-19 by k = 15 at x = 10
        b = np.where(small, 10.0, x64)
        term = np.ones_like(b)
        series = term.copy()
        for k in range(1, 16):
            term = -term * (2 * k - 1) / (2 * b * b)
            series = series + term
        tail = series / (b * math.sqrt(math.pi))
        return np.where(small, direct, tail).astype(x.dtype)


def _ndtr(x):
    return 0.5 * _verfc(-x / math.sqrt(2))


def ndtri(p):
    """The inverse of the standard normal CDF: -inf at 0, +inf at 1, NaN outside [0, 1]."""
    p64 = _float64(p)
    with np.errstate(all="ignore"):
        upper = p64 > 0.5
        r = np.where(upper, 1 - p64, p64)   # exact for p >= 0.5; solve in the lower tail, where r is precise
        r = np.where((r > 0) & (r <= 0.5), r, 0.25)
        t = np.sqrt(-2 * np.log(r))
        x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
              / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))
        for _ in range(4):   # Halley's method on ndtr(x) = r; the guess is within 4.5e-4
            pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
            u = (_ndtr(x) - r) / pdf
            x = x - u / (1 + x * u / 2)
        out = np.where(upper, -x, x)
        out = np.where(p64 == 0, -np.inf, np.where(p64 == 1, np.inf, out))
        out = np.where((p64 < 0) | (p64 > 1) | np.isnan(p64), np.nan, out)
        return out.astype(p.dtype)


def _igamma1(a: float, x: float, upper: bool) -> float:
    """P(a, x) (or Q with `upper`) for one pair: SciPy's edge values, else the series (x < a + 1) or the
    continued fraction, each summed until a term no longer changes the float64 result."""
    if math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0) or (math.isinf(a) and math.isinf(x)):
        return math.nan
    if a == 0 or math.isinf(x):
        p = 1.0
    elif x == 0 or math.isinf(a):
        p = 0.0
    else:
        front = math.exp(a * math.log(x) - x - math.lgamma(a))
        if x < a + 1:
            term = total = 1.0 / a
            n = a
            for _ in range(100000):
                n += 1
                term *= x / n
                total += term
                if abs(term) < abs(total) * 1e-17:
                    break
            p = total * front
        else:
            tiny = 1e-300
            b = x + 1 - a
            c, d = 1 / tiny, 1 / b
            h = d
            for i in range(1, 100000):
                an = -i * (i - a)
                b += 2
                d = an * d + b
                d = tiny if abs(d) < tiny else d
                c = b + an / c
                c = tiny if abs(c) < tiny else c
                d = 1 / d
                step = d * c
                h *= step
                if abs(step - 1) < 1e-16:
                    break
            q = front * h
            return q if upper else 1 - q
    return 1 - p if upper else p


_vigamma = np.vectorize(_igamma1, otypes=[np.float64])


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    dt = np.result_type(a, x)
    return _vigamma(_float64(a), _float64(x), False).astype(dt)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    dt = np.result_type(a, x)
    return _vigamma(_float64(a), _float64(x), True).astype(dt)
