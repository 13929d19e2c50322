"""Pooling layers over 1, 2 and 3 spatial dims: max, average, power-average (LP), adaptive average and
adaptive max, and max unpooling."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d",
           "LPPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                        ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over windows of (N, C, H, W).

    >>> ember.nn.MaxPool2d(2)(ember.randn(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """
    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max over windows of (N, C, D, H, W) or (C, D, H, W).

    >>> ember.nn.MaxPool3d(3, stride=2, padding=1)(ember.randn(1, 3, 5, 8, 8)).shape
    (1, 3, 3, 4, 4)
    """
    _fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = F._ntuple(kernel_size, 1)
        self.stride = F._ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = F._ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(Module):
    _fn = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)


class AvgPool3d(AvgPool2d):
    """Mean over windows of (N, C, D, H, W) or (C, D, H, W).

    >>> ember.nn.AvgPool3d((1, 2, 2))(ember.ones(2, 3, 4, 6, 6)).shape
    (2, 3, 4, 3, 3)
    """
    _fn = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling: (sum of x**p over each window) ** (1/p); max of |x| at p = inf.

    >>> ember.nn.LPPool2d(2, 3, stride=2)(ember.randn(1, 4, 9, 9)).shape
    (1, 4, 4, 4)
    """
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class AdaptiveAvgPool1d(Module):
    _fn = staticmethod(F.adaptive_avg_pool1d)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return self._fn(input, self.output_size)


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    """Average pooling to a fixed (D, H, W); None keeps that input size.

    >>> ember.nn.AdaptiveAvgPool3d((2, None, 1))(ember.randn(1, 3, 5, 6, 7)).shape
    (1, 3, 2, 6, 1)
    """
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W) over torch's adaptive windows; None keeps that input size.

    >>> ember.nn.AdaptiveMaxPool2d((3, None))(ember.randn(1, 2, 7, 5)).shape
    (1, 2, 3, 5)
    """
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool3d)


class _MaxUnpoolNd(Module):
    _nd = 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = F._ntuple(kernel_size, self._nd, "kernel_size")
        self.stride = F._ntuple(stride if stride is not None else kernel_size, self._nd, "stride")
        self.padding = F._ntuple(padding, self._nd, "padding")

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    _nd, _fn = 1, staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d: values back at their indices, zeros elsewhere; output_size picks
    among the input sizes that pool to the same size.

    >>> pool, unpool = ember.nn.MaxPool2d(2, return_indices=True), ember.nn.MaxUnpool2d(2)
    >>> x = ember.randn(1, 1, 5, 5)
    >>> unpool(*pool(x), output_size=x.shape).shape
    (1, 1, 5, 5)
    """
    _nd, _fn = 2, staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _nd, _fn = 3, staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * self._nd
            if len(ratio) != self._nd or not all(0 < r < 1 for r in ratio):
                raise ValueError(f"{name}: output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                        _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (H, W) (F.fractional_max_pool2d): `kernel_size` windows at pseudo-random
    starts drawn per plane from Ember's generator on each call (or the fixed `_random_samples`), to
    `output_size` or `output_ratio` times the input size.

    >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(ember.randn(2, 4, 10, 12)).shape
    (2, 4, 5, 6)
    """
    _nd = 2
    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (T, H, W) (F.fractional_max_pool3d).

    >>> nn.FractionalMaxPool3d(2, output_size=(3, 4, 5))(ember.randn(1, 2, 6, 7, 8)).shape
    (1, 2, 3, 4, 5)
    """
    _nd = 3
    _fn = staticmethod(F.fractional_max_pool3d)
