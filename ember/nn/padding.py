"""Padding layers over F.pad: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad, 1d/2d/3d.

An int pads every side by that much; a tuple gives (left, right[, top, bottom[, front, back]]), as F.pad.
"""
from __future__ import annotations

from .._errors import op_error
from . import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """F.pad with `mode` over the last `_dims` dims of a batched or unbatched input."""
    _dims = 1
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = F._ntuple(padding, 2 * self._dims, "padding")

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with `value`.

    >>> nn.ConstantPad1d((1, 2), 3.5)(ember.zeros(1, 2))
    tensor([[3.5000, 0.0000, 0.0000, 3.5000, 3.5000]])
    """
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with `value`."""
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with `value`."""
    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pad the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pad the last 2 dims with zeros.

    >>> nn.ZeroPad2d((1, 0, 0, 1))(ember.ones(1, 1, 1))
    tensor([[[0., 1.],
             [0., 0.]]])
    """


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pad the last 3 dims with zeros."""


class ReflectionPad1d(_PadNd):
    """Pad the last dim of (C, W) or (N, C, W) with its reflection (the edge is not repeated).

    >>> nn.ReflectionPad1d(2)(ember.arange(4.0).reshape(1, 4))
    tensor([[2., 1., 0., 1., 2., 3., 2., 1.]])
    """
    _dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims of (C, H, W) or (N, C, H, W) with their reflection."""
    _dims, mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dims of (C, D, H, W) or (N, C, D, H, W) with their reflection."""
    _dims, mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim of (C, W) or (N, C, W) by repeating its edge values.

    >>> nn.ReplicationPad1d((2, 1))(ember.tensor([[1.0, 2.0]]))
    tensor([[1., 1., 1., 2., 2.]])
    """
    _dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims of (C, H, W) or (N, C, H, W) by repeating their edges."""
    _dims, mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dims of (C, D, H, W) or (N, C, D, H, W) by repeating their edges."""
    _dims, mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        if input.ndim not in (self._dims + 1, self._dims + 2):
            raise op_error(type(self).__name__, f"expected {self._dims + 1}D or {self._dims + 2}D input (got "
                                                f"{input.ndim}D input of shape {tuple(input.shape)})", ValueError)
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of (C, W) or (N, C, W) by wrapping around (the end pads the start).

    >>> nn.CircularPad1d((1, 2))(ember.arange(3.0).reshape(1, 3))
    tensor([[2., 0., 1., 2., 0., 1.]])
    """
    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims of (C, H, W) or (N, C, H, W) by wrapping around."""
    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims of (C, D, H, W) or (N, C, D, H, W) by wrapping around."""
    _dims = 3
