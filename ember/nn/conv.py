"""Conv1d/2d/3d, ConvTranspose1d/2d/3d and their lazy forms (in_channels inferred at the first forward)."""
from __future__ import annotations


from ..ops import creation as C
from . import functional as F, init
from .lazy import LazyModuleMixin
from .module import Module
from .parameter import Parameter, UninitializedParameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d"]


class _ConvNd(Module):
    _nd = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", output_padding=0, device=None, dtype=None):
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError(f"groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            raise ValueError(f"out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', "
                             f"got {padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._ntuple(kernel_size, nd, "kernel_size")
        self.stride = F._ntuple(stride, nd, "stride")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = F._ntuple(padding, nd, "padding")
        self.dilation = F._ntuple(dilation, nd, "dilation")
        self.output_padding = F._ntuple(output_padding, nd, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(C.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(C.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init._default_layer_init_(self.weight, self.bias)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"   # torch prints padding=same, unquoted
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            pads = F._conv_padding(self.padding, self.kernel_size, self.dilation, self._nd)
            flat = [p for b, a in reversed(pads) for p in (b, a)]
            return self._fn(F.pad(input, flat, mode=self.padding_mode), weight, bias, self.stride, 0,
                            self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L), weight (C_out, C_in/groups, k)."""
    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W), weight (C_out, C_in/groups, kh, kw), torch's init.

    >>> ember.nn.Conv2d(3, 8, 3, padding='same')(ember.randn(2, 3, 16, 16)).shape
    (2, 8, 16, 16)
    """
    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f"Only 'zeros' padding mode is supported for {type(self).__name__}")
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: string padding is not supported")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = tuple(output_size)[-nd:]
        out = []
        for i in range(nd):
            base = ((input.shape[-nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = output_size[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{base} to {base + max(self.stride[i], self.dilation[i]) - 1}")
            out.append(extra)
        return tuple(out)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return self._tfn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                         self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _nd = 1
    _tfn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution; weight (C_in, C_out/groups, kh, kw)."""
    _nd = 2
    _tfn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution; weight (C_in, C_out/groups, kd, kh, kw)."""
    _nd = 3
    _tfn = staticmethod(F.conv_transpose3d)


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from the first input's channel dim (dim 1, or 0 unbatched), then the regular conv."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        nd = self._nd + 1   # channels and the spatial dims
        if input.ndim not in (nd, nd + 1):
            raise RuntimeError(f"Expected {nd}D (unbatched) or {nd + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {tuple(input.shape)}")
        self.in_channels = input.shape[1] if input.ndim == nd + 1 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError(f"in_channels must be divisible by groups ({type(self).__name__}: in_channels "
                             f"{self.in_channels} from input {tuple(input.shape)}, groups {self.groups})")
        if self.transposed:
            self.weight.materialize((self.in_channels, self.out_channels // self.groups) + self.kernel_size)
        else:
            self.weight.materialize((self.out_channels, self.in_channels // self.groups) + self.kernel_size)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv_init(module, out_channels, bias, device, dtype):
    # the regular __init__ ran with in_channels = out_channels = 0 and no bias: placeholders replace them
    module.weight = UninitializedParameter(device=device, dtype=dtype)
    module.out_channels = out_channels
    if bias:
        module.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConvNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        _lazy_conv_init(self, out_channels, bias, device, dtype)


class _LazyConvTransposeNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                         padding_mode, device=device, dtype=dtype)
        _lazy_conv_init(self, out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvNd, Conv1d):
    """A Conv1d whose in_channels is inferred from the first input; it then becomes a Conv1d."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """A Conv2d whose in_channels is inferred from the first input; it then becomes a Conv2d.

    >>> m = ember.nn.LazyConv2d(8, 3)
    >>> m(ember.randn(2, 3, 16, 16)).shape, m.weight.shape, type(m).__name__
    ((2, 8, 14, 14), (8, 3, 3, 3), 'Conv2d')
    """
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """A Conv3d whose in_channels is inferred from the first input; it then becomes a Conv3d."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose3d
