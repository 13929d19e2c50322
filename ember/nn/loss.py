"""Loss modules: each holds its options and calls the matching ember.nn.functional loss."""
from __future__ import annotations

import dataclasses
import math

from .. import _dtype
from .._errors import op_error, warn
from . import functional as F
from .linear import Linear
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "MultiMarginLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiLabelMarginLoss", "HingeEmbeddingLoss", "TripletMarginWithDistanceLoss", "CTCLoss", "NLLLoss2d", "LinearCrossEntropyLoss",
           "LinearCrossEntropyOptions"]


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


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name, deprecated in torch (a FutureWarning when made, as torch's)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        warn("NLLLoss2d", "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement.",
             FutureWarning)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """torch's options for the chunked path of `F.linear_cross_entropy` (rows of the batch per chunk, the
    accumulation policy and dtype), validated as torch validates them. Ember accepts them and computes the
    reference way (logits, then cross_entropy): the same loss and gradients, without torch's memory saving.

    >>> ember.nn.LinearCrossEntropyOptions(batch_chunk_size=64).batch_chunk_size
    64
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        # plain ValueErrors: op_error's "(at file:line)" would name the dataclass's generated __init__
        op = "LinearCrossEntropyOptions"
        if self.acc_policy not in ("auto", "accurate", "balanced", "compact"):
            raise ValueError(f"{op}: invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"{op}: invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0)):
            raise ValueError(f"{op}: batch_chunk_size must be positive int or None, got {size!r}")
        floats = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
        if self.acc_dtype is not None and self.acc_dtype not in floats:
            raise ValueError(f"{op}: acc_dtype must be one of None, ember.float16, ember.bfloat16, ember.float32, "
                             f"ember.float64, got {self.acc_dtype!r}")


class LinearCrossEntropyLoss(_WeightedLoss):
    """A Linear layer (in_features -> num_classes * prod(out_features), no bias by default) and the cross
    entropy of its logits (N, num_classes, *out_features) with the target, as `F.linear_cross_entropy`.
    The weight is stored flat in `self.linear` (torch's parameter names: linear.weight, linear.bias).

    >>> loss = ember.nn.LinearCrossEntropyLoss(5, 10)
    >>> loss(ember.randn(3, 5), ember.tensor([1, 0, 9])).shape
    ()
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise op_error("LinearCrossEntropyLoss", f"expected weight shape to be {(num_classes,)}, got "
                                                     f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise op_error("LinearCrossEntropyLoss", f"expected label_smoothing to be in range [0, 1], got "
                                                     f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)

    def forward(self, input, target):
        linear_weight = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        linear_bias = None if self.linear.bias is None else \
            self.linear.bias.reshape(self.num_classes, *self.out_features)
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


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
