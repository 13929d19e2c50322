"""Invertible transforms with log-det-Jacobians, as torch.distributions.transforms: the building blocks of
TransformedDistribution (LogNormal is Normal through ExpTransform).

>>> from ember.distributions.transforms import AffineTransform, ExpTransform, ComposeTransform
>>> t = ComposeTransform([AffineTransform(1.0, 2.0), ExpTransform()])   # x -> exp(1 + 2 x)
>>> x = ember.tensor([0.0, 0.5])
>>> y = t(x)
>>> [round(v, 4) for v in t.inv(y).tolist()], [round(v, 4) for v in t.log_abs_det_jacobian(x, y).tolist()]
([0.0, 0.5], [1.6931, 2.6931])
"""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .utils import _NUMBER, _sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "IndependentTransform",
           "CatTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform", "StackTransform",
           "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform"]


class Transform:
    """A map x -> y with its inverse and log |dy/dx|, as torch.distributions.transforms.Transform.

    domain, codomain: the Constraints of x and of y (their event_dim is how many rightmost dims one
        event takes). bijective: t.inv(t(x)) == x. sign: +1 or -1 for a monotone univariate map.
    cache_size: 0, or 1 to remember the last (x, y) pair so that t.inv(t(x)) returns x itself (exact
        where the inverse is ill-conditioned, as atanh near +-1).
    Subclasses write `_call`, `_inverse` and `log_abs_det_jacobian`.
    """
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> "Transform":
        """The inverse transform (t.inv.inv is t)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> "Transform":
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if not self._cache_size:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if not self._cache_size:
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
        """log |dy/dx| at (x, y = t(x)), one value per event."""
        raise NotImplementedError

    def forward_shape(self, shape) -> tuple:
        """The shape of t(x) for x of `shape`."""
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        """The shape of t.inv(y) for y of `shape`."""
        return tuple(shape)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """t.inv: the same map run backwards (its cache is t's, so t.inv(t(x)) is x under cache_size=1)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self):  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """parts[0], then parts[1], ...; an empty list is the identity. The event dims of the parts combine:
    the composition's domain and codomain take the largest event_dim any part needs."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim   # walk back from the output's event dims
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
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
        xs = [x]                             # the intermediate values (free where the parts cache)
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total = 0.0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + _sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
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

    def __repr__(self) -> str:
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """y = exp(x); log |dy/dx| = x."""
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x), kept in [tiny, 1 - eps] so that the inverse logit(y) stays finite;
    log |dy/dx| = -softplus(-x) - softplus(x)."""
    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        fi = ember.finfo(x.dtype)
        return ember.sigmoid(x).clamp(min=fi.tiny, max=1.0 - fi.eps)

    def _inverse(self, y):
        fi = ember.finfo(y.dtype)
        y = y.clamp(min=fi.tiny, max=1.0 - fi.eps)
        return y.log() - ember.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); the inverse atanh(y) is not clamped (use cache_size=1 near +-1, as torch advises);
    log |dy/dx| = 2 (log 2 - x - softplus(-2x)), stable for large |x|."""
    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x, pointwise; `event_dim` rightmost dims form one event (their log |scale| are
    summed). loc and scale are Python numbers or tensors that broadcast with x."""
    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self._event_dim

    @property
    def domain(self):  # type: ignore[override]
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                     self._event_dim)

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
                if a != b:
                    return False
            elif not bool((a == b).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, _NUMBER):
            return (self.scale > 0) - (self.scale < 0)
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, _NUMBER):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = _sum_rightmost(result, self._event_dim)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tuple(ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                            tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim, onto the simplex; its inverse is log(y) (one of the x that map to
    y: not bijective, and no log-det-Jacobian, as torch's)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return ember.softmax(x, -1)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape)

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """x in R^K -> y on the K-simplex in R^(K + 1) by breaking a stick: y_i = z_i prod_{j<i} (1 - z_j) with
    z_i = sigmoid(x_i - log(K - i)) (so x = 0 maps to the uniform point), the last piece the rest, as
    torch's. Bijective; the log-det-Jacobian is over the vector.

    >>> from ember.distributions.transforms import StickBreakingTransform
    >>> [round(v, 6) for v in StickBreakingTransform()(ember.zeros(2)).tolist()]
    [0.333333, 0.333333, 0.333333]
    """
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _log_offset(x):
        k = x.shape[-1]   # log(K - i) for i = 0 .. K - 1
        return (k + 1 - ember.ones_like(x[..., :1]).expand(tuple(x.shape[:-1]) + (k,)).cumsum(-1)).log()

    def _call(self, x):
        fi = ember.finfo(x.dtype)
        z = ember.sigmoid(x - self._log_offset(x)).clamp(min=fi.tiny, max=1.0 - fi.eps)
        one = ember.ones_like(z[..., :1])
        return ember.cat([z, one], -1) * ember.cat([one, (1 - z).cumprod(-1)], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        sf = (1 - y_crop.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)   # the stick left before piece i
        return y_crop.log() - sf.log() + self._log_offset(y_crop)

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import logsigmoid
        x = x - self._log_offset(x)
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


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


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        from ember.nn.functional import softplus
        return softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        from ember.nn.functional import softplus
        return -softplus(-x)


class AbsTransform(Transform):
    """y = |x| (not bijective: inv gives the positive root)."""
    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal (the strict lower
    triangle kept, the diagonal exponentiated), as torch's: a Cholesky factor from free parameters. Not
    bijective on all matrices (the upper triangle is dropped); no log_abs_det_jacobian, as torch.

    >>> from ember.distributions.transforms import LowerCholeskyTransform
    >>> LowerCholeskyTransform()(ember.tensor([[0.0, 5.0], [2.0, 0.0]])).tolist()
    [[1.0, 0.0], [2.0, 1.0]]
    """
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = Transform.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive-definite ones, L L^T with L = LowerCholeskyTransform()(x);
    the inverse goes through the Cholesky factor, as torch's.

    >>> from ember.distributions.transforms import PositiveDefiniteTransform
    >>> PositiveDefiniteTransform()(ember.tensor([[0.0, 0.0], [1.0, 0.0]])).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = Transform.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims of an event from `in_shape` to `out_shape` (same number of elements),
    as torch's: bijective, with log |det J| = 0.

    >>> from ember.distributions.transforms import ReshapeTransform
    >>> t = ReshapeTransform((4,), (2, 2))
    >>> t(ember.zeros(3, 4)).shape, t.inverse_shape((5, 2, 2))
    ((3, 2, 2), (5, 4))
    """
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return ember.zeros(batch_shape, dtype=x.dtype, device=x.device)

    def _check_tail(self, shape, expected, what):
        shape = tuple(shape)
        if len(shape) < len(expected):
            raise ValueError(f"Too few dimensions on {what}")
        cut = len(shape) - len(expected)
        if shape[cut:] != expected:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {expected}")
        return shape[:cut]

    def forward_shape(self, shape):
        return self._check_tail(shape, self.in_shape, "input") + self.out_shape

    def inverse_shape(self, shape):
        return self._check_tail(shape, self.out_shape, "input") + self.in_shape


def _check_along(owner, dim, size, expected, t, what):
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"{owner}: dim {dim} out of range for {what} with {t.dim()} dimensions")
    if t.shape[dim] != size:
        raise AssertionError(f"{owner}: {what}.size({dim}) = {t.shape[dim]} must equal {expected} {size}")


class CatTransform(Transform):
    """The transforms `tseq` on consecutive slices of lengths `lengths` along `dim` (default one element
    each), as torch's CatTransform: what ember.cat of the transformed slices gives.

    >>> from ember.distributions.transforms import CatTransform, ExpTransform, identity_transform
    >>> CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 2])(ember.zeros(3)).tolist()
    [1.0, 0.0, 0.0]
    """

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("CatTransform: All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"CatTransform: lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, z, what, fn):
        _check_along("CatTransform", self.dim, self.length, "length", z, what)
        out, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            out.append(fn(t, z.narrow(self.dim, start, length)))
            start += length
        return ember.cat(out, self.dim)

    def _call(self, x):
        return self._map(x, "x", lambda t, v: t(v))

    def _inverse(self, y):
        return self._map(y, "y", lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        _check_along("CatTransform", self.dim, self.length, "length", x, "x")
        _check_along("CatTransform", self.dim, self.length, "length", y, "y")
        logdetjacs, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            ldj = t.log_abs_det_jacobian(x.narrow(self.dim, start, length), y.narrow(self.dim, start, length))
            if t.event_dim < self.event_dim:
                ldj = _sum_rightmost(ldj, self.event_dim - t.event_dim)
            logdetjacs.append(ldj)
            start += length
        # dim counted from the right, then without the event dims the log-dets no longer have
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return ember.cat(logdetjacs, dim)
        return sum(logdetjacs)


class StackTransform(Transform):
    """The i-th of `tseq` on x.select(dim, i), as torch's StackTransform: what ember.stack of the
    transformed slices gives.

    >>> from ember.distributions.transforms import StackTransform, ExpTransform, identity_transform
    >>> StackTransform([ExpTransform(), identity_transform], dim=1)(ember.zeros(2, 2)).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("StackTransform: All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z, what):
        _check_along("StackTransform", self.dim, len(self.transforms), "len(transforms)", z, what)
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return ember.stack([t(v) for v, t in zip(self._slices(x, "x"), self.transforms)], self.dim)

    def _inverse(self, y):
        return ember.stack([t.inv(v) for v, t in zip(self._slices(y, "y"), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        pairs = zip(self._slices(x, "x"), self._slices(y, "y"), self.transforms)
        return ember.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in pairs], self.dim)
