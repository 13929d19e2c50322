"""Activation functions and the softmax family."""
from __future__ import annotations

import math


from ..._errors import op_error
from ..._tensor import Tensor
from ...ops import math as M
from ...ops.layers import Gelu
from ._utils import _apply_inplace


def relu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, M.relu(input), inplace)


def relu6(input, inplace=False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False) -> Tensor:
    return _apply_inplace(input, M.clamp(input, min_val, max_val), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False) -> Tensor:
    return _apply_inplace(input, M.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False) -> Tensor:
    # expm1 of the clamped input: the unused branch never overflows (no inf * 0 in backward)
    neg = alpha * M.expm1(M.clamp(input, max=0.0))
    return _apply_inplace(input, M.where(input > 0, input, neg), inplace)


def selu(input, inplace=False) -> Tensor:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _apply_inplace(input, scale * elu(input, alpha), inplace)


def gelu(input, approximate="none") -> Tensor:
    """x * Phi(x); approximate='tanh' uses 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate == "none":
        return Gelu.apply(input)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + M.tanh(inner))
    raise op_error("gelu", f"approximate must be 'none' or 'tanh', got {approximate!r}", ValueError)


def silu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.sigmoid(input), inplace)


def softplus(input, beta=1.0, threshold=20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (for stability)."""
    bx = input * beta
    soft = M.log1p(M.exp(M.clamp(bx, max=threshold))) / beta
    return M.where(bx > threshold, input, soft)


def mish(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.tanh(softplus(input)), inplace)


def tanh(input) -> Tensor:
    return M.tanh(input)


def sigmoid(input) -> Tensor:
    return M.sigmoid(input)


def logsigmoid(input) -> Tensor:
    return -softplus(-input)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1   # torch's legacy implicit-dim rule


def softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return M.softmax(input, _softmax_dim(input.ndim) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return M.log_softmax(input, _softmax_dim(input.ndim) if dim is None else dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return softmax(-input, dim, dtype=dtype)
