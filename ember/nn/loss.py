"""Loss modules: each holds its options and calls the matching ember.nn.functional loss."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "MultiMarginLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiLabelMarginLoss", "HingeEmbeddingLoss", "TripletMarginWithDistanceLoss", "CTCLoss"]


_legacy = F.loss._legacy_reduction   # torch's deprecated size_average/reduce flags -> reduction


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        reduction = _legacy(size_average, reduce, reduction)
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error.

    >>> ember.nn.MSELoss()(ember.zeros(3), ember.ones(3)).item()
    1.0
    """
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + nll over class dim 1; class-index or class-probability targets."""
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MarginRankingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of target under N(input, var); see F.gaussian_nll_loss.

    >>> round(nn.GaussianNLLLoss()(ember.zeros(3), ember.ones(3), ember.ones(3)).item(), 4)
    0.5
    """
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of target given the rate (its log with log_input); see F.poisson_nll_loss.

    >>> nn.PoissonNLLLoss()(ember.zeros(3), ember.ones(3)).item()
    1.0
    """
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target input)) for targets 1 or -1.

    >>> round(nn.SoftMarginLoss()(ember.zeros(2), ember.tensor([1.0, -1.0])).item(), 4)
    0.6931
    """
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over the classes, for multi-hot targets; optional class weights.

    >>> nn.MultiLabelSoftMarginLoss(reduction="none")(ember.zeros(2, 3), ember.ones(2, 3)).shape
    (2,)
    """
    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss; target rows list class indices, padded with -1.

    >>> x = ember.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(nn.MultiLabelMarginLoss()(x, ember.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """input where target is 1, max(0, margin - input) where it is -1.

    >>> nn.HingeEmbeddingLoss(margin=1.0)(ember.tensor([0.25, 0.5]), ember.tensor([1.0, -1.0])).item()
    0.375
    """
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet margin loss for any distance function (default F.pairwise_distance).

    >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=lambda x, y: (x - y).abs().sum(-1))
    >>> loss(ember.zeros(2, 3), ember.zeros(2, 3), ember.ones(2, 3)).item()
    0.0
    """
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"{type(self).__name__}: expected margin to be greater than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None else F.pairwise_distance
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see `ember.nn.functional.ctc_loss`).

    >>> lp = ember.tensor([[[0.0, -9.0]], [[-9.0, 0.0]]]).log_softmax(2)   # (T=2, N=1, C=2)
    >>> round(ember.nn.CTCLoss()(lp, ember.tensor([[1]]), (2,), (1,)).item(), 4)
    0.0001
    """
    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)
