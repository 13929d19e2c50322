"""`ember.nn`: modules, layers and losses with PyTorch's names (re-exports only).

>>> import ember.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> model(ember.randn(3, 4)).shape
(3, 2)
"""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer
from .module import Module
from .containers import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .lazy import LazyModuleMixin
from .linear import Identity, Linear, LazyLinear, Bilinear, Flatten, Unflatten
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, LazyConv1d, LazyConv2d,
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d)
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d,
                      AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                      AdaptiveMaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d,
                      FractionalMaxPool3d)
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm,
                            GroupNorm, RMSNorm, LocalResponseNorm, CrossMapLRN2d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                            LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from .activation import (ReLU, ReLU6, LeakyReLU, ELU, SELU, GELU, SiLU, Mish, Tanh, Sigmoid, Softplus,
                         Hardtanh, LogSigmoid, Softmax, LogSoftmax, Softmin, Hardshrink, Softshrink, Tanhshrink,
                         Softsign, Threshold, CELU, GLU, Hardsigmoid, Hardswish, PReLU, Softmax2d, RReLU)
from .padding import (ZeroPad1d, ZeroPad2d, ZeroPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle, ChannelShuffle
from .distance import CosineSimilarity, PairwiseDistance, Fold, Unfold
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout
from .embedding import Embedding, EmbeddingBag
from .loss import (MSELoss, L1Loss, SmoothL1Loss, HuberLoss, CrossEntropyLoss, NLLLoss, BCELoss,
                   BCEWithLogitsLoss, KLDivLoss, MultiMarginLoss, MarginRankingLoss, CosineEmbeddingLoss,
                   TripletMarginLoss, GaussianNLLLoss, PoissonNLLLoss, SoftMarginLoss, MultiLabelSoftMarginLoss,
                   MultiLabelMarginLoss, HingeEmbeddingLoss, TripletMarginWithDistanceLoss, CTCLoss,
                   NLLLoss2d, LinearCrossEntropyLoss, LinearCrossEntropyOptions)
from .adaptive import AdaptiveLogSoftmaxWithLoss
from . import functional, init, utils

from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer,
                          TransformerEncoder, TransformerDecoder, Transformer)

__all__ = [
    "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "Module", "Sequential", "ModuleList",
    "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d",
    "LPPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "GroupNorm",
    "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d",
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softplus",
    "Hardtanh", "LogSigmoid", "Softmax", "LogSoftmax", "Softmin", "Hardshrink", "Softshrink", "Tanhshrink",
    "Softsign", "Threshold", "CELU", "GLU", "Hardsigmoid", "Hardswish", "PReLU", "Softmax2d", "RReLU",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance", "Fold", "Unfold",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "Embedding",
    "EmbeddingBag",
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss", "MultiMarginLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
    "TripletMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiLabelMarginLoss", "HingeEmbeddingLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
    "NLLLoss2d", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions",
    "AdaptiveLogSoftmaxWithLoss",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerDecoder", "Transformer",
    "functional", "init", "utils",
]
from .parallel import DataParallel   # also binds ember.nn.parallel (DistributedDataParallel)


def __getattr__(name):
    if name == "modules":   # torch.nn.modules' layout (ember/nn/modules/), loaded on first use
        import importlib
        return importlib.import_module(".modules", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
