"""Dense, Activation, Dropout, Flatten, Reshape and Embedding, with Keras's arguments and weight layouts."""
from __future__ import annotations

import math

from ...nn import functional as F
from ...ops import math as M
from .. import activations, initializers
from .base import InputSpec, Layer

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Embedding"]


class Dense(Layer):
    """`activation(inputs @ kernel + bias)`, on the last axis; kernel (in, units) glorot_uniform, bias zeros.

    >>> ember.keras.layers.Dense(10, activation="softmax")(np.ones((2, 784))).shape
    (2, 10)
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. "
                             f"Received: units={units!r}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape):
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ValueError(f'Dense layer "{self.name}" needs a known last dimension, got input shape '
                             f"{input_shape}")
        self.kernel = self.add_weight(shape=(in_dim, self.units), initializer=self.kernel_initializer, name="kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer, name="bias")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})

    def call(self, inputs):
        x = M.matmul(inputs, self.kernel)
        if self.use_bias:
            x = x + self.bias
        return self.activation(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias, "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training (scaling the rest by 1/(1-rate)); identity
    in inference (evaluate, predict, a plain call)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 "
                             f"and 1. Received: rate={rate!r}")
        if noise_shape is not None:
            raise NotImplementedError("Dropout(noise_shape=...) is not supported by ember.keras")
        self.rate = float(rate)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        return F.dropout(inputs, self.rate, training=True)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1 * d2 * ...)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.ndim > 2:
            inputs = inputs.permute(0, *range(2, inputs.ndim), 1)
        return inputs.reshape(inputs.shape[0], -1)

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], None if any(d is None for d in rest) else math.prod(rest))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshape each sample to `target_shape` (one entry may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        return inputs.reshape((inputs.shape[0],) + self.target_shape)

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        if -1 in self.target_shape:
            known = math.prod(d for d in self.target_shape if d != -1)
            total = None if any(d is None for d in rest) else math.prod(rest)
            if total is not None and total % known:
                raise ValueError(f'Reshape layer "{self.name}": cannot reshape input of shape {tuple(input_shape)} '
                                 f"to {self.target_shape}")
            fill = None if total is None else total // known
            return (input_shape[0],) + tuple(fill if d == -1 else d for d in self.target_shape)
        if None not in rest and math.prod(rest) != math.prod(self.target_shape):
            raise ValueError(f'Reshape layer "{self.name}": total size of the input shape {tuple(input_shape)} '
                             f"({math.prod(rest)} per sample) does not match target_shape {self.target_shape} "
                             f"({math.prod(self.target_shape)})")
        return (input_shape[0],) + self.target_shape

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Embedding(Layer):
    """Integer ids (batch, ...) -> vectors (batch, ..., output_dim); `embeddings` is (input_dim, output_dim),
    uniform in [-0.05, 0.05] as Keras."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", mask_zero=False,
                 input_length=None, **kwargs):
        super().__init__(**kwargs)
        if mask_zero:
            raise NotImplementedError("Embedding(mask_zero=True): masking is not supported by ember.keras")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer, name="embeddings")

    def call(self, inputs):
        if inputs.dtype.is_floating_point:
            inputs = inputs.long()
        return F.embedding(inputs, self.embeddings)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer)}
