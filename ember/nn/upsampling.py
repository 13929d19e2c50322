"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d: F.interpolate as a layer."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize (N, C, ...) to `size` or by `scale_factor` with F.interpolate's `mode` (nearest, linear,
    bilinear, bicubic, trilinear, ...).

    >>> nn.Upsample(scale_factor=2, mode="bicubic")(ember.randn(1, 3, 4, 5)).shape
    (1, 3, 8, 10)
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample(mode='nearest') for (N, C, H, W).

    >>> nn.UpsamplingNearest2d(scale_factor=2)(ember.randn(1, 1, 2, 3)).shape
    (1, 1, 4, 6)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(mode='bilinear', align_corners=True) for (N, C, H, W).

    >>> nn.UpsamplingBilinear2d(size=(3, 5))(ember.randn(1, 1, 2, 3)).shape
    (1, 1, 3, 5)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
