"""weight_norm and spectral_norm as parametrizations (torch.nn.utils.parametrizations): the modern forms,
built on `parametrize.register_parametrization`, whose state_dict keys are
`parametrizations.weight.original0/1` (weight_norm's g and v) and `parametrizations.weight.original`."""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M
from .. import functional as F
from ..module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


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
