"""CosineSimilarity and PairwiseDistance (torch.nn.modules.distance), and Fold and Unfold
(torch.nn.modules.fold): parameter-free modules over their functional ops."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance", "Fold", "Unfold"]


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along `dim`: x1 . x2 / max(|x1| |x2|, eps).

    >>> nn.CosineSimilarity(dim=1)(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dimension (one distance per row).

    >>> nn.PairwiseDistance(eps=0.0)(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]])).tolist()
    [5.0]
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Unfold(Module):
    """Sliding blocks of a batched image as columns (im2col): (N, C, H, W) -> (N, C * kh * kw, L).

    >>> nn.Unfold(kernel_size=2)(ember.randn(1, 3, 4, 5)).shape
    (1, 12, 12)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns back into a batched image, summing where blocks overlap (col2im, the adjoint of Unfold):
    (N, C * kh * kw, L) -> (N, C, *output_size).

    >>> nn.Fold(output_size=(3, 3), kernel_size=2)(ember.ones(1, 4, 4))[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
