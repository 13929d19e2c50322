"""The gamma distribution, and the gamma sampler that Beta and Dirichlet share."""
from __future__ import annotations

import ember
from ember import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _NUMBER, broadcast_all

__all__ = ["Gamma"]

_MAX_ROUNDS = 200   # rejection rounds; each accepts > 95% of what is left, so this is never reached


def _sample_standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples (no gradient), drawn on alpha's device from ember's generator.

    Marsaglia and Tsang (2000): for a >= 1, with d = a - 1/3 and c = 1/sqrt(9 d), x = d (1 + c z)^3 for
    z ~ N(0, 1), accepted when log u < z^2 / 2 + d - d v + d log v (v = (1 + c z)^3). Each round draws
    for every element and keeps the first accepted value; a round costs one host sync (`all()`), and the
    rounds stop when every element is accepted (about log(n) / log(20) rounds for n elements). For a < 1,
    Gamma(a) = Gamma(a + 1) * u^(1/a). Values are clamped to the smallest positive normal, as torch's.
    """
    a = alpha.detach()
    boost = a < 1
    a1 = ember.where(boost, a + 1, a)
    d = a1 - 1.0 / 3.0
    c = (9 * d).rsqrt()
    out = ember.zeros_like(a)
    done = a != a   # NaN concentrations stay NaN (with validation off); everything else is drawn
    out = ember.where(done, a, out)
    for _ in range(_MAX_ROUNDS):
        if bool(done.all()):
            break
        z = ember.randn_like(a)
        u = ember.rand_like(a)
        v = (1 + c * z) ** 3
        safe_v = ember.where(v > 0, v, ember.ones_like(v))
        ok = (v > 0) & (ember.log(u) < 0.5 * z * z + d - d * safe_v + d * ember.log(safe_v))
        out = ember.where(ok & ~done, d * safe_v, out)
        done = done | ok
    u = ember.rand_like(a)
    out = ember.where(boost, out * u.pow(1 / a), out)
    return out.clamp(min=ember.finfo(a.dtype).tiny)


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """dx/dalpha of x ~ Gamma(alpha, 1) along the sampler's implicit reparameterisation (Figurnov et al.
    2018): x moves with alpha so that its CDF P(alpha, x) stays fixed, so dx/dalpha = -dP/dalpha / p(x).
    dP/dalpha is a central difference of the regularized incomplete gamma function in float64 (ember has
    no derivative of igamma in its first argument), the density is closed-form."""
    a = alpha.detach().to(ember.float64)
    x = x.detach().to(ember.float64)
    h = 1e-5 * a.clamp(min=1e-2)
    dP = (ember.igamma(a + h, x) - ember.igamma(a - h, x)) / (2 * h)
    log_density = (a - 1) * ember.log(x) - x - ember.lgamma(a)
    return (-dP * ember.exp(-log_density)).to(alpha.dtype)


def _reparameterized_standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples whose gradient with respect to alpha is the implicit one: the sampled
    value plus (dx/dalpha) * (alpha - alpha.detach()), which is zero in value and has that derivative."""
    x = _sample_standard_gamma(alpha)
    if not (alpha.requires_grad and ember.is_grad_enabled()):
        return x
    return x + _standard_gamma_grad(alpha, x) * (alpha - alpha.detach())


class Gamma(ExponentialFamily):
    """Gamma distribution of shape `concentration` and inverse scale `rate` (mean concentration / rate),
    as torch.distributions.Gamma. `rsample` draws on the device (Marsaglia-Tsang rejection) and
    differentiates through the implicit reparameterisation, as torch's.

    >>> d = ember.distributions.Gamma(ember.tensor([2.0]), ember.tensor([4.0]))
    >>> d.mean.item(), d.variance.item(), round(d.log_prob(ember.tensor([0.5])).item(), 4)
    (0.5, 0.125, 0.0794)
    """
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, _NUMBER) and isinstance(rate, _NUMBER):
            batch_shape = ()
        else:
            batch_shape = tuple(self.concentration.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = _reparameterized_standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # clamped off zero in value only, as torch's in-place clamp of value.detach()
        detached = value.detach()
        return value + (detached.clamp(min=ember.finfo(value.dtype).tiny) - detached)

    def log_prob(self, value):
        if not isinstance(value, Tensor):
            value = ember.tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate) + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - ember.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - ember.log(self.rate) + ember.lgamma(self.concentration)
                + (1.0 - self.concentration) * ember.digamma(self.concentration))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.igamma(self.concentration, self.rate * value)
