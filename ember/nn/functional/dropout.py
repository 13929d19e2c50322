"""Dropout: elementwise and whole channels, and alpha dropout (for SELU networks)."""
from __future__ import annotations

from ..._errors import op_error, warn
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


def _feature_dropout(input, p, training, inplace, unbatched):
    """torch's feature_dropout: one draw per (N, C) channel of an (N, C, ...) input, or per channel of a
    (C, ...) one when `unbatched` (torch unsqueezes a batch dim and squeezes it back)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = ((1,) + tuple(input.shape)) if unbatched else tuple(input.shape)
    if len(shape) < 2:
        raise op_error("feature_dropout", f"Feature dropout requires at least 2 dimensions in the input, "
                                          f"got shape {tuple(input.shape)}")
    mask_shape = tuple(shape[:2]) + (1,) * (len(shape) - 2)
    return _apply_inplace(input, input * _dropout_mask(input, mask_shape[1:] if unbatched else mask_shape, p),
                          inplace)


def _deprecated_rank(op, ndim, spatial, ranks):
    warn(op, f"Received a {ndim}-D input to {op}, which is deprecated and will result in an error in a future "
             f"release. To retain the behavior and silence this warning, please use dropout instead. Note that "
             f"{op} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
             f"dimension, and an optional batch dimension (i.e. {ranks} inputs).")


def dropout1d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L): masks of shape (N, C, 1) or (C, 1). Other ranks raise."""
    _check_p(p, "dropout1d")
    if input.ndim not in (2, 3):
        raise op_error("dropout1d", f"Expected 2D or 3D input, but received a {input.ndim}D input (shape "
                                    f"{tuple(input.shape)}). Note that dropout1d exists to provide channel-wise "
                                    f"dropout on inputs with 1 spatial dimension, a channel dimension, and an "
                                    f"optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, unbatched=input.ndim == 2)


def dropout2d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels of (N, C, H, W) -> masks of shape (N, C, 1, 1).

    As torch: other ranks warn (deprecated) and take one draw per (N, C) of an (N, C, ...) input; a 3-D
    input warns and is read as (N, C, L) (channel-wise 1-D dropout), not as an unbatched (C, H, W)."""
    _check_p(p, "dropout2d")
    if input.ndim not in (3, 4):
        _deprecated_rank("dropout2d", input.ndim, 2, "3D or 4D")
    if input.ndim == 3:
        warn("dropout2d", "Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                          "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                          "behavior will change in a future release to interpret the input as one without a batch "
                          "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                          "switch to using dropout1d instead.")
    return _feature_dropout(input, p, training, inplace, unbatched=False)


def dropout3d(input, p=0.5, training=True, inplace=False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) -> masks (N, C, 1, 1, 1) or (C, 1, 1, 1).

    As torch: other ranks warn (deprecated) and are read as unbatched (C, ...)."""
    _check_p(p, "dropout3d")
    if input.ndim not in (4, 5):
        _deprecated_rank("dropout3d", input.ndim, 3, "4D or 5D")
    return _feature_dropout(input, p, training, inplace, unbatched=input.ndim != 5)


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
