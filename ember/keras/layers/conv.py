"""Conv2D and the 2-D pooling layers on Keras's channels-last images (batch, height, width, channels).

The math is ember.nn.functional's (channels-first, as torch): these layers move the channel axis in and
out, and hold the kernel in Keras's layout (kh, kw, in, out). 'same' padding follows Keras/TensorFlow:
the output has ceil(size / stride) positions and the odd extra pad goes after (right/bottom).
"""
from __future__ import annotations

import math

from ...nn import functional as F
from ...ops import creation as C
from .. import activations, initializers
from .base import InputSpec, Layer

__all__ = ["Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D"]


def _pair(v, name):
    """Keras's `standardize_tuple`: an int or a pair of ints, each > 0."""
    msg = f"The `{name}` argument must be a tuple of 2 integers. Received {name}={v!r}"
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or not all(isinstance(i, int) for i in pair):
        raise ValueError(msg)
    bad = {i for i in pair if i <= 0}
    if bad:
        raise ValueError(f"{msg}, including values {bad} that do not satisfy `value > 0`")
    return pair


def _check_format(data_format):
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    return data_format


def _check_padding(padding):
    padding = padding.lower() if isinstance(padding, str) else padding
    if padding not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}")
    return padding


def _same_pads(size, k, s, d):
    """TensorFlow's 'same': (before, after) so that the output has ceil(size / s) positions."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _out_len(size, k, s, padding, d=1):
    if size is None:
        return None
    if padding == "same":
        return -(-size // s)
    return (size - d * (k - 1) - 1) // s + 1


def _check_out(out_hw, input_shape, what):
    if any(o is not None and o < 0 for o in out_hw):
        raise ValueError(f"Computed output size would be negative. Received `inputs shape={tuple(input_shape)}`, "
                         f"{what}.")


class _Spatial(Layer):
    def _to_nchw(self, x):
        return x.permute(0, 3, 1, 2) if self.data_format == "channels_last" else x

    def _from_nchw(self, x):
        return x.permute(0, 2, 3, 1) if self.data_format == "channels_last" else x

    def _hw(self, shape):
        return (shape[1], shape[2]) if self.data_format == "channels_last" else (shape[2], shape[3])

    def _pad_same(self, x, k, s, d=(1, 1), value=0.0):   # x is NCHW
        (t, b), (l, r) = _same_pads(x.shape[2], k[0], s[0], d[0]), _same_pads(x.shape[3], k[1], s[1], d[1])
        if t or b or l or r:
            x = F.pad(x, (l, r, t, b), value=value)
        return x, (t, b, l, r)


class Conv2D(_Spatial):
    """2-D convolution: `filters` kernels of `kernel_size` over (batch, h, w, channels) images.

    >>> ember.keras.layers.Conv2D(8, 3, padding="same")(np.ones((2, 28, 28, 1))).shape
    (2, 28, 28, 8)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                             f"Received filters={filters!r}.")
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups!r}.")
        if filters % groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}.")
        self.filters = filters
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _check_padding(padding)
        self.data_format = _check_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected ndim=4, '
                             f"found ndim={len(input_shape)}. Full shape received: {tuple(input_shape)} "
                             f"(Conv2D takes (batch, height, width, channels) images)")
        axis = -1 if self.data_format == "channels_last" else 1
        channels = input_shape[axis]
        if channels % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {channels} channels (full input "
                             f"shape is {tuple(input_shape)}).")
        self.compute_output_shape(input_shape)               # Keras: refuses an input smaller than the kernel
        self.kernel = self.add_weight(shape=self.kernel_size + (channels // self.groups, self.filters),
                                      initializer=self.kernel_initializer, name="kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer, name="bias")
        self.input_spec = InputSpec(ndim=4, axes={axis: channels})

    def call(self, inputs):
        x = self._to_nchw(inputs)
        if self.padding == "same":
            x, _ = self._pad_same(x, self.kernel_size, self.strides, self.dilation_rate)
        w = self.kernel.permute(3, 2, 0, 1)                       # (kh, kw, in, out) -> (out, in, kh, kw)
        y = F.conv2d(x, w, self.bias if self.use_bias else None, stride=self.strides,
                     dilation=self.dilation_rate, groups=self.groups)
        return self.activation(self._from_nchw(y))

    def compute_output_shape(self, input_shape):
        h, w = self._hw(input_shape)
        oh = _out_len(h, self.kernel_size[0], self.strides[0], self.padding, self.dilation_rate[0])
        ow = _out_len(w, self.kernel_size[1], self.strides[1], self.padding, self.dilation_rate[1])
        _check_out((oh, ow), input_shape, f"`kernel shape={self.kernel_size}`, `dilation_rate={self.dilation_rate}`")
        if self.data_format == "channels_last":
            return (input_shape[0], oh, ow, self.filters)
        return (input_shape[0], self.filters, oh, ow)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": list(self.kernel_size),
                "strides": list(self.strides), "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate), "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class _Pooling2D(_Spatial):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides") if strides is not None else self.pool_size
        self.padding = _check_padding(padding)
        self.data_format = _check_format(data_format)

    def build(self, input_shape):
        self.input_spec = InputSpec(ndim=4)

    def compute_output_shape(self, input_shape):
        h, w = self._hw(input_shape)
        oh = _out_len(h, self.pool_size[0], self.strides[0], self.padding)
        ow = _out_len(w, self.pool_size[1], self.strides[1], self.padding)
        _check_out((oh, ow), input_shape, f"`pool_size={self.pool_size}`")
        c = input_shape[3] if self.data_format == "channels_last" else input_shape[1]
        return (input_shape[0], oh, ow, c) if self.data_format == "channels_last" else (input_shape[0], c, oh, ow)

    def get_config(self):
        return {**super().get_config(), "pool_size": list(self.pool_size), "strides": list(self.strides),
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """The largest value of each `pool_size` window (stride = pool_size by default)."""

    def call(self, inputs):
        x = self._to_nchw(inputs)
        if self.padding == "same":
            x, _ = self._pad_same(x, self.pool_size, self.strides, value=-math.inf)
        return self._from_nchw(F.max_pool2d(x, self.pool_size, self.strides))


class AveragePooling2D(_Pooling2D):
    """The mean of each window; with 'same' padding the padded positions are left out of the mean (Keras)."""

    def call(self, inputs):
        x = self._to_nchw(inputs)
        if self.padding == "valid":
            return self._from_nchw(F.avg_pool2d(x, self.pool_size, self.strides))
        x, (t, b, l, r) = self._pad_same(x, self.pool_size, self.strides)
        sums = F.avg_pool2d(x, self.pool_size, self.strides)
        ones = F.pad(C.ones(1, 1, x.shape[2] - t - b, x.shape[3] - l - r, dtype=x.dtype), (l, r, t, b))
        counts = F.avg_pool2d(ones, self.pool_size, self.strides)   # the fraction of each window inside
        return self._from_nchw(sums / counts)


class _GlobalPooling2D(_Spatial):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _check_format(data_format)
        self.keepdims = keepdims

    def build(self, input_shape):
        self.input_spec = InputSpec(ndim=4)

    def _axes(self):
        return (1, 2) if self.data_format == "channels_last" else (2, 3)

    def compute_output_shape(self, input_shape):
        axes = self._axes()
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i not in axes)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over height and width: (batch, h, w, c) -> (batch, c)."""

    def call(self, inputs):
        return inputs.mean(dim=self._axes(), keepdim=self.keepdims)


class GlobalMaxPooling2D(_GlobalPooling2D):
    def call(self, inputs):
        return inputs.amax(dim=self._axes(), keepdim=self.keepdims)
