"""The multivariate normal distribution, parameterised by its Cholesky factor."""
from __future__ import annotations

import math

import ember
from ember import Tensor
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """bmat (..., n, n) @ bvec (..., n), broadcast over the batch dims."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """The squared Mahalanobis norm x^T (L L^T)^-1 x of bx (..., n) for the lower Cholesky factor bL
    (..., n, n), whose batch dims broadcast to bx's; shape bx.shape[:-1]."""
    n = bx.shape[-1]
    if bL.dim() == 2:   # one factor: one triangular solve with every vector as a column
        y = ember.linalg.solve_triangular(bL, bx.reshape(-1, n).mT, upper=False)   # (n, N)
        return y.pow(2).sum(-2).reshape(tuple(bx.shape[:-1]))
    batch = ember.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    y = ember.linalg.solve_triangular(bL.expand(batch + (n, n)), bx.expand(batch + (n,)).unsqueeze(-1), upper=False)
    return y.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1, without inverting P: flip(chol(flip(P)))^-T."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)
    Id = ember.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return ember.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution of mean `loc` (..., n), given by exactly one of
    `covariance_matrix`, `precision_matrix` or `scale_tril` (the lower Cholesky factor of the covariance),
    each (..., n, n); as torch.distributions.MultivariateNormal. Batch dims of loc and the matrix broadcast.
    Internally everything goes through the Cholesky factor (ember.linalg.cholesky, solve_triangular).

    >>> d = ember.distributions.MultivariateNormal(ember.zeros(2), covariance_matrix=ember.eye(2))
    >>> round(d.log_prob(ember.zeros(2)).item(), 4), d.event_shape
    (-1.8379, (2,))
    """
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None) -> None:
        if loc.dim() < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("MultivariateNormal: Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        name, matrix = next((k, v) for k, v in given.items() if v is not None)
        if matrix.dim() < 2:
            raise ValueError(f"MultivariateNormal: {name}{' matrix' if name == 'scale_tril' else ''} must be at "
                             f"least two-dimensional, with optional leading batch dimensions")
        if matrix.shape[-1] != loc.shape[-1] or matrix.shape[-2] != loc.shape[-1]:
            # torch fails later, in its broadcasting or its solve; Ember says why here
            raise ValueError(f"MultivariateNormal: {name} of shape {tuple(matrix.shape)} does not match loc of "
                             f"shape {tuple(loc.shape)}: expected (..., {loc.shape[-1]}, {loc.shape[-1]})")
        batch_shape = ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        event_shape = tuple(self.loc.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
