"""Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout: identity in eval mode."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability p in training, scaling the rest by 1/(1-p)."""
    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) with probability p."""
    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) with probability p."""
    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps a SELU network's mean and variance (dropped values go to SELU's saturation)."""
    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels."""
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
