"""The von Mises distribution: the circular analogue of the normal, on angles."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# torch's polynomial approximations of I0 and I1 (Abramowitz and Stegun 9.8.1-9.8.4), in powers of
# (x / 3.75)^2 below 3.75 and of 3.75 / x above
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                  -0.2895312e-1, 0.1787654e-1, -0.420059e-2]


def _eval_poly(y: Tensor, coef: list) -> Tensor:
    """sum_i coef[i] y^i by Horner's rule."""
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1, with torch's approximations."""
    small_coef, large_coef = (_I0_COEF_SMALL, _I0_COEF_LARGE) if order == 0 else (_I1_COEF_SMALL, _I1_COEF_LARGE)
    small = _eval_poly((x / 3.75) ** 2, small_coef)
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, large_coef).log()
    return ember.where(x < 3.75, small.log(), large)


class VonMises(Distribution):
    """Density exp(concentration cos(x - loc)) / (2 pi I0(concentration)) on angles, as
    torch.distributions.VonMises: `loc` and values may be any real number (read modulo 2 pi); samples lie in
    [-pi, pi). mean and mode are loc, variance the circular 1 - I1/I0. Samples come from Best and Fisher's
    rejection sampler on the device, in float64 as torch's (one host sync per round); no rsample, as torch.

    >>> d = ember.distributions.VonMises(ember.tensor([0.0]), ember.tensor([1.0]))
    >>> round(d.log_prob(ember.tensor([0.0])).item(), 4), round(d.variance.item(), 4)
    (-1.0738, 0.5536)
    """
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape), (), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, (), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        k = self.concentration
        return 1 - (_log_modified_bessel_fn(k, order=1) - _log_modified_bessel_fn(k, order=0)).exp()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_modified_bessel_fn(k, order=0)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            # float64 throughout: in float32 the loop stalls for concentrations near 1e-4 (torch issue 88443)
            loc = self.loc.to(ember.float64).expand(shape)
            kappa = self.concentration.to(ember.float64).expand(shape)
            tau = 1 + (1 + 4 * kappa ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            r = ember.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
            x = ember.zeros(shape, dtype=ember.float64, device=loc.device)
            done = ember.zeros(shape, dtype=ember.bool, device=loc.device)
            while not bool(done.all()):
                u1, u2, u3 = ember.rand(3, *shape, dtype=ember.float64, device=loc.device).unbind(0)
                z = ember.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = ember.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)
