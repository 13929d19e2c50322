"""The loss functions; each checks its target's device, dtype and shape as torch does."""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._errors import check_same_device, describe, op_error, warn
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import STATE
from ...ops import math as M, creation as C, primitives as P
from ...ops.pointwise import xlogy
from ...ops.shape import cat
from .activation import log_softmax, logsigmoid, softplus
from .vision import pairwise_distance
from ...amp import autocast_op


def _legacy_reduction(size_average, reduce, reduction):
    """torch's deprecated size_average/reduce flags, folded into `reduction` (either one overrides it)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _check_reduction(reduction, op):
    """The reduction check of `_reduce`, up front (for the losses where torch checks it before the rest)."""
    if reduction not in ("mean", "sum", "none"):
        raise op_error(op, f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}", ValueError)


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise op_error(op, f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}", ValueError)


def _same_shape(input, target, op):
    """A target of another shape is an error (torch's rule for the BCE losses and probability targets)."""
    check_same_device(op, input, target, "target")
    if tuple(input.shape) != tuple(target.shape):
        raise op_error(op, f"target shape {tuple(target.shape)} differs from input shape "
                       f"{tuple(input.shape)}; they would broadcast silently and give a wrong loss. "
                       f"Reshape the target (e.g. target.view_as(input)).", ValueError)


def _broadcast_target(input, target, op, warn_if_different=True):
    """A target of another shape broadcasts, with torch's warning for the regression losses (mse, l1,
    smooth_l1, huber: (N, 1) against (N,) silently makes an (N, N) loss); kl_div broadcasts silently."""
    check_same_device(op, input, target, "target")
    shape, t_shape = tuple(input.shape), tuple(target.shape)
    if shape == t_shape:
        return
    try:
        np.broadcast_shapes(shape, t_shape)
    except ValueError:
        raise op_error(op, f"target shape {t_shape} and input shape {shape} cannot be broadcast "
                           f"together") from None
    if warn_if_different:
        warn(op, f"using a target size {t_shape} that is different to the input size {shape}. This will "
                 f"likely lead to incorrect results due to broadcasting. Please ensure they have the same size.")


@autocast_op("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """Mean squared error; a target of another shape broadcasts, with a warning (as torch)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _broadcast_target(input, target, "mse_loss")
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


@autocast_op("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _broadcast_target(input, target, "l1_loss")
    return _reduce(M.abs(input - target), reduction, "l1_loss")


@autocast_op("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _broadcast_target(input, target, "smooth_l1_loss")
    d = M.abs(input - target)
    if beta == 0.0:
        return _reduce(d, reduction, "smooth_l1_loss")
    # the square of d, beta where d >= beta (an infinite d in the unused branch would give 0 * inf = NaN);
    # a NaN d takes the square, whose gradient is NaN as torch's
    big = d >= beta
    q = M.where(big, beta, d)
    loss = M.where(big, d - 0.5 * beta, 0.5 * q * q / beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


@autocast_op("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Tensor:
    _broadcast_target(input, target, "huber_loss")
    d = M.abs(input - target)
    big = d >= delta   # as smooth_l1_loss: no 0 * inf = NaN from the unused branch, NaN's gradient NaN
    q = M.where(big, delta, d)
    loss = M.where(big, delta * (d - 0.5 * delta), 0.5 * q * q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "huber_loss")


def _class_shape(input):
    """The shape of a class-index target for an (N, C, d1...) or (C,) input."""
    return (input.shape[0],) + tuple(input.shape[2:]) if input.ndim >= 2 else ()


def _class_weight_requires_no_grad(input, target, op, weight):
    """torch has no derivative for nll_loss's class weights: one that requires grad raises where the op would
    be recorded, before the target's dtype and shape are checked, unless the target's batch size (or, for a
    3-d or 5-d and larger input, its whole shape: torch checks those before it calls its kernel) is wrong."""
    exp, shape = _class_shape(input), tuple(target.shape)
    if not (input.ndim >= 2 and (shape[:1] != exp[:1] or (input.ndim not in (2, 4) and shape != exp))):
        _no_grad_argument(op, "weight", weight)


def _class_target(input, target, op, weight=None):
    """Check an integer class target (and the class weights) against (N, C, d1...) or (C,) input."""
    check_same_device(op, input, target, "target")
    if weight is not None:
        check_same_device(op, input, weight, "weight")
    _class_weight_requires_no_grad(input, target, op, weight)
    exp, shape = _class_shape(input), tuple(target.shape)
    if target.dtype.is_floating_point:
        raise op_error(op, f"expected an integer class-index target of shape {exp}, got "
                           f"{target.dtype.name} of shape {shape} (use target.long())")
    if shape != exp:
        raise op_error(op, f"expected target shape {exp} for input shape {tuple(input.shape)}, got {shape}",
                       ValueError)


@autocast_op("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean") -> Tensor:
    """-input[n, target[n]] (input holds log-probabilities (N, C, ...)), weighted, ignoring ignore_index."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _class_target(input, target, "nll_loss", weight)
    if input.ndim == 1:   # unbatched (C,): reduction='none' gives a 0-d loss, as torch
        out = nll_loss(input.unsqueeze(0), target.unsqueeze(0), weight, None, ignore_index, None, reduction)
        return out.squeeze(0) if reduction == "none" else out
    n_cls = input.shape[1]
    safe, valid = _safe_target(target, ignore_index, n_cls, "nll_loss")
    picked = M.neg(input.gather(1, safe.unsqueeze(1)).squeeze(1))   # (N, ...)
    # an ignored entry's stand-in class 0 may hold NaN or inf: selected away, not multiplied by its 0 weight
    picked = M.where(valid, picked, 0.0)
    w = _class_weights(weight, safe, valid, input)
    if reduction == "mean":
        return _weighted_mean(picked, w, w.sum(), valid)
    return _reduce(picked * w, reduction, "nll_loss")


def _weighted_mean(values, per, total, valid):
    """sum(values * per) / total over the entries `valid`: the means of nll_loss (per: the target's class
    weight, total: their sum) and of cross_entropy's smoothing term (per: 1), with torch's gradient:
    per / total for the targets counted (0/0 = NaN where the weights sum to 0 and the target is counted)
    and exactly 0 for the ignored ones (not 1/0 * 0 = NaN when every target is ignored). The value is
    NaN when total is 0, as torch."""
    out = (values * M.where(valid, per / total, 0.0)).sum()
    return out + M.where(M.eq(total, 0), float("nan"), 0.0).to(out.dtype)


def _safe_target(target, ignore_index, n_cls, op):
    """(target with ignored entries set to class 0, as int64; the mask of entries not ignored), after
    checking that every entry not ignored is a class (one primitive call and, off meta, one read)."""
    t = target.detach()
    safe, valid, bad = P.ClassTarget.apply(t, ignore_index=int(ignore_index), n_cls=int(n_cls))
    if not t.is_meta and bad.item():   # meta has no values to check (as torch's meta kernels)
        t = t.long()
        wrong = M.logical_and(M.ne(t, ignore_index), M.logical_or(M.lt(t, 0), M.ge(t, n_cls)))
        raise op_error(op, f"target {int(t[wrong][0].item())} is out of bounds for {n_cls} classes", IndexError)
    return safe, valid


def _class_weights(weight, safe, valid, like):
    """Per-element weight w[target] (0 where ignored), as a constant tensor."""
    if weight is None:
        return valid.to(like.dtype)
    return M.where(valid, weight.detach()[safe].to(like.dtype), 0.0)


@autocast_op("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0) -> Tensor:
    """log_softmax over dim 1 then nll_loss; also class-probability targets and label smoothing.

    >>> round(F.cross_entropy(ember.zeros(2, 4), ember.tensor([0, 3])).item(), 4)   # log(4)
    1.3863
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise op_error("cross_entropy", f"label_smoothing must be in [0, 1], got {label_smoothing}", ValueError)
    probs = target.dtype.is_floating_point   # class probabilities (same shape as input), else indices
    if not probs:
        _class_target(input, target, "cross_entropy", weight)
    elif tuple(target.shape) != tuple(input.shape):   # torch takes it for class indices: nll_loss's checks first
        _class_weight_requires_no_grad(input, target, "cross_entropy", weight)
        exp = _class_shape(input)
        hint = " (class indices must be integers: use target.long())" if tuple(target.shape) == exp else ""
        raise op_error("cross_entropy", f"expected a target of class indices (int64) of shape {exp} or of "
                                        f"probabilities (float) of the input's shape {tuple(input.shape)}, got "
                                        f"{target.dtype.name} of shape {tuple(target.shape)}{hint}")
    else:
        check_same_device("cross_entropy", input, target, "target")
        if weight is not None:
            check_same_device("cross_entropy", input, weight, "weight")
    dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, dim)
    n_cls = input.shape[dim]
    wshape = (n_cls,) + (1,) * (input.ndim - dim - 1)
    if probs:
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_cls
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(wshape)
        loss = -terms.sum(dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // n_cls)   # an empty batch gives NaN, as torch
        return _reduce(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return nll
    # smoothing term: -sum_c w_c logp_c per element, masked like nll
    terms = logp * weight.reshape(wshape) if weight is not None else logp
    safe, valid = _safe_target(target, ignore_index, n_cls, "cross_entropy")
    smooth = M.where(valid, -terms.sum(dim), 0.0)   # an ignored row's NaN or inf logits count for nothing
    if reduction == "mean":   # over the targets counted, each by its class weight, as the nll term
        smooth = _weighted_mean(smooth, 1.0, _class_weights(weight, safe, valid, input).sum(), valid)
    else:
        smooth = _reduce(smooth * valid.to(input.dtype), reduction, "cross_entropy")
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_cls)



def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): input (in_features,) or
    (N, in_features), linear_weight (C, in_features) or (C, d1, ..., dK, in_features) for a K-dim loss (the
    logits then (N, C, d1, ..., dK)). ignore_index=None means -100 for class indices and is the only value
    allowed with class probabilities, as torch's.

    `options` (nn.LinearCrossEntropyOptions) asks torch for its chunked path, which never holds all the
    logits; Ember computes the same loss and gradients the reference way (logits, then cross_entropy) and
    warns where torch warns that it ignores the options.

    >>> round(F.linear_cross_entropy(ember.ones(2, 3), ember.zeros(4, 3), ember.tensor([0, 3])).item(), 4)
    1.3863
    """
    op = "linear_cross_entropy"
    if input.ndim < 1 or input.ndim > 2:
        raise op_error(op, f"expected input with dimensionality 1 or 2, got {input.ndim} (input {describe(input)})")
    if linear_weight.ndim < 2:
        raise op_error(op, f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim} "
                           f"(linear_weight {describe(linear_weight)})")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise op_error(op, f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise op_error(op, f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise op_error(op, f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:   # torch's test for probabilities
        raise op_error(op, "ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None and (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                                or target.dtype is not _dtype.int64):
        warn(op, f"``options`` ignored; chunked path needs reduction in {{'mean','sum','none'}}, label_smoothing "
                 f"== 0, target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
                 f"label_smoothing={label_smoothing}, target.dtype={target.dtype.name}, "
                 f"out_features={out_features}")
    if out_features:   # one 2-D weight for F.linear: (C * d1 * ... * dK, in_features)
        linear_weight = linear_weight.reshape(math.prod(out_features, start=num_classes), in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=num_classes))
    from .linear import linear
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)   # (N, C, d1, ..., dK)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)

class _BinaryCrossEntropy(Function):
    """-(t log p + (1 - t) log(1 - p)) with the logs clamped at -100, and torch's gradients: for p,
    (p - t) / max(p (1 - p), 1e-12), finite at p = 0 and 1 (the clamped logs' own gradient is 0 * inf
    there: NaN, e.g. after a float32 sigmoid saturates to exactly 1); for t, log(1 - p) - log(p)."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        log_p = M.clamp(M.log(input), min=-100.0)
        log_1mp = M.clamp(M.log(1 - input), min=-100.0)
        return -(target * log_p + (1 - target) * log_1mp)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        g_input = g_target = None
        if ctx.needs_input_grad[0]:
            g_input = grad * (input - target) / M.clamp((1 - input) * input, min=1e-12)
        if ctx.needs_input_grad[1]:
            g_target = grad * (M.log1p(-input) - M.log(input))
        return g_input, g_target


def _in_unit_interval(x) -> bool:
    return not x.numel() or M.all(M.logical_and(M.ge(x, 0), M.le(x, 1))).item()


def _broadcasts_to(op, name, t, shape):
    """A weight must broadcast to the loss's shape without growing it (torch's error, not a silently larger loss)."""
    try:
        fits = np.broadcast_shapes(tuple(t.shape), shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise op_error(op, f"{name} shape {tuple(t.shape)} does not broadcast to input shape {shape}")


def _no_grad_argument(op, name, t):
    """torch's error for a tensor argument its op has no derivative for (weights), where the op is recorded."""
    if t is not None and t.requires_grad and STATE.enabled:
        raise op_error(op, f"is not differentiable with respect to argument '{name}'; this input cannot have "
                           f"requires_grad True (pass {name}.detach())")


class _BCEWithLogitsPosWeight(Function):
    """(1 - t) x + ((pw - 1) t + 1) softplus(-x), with torch's gradients: for x, (pw t + 1 - t) sigmoid(x) - pw t,
    for t, logsigmoid(-x) - pw logsigmoid(x). They are the composite's up to rounding except at non-finite
    values: where t or pw is infinite torch's x-gradient is inf - inf = NaN (the composite's was +-inf), and
    at x = -inf its t-gradient is pw * inf (the composite's -x + (pw - 1) softplus(-x) was inf - inf = NaN).
    pos_weight arrives broadcast to input's shape and gets no gradient (torch has none)."""

    @staticmethod
    def forward(ctx, input, target, pos_weight):
        sp = softplus(-input)                                   # -logsigmoid(x)
        ctx.save_for_backward(input, target, pos_weight, sp)
        return (1 - target) * input + ((pos_weight - 1) * target + 1) * sp

    @staticmethod
    def backward(ctx, grad):
        input, target, pos_weight, sp = ctx.saved_tensors
        if STATE.enabled:   # create_graph: softplus(-x) as a function of x, so that it differentiates again
            sp = softplus(-input)
        g_input = g_target = None
        if ctx.needs_input_grad[0]:
            # sigmoid(x) as exp(-softplus(-x)): one exp; the Sigmoid primitive costs ten times as much
            pwt = pos_weight * target
            g_input = (grad * ((pwt + 1 - target) * M.exp(-sp) - pwt)).to(input.dtype)
        if ctx.needs_input_grad[1]:
            g_target = (grad * (pos_weight * sp - softplus(input))).to(target.dtype)
        return g_input, g_target, None   # each in its input's dtype, as the composite's (mixed dtypes)


@autocast_op("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) on probabilities p; the logs are clamped at -100, as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "binary_cross_entropy")
    if weight is not None:   # torch's order: the weight's shape, its requires_grad, then the values' range
        _broadcasts_to("binary_cross_entropy", "weight", weight, tuple(input.shape))
        _no_grad_argument("binary_cross_entropy", "weight", weight)
    # not (0 <= x <= 1) as torch checks it: a NaN probability or target is refused too, the input first
    for name, t in (("input", input), ("target", target)):
        if not _in_unit_interval(t.detach()):
            raise op_error("binary_cross_entropy", f"all elements of {name} should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


@autocast_op("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable expression; pos_weight scales the positive term."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    op = "binary_cross_entropy_with_logits"
    # torch's order: requires_grad of weight, then of pos_weight, then their shapes
    _no_grad_argument(op, "weight", weight)
    _no_grad_argument(op, "pos_weight", pos_weight)
    if pos_weight is not None:
        _broadcasts_to(op, "pos_weight", pos_weight, tuple(input.shape))
    if weight is not None:
        _broadcasts_to(op, "weight", weight, tuple(input.shape))
    # log(1 + exp(-x)) by softplus: never overflows, and its gradient at x = 0 is -1/2 (log1p(exp(-|x|)) +
    # max(-x, 0) has the kinks of |x| and max there, whose gradients give 0)
    if pos_weight is not None:
        loss = _BCEWithLogitsPosWeight.apply(input, target, pos_weight.expand(input.shape))
    else:
        loss = (1 - target) * input + softplus(-input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


@autocast_op("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False) -> Tensor:
    """target * (log target - input), input being log-probabilities; reduction 'batchmean' divides by N."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":   # torch's warning: the mean over every element is rarely the KL divergence meant
        warn("kl_div", "reduction: 'mean' divides the total loss by both the batch size and the support size. "
                       "'batchmean' divides only by the batch size, and aligns with the KL div math definition. "
                       "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    return _kl_div(input, target, reduction, log_target)


@autocast_op("fp32")
def _kl_div(input, target, reduction, log_target):
    """kl_div without F's warning (torch.kl_div's integer reduction 1 is that mean, silently)."""
    _broadcast_target(input, target, "kl_div", warn_if_different=False)
    if log_target:
        loss = M.exp(target) * (target - input)
    else:
        # xlogy(t, t) - t * input as torch: 0 log 0 counts as 0, a negative or NaN target gives NaN
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction, "kl_div")


@autocast_op("fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean") -> Tensor:
    """Multi-class hinge: sum_{i != y} max(0, margin - x[y] + x[i])^p / C (times weight[y])."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise op_error("multi_margin_loss", f"only p == 1 and p == 2 supported, got {p}", ValueError)
    _no_grad_argument("multi_margin_loss", "weight", weight)
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    _class_target(input, target, "multi_margin_loss", weight)
    n_cls = input.shape[1]
    t = target.detach().long().unsqueeze(1)                        # (N, 1)
    x_y = input.gather(1, t)                                       # (N, 1)
    # torch's kernel adds only the terms with z > 0 off the target class: a NaN z (a NaN input, inf - inf)
    # or a NaN weight of a class with no such term adds nothing, value and gradient
    z = margin - x_y + input                                       # (N, C)
    not_y = M.ne(C.arange(n_cls, device=input.device).unsqueeze(0), t)
    used = M.logical_and(M.gt(z, 0), not_y)
    z = M.where(used, z, 0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = M.where(used, z * weight[target].unsqueeze(1), 0.0)
    loss = z.sum(1) / n_cls
    return _reduce(loss, reduction, "multi_margin_loss")


@autocast_op("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_same_device("margin_ranking_loss", input1, input2, "input2")
    check_same_device("margin_ranking_loss", input1, target, "target")
    if not input1.ndim == input2.ndim == target.ndim:   # torch checks the dims and then broadcasts
        raise op_error("margin_ranking_loss", f"all input tensors should have the same number of dimensions, "
                                              f"got input1 {tuple(input1.shape)}, input2 {tuple(input2.shape)}, "
                                              f"target {tuple(target.shape)}")
    return _reduce(M.relu(-target * (input1 - input2) + margin), reduction, "margin_ranking_loss")


@autocast_op("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1; max(0, cos - margin) where it is -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.shape != input2.shape:
        raise op_error("cosine_embedding_loss", f"input shapes {tuple(input1.shape)} and "
                       f"{tuple(input2.shape)} differ", ValueError)
    if tuple(target.shape) != tuple(input1.shape[:-1]):
        raise op_error("cosine_embedding_loss", f"target shape {tuple(target.shape)} should be "
                       f"{tuple(input1.shape[:-1])} for inputs {tuple(input1.shape)}", ValueError)
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    mag = M.sqrt(((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps))
    cos = dot / mag
    pos = 1 - cos
    neg = M.relu(cos - margin)
    loss = M.where(target == 1, pos, 0.0) + M.where(target == -1, neg, 0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


@autocast_op("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (anchor.shape == positive.shape == negative.shape):
        raise op_error("triplet_margin_loss", f"anchor {tuple(anchor.shape)}, positive "
                       f"{tuple(positive.shape)} and negative {tuple(negative.shape)} must have one shape",
                       ValueError)
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = M.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(M.relu(d_ap - d_an + margin), reduction, "triplet_margin_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean") -> Tensor:
    """0.5 (log v + (input - target)^2 / v), v = var clamped at eps (+ 0.5 log(2 pi) with `full`).

    var: a float, or one variance per input entry (input's shape), or one per row (input's shape without
    the last dim, or with one dim of size 1). The clamp is torch's: outside autograd, so var's gradient is
    that at the clamped value.

    >>> round(F.gaussian_nll_loss(ember.zeros(3), ember.ones(3), ember.ones(3)).item(), 4)
    0.5
    >>> F.gaussian_nll_loss(ember.zeros(4, 3), ember.zeros(4, 3), ember.ones(4), reduction="none").shape
    (4, 3)
    """
    op = "gaussian_nll_loss"
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise op_error(op, f"var has negative entry/entries: got var = {var}", ValueError)
        var = C.full_like(input, var)
    else:
        check_same_device(op, input, var, "var")
        v = var.detach()
        if not v.is_meta and v.numel() and M.any(M.lt(v, 0)).item():
            raise op_error(op, f"var has negative entry/entries (min {M.amin(v).item()})", ValueError)
    shape, v_shape = tuple(input.shape), tuple(var.shape)
    if v_shape != shape:
        if v_shape == shape[:-1]:   # one variance per row: (N, ..., D) input, (N, ...) var
            var = var.unsqueeze(-1)
        elif not (len(v_shape) == len(shape) and sum(v for i, v in zip(shape, v_shape) if i != v) == 1):
            raise op_error(op, f"var is of incorrect size: {v_shape} for input {shape} (expected {shape}, "
                               f"{shape[:-1]}, or {shape} with one dimension of size 1)", ValueError)
    _broadcast_target(input, target, op, warn_if_different=False)
    _check_reduction(reduction, op)
    v = var.detach()
    var = var + (M.clamp(v, min=eps) - v)   # the clamped value, var's gradient passed through unchanged
    loss = 0.5 * (M.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, op)


@autocast_op("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean") -> Tensor:
    """exp(input) - target input (log_input), else input - target log(input + eps); `full` adds
    Stirling's approximation of log(target!) where target > 1. The target broadcasts silently, as torch.

    >>> round(F.poisson_nll_loss(ember.zeros(3), ember.ones(3)).item(), 4)   # exp(0) - 1 * 0
    1.0
    """
    op = "poisson_nll_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, op)
    _broadcast_target(input, target, op, warn_if_different=False)
    if log_input:
        loss = M.exp(input) - target * input
    else:
        loss = input - target * M.log(input + eps)
    if full:
        big = target > 1
        t = M.where(big, target, 2.0)   # the term is 0 where target <= 1: no log(0) there, nor NaN gradient
        stirling = t * M.log(t) - t + 0.5 * M.log(2 * math.pi * t)
        loss = loss + M.where(big, stirling, 0.0).to(loss.dtype)   # torch adds it in place: loss's dtype
    return _reduce(loss, reduction, op)


def _target_fits(input, target, op):
    """A target that broadcasts to input's shape (torch's rule for the losses whose output has input's shape)."""
    check_same_device(op, input, target, "target")
    shape, t_shape = tuple(input.shape), tuple(target.shape)
    try:
        fits = np.broadcast_shapes(shape, t_shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise op_error(op, f"target shape {t_shape} does not broadcast to input shape {shape}")


@autocast_op("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """log(1 + exp(-target input)), targets being 1 or -1; the target broadcasts to input's shape.

    >>> round(F.soft_margin_loss(ember.zeros(2), ember.tensor([1.0, -1.0])).item(), 4)   # log 2
    0.6931
    """
    op = "soft_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _target_fits(input, target, op)
    if target.requires_grad:   # as torch: an error, not a silent zero gradient
        raise op_error(op, "is not differentiable with respect to target; pass target.detach()")
    return _reduce(softplus(-input * target), reduction, op)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean") -> Tensor:
    """-(t logsigmoid(x) + (1 - t) logsigmoid(-x)), times weight, averaged over the classes (last dim):
    one loss per sample. The target and weight broadcast silently, as torch.

    >>> F.multilabel_soft_margin_loss(ember.zeros(2, 3), ember.ones(2, 3), reduction="none").shape
    (2,)
    """
    op = "multilabel_soft_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise op_error(op, "expected a (C,) or (N, C) input, got a 0-d tensor", IndexError)
    _broadcast_target(input, target, op, warn_if_different=False)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        check_same_device(op, input, weight, "weight")
        try:
            np.broadcast_shapes(tuple(loss.shape), tuple(weight.shape))
        except ValueError:
            raise op_error(op, f"weight shape {tuple(weight.shape)} and loss shape {tuple(loss.shape)} "
                               f"cannot be broadcast together") from None
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, reduction, op)


@autocast_op("fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C, per sample.

    target holds class indices, the same shape as input ((C,) or (N, C)); each row's targets end at its
    first -1 (the rest is padding). Built on (N, C, C) pairs, as torch's kernel loops over them.

    >>> x = ember.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(F.multilabel_margin_loss(x, ember.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    op = "multilabel_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_same_device(op, input, target, "target")
    shape, t_shape = tuple(input.shape), tuple(target.shape)
    if input.ndim > 2 or 0 in shape[1:] or (input.ndim == 1 and shape[0] == 0):
        raise op_error(op, f"expected a non-empty (C,) or (N, C) input (N may be 0), got shape {shape}")
    if target.dtype.is_floating_point or target.dtype.name == "bool":
        raise op_error(op, f"expected an integer (int64) target, got {target.dtype.name}")
    n_cls = shape[-1] if input.ndim else 1
    fits = t_shape == shape if input.ndim == 2 else (target.ndim <= 1 and target.numel() == n_cls)
    if not fits:
        raise op_error(op, f"inconsistent target size: {t_shape} for input of size: {shape}")
    _check_reduction(reduction, op)
    x = input.reshape(-1, n_cls)                                   # (N, C)
    t = target.detach().reshape(-1, n_cls).long()                  # (N, C)
    if not t.is_meta and t.numel() and M.any(M.logical_or(M.lt(t, -1), M.ge(t, n_cls))).item():
        bad = t[M.logical_or(M.lt(t, -1), M.ge(t, n_cls))][0].item()
        raise op_error(op, f"target index {bad} is out of range for {n_cls} classes (-1 ends a row's targets)")
    valid = M.cumprod(M.ge(t, 0).long(), 1) > 0                    # (N, C): before the row's first -1
    safe = M.where(valid, t, 0)
    classes = C.arange(n_cls, device=input.device)
    hits = M.logical_and(M.eq(safe.unsqueeze(2), classes), valid.unsqueeze(2))   # (N, Cj, Ci)
    is_target = M.any(hits, 1)                                     # (N, C)
    x_t = x.gather(1, safe)                                        # (N, Cj): the target classes' scores
    z = M.relu(1 - x_t.unsqueeze(2) + x.unsqueeze(1))              # (N, Cj, Ci)
    pairs = M.logical_and(valid.unsqueeze(2), M.logical_not(is_target).unsqueeze(1)).to(z.dtype)
    loss = (z * pairs).sum((1, 2)) / n_cls                         # (N,)
    if input.ndim <= 1:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction, op)


@autocast_op("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where it is -1 (torch's sum of both for other
    values); target and input broadcast together.

    >>> F.hinge_embedding_loss(ember.tensor([0.3, 2.0]), ember.tensor([1.0, -1.0]), reduction="none")
    tensor([0.3000, 0.0000])
    """
    op = "hinge_embedding_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _broadcast_target(input, target, op, warn_if_different=False)
    margin_term = M.where(M.ne(target, 1), M.clamp(margin - input, min=0), 0.0)
    self_term = M.where(M.ne(target, -1), input, 0.0)
    return _reduce(margin_term + self_term, reduction, op)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) for any distance d(x1, x2) -> Tensor
    (default pairwise_distance); `swap` uses min(d(a, n), d(p, n)) as the negative distance.

    >>> a, p = ember.zeros(2, 3), ember.ones(2, 3)
    >>> cos = lambda x, y: 1 - F.cosine_similarity(x, y)
    >>> F.triplet_margin_with_distance_loss(a, p, -p, distance_function=cos, margin=0.5).item()
    0.5
    """
    op = "triplet_margin_with_distance_loss"
    _check_reduction(reduction, op)
    if margin <= 0:
        raise op_error(op, f"margin must be greater than 0, got {margin}", ValueError)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise op_error(op, f"the anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {anchor.ndim}D {tuple(anchor.shape)}, positive "
                           f"{positive.ndim}D {tuple(positive.shape)}, and negative {negative.ndim}D "
                           f"{tuple(negative.shape)} inputs")
    check_same_device(op, anchor, positive, "positive", "anchor")
    check_same_device(op, anchor, negative, "negative", "anchor")
    if distance_function is None:   # a distance of the caller's may take shapes that do not broadcast
        pairs = [("anchor", anchor, "positive", positive), ("anchor", anchor, "negative", negative)]
        if swap:
            pairs.append(("positive", positive, "negative", negative))
        for name1, x1, name2, x2 in pairs:
            try:
                np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
            except ValueError:
                raise op_error(op, f"{name1} {tuple(x1.shape)} and {name2} {tuple(x2.shape)} cannot be "
                                   f"broadcast together") from None
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = M.minimum(d_neg, distance(positive, negative))
    return _reduce(M.clamp(margin + d_pos - d_neg, min=0), reduction, op)


def _lengths(x, op, name):
    """input_lengths / target_lengths (a tensor, tuple, list or int) as a list of Python ints."""
    if isinstance(x, Tensor):
        if x.dtype.is_floating_point:
            raise op_error(op, f"{name} must be integers, got a {x.dtype.name} tensor")
        return [int(v) for v in x.detach().cpu().reshape(-1).tolist()]
    return [int(v) for v in x] if isinstance(x, (tuple, list)) else [int(x)]


def _log_add3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf where all three are -inf, with a zero (not NaN)
    gradient there: the alphas of impossible CTC paths stay -inf through the recursion."""
    m = M.maximum(M.maximum(a, b), c).detach()
    m = M.where(M.isinf(m), 0.0, m)
    s = M.exp(a - m) + M.exp(b - m) + M.exp(c - m)
    some = s > 0
    return M.where(some, M.log(M.where(some, s, 1.0)) + m, float("-inf"))


@autocast_op("fp32")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False) -> Tensor:
    """Connectionist temporal classification loss: -log of the total probability of every alignment of
    `targets` to `log_probs` (T, N, C) (or (T, C) unbatched), by the forward (alpha) recursion in log space,
    one step per time step (a composite: autograd gives the gradient). targets are padded (N, S) or
    concatenated 1-D (sum(target_lengths)); reduction 'mean' divides each loss by its target length first
    (as torch). An impossible alignment gives inf (0, with a zero gradient, under zero_infinity).

    The gradient is that of the function, d loss / d log_probs; torch's kernel returns it minus exp(log_probs)
    times a constant per step, the same after log_softmax (the usual input), different on raw scores.

    >>> lp = ember.tensor([[[0.0, -9.0]], [[-9.0, 0.0]]]).log_softmax(2)   # (T=2, N=1, C=2)
    >>> round(ember.nn.functional.ctc_loss(lp, ember.tensor([[1]]), (2,), (1,)).item(), 4)
    0.0001
    """
    op = "ctc_loss"
    if reduction not in ("mean", "sum", "none"):
        raise op_error(op, f"{reduction} is not a valid value for reduction", ValueError)
    check_same_device(op, log_probs, targets, "targets")
    if log_probs.ndim not in (2, 3):
        raise op_error(op, f"expected log_probs of shape (T, N, C) or (T, C), got {tuple(log_probs.shape)}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    T, N, n_cls = log_probs.shape
    in_len = _lengths(input_lengths, op, "input_lengths")
    tg_len = _lengths(target_lengths, op, "target_lengths")
    if len(in_len) != N:
        raise op_error(op, f"input_lengths must be of size batch_size {N}, got {len(in_len)}")
    if len(tg_len) != N:
        raise op_error(op, f"target_lengths must be of size batch_size {N}, got {len(tg_len)}")
    if not 0 <= blank < n_cls:
        raise op_error(op, f"blank must be in label range [0, {n_cls}), got {blank}")
    for v in in_len:
        if not 0 <= v <= T:
            raise op_error(op, f"expected input_lengths to have values in [0, {T}], but got value {v}")
    if N and min(tg_len) < 0:
        raise op_error(op, f"expected target_lengths to have value at least 0, but got value {min(tg_len)}")
    tg = targets.detach().cpu().long().tolist()   # the labels are bookkeeping: read once, on the host
    S = max(tg_len, default=0)
    if targets.ndim == 1 and not unbatched:   # concatenated: cut into rows
        if len(tg) != sum(tg_len):
            raise op_error(op, f"expected concatenated targets of size sum(target_lengths) = {sum(tg_len)}, "
                               f"got {len(tg)}")
        starts = [sum(tg_len[:n]) for n in range(N)]
        rows = [tg[starts[n]:starts[n] + tg_len[n]] for n in range(N)]
    else:
        if targets.ndim != 2 or targets.shape[0] != N or targets.shape[1] < S:
            raise op_error(op, f"expected targets of shape (N={N}, S >= max(target_lengths)={S}) or concatenated "
                               f"1-D, got {tuple(targets.shape)}")
        rows = [tg[n][:tg_len[n]] for n in range(N)]
    for v in (v for row in rows for v in row):
        if not 0 <= v < n_cls:
            raise op_error(op, f"targets must be class indices in [0, {n_cls}), got {v}", IndexError)
    # the extended label sequence blank, l1, blank, l2, ..., blank (padded with blanks): L = 2S + 1 states;
    # a state may skip the blank before it when its label differs from the one two states back
    L = 2 * S + 1
    ext = [[blank] * L for _ in range(N)]
    for n, row in enumerate(rows):
        ext[n][1:2 * len(row):2] = row
    skip = [[s >= 2 and e[s] != blank and e[s] != e[s - 2] for s in range(L)] for e in ext]
    dev = log_probs.device
    ext_t = C.tensor(ext, dtype=_dtype.int64, device=dev)   # (N, L)
    emit = log_probs.gather(2, ext_t.unsqueeze(0).expand(T, N, L)) if T else None   # (T, N, L)
    skip_t = C.tensor(skip, dtype=_dtype.bool, device=dev)
    in_len_t = C.tensor(in_len, dtype=_dtype.int64, device=dev)
    running = C.arange(T, device=dev).unsqueeze(1) < in_len_t.unsqueeze(0)   # (T, N)
    neg_inf = C.full((N, 1), float("-inf"), dtype=log_probs.dtype, device=dev)
    neg_inf2 = C.full((N, 2), float("-inf"), dtype=log_probs.dtype, device=dev)
    # before the first step: probability 1 of having emitted nothing
    alpha = cat([C.zeros(N, 1, dtype=log_probs.dtype, device=dev), neg_inf.expand(N, L - 1)], 1)   # (N, L)
    for t in range(T):
        one_back = cat([neg_inf, alpha[:, :-1]], 1)
        two_back = M.where(skip_t, cat([neg_inf2, alpha[:, :-2]], 1), float("-inf")) if L > 2 \
            else C.full((N, L), float("-inf"), dtype=log_probs.dtype, device=dev)
        assert emit is not None   # T > 0 here
        new = _log_add3(alpha, one_back, two_back) + emit[t]
        alpha = M.where(running[t].unsqueeze(1), new, alpha)
    tg_len_t = C.tensor(tg_len, dtype=_dtype.int64, device=dev)
    last = (2 * tg_len_t).unsqueeze(1)   # (N, 1): the final blank
    end_blank = alpha.gather(1, last).squeeze(1)
    end_label = M.where(tg_len_t > 0,
                        alpha.gather(1, M.clamp(last - 1, min=0)).squeeze(1), float("-inf"))
    loss = -_log_add3(end_blank, end_label, neg_inf.squeeze(1))   # (N,)
    impossible = M.isinf(loss.detach())
    if zero_infinity:
        loss = M.where(impossible, 0.0, loss)
    elif loss.requires_grad and T:
        # torch's gradient of an infinite loss is NaN at the sample's steps t < input_length: the same here,
        # from sqrt's infinite slope at 0 times 0 (the value is unchanged: sqrt(0) * 0 = 0)
        steps = M.where(running.unsqueeze(2), log_probs, 0.0).sum((0, 2))   # (N,)
        zero = M.where(impossible, steps - steps.detach(), 1.0)
        loss = loss + M.sqrt(zero) * 0.0
    if reduction == "mean":
        return (loss / M.clamp(tg_len_t, min=1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
