"""Conv1D, Conv2D, Conv3D and the 1-D, 2-D and 3-D pooling layers on Keras's channels-last data: sequences
(batch, steps, channels), images (batch, height, width, channels) and volumes (batch, d1, d2, d3, channels).

The math is ember.nn.functional's (channels-first, as torch): these layers move the channel axis in and
out, and hold the kernel in Keras's layout (k, in, out), (kh, kw, in, out) or (k1, k2, k3, in, out). 'same' padding follows
Keras/TensorFlow: the output has ceil(size / stride) positions and the odd extra pad goes after
(right/bottom); Conv1D's 'causal' pads dilation * (k - 1) steps before the sequence, so output[t] reads
no input after t.

Conv1DTranspose / Conv2DTranspose / Conv3DTranspose hold Keras's transposed kernel (*k, filters, in) and
follow Keras 3's output sizes: 'valid' gives (n - 1) * s + max(K, s) positions (K = dilation * (k - 1) + 1),
'same' n * s, and an explicit `output_padding` p gives (n - 1) * s + K + p ('valid') or
(n - 1) * s + K % 2 + p ('same'). They compute torch's full transposed convolution, (n - 1) * s + K
positions, and crop it (or extend it with zeros) on each side to that size, as Keras's JAX backend does.
"""
from __future__ import annotations

import math

from ...nn import functional as F
from ...ops import creation as C
from .. import activations, initializers
from .base import InputSpec, Layer

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "MaxPooling1D", "AveragePooling1D", "GlobalAveragePooling1D",
           "GlobalMaxPooling1D", "UpSampling1D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D",
           "GlobalMaxPooling2D", "MaxPooling3D", "AveragePooling3D", "GlobalAveragePooling3D", "GlobalMaxPooling3D"]


def _ntuple(v, n, name):
    """Keras's `standardize_tuple`: an int or a tuple of n ints, each > 0."""
    msg = f"The `{name}` argument must be a tuple of {n} integers. Received {name}={v!r}"
    tup = (v,) * n if isinstance(v, int) else tuple(v)
    if len(tup) != n or not all(isinstance(i, int) for i in tup):
        raise ValueError(msg)
    bad = {i for i in tup if i <= 0}
    if bad:
        raise ValueError(f"{msg}, including values {bad} that do not satisfy `value > 0`")
    return tup


def _check_format(data_format):
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    return data_format


def _check_padding(padding, causal=False):
    padding = padding.lower() if isinstance(padding, str) else padding
    if padding not in (("valid", "same", "causal") if causal else ("valid", "same")):
        allowed = "'valid', 'same' or 'causal'" if causal else "'valid' or 'same'"
        raise ValueError(f"padding must be {allowed}, got {padding!r}")
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
    if padding == "causal":                                    # d * (k - 1) steps of padding before
        return (size - 1) // s + 1
    return (size - d * (k - 1) - 1) // s + 1


def _check_out(out_sizes, input_shape, what):
    if any(o is not None and o < 0 for o in out_sizes):
        raise ValueError(f"Computed output size would be negative. Received `inputs shape={tuple(input_shape)}`, "
                         f"{what}.")


class _Spatial(Layer):
    """Channels-last or channels-first data of `rank` spatial axes, moved to channels-first for F's ops."""
    rank = 2

    def _to_cf(self, x):
        if self.data_format == "channels_last":
            return x.permute(0, x.ndim - 1, *range(1, x.ndim - 1))
        return x

    def _from_cf(self, x):
        if self.data_format == "channels_last":
            return x.permute(0, *range(2, x.ndim), 1)
        return x

    def _sizes(self, shape):
        return tuple(shape[1:-1]) if self.data_format == "channels_last" else tuple(shape[2:])

    def _channels(self, shape):
        return shape[-1] if self.data_format == "channels_last" else shape[1]

    def _with_sizes(self, shape, sizes, channels):
        if self.data_format == "channels_last":
            return (shape[0],) + tuple(sizes) + (channels,)
        return (shape[0], channels) + tuple(sizes)

    def _pad_same(self, x, k, s, d=None, value=0.0):   # x is channels-first
        d = d or (1,) * self.rank
        pads = [_same_pads(x.shape[2 + i], k[i], s[i], d[i]) for i in range(self.rank)]
        flat = [p for pair in reversed(pads) for p in pair]        # F.pad: the last axis first
        if any(flat):
            x = F.pad(x, tuple(flat), value=value)
        return x, pads


class _Conv(_Spatial):
    _conv = None
    _takes = ""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
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
        self.kernel_size = _ntuple(kernel_size, self.rank, "kernel_size")
        self.strides = _ntuple(strides, self.rank, "strides")
        self.padding = _check_padding(padding, causal=self.rank == 1)
        self.data_format = _check_format(data_format)
        self.dilation_rate = _ntuple(dilation_rate, self.rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape):
        ndim = self.rank + 2
        if len(input_shape) != ndim:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected ndim={ndim}, '
                             f"found ndim={len(input_shape)}. Full shape received: {tuple(input_shape)} "
                             f"({type(self).__name__} takes {self._takes})")
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
        self.input_spec = InputSpec(ndim=ndim, axes={axis: channels})

    def call(self, inputs):
        x = self._to_cf(inputs)
        if self.padding == "same":
            x, _ = self._pad_same(x, self.kernel_size, self.strides, self.dilation_rate)
        elif self.padding == "causal":
            x = F.pad(x, (self.dilation_rate[0] * (self.kernel_size[0] - 1), 0))
        r = self.rank
        w = self.kernel.permute(r + 1, r, *range(r))                # (*k, in, out) -> (out, in, *k)
        y = type(self)._conv(x, w, self.bias if self.use_bias else None, stride=self.strides,
                             dilation=self.dilation_rate, groups=self.groups)
        return self.activation(self._from_cf(y))

    def compute_output_shape(self, input_shape):
        sizes = [_out_len(n, k, s, self.padding, d) for n, k, s, d in
                 zip(self._sizes(input_shape), self.kernel_size, self.strides, self.dilation_rate)]
        _check_out(sizes, input_shape, f"`kernel shape={self.kernel_size}`, `dilation_rate={self.dilation_rate}`")
        return self._with_sizes(input_shape, sizes, self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": list(self.kernel_size),
                "strides": list(self.strides), "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate), "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class Conv1D(_Conv):
    """1-D (temporal) convolution over (batch, steps, channels); kernel (k, in / groups, filters).
    `padding='causal'` pads only before the sequence (output[t] reads inputs up to t).

    >>> ember.keras.layers.Conv1D(8, 3, padding="causal")(np.ones((2, 10, 4))).shape
    (2, 10, 8)
    """
    rank = 1
    _conv = F.conv1d
    _takes = "(batch, steps, channels) sequences"


class Conv2D(_Conv):
    """2-D convolution: `filters` kernels of `kernel_size` over (batch, h, w, channels) images.

    >>> ember.keras.layers.Conv2D(8, 3, padding="same")(np.ones((2, 28, 28, 1))).shape
    (2, 28, 28, 8)
    """
    rank = 2
    _conv = F.conv2d
    _takes = "(batch, height, width, channels) images"


class Conv3D(_Conv):
    """3-D convolution over (batch, d1, d2, d3, channels) volumes; kernel (k1, k2, k3, in / groups, filters).

    >>> ember.keras.layers.Conv3D(4, 3)(np.ones((2, 5, 6, 7, 1))).shape
    (2, 3, 4, 5, 4)
    """
    rank = 3
    _conv = F.conv3d
    _takes = "(batch, d1, d2, d3, channels) volumes"


def _transpose_pads(k, s, d, padding, output_padding):
    """Keras's (JAX backend's) padding of a transposed convolution, (left, right), each counted from the
    full output's K - 1 (so left = K - 1 crops nothing)."""
    k = (k - 1) * d + 1
    if padding == "valid":
        p = max(k, s) - k if output_padding is None else output_padding
        return k - 1, k - 1 + p
    pad = s + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
    left = min(pad // 2 + pad % 2, k - 1)
    return left, pad - left


def _transpose_len(n, k, s, d, padding, output_padding):
    if n is None:
        return None
    k = (k - 1) * d + 1
    if padding == "valid":
        return (n - 1) * s + k + (max(k, s) - k if output_padding is None else output_padding)
    return n * s if output_padding is None else (n - 1) * s + k % 2 + output_padding


class _ConvTranspose(_Spatial):
    _conv = None
    _takes = ""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                             f"Received filters={filters!r}.")
        self.filters = filters
        self.kernel_size = _ntuple(kernel_size, self.rank, "kernel_size")
        self.strides = _ntuple(strides, self.rank, "strides")
        self.padding = _check_padding(padding)
        self.output_padding = None
        if output_padding is not None:
            op = (output_padding,) * self.rank if isinstance(output_padding, int) else tuple(output_padding)
            if len(op) != self.rank or not all(isinstance(i, int) and i >= 0 for i in op):
                raise ValueError(f"The `output_padding` argument must be a tuple of {self.rank} integers >= 0. "
                                 f"Received output_padding={output_padding!r}")
            self.output_padding = op
        self.data_format = _check_format(data_format)
        self.dilation_rate = _ntuple(dilation_rate, self.rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _op(self, i):
        return None if self.output_padding is None else self.output_padding[i]

    def build(self, input_shape):
        ndim = self.rank + 2
        if len(input_shape) != ndim:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected ndim={ndim}, '
                             f"found ndim={len(input_shape)}. Full shape received: {tuple(input_shape)} "
                             f"({type(self).__name__} takes {self._takes})")
        axis = -1 if self.data_format == "channels_last" else 1
        channels = input_shape[axis]
        self.kernel = self.add_weight(shape=self.kernel_size + (self.filters, channels),
                                      initializer=self.kernel_initializer, name="kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer, name="bias")
        self.input_spec = InputSpec(ndim=ndim, axes={axis: channels})

    def call(self, inputs):
        x = self._to_cf(inputs)
        r = self.rank
        w = self.kernel.permute(r + 1, r, *range(r))                # (*k, out, in) -> (in, out, *k), torch's
        y = type(self)._conv(x, w, None, stride=self.strides, dilation=self.dilation_rate)   # the full output
        crops = []
        for i in range(r):
            k = (self.kernel_size[i] - 1) * self.dilation_rate[i] + 1
            left, right = _transpose_pads(self.kernel_size[i], self.strides[i], self.dilation_rate[i],
                                          self.padding, self._op(i))
            crops.append((left - (k - 1), right - (k - 1)))         # > 0 extends with zeros, < 0 crops
        flat = tuple(p for pair in reversed(crops) for p in pair)  # F.pad: the last axis first
        if any(flat):
            y = F.pad(y, flat)
        if self.use_bias:
            y = y + self.bias.reshape((1, -1) + (1,) * r)
        return self.activation(self._from_cf(y))

    def compute_output_shape(self, input_shape):
        sizes = [_transpose_len(n, k, s, d, self.padding, self._op(i)) for i, (n, k, s, d) in
                 enumerate(zip(self._sizes(input_shape), self.kernel_size, self.strides, self.dilation_rate))]
        return self._with_sizes(input_shape, sizes, self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": list(self.kernel_size),
                "strides": list(self.strides), "padding": self.padding,
                "output_padding": None if self.output_padding is None else list(self.output_padding),
                "data_format": self.data_format, "dilation_rate": list(self.dilation_rate),
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (a learned upsampling) over (batch, steps, channels); kernel
    (k, filters, in), as Keras.

    >>> ember.keras.layers.Conv1DTranspose(4, 3, strides=2, padding="same")(np.ones((2, 5, 3))).shape
    (2, 10, 4)
    """
    rank = 1
    _conv = F.conv_transpose1d
    _takes = "(batch, steps, channels) sequences"


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution over (batch, h, w, channels) images; kernel (kh, kw, filters, in).

    >>> ember.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same")(np.ones((2, 5, 6, 3))).shape
    (2, 10, 12, 4)
    """
    rank = 2
    _conv = F.conv_transpose2d
    _takes = "(batch, height, width, channels) images"


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution over (batch, d1, d2, d3, channels) volumes; kernel (k1, k2, k3, filters, in)."""
    rank = 3
    _conv = F.conv_transpose3d
    _takes = "(batch, d1, d2, d3, channels) volumes"


class _Pooling(_Spatial):
    _max = _avg = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _ntuple(pool_size, self.rank, "pool_size")
        self.strides = _ntuple(strides, self.rank, "strides") if strides is not None else self.pool_size
        self.padding = _check_padding(padding)
        self.data_format = _check_format(data_format)

    def build(self, input_shape):
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def compute_output_shape(self, input_shape):
        sizes = [_out_len(n, k, s, self.padding) for n, k, s in
                 zip(self._sizes(input_shape), self.pool_size, self.strides)]
        _check_out(sizes, input_shape, f"`pool_size={self.pool_size}`")
        return self._with_sizes(input_shape, sizes, self._channels(input_shape))

    def get_config(self):
        return {**super().get_config(), "pool_size": list(self.pool_size), "strides": list(self.strides),
                "padding": self.padding, "data_format": self.data_format}


class _MaxPooling(_Pooling):
    def call(self, inputs):
        x = self._to_cf(inputs)
        if self.padding == "same":
            x, _ = self._pad_same(x, self.pool_size, self.strides, value=-math.inf)
        return self._from_cf(type(self)._max(x, self.pool_size, self.strides))


class _AveragePooling(_Pooling):
    def call(self, inputs):
        x = self._to_cf(inputs)
        pool = type(self)._avg
        if self.padding == "valid":
            return self._from_cf(pool(x, self.pool_size, self.strides))
        x, pads = self._pad_same(x, self.pool_size, self.strides)
        sums = pool(x, self.pool_size, self.strides)
        inside = [x.shape[2 + i] - a - b for i, (a, b) in enumerate(pads)]
        ones = F.pad(C.ones(1, 1, *inside, dtype=x.dtype), tuple(p for pair in reversed(pads) for p in pair))
        counts = pool(ones, self.pool_size, self.strides)       # the fraction of each window inside
        return self._from_cf(sums / counts)


class MaxPooling1D(_MaxPooling):
    """The largest value of each `pool_size` window of steps (stride = pool_size by default).

    >>> ember.keras.layers.MaxPooling1D(2)(np.ones((2, 10, 3))).shape
    (2, 5, 3)
    """
    rank = 1
    _max = F.max_pool1d


class AveragePooling1D(_AveragePooling):
    """The mean of each window of steps; with 'same' padding the padded positions are left out of the mean."""
    rank = 1
    _avg = F.avg_pool1d


class MaxPooling2D(_MaxPooling):
    """The largest value of each `pool_size` window (stride = pool_size by default)."""
    _max = F.max_pool2d


class AveragePooling2D(_AveragePooling):
    """The mean of each window; with 'same' padding the padded positions are left out of the mean (Keras)."""
    _avg = F.avg_pool2d


class MaxPooling3D(_MaxPooling):
    """The largest value of each `pool_size` window of a volume (stride = pool_size by default)."""
    rank = 3
    _max = F.max_pool3d


class AveragePooling3D(_AveragePooling):
    """The mean of each window of a volume; with 'same' padding the padded positions are left out of the mean."""
    rank = 3
    _avg = F.avg_pool3d


class _GlobalPooling(_Spatial):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _check_format(data_format)
        self.keepdims = keepdims

    def build(self, input_shape):
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return tuple(range(first, first + self.rank))

    def compute_output_shape(self, input_shape):
        axes = self._axes()
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i not in axes)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class _GlobalAveragePooling(_GlobalPooling):
    def call(self, inputs):
        return inputs.mean(dim=self._axes(), keepdim=self.keepdims)


class _GlobalMaxPooling(_GlobalPooling):
    def call(self, inputs):
        return inputs.amax(dim=self._axes(), keepdim=self.keepdims)


class GlobalAveragePooling1D(_GlobalAveragePooling):
    """The mean over the steps: (batch, steps, c) -> (batch, c)."""
    rank = 1


class GlobalMaxPooling1D(_GlobalMaxPooling):
    """The largest value over the steps: (batch, steps, c) -> (batch, c)."""
    rank = 1


class GlobalAveragePooling2D(_GlobalAveragePooling):
    """The mean over height and width: (batch, h, w, c) -> (batch, c)."""


class GlobalMaxPooling2D(_GlobalMaxPooling):
    """The largest value over height and width: (batch, h, w, c) -> (batch, c)."""


class GlobalAveragePooling3D(_GlobalAveragePooling):
    """The mean over the three spatial axes: (batch, d1, d2, d3, c) -> (batch, c)."""
    rank = 3


class GlobalMaxPooling3D(_GlobalMaxPooling):
    """The largest value over the three spatial axes: (batch, d1, d2, d3, c) -> (batch, c)."""
    rank = 3


class UpSampling1D(Layer):
    """Repeats each step `size` times: (batch, steps, c) -> (batch, steps * size, c).

    >>> ember.keras.layers.UpSampling1D(3)(np.ones((2, 4, 5))).shape
    (2, 12, 5)
    """

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)
        if self.size <= 0:
            raise ValueError(f"UpSampling1D: size must be a positive integer, got size={size!r}")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return inputs.repeat_interleave(self.size, dim=1)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] * self.size
        return (input_shape[0], steps, input_shape[2])

    def get_config(self):
        return {**super().get_config(), "size": self.size}
