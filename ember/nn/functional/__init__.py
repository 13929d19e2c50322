"""`ember.nn.functional`: every layer as a function, and the losses.

All composites of Tensor ops (no backward of their own), except convolution and max pooling,
which call the primitives of `ember/ops/layers.py`, and a few autograd Functions for torch's gradients:
binary_cross_entropy (finite at probabilities 0 and 1), binary_cross_entropy_with_logits with pos_weight,
and scaled_dot_product_attention's rows that attend to nothing. Names, arguments and defaults are torch's.
"""
from __future__ import annotations

from .linear import linear, bilinear
from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, unfold, fold
from .pooling import (max_pool1d, max_pool2d, max_pool3d, max_pool1d_with_indices, max_pool2d_with_indices,
                      max_pool3d_with_indices, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d,
                      adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
                      adaptive_max_pool2d, adaptive_max_pool3d, adaptive_max_pool1d_with_indices,
                      adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices, max_unpool1d,
                      max_unpool2d, max_unpool3d, fractional_max_pool2d, fractional_max_pool3d,
                      fractional_max_pool2d_with_indices, fractional_max_pool3d_with_indices)
from .normalization import batch_norm, layer_norm, group_norm, instance_norm, rms_norm, local_response_norm
from .dropout import dropout, dropout1d, dropout2d, dropout3d, alpha_dropout, feature_alpha_dropout
from .embedding import embedding, embedding_bag, one_hot
from .activation import relu, relu6, hardtanh, leaky_relu, elu, selu, gelu, silu, softplus, mish, tanh, sigmoid, logsigmoid, softmax, log_softmax, softmin, gumbel_softmax
from .activation import hardshrink, softshrink, tanhshrink, softsign, threshold, celu, glu, hardsigmoid, hardswish, prelu
from .activation import rrelu, relu_, elu_, leaky_relu_, hardtanh_, selu_, celu_, threshold_, rrelu_
from .attention import scaled_dot_product_attention, multi_head_attention_forward
from .vision import (pad, interpolate, upsample, upsample_nearest, upsample_bilinear, affine_grid, grid_sample, normalize, cosine_similarity, pairwise_distance, pdist,
                     pixel_shuffle, pixel_unshuffle, channel_shuffle)
from .loss import mse_loss, l1_loss, smooth_l1_loss, huber_loss, nll_loss, cross_entropy, linear_cross_entropy, binary_cross_entropy, binary_cross_entropy_with_logits, kl_div, multi_margin_loss, margin_ranking_loss, cosine_embedding_loss, triplet_margin_loss
from .loss import (gaussian_nll_loss, poisson_nll_loss, soft_margin_loss, multilabel_soft_margin_loss,
                   multilabel_margin_loss, hinge_embedding_loss, triplet_margin_with_distance_loss, ctc_loss)
from ._utils import _ntuple, _check_dim  # noqa: F401  (used by the layer modules)
from .conv import _conv_padding  # noqa: F401

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "embedding",
    "embedding_bag",
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "tanh", "sigmoid", "softplus",
    "hardtanh", "logsigmoid", "softmax", "log_softmax", "softmin", "gumbel_softmax", "hardshrink", "softshrink", "tanhshrink",
    "softsign", "threshold", "celu", "glu", "hardsigmoid", "hardswish", "prelu", "rrelu",
    "relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_", "rrelu_",
    "scaled_dot_product_attention", "multi_head_attention_forward", "one_hot", "pad", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "affine_grid", "grid_sample", "normalize",
    "cosine_similarity", "pairwise_distance", "pdist", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "linear_cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "multi_margin_loss",
    "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss", "gaussian_nll_loss",
    "poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
    "hinge_embedding_loss", "triplet_margin_with_distance_loss", "ctc_loss",
]
