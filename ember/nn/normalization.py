"""BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d (and their lazy forms), LayerNorm, GroupNorm, RMSNorm,
LocalResponseNorm,
CrossMapLRN2d."""
from __future__ import annotations

from .. import _dtype
from .._errors import op_error
from ..autograd.function import Function
from ..ops import creation as C
from . import functional as F, init
from .lazy import LazyModuleMixin
from .module import Module
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm",
           "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


def _affine(module, shape, affine, bias, device, dtype):
    """Register `weight` (ones) and `bias` (zeros) of `shape`, or None for those switched off."""
    shape = tuple(shape)
    module.register_parameter("weight", Parameter(C.ones(*shape, device=device, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(C.zeros(*shape, device=device, dtype=dtype))
                              if affine and bias else None)


class _BatchNorm(Module):
    _dims: tuple[int, ...] = ()
    _version = 2   # torch's (state_dict metadata: version 2 added num_batches_tracked)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats, self.has_bias = affine, track_running_stats, bias
        _affine(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", C.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", C.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", C.tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def forward(self, input):
        if input.ndim not in self._dims:
            raise op_error(type(self).__name__, f"expected {' or '.join(f'{d}D' for d in self._dims)} "
                                                f"input (got {input.ndim}D input of shape {tuple(input.shape)})",
                           ValueError)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:   # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L)."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W), per channel; running stats for eval mode.

    >>> ember.nn.BatchNorm2d(3)(ember.randn(4, 3, 5, 5)).shape
    (4, 3, 5, 5)
    """
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W), per channel (video, volumetric models).

    >>> ember.nn.BatchNorm3d(3)(ember.randn(2, 3, 4, 5, 5)).shape
    (2, 3, 4, 5, 5)
    """
    _dims = (5,)


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel normalisation over the spatial dims (F.instance_norm); torch's defaults:
    no affine parameters and no running stats."""
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in (self._spatial + 1, self._spatial + 2):
            raise op_error(name, f"expected {self._spatial + 1}D or {self._spatial + 2}D input (got "
                                 f"{input.ndim}D input of shape {tuple(input.shape)})", ValueError)
        unbatched = input.ndim == self._spatial + 1
        channels = input.shape[0 if unbatched else 1]
        if channels != self.num_features and self.affine:
            raise op_error(name, f"expected input's size at dim={0 if unbatched else 1} to match num_features "
                                 f"({self.num_features}), but got: {channels}.", ValueError)
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L)."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) (style transfer, GAN generators)."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W)."""
    _spatial = 3


class LayerNorm(Module):
    """Normalise over the last dims `normalized_shape`, with elementwise weight and bias."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.has_bias = bias
        _affine(self, (num_channels,), affine, bias, device, dtype)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.has_bias}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the last dims `normalized_shape`, with an elementwise weight
    (LLaMA-style models); eps=None is the machine epsilon, as F.rms_norm.

    >>> nn.RMSNorm(4)
    RMSNorm((4,), eps=None, elementwise_affine=True)
    >>> nn.RMSNorm(2)(ember.tensor([[3.0, 4.0]])).shape
    (1, 2)
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", Parameter(C.ones(*self.normalized_shape, device=device, dtype=dtype))
                                if elementwise_affine else None)   # no bias, as torch

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel by its `size` neighbouring channels (F.local_response_norm); no parameters.

    >>> nn.LocalResponseNorm(2)
    LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _channel_window_sum(t, lo: int, hi: int):
    """out[:, c] = sum of t[:, r] for r in [c + lo, c + hi] within 0..C-1 (zero beyond), for 4-D t."""
    left, right = max(-lo, 0), max(hi, 0)
    padded = F.pad(t, (0, 0, 0, 0, left, right))                      # (N, C + left + right, H, W)
    channels = t.shape[1]
    out = None
    for offset in range(lo, hi + 1):
        part = padded[:, offset + left:offset + left + channels]
        out = part if out is None else out + part
    return out


def _cross_map_scale(input, size, alpha, k):
    """k + alpha / size * (sum of squares over channels c - p + 1 .. c + p - 1, p = (size - 1) // 2 + 1),
    plus channel 0's square wherever that window starts after it: torch's legacy running sum never
    subtracts channel 0 again, and this reproduces its values."""
    pre_pad = int((size - 1) / 2 + 1)
    sq = input * input
    window = _channel_window_sum(sq, -(pre_pad - 1), pre_pad - 1)
    channels = input.shape[1]
    if channels > pre_pad:   # channels c >= pre_pad also count channel 0
        from ..ops import shape as S
        tail = sq[:, :1].expand(sq.shape[0], channels - pre_pad, *sq.shape[2:])
        window = window + S.cat([C.zeros_like(sq[:, :pre_pad]), tail], dim=1)
    return window * (alpha / size) + k


class _CrossMapLRN2dFunction(Function):
    """torch's legacy cross-channel LRN (torch/nn/modules/_functions.py CrossMapLRN2d): its forward, and its
    hand-written backward, which is not the exact gradient of that forward (its window of ratios is shifted:
    channels c - q .. c + size - 1 - q, q = size - (size - 1) // 2); kept so that training matches torch."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        scale = _cross_map_scale(input, size, alpha, k)
        output = input * scale ** (-beta)
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad):
        input, output, scale = ctx.saved_tensors
        size = ctx.size
        inverse_pre_pad = int(size - (size - 1) / 2)
        ratio = grad * output / scale
        accum = _channel_window_sum(ratio, -inverse_pre_pad, size - 1 - inverse_pre_pad)
        grad_input = scale ** (-ctx.beta) * grad - input * accum * (2 * ctx.alpha * ctx.beta / size)
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """torch's legacy local response normalisation across channels of a 4-D input (nn.CrossMapLRN2d):
    `x / (k + alpha / size * sum of x^2 over neighbouring channels)^beta`, with torch's values and
    gradients (see `_cross_map_scale` and `_CrossMapLRN2dFunction` for where they depart from
    `LocalResponseNorm`). Prefer `LocalResponseNorm` in new code.

    >>> [round(v, 4) for v in nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)(ember.ones(1, 2, 1, 1)).flatten().tolist()]
    [0.6, 0.6]
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {size!r}")
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.ndim != 4:
            raise op_error("CrossMapLRN2d", f"Expected input to be 4D, got {input.ndim}D instead "
                                            f"(shape {tuple(input.shape)})", ValueError)
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _LazyNormBase(LazyModuleMixin):
    """num_features from the first input's dim 1 (torch's rule, for unbatched InstanceNorm input too)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        # the regular __init__ with 0 features and nothing to allocate; placeholders below
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats, self.has_bias = affine, track_running_stats, bias
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = C.tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        if self.affine:
            self.weight.materialize((self.num_features,))
            if self.bias is not None:
                self.bias.materialize((self.num_features,))
        if self.track_running_stats:
            self.running_mean.materialize((self.num_features,))
            self.running_var.materialize((self.num_features,))
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A BatchNorm1d whose num_features is inferred from the first input; it then becomes a BatchNorm1d."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A BatchNorm2d whose num_features is inferred from the first input.

    >>> m = ember.nn.LazyBatchNorm2d()
    >>> m(ember.randn(4, 3, 5, 5)).shape, m.running_mean.shape, type(m).__name__
    ((4, 3, 5, 5), (3,), 'BatchNorm2d')
    """
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A BatchNorm3d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """An InstanceNorm1d whose num_features is inferred from the first input (torch's defaults for the
    lazy form: affine=True, track_running_stats=True)."""
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """An InstanceNorm2d whose num_features is inferred from the first input."""
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """An InstanceNorm3d whose num_features is inferred from the first input."""
    cls_to_become = InstanceNorm3d
