"""orthogonal, weight_norm and spectral_norm as parametrizations (torch.nn.utils.parametrizations): the modern
forms, built on `parametrize.register_parametrization`, whose state_dict keys are
`parametrizations.weight.original0/1` (weight_norm's g and v) and `parametrizations.weight.original`."""
from __future__ import annotations

import enum

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M
from .. import functional as F
from ..module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def _is_orthogonal(Q: Tensor) -> bool:
    from ...ops.creation import eye
    from ...ops.math import allclose
    from ..._dtype import finfo
    n, k = Q.shape[-2], Q.shape[-1]
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * finfo(Q.dtype).eps   # reasonable, not too large (torch's)
    return allclose(Q.mH @ Q, Id, atol=eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of the QR decomposition of the tall matrix A with diag(R) non-negative."""
    from ...linalg import geqrf, householder_product
    X, tau = geqrf(A)
    Q = householder_product(X, tau)
    # the diagonal of X is that of R: normalise by its signs
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _eye_like(X: Tensor, value: float) -> Tensor:
    """`value` on the diagonal of each matrix of X's shape (..., n, k), zeros elsewhere."""
    from ...ops.creation import eye
    return (eye(X.shape[-2], X.shape[-1], dtype=X.dtype, device=X.device) * value).expand(*X.shape).clone()


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True):
        super().__init__()
        # n(n-1) real reflector entries cannot parametrize the n^2 of a unitary matrix (torch's note)
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        from ...linalg import householder_product, matrix_exp, solve
        from ...ops.creation import eye
        from ...ops.shape import cat
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall: (..., n, k) with n >= k
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()   # n*k - k(k-1)/2 parameters
            if n != k:   # embed into a square matrix
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH   # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:   # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]   # (..., n, k)
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # X's diagonal holds 1s and -1s: neither differentiated through nor updated (torch casts to
            # int; Ember's cast to int stays in the graph, hence the detach)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        from ...random import randn
        from ...ops.shape import cat
        from ...linalg import geqrf
        from ...ops.math import where
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                             f"shape {tuple(Q.shape)}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            # without the trivialization only the Householder map can be inverted (torch's note)
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # QR with diag(R) > 0; X's diagonal (R's) becomes its signs, flipped where LAPACK chose
            # no reflection (tau == 0)
            A, tau = geqrf(Q)
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            signs = where(tau == 0.0, -signs, signs)
            A = where(_eye_like(A, 1.0) != 0, signs.unsqueeze(-2), A)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:   # complete Q into a full n x n orthogonal matrix
            N = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -Id: the Householder map of it is the identity, householder(-Id) == eye(n, k)
        return _eye_like(Q_init, -1.0)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """`module.<name>` kept orthogonal (orthonormal columns if it is tall, rows if wide; a batch of
    matrices for more than 2 dims), as torch's: computed from `parametrizations.<name>.original` by
    orthogonal_map "matrix_exp" or "cayley" (of a skew-symmetric matrix) or "householder" (a product of
    reflectors); default "matrix_exp" for a square or complex weight, else "householder". With
    `use_trivialization` (the dynamic trivialization), an n x n buffer `parametrizations.<name>.0.base`
    multiplies the map's result. The weight right after registration is the original weight if it is
    orthogonal, else the Q of its QR decomposition (diag(R) >= 0); a wide or tall weight's base is
    completed with random columns. Returns the module.

    >>> m = ember.nn.utils.parametrizations.orthogonal(ember.nn.Linear(3, 5))
    >>> Q = m.weight
    >>> bool(((Q.T @ Q - ember.eye(3)).abs() < 1e-5).all())
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    # a 1-dim tensor could be mapped onto the sphere, but torch refuses it
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f'{orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """`module.<name>` computed as g * v / ||v|| (norm over every dim but `dim`) from the parameters
    `parametrizations.<name>.original0` (g) and `original1` (v). Returns the module.

    >>> m = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(20, 40))
    >>> [(k, v.shape) for k, v in m.named_parameters()]
    [('bias', (40,)), ('parametrizations.weight.original0', (40, 1)), ('parametrizations.weight.original1', (40, 20))]
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight)
                h, w = weight_mat.shape
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():   # u and v are buffers, updated in place
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(M.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(M.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()   # the graph keeps these, not the buffers that change
        sigma = M.dot(u, M.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """`module.<name>` divided by its spectral norm, estimated by power iteration (15 steps at registration,
    `n_power_iterations` per read in training mode; buffers `parametrizations.<name>.0._u` and `._v`);
    dim=None: 1 for ConvTranspose layers, else 0. Returns the module.

    >>> m = ember.nn.utils.parametrizations.spectral_norm(ember.nn.Linear(20, 40))
    >>> [k for k in m.state_dict()]
    ['bias', 'parametrizations.weight.original', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
