"""Activation functions and the softmax family."""
from __future__ import annotations

import math

from ..._dims import wrap_dim
from ..._errors import op_error
from ..._tensor import Tensor
from ...ops import math as M, creation as C
from ...ops.inplace import inplace as _inplace
from ...ops.layers import Gelu
from ._utils import _apply_inplace
from ...amp import autocast_op


def relu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, M.relu(input), inplace)


def relu6(input, inplace=False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def _flat_outside(input, lo, hi):
    """clamp(input, lo, hi) with torch's hardtanh gradient: 1 strictly inside (lo, hi), 0 at lo and hi too
    (clamp's own gradient is 1 at its bounds)."""
    return M.where(input <= lo, lo, M.where(input >= hi, hi, input))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False) -> Tensor:
    return _apply_inplace(input, _flat_outside(input, min_val, max_val), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False) -> Tensor:
    return _apply_inplace(input, M.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False) -> Tensor:
    # expm1 of the clamped input: the unused branch never overflows (no inf * 0 in backward)
    neg = alpha * M.expm1(M.clamp(input, max=0.0))
    return _apply_inplace(input, M.where(input > 0, input, neg), inplace)


def selu(input, inplace=False) -> Tensor:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _apply_inplace(input, scale * elu(input, alpha), inplace)


def gelu(input, approximate="none") -> Tensor:
    """x * Phi(x); approximate='tanh' uses 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate == "none":
        return Gelu.apply(input)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + M.tanh(inner))
    raise op_error("gelu", f"approximate must be 'none' or 'tanh', got {approximate!r}", ValueError)


def silu(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.sigmoid(input), inplace)


def softplus(input, beta=1.0, threshold=20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (for stability)."""
    bx = input * beta
    big = bx > threshold
    # where, not clamp: a NaN input reaches exp, so its gradient is NaN as torch's (clamp's is 0 there)
    soft = M.log1p(M.exp(M.where(big, threshold, bx))) / beta
    return M.where(big, input, soft)


def mish(input, inplace=False) -> Tensor:
    return _apply_inplace(input, input * M.tanh(softplus(input)), inplace)


def tanh(input) -> Tensor:
    return M.tanh(input)


def sigmoid(input) -> Tensor:
    return M.sigmoid(input)


def logsigmoid(input) -> Tensor:
    return -softplus(-input)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1   # torch's legacy implicit-dim rule


def softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return M.softmax(input, _softmax_dim(input.ndim) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    return M.log_softmax(input, _softmax_dim(input.ndim) if dim is None else dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    if dim is not None:
        wrap_dim(dim, input.ndim, "softmin")   # its errors name softmin, not the softmax it calls
    return softmax(-input, dim, dtype=dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1) -> Tensor:
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn per element (g = -log(e), e ~ Exp(1), as
    torch); with `hard`, the one-hot of the argmax in the forward and the soft sample's gradient
    (straight through: y_hard - y_soft.detach() + y_soft). `eps` is unused (torch keeps it for old code).

    >>> _ = ember.manual_seed(0)
    >>> y = F.gumbel_softmax(ember.zeros(2, 3), hard=True)
    >>> y.sum(-1).tolist()
    [1.0, 1.0]
    """
    if not logits.dtype.is_floating_point:
        raise op_error("gumbel_softmax", f"expected floating point logits, got {logits.dtype.name}")
    dim = wrap_dim(dim, logits.ndim, "gumbel_softmax")
    noise = -M.log(C.zeros_like(logits).exponential_())
    y_soft = M.softmax((logits + noise) / tau, dim)
    if not hard:
        return y_soft
    index = M.argmax(y_soft.detach(), dim, keepdim=True)
    y_hard = C.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ------------------------------------------------------------------ shrinkage, gated and hard activations
def hardshrink(input, lambd=0.5) -> Tensor:
    """input where |input| > lambd, else 0 (NaN stays NaN, as torch)."""
    return M.where(M.abs(input) <= lambd, 0.0, input)


def softshrink(input, lambd=0.5) -> Tensor:
    """input - lambd above lambd, input + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise op_error("softshrink", f"lambda must be in range [0, inf) for input {input.dtype.name}, but found "
                                     f"{lambd}")
    # NaN fails both tests and falls through to input + lambd: NaN, as torch's
    return M.where(input > lambd, input - lambd, M.where(input >= -lambd, 0.0, input + lambd))


def tanhshrink(input) -> Tensor:
    return input - M.tanh(input)


def softsign(input) -> Tensor:
    return input / (1 + M.abs(input))


def threshold(input, threshold, value, inplace=False) -> Tensor:
    """value where input <= threshold, else input (a NaN stays NaN, as torch's).

    >>> F.threshold(ember.tensor([-1.0, 0.5, 2.0, float("nan")]), 1.0, 0.0).tolist()
    [0.0, 0.0, 2.0, nan]
    """
    return _apply_inplace(input, M.where(input <= threshold, value, input), inplace)


def celu(input, alpha=1.0, inplace=False) -> Tensor:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise op_error("celu", "ZeroDivisionError: alpha cannot be 0 for CELU")
    neg = alpha * M.expm1(M.clamp(input, max=0.0) / alpha)
    return _apply_inplace(input, M.where(input > 0, input, neg), inplace)


def glu(input, dim=-1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of input along `dim`."""
    if input.ndim == 0:
        raise op_error("glu", "glu does not support scalars because halving size must be even")
    from ..._dims import wrap_dim
    d = wrap_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise op_error("glu", f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * M.sigmoid(b)


def hardsigmoid(input, inplace=False) -> Tensor:
    """relu6(x + 3) / 6."""
    # relu6 of a clamp: torch's gradient is 0 at a NaN input here (its hardtanh/relu6 pass it or not
    # depending on the element's position, so theirs keep g there, at no extra cost)
    return _apply_inplace(input, _flat_outside(M.clamp(input + 3.0, 0.0, 6.0), 0.0, 6.0) / 6.0, inplace)


def hardswish(input, inplace=False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _apply_inplace(input, input * (_flat_outside(input + 3.0, 0.0, 6.0) / 6.0), inplace)


@autocast_op("lower")
def prelu(input, weight) -> Tensor:
    """x where x > 0, else weight * x, with one weight per channel (dim 1) or one shared."""
    n = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if n != 1 and n != channels:
        raise op_error("prelu", f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                                f"{n} and channel size = {channels}.")
    w = weight.reshape((1, n) + (1,) * (input.ndim - 2)) if input.ndim >= 2 and n > 1 else weight.reshape(())
    return M.where(input > 0, input, w * input)   # at 0 the gradient is the weight, as torch


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False) -> Tensor:
    """Randomised leaky ReLU: x where x > 0, else a * x with a slope a drawn uniformly from [lower, upper)
    for each element while training (its gradient is that slope), and (lower + upper) / 2 in eval.

    >>> F.rrelu(ember.tensor([-4.0, 2.0]), 0.25, 0.75)   # eval: slope 0.5
    tensor([-2.,  2.])
    """
    return rrelu_with_generator(input, lower, upper, training, inplace, None)


def rrelu_with_generator(input, lower, upper, training, inplace, generator) -> Tensor:
    """rrelu with its slopes drawn from `generator` (None: the default one), for torch.rrelu's argument."""
    if lower > upper:
        raise op_error("rrelu", f"lower bound should be less than or equal to the upper bound, got lower={lower}, "
                                f"upper={upper}")
    if not input.dtype.is_floating_point:
        raise op_error("rrelu", f"expected a floating point input, got {input.dtype.name}", NotImplementedError)
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from ... import random as R
    r = R.rand(*input.shape, dtype=input.dtype, device=input.device, generator=generator) * (upper - lower) + lower
    slope = M.where(input.detach() <= 0, r, 1.0)   # torch's noise: the drawn slope, 1 where input > 0
    return _apply_inplace(input, input * slope, inplace)


# ------------------------------------------------------------------ in-place forms (torch.nn.functional.relu_ ...)
def _inplace_doc(fn):
    fn.__doc__ = f"In-place {fn.__name__[:-1]}: writes the result into `input` and returns it."
    return fn


@_inplace_doc
def relu_(input) -> Tensor:
    return _inplace(input, relu, "relu_")


@_inplace_doc
def elu_(input, alpha=1.0) -> Tensor:
    return _inplace(input, lambda x: elu(x, alpha), "elu_")


@_inplace_doc
def leaky_relu_(input, negative_slope=0.01) -> Tensor:
    return _inplace(input, lambda x: leaky_relu(x, negative_slope), "leaky_relu_")


@_inplace_doc
def hardtanh_(input, min_val=-1.0, max_val=1.0) -> Tensor:
    return _inplace(input, lambda x: hardtanh(x, min_val, max_val), "hardtanh_")


@_inplace_doc
def selu_(input) -> Tensor:
    return _inplace(input, selu, "selu_")


@_inplace_doc
def celu_(input, alpha=1.0) -> Tensor:
    return _inplace(input, lambda x: celu(x, alpha), "celu_")


_threshold = threshold   # threshold_'s argument `threshold` hides the function


@_inplace_doc
def threshold_(input, threshold, value) -> Tensor:
    return _inplace(input, lambda x: _threshold(x, threshold, value), "threshold_")


@_inplace_doc
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False) -> Tensor:
    return _inplace(input, lambda x: rrelu(x, lower, upper, training), "rrelu_")
