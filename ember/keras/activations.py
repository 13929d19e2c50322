"""Keras's activation functions by name (`Dense(10, activation='softmax')`), on ember.nn.functional."""
from __future__ import annotations

from ..nn import functional as F
from ..ops import math as M

__all__ = ["get", "serialize", "relu", "sigmoid", "tanh", "softmax", "linear", "elu", "selu", "gelu", "silu",
           "swish", "softplus", "softsign", "leaky_relu", "relu6", "exponential", "hard_sigmoid", "mish",
           "log_softmax"]


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras's relu: `x` above `threshold` (else 0), clipped at `max_value`, plus `negative_slope` times
    `x - threshold` below it (Keras 3's `activations.relu`)."""
    if negative_slope == 0 and max_value is None and threshold == 0:
        return F.relu(x)
    out = x * (x > threshold).to(x.dtype) if threshold != 0 else F.relu(x)
    if max_value is not None:
        out = out.clamp(0.0, max_value)
    if negative_slope != 0:
        out = out - negative_slope * F.relu(threshold - x)
    return out


def sigmoid(x):
    return M.sigmoid(x)


def tanh(x):
    return M.tanh(x)


def softmax(x, axis=-1):
    return F.softmax(x, dim=axis)


def log_softmax(x, axis=-1):
    return F.log_softmax(x, dim=axis)


def linear(x):
    return x


def elu(x, alpha=1.0):
    return F.elu(x, alpha)


def selu(x):
    return F.selu(x)


def gelu(x, approximate=False):   # Keras 3's `activations.gelu` is exact by default (`ops.gelu` is not)
    return F.gelu(x, approximate="tanh" if approximate else "none")


def silu(x):
    return F.silu(x)


swish = silu


def softplus(x):
    return F.softplus(x)


def softsign(x):
    return F.softsign(x)


def leaky_relu(x, negative_slope=0.2):   # Keras 3's default slope
    return F.leaky_relu(x, negative_slope)


def relu6(x):
    return F.relu6(x)


def exponential(x):
    return M.exp(x)


def hard_sigmoid(x):
    return F.hardsigmoid(x)


def mish(x):
    return F.mish(x)


ALL = {f.__name__: f for f in
       [relu, sigmoid, tanh, softmax, linear, elu, selu, gelu, silu, softplus, softsign, leaky_relu, relu6,
        exponential, hard_sigmoid, mish, log_softmax]}
ALL["swish"] = silu   # Keras's second name for silu; `serialize(silu)` gives 'silu', the first


def get(identifier):
    """The activation named `identifier` ('relu', 'softmax', ...), a callable as it is, None as linear."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in ALL:
        return ALL[identifier]
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}. Known activations: "
                     f"{', '.join(sorted(ALL))}, or a callable")


def serialize(fn) -> str:
    for name, f in ALL.items():
        if f is fn:
            return name
    raise ValueError(f"activation {fn!r} is not one of Keras's named activations and cannot be saved; "
                     f"use one of {', '.join(sorted(ALL))}")
