"""BatchNormalization with Keras's conventions: normalises over every axis but `axis` (the channels,
last by default), `momentum=0.99` weighs the old moving statistics, `epsilon=1e-3`, and the moving
variance is updated with the batch's biased variance (torch uses the unbiased one). As Keras, its weights
are never autocast and 16-bit inputs (a mixed-precision policy) are normalised in float32."""
from __future__ import annotations

from ... import _dtype
from ...autograd.grad_mode import no_grad
from ...ops import math as M
from .. import initializers
from .base import InputSpec, Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self.axis, self.momentum, self.epsilon = int(axis), float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape):
        axis = self.axis % len(input_shape)
        dim = input_shape[axis]
        if dim is None:
            raise ValueError(f'BatchNormalization "{self.name}": axis {self.axis} of input shape '
                             f"{tuple(input_shape)} must be known")
        if self.scale:
            self.gamma = self.add_weight(shape=(dim,), initializer=self.gamma_initializer, name="gamma",
                                         autocast=False)
        if self.center:
            self.beta = self.add_weight(shape=(dim,), initializer=self.beta_initializer, name="beta",
                                        autocast=False)
        self.moving_mean = self.add_weight(shape=(dim,), initializer=self.moving_mean_initializer,
                                           name="moving_mean", trainable=False, autocast=False)
        self.moving_variance = self.add_weight(shape=(dim,), initializer=self.moving_variance_initializer,
                                               name="moving_variance", trainable=False, autocast=False)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={axis: dim})

    def call(self, inputs, training=False):
        in_dtype = inputs.dtype
        if in_dtype in (_dtype.float16, _dtype.bfloat16):
            inputs = inputs.to(_dtype.float32)
        axis = self.axis % inputs.ndim
        reduce = tuple(i for i in range(inputs.ndim) if i != axis)
        shape = [1] * inputs.ndim
        shape[axis] = inputs.shape[axis]
        if training and self.trainable:          # Keras: a frozen BatchNormalization runs in inference mode
            mean = inputs.mean(dim=reduce, keepdim=True)
            var = ((inputs - mean) ** 2).mean(dim=reduce, keepdim=True)
            with no_grad():
                m = self.momentum
                self.moving_mean.mul_(m).add_(mean.detach().reshape(-1) * (1 - m))
                self.moving_variance.mul_(m).add_(var.detach().reshape(-1) * (1 - m))
        else:
            mean, var = self.moving_mean.reshape(shape), self.moving_variance.reshape(shape)
        y = (inputs - mean) * M.rsqrt(var + self.epsilon)
        if self.scale:
            y = y * self.gamma.reshape(shape)
        if self.center:
            y = y + self.beta.reshape(shape)
        return y.to(in_dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}
