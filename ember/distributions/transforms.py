"""Bijections for TransformedDistribution, as torch.distributions.transforms: each maps x to y (`t(x)`),
back (`t.inv(y)`), and gives log |det dy/dx| (`t.log_abs_det_jacobian(x, y)`), with `domain` and `codomain`
constraints whose `event_dim` says how many rightmost dims one event spans.

With `cache_size=1` a transform remembers its last (x, y) pair, so `t.inv(t(x))` returns x itself: a
tanh-squashed Gaussian policy (SAC) gets the exact pre-squash value back in log_prob, where atanh of a
value rounded to 1.0 would be infinite.

>>> from ember.distributions.transforms import ExpTransform, AffineTransform, ComposeTransform
>>> t = ComposeTransform([AffineTransform(1.0, 2.0), ExpTransform()])
>>> x = ember.tensor([0.0, 1.0])
>>> [round(v, 4) for v in t(x).log().tolist()], [round(v, 4) for v in t.log_abs_det_jacobian(x, t(x)).tolist()]
([1.0, 3.0], [1.6931, 3.6931])
"""
from __future__ import annotations

import math
import weakref

import ember
from ember import Tensor
from . import constraints
from .utils import _sum_rightmost

__all__ = ["Transform", "ComposeTransform", "IndependentTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "TanhTransform", "SoftplusTransform", "AbsTransform", "AffineTransform",
           "identity_transform"]


class Transform:
    """Base class: subclasses define `_call(x)`, `_inverse(y)`, `log_abs_det_jacobian(x, y)`, `domain`,
    `codomain`, `bijective` and `sign` (+1 or -1 for a monotone map of one variable)."""
    bijective = False
    domain: constraints.Constraint      # each subclass sets both (torch's base has none either)
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (t.inv.inv is t)."""
        inv = None if self._inv is None else self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        return tuple(shape)

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """t.inv: swaps the roles of x and y of its transform (which it holds, so t.inv.inv is t)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv_t = transform

    @property
    def domain(self):  # type: ignore[override]
        return self._inv_t.codomain

    @property
    def codomain(self):  # type: ignore[override]
        return self._inv_t.domain

    @property
    def bijective(self):  # type: ignore[override]
        return self._inv_t.bijective

    @property
    def sign(self):
        return self._inv_t.sign

    @property
    def inv(self):
        return self._inv_t

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv_t == other._inv_t

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv_t!r})"

    def __call__(self, x):
        return self._inv_t._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv_t.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv_t.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv_t.forward_shape(shape)


class ComposeTransform(Transform):
    """parts[0], then parts[1], ...: the composition, its log-det the sum of the parts' (each summed over
    the event dims its part does not cover). No parts: the identity."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim   # what the whole chain needs of its input
        for part in reversed(self.parts):
            event_dim = max(event_dim - part.codomain.event_dim + part.domain.event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim - part.domain.event_dim + part.codomain.event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = None if self._inv is None else self._inv()
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total = None
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            term = _sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            total = term if total is None else total + term
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self):
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """`base_transform` with its `reinterpreted_batch_ndims` rightmost batch dims made event dims: the
    log-det is summed over them."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class _Elementwise(Transform):
    """A transform of one variable applied elementwise; equal to any other instance of its class."""

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = object.__hash__


class ExpTransform(_Elementwise):
    """y = exp(x)."""
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent, on positive x."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent if isinstance(exponent, Tensor) else ember.tensor(float(exponent))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    inverse_shape = forward_shape


class SigmoidTransform(_Elementwise):
    """y = sigmoid(x) (kept inside (0, 1) by clamping to the dtype's eps)."""
    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        from .utils import clamp_probs
        return clamp_probs(x.sigmoid())

    def _inverse(self, y):
        info = ember.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return -softplus(-x) - softplus(x)


class TanhTransform(_Elementwise):
    """y = tanh(x); its log-det 2 (log 2 - x - softplus(-2x)) is stable for large |x|. Use cache_size=1
    for a squashed policy, so log_prob gets the exact x back (atanh(y) is infinite where y rounded to 1)."""
    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(_Elementwise):
    """y = log(1 + exp(x))."""
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        from ember.nn.functional import softplus
        return softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return -softplus(-x)


class AbsTransform(_Elementwise):
    """y = |x| (not bijective: inv gives the positive root)."""
    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x; with event_dim > 0 the log-det sums over that many rightmost dims (a whole
    vector or matrix is one event)."""
    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):  # type: ignore[override]
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                if a != b:
                    return False
            elif not bool((ember.as_tensor(a) == ember.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, (int, float)):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, (int, float)):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                      tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape
