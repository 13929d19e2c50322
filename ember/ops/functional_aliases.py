"""torch.* names of `ember.nn.functional` ops: `torch.conv2d`, `torch.batch_norm`, `torch.relu_`, ...

torch exposes these ATen functions at top level with ATen's signatures, which are not always
torch.nn.functional's: `torch.batch_norm(input, weight, bias, running_mean, running_var, training,
momentum, eps, cudnn_enabled)` takes every argument, in that order; `torch.embedding(weight, indices)`
takes the weight first; `torch.dropout(input, p, train)`; losses take an integer reduction (0 'none',
1 'mean', 2 'sum'; 'none' by default, as torch's Python functions); `torch.adaptive_max_pool1d` always returns (values, indices). Each function here
has torch's signature and calls the functional op, imported on the call so that `import ember` does
not load `ember.nn`. `cudnn_enabled` is accepted and ignored (Ember picks its kernels itself).

>>> x = ember.tensor([[[-1.0, 2.0, 0.5]]])
>>> ember.conv1d(x, ember.ones(1, 1, 2)).tolist()
[[[1.0, 2.5]]]
>>> ember.threshold(x, 0.6, 9.0).tolist()
[[[9.0, 2.0, 9.0]]]
"""
from __future__ import annotations

from .._errors import op_error

__all__ = [
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d", "batch_norm",
    "bilinear", "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss",
    "cosine_similarity", "dropout", "dropout_", "embedding", "embedding_bag", "feature_alpha_dropout",
    "feature_alpha_dropout_", "group_norm", "hardshrink", "hinge_embedding_loss", "instance_norm", "kl_div",
    "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d",
    "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu_", "rms_norm",
    "rrelu", "rrelu_", "selu", "selu_", "sigmoid_", "tanh_", "threshold", "threshold_", "triplet_margin_loss",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _F():
    from ..nn import functional
    return functional


def _reduction(op, reduction):
    """torch's integer reduction (0 'none', 1 'mean', 2 'sum') as F's name; a name is taken as it is."""
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise op_error(op, f"reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got {reduction!r}")
    return _REDUCTIONS[reduction]


def _stride(stride):
    """ATen's pooling default `stride=[]` (the kernel size) is F's `stride=None`."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


# ------------------------------------------------------------------ convolution and pooling
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv1d: `ember.nn.functional.conv1d`."""
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv2d: `ember.nn.functional.conv2d`."""
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv3d: `ember.nn.functional.conv3d`."""
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose1d: `ember.nn.functional.conv_transpose1d`."""
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose2d: `ember.nn.functional.conv_transpose2d`."""
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose3d: `ember.nn.functional.conv_transpose3d`."""
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """torch.avg_pool1d: `ember.nn.functional.avg_pool1d` (an empty stride is the kernel size)."""
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: `ember.nn.functional.max_pool1d` without indices."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d: `ember.nn.functional.max_pool2d` without indices."""
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: `ember.nn.functional.max_pool3d` without indices."""
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, indices) of `ember.nn.functional.max_pool1d`."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True)


def adaptive_avg_pool1d(input, output_size):
    """torch.adaptive_avg_pool1d: `ember.nn.functional.adaptive_avg_pool1d`."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, indices), always (F's returns indices only when asked)."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


# ------------------------------------------------------------------ normalization
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm: ATen's order (weight and bias first, every argument required)."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """torch.instance_norm: ATen's order (weight and bias first, every argument required)."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """torch.layer_norm: `ember.nn.functional.layer_norm` (cudnn_enable ignored)."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """torch.group_norm: `ember.nn.functional.group_norm` (cudnn_enabled ignored)."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.rms_norm: `ember.nn.functional.rms_norm`."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


# ------------------------------------------------------------------ dropout (`train` is required, as in ATen)
def dropout(input, p, train):
    """torch.dropout(input, p, train): `ember.nn.functional.dropout`."""
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """torch.dropout_: in-place `ember.nn.functional.dropout`."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train): `ember.nn.functional.alpha_dropout`."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """torch.alpha_dropout_: in-place `ember.nn.functional.alpha_dropout`."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout(input, p, train): `ember.nn.functional.feature_alpha_dropout`."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """torch.feature_alpha_dropout_: in-place `ember.nn.functional.feature_alpha_dropout`."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


# ------------------------------------------------------------------ activations
def celu(input, alpha=1.0):
    """torch.celu: `ember.nn.functional.celu`."""
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """torch.celu_: `ember.nn.functional.celu_`."""
    return _F().celu_(input, alpha)


def selu(input):
    """torch.selu: `ember.nn.functional.selu`."""
    return _F().selu(input)


def selu_(input):
    """torch.selu_: `ember.nn.functional.selu_`."""
    return _F().selu_(input)


def relu_(input):
    """torch.relu_: `input.relu_()`."""
    return input.relu_()


def sigmoid_(input):
    """torch.sigmoid_: `input.sigmoid_()`."""
    return input.sigmoid_()


def tanh_(input):
    """torch.tanh_: `input.tanh_()`."""
    return input.tanh_()


def hardshrink(input, lambd=0.5):
    """torch.hardshrink: `ember.nn.functional.hardshrink`."""
    return _F().hardshrink(input, lambd)


def threshold(input, threshold, value):
    """torch.threshold: `ember.nn.functional.threshold`."""
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """torch.threshold_: `ember.nn.functional.threshold_`."""
    return _F().threshold_(input, threshold, value)


def prelu(input, weight):
    """torch.prelu: `ember.nn.functional.prelu`."""
    return _F().prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu: `ember.nn.functional.rrelu`, its slopes drawn from `generator` when given."""
    from ..nn.functional import activation
    return activation.rrelu_with_generator(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu_: in-place `rrelu`."""
    from ..nn.functional import activation
    return activation.rrelu_with_generator(input, lower, upper, training, True, generator)


# ------------------------------------------------------------------ vision and distances
def pixel_shuffle(input, upscale_factor):
    """torch.pixel_shuffle: `ember.nn.functional.pixel_shuffle`."""
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """torch.pixel_unshuffle: `ember.nn.functional.pixel_unshuffle`."""
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """torch.channel_shuffle: `ember.nn.functional.channel_shuffle`."""
    return _F().channel_shuffle(input, groups)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch.cosine_similarity: `ember.nn.functional.cosine_similarity`."""
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """torch.pairwise_distance: `ember.nn.functional.pairwise_distance`."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def bilinear(input1, input2, weight, bias=None):
    """torch.bilinear: `ember.nn.functional.bilinear`."""
    return _F().bilinear(input1, input2, weight, bias)


# ------------------------------------------------------------------ embeddings
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices): the weight comes first; a negative padding_idx means none."""
    padding_idx = None if padding_idx is None or padding_idx < 0 else padding_idx
    return _F().embedding(indices, weight, padding_idx, None, 2.0, scale_grad_by_freq, sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices), mode 0 'sum', 1 'mean', 2 'max'.

    `output` is `ember.nn.functional.embedding_bag`'s. The other three are ATen's bookkeeping, given as
    torch's CPU kernel gives them: the bag of each index (empty for 'sum' without padding_idx, but in
    float64), the number of
    indices counted in each bag (zeros for 'sum'), and for 'max' the index chosen for each bag and
    feature (for 'sum' zeros, for 'mean' the bag sizes again).
    """
    from .. import _dtype, autograd
    from . import creation as C, math as M, shape as S, indexing as I
    op = "embedding_bag"
    name = _BAG_MODES.get(mode, mode) if not isinstance(mode, bool) else mode
    if name not in ("sum", "mean", "max"):
        raise op_error(op, f"mode must be 0 ('sum'), 1 ('mean') or 2 ('max'), got {mode!r}")
    out = _F().embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, name, sparse,
                             per_sample_weights, include_last_offset, padding_idx)
    with autograd.no_grad():
        idx = indices.detach().reshape(-1).long()
        n, n_bags = idx.shape[0], out.shape[0]
        if indices.ndim == 2:   # (B, L): B bags of L
            bag = C.arange(n, device=idx.device) // indices.shape[1]
        else:
            starts = offsets.detach().long()[:n_bags]
            bag = (S.searchsorted(starts, C.arange(n, device=idx.device), right=True) - 1).clamp(min=0)
        if padding_idx is not None:
            valid = M.ne(idx, padding_idx if padding_idx >= 0 else padding_idx + weight.shape[0])
        else:
            valid = C.ones_like(idx, dtype=_dtype.bool)
        counts = C.zeros(n_bags, dtype=idx.dtype, device=idx.device).index_add(0, bag, valid.long())
        # torch's CPU kernel leaves offset2bag empty on its fast path: 'sum', no padding_idx, not float64
        fast = name == "sum" and padding_idx is None and weight.dtype is not _dtype.float64
        offset2bag = C.zeros(0, dtype=idx.dtype, device=idx.device) if fast else bag
        if name == "sum":
            bag_size = C.zeros(n_bags, dtype=idx.dtype, device=idx.device)
            max_indices = bag_size
        elif name == "mean":
            bag_size = max_indices = counts
        else:
            bag_size = counts
            rows = weight.detach()[idx]                                   # (n, D)
            hit = M.logical_and(M.eq(rows, out.detach()[bag]), valid.unsqueeze(1))
            choice = M.where(hit, idx.unsqueeze(1), -1)                   # the index where the max came from
            max_indices = I.scatter_reduce(C.full((n_bags, rows.shape[1]), -1, dtype=idx.dtype, device=idx.device),
                                           0, bag.unsqueeze(1).expand(n, rows.shape[1]), choice, "amax")
            max_indices = max_indices.clamp(min=0)                        # an empty bag: 0
    return out, offset2bag, bag_size, max_indices


# ------------------------------------------------------------------ losses (integer reduction: 0 none, 1 mean, 2 sum)
# The default is 0, 'none': ATen's schema says 1, but torch's Python functions give the unreduced loss
# when no reduction is passed (torch 2.13: torch.kl_div(x, t).shape == x.shape), as torch.ctc_loss does.
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits: F's, with torch's integer reduction."""
    op = "binary_cross_entropy_with_logits"
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(op, reduction),
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss: F's, with torch's integer reduction."""
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss: F's, with torch's integer reduction."""
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def kl_div(input, target, reduction=0, *, log_target=False):
    """torch.kl_div: F's, with torch's integer reduction (1 is the plain mean over every element, not
    'batchmean')."""
    from ..nn.functional.loss import _kl_div
    return _kl_div(input, target, _reduction("kl_div", reduction), log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss: F's, with torch's integer reduction."""
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss(input, target, log_input, full, eps, reduction): every argument required."""
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0):
    """torch.triplet_margin_loss: F's, with torch's integer reduction."""
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction("triplet_margin_loss", reduction))
