"""Dropout: elementwise and whole channels, and alpha dropout (for SELU networks)."""
from __future__ import annotations

from ..._errors import op_error
from ..._tensor import Tensor
from ...ops import creation as C
from ... import random as R
from ._utils import _apply_inplace


def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise op_error(op, f"probability has to be between 0 and 1, but got {p}", ValueError)


def _dropout_mask(input, shape, p):
    if p == 1.0:
        return C.zeros(shape, dtype=input.dtype, device=input.device)
    # 1 / (1 - p) where kept, 0 where dropped
    return R._bernoulli_scalar(shape, 1.0 - p, input.dtype.np, input.device, bits=16, value=1.0 / (1.0 - p))


def dropout(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training."""
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    return _apply_inplace(input, input * _dropout_mask(input, input.shape, p), inplace)


def _channel_dropout(input, p, training, inplace, op, dims):
    _check_p(p, op)
    if input.ndim not in dims:
        raise op_error(op, f"expected a {' or '.join(f'{d}-D' for d in dims)} input, got shape "
                       f"{tuple(input.shape)}")
    if input.ndim == dims[0]:   # unbatched (C, ...): one mask per channel
        return _channel_dropout(input.unsqueeze(0), p, training, False, op, dims).squeeze(0)
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _apply_inplace(input, input * _dropout_mask(input, shape, p), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False) -> Tensor:
    return _channel_dropout(input, p, training, inplace, "dropout1d", (2, 3))


def dropout2d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels (N, C, H, W) -> masks of shape (N, C, 1, 1)."""
    return _channel_dropout(input, p, training, inplace, "dropout2d", (3, 4))


def dropout3d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels (N, C, D, H, W) -> masks of shape (N, C, 1, 1, 1)."""
    return _channel_dropout(input, p, training, inplace, "dropout3d", (4, 5))


# SELU's negative saturation value: -scale * alpha of F.selu
_SELU_NEG_SAT = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, op, mask_shape):
    _check_p(p, op)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _apply_inplace(input, input * 0.0, inplace)
    # dropped elements become SELU's saturation value, then an affine map a*x + b restores zero mean and
    # unit variance (torch's _dropout_impl: a = ((alpha^2 p + 1)(1 - p))^-1/2)
    alpha = _SELU_NEG_SAT
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    keep = R._bernoulli_scalar(mask_shape, 1.0 - p, input.dtype.np, input.device, bits=16)
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return _apply_inplace(input, input * (keep * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False) -> Tensor:
    """Dropout for self-normalising (SELU) networks: keeps mean 0 and variance 1 of its input.
    Off by default (training=False), as in torch."""
    return _alpha_dropout(input, p, training, inplace, "alpha_dropout", tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (N, C)."""
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: expected an input with at least 2 dimensions (N, C, ...), "
                           f"got shape {tuple(input.shape)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, "feature_alpha_dropout", shape)
