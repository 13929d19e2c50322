"""Keras's losses, `loss(y_true, y_pred)` (Keras's argument order: the target first).

Each function returns one loss per sample (the mean over the last axis where Keras takes it); a `Loss`
object reduces them as Keras does ("sum_over_batch_size": the weighted sum divided by the batch size).
Probabilities (`from_logits=False`, the default, as after a softmax or sigmoid) are clipped to
[1e-7, 1 - 1e-7] before the log, as Keras does. A label equal to `ignore_class` (sparse categorical
cross-entropy) costs 0, and a Loss object averages over the other labels (Keras's mask). Targets of the
wrong shape for the loss raise an error that says which shape was expected and what to use instead.
"""
from __future__ import annotations

from .. import _dtype
from .._errors import user_frame
from .backend import to_snake_case, unique_name
from ..nn import functional as F
from ..ops import math as M

__all__ = ["Loss", "SparseCategoricalCrossentropy", "CategoricalCrossentropy", "BinaryCrossentropy",
           "MeanSquaredError", "MeanAbsoluteError", "Huber", "sparse_categorical_crossentropy",
           "categorical_crossentropy", "binary_crossentropy", "mean_squared_error", "mean_absolute_error",
           "get", "serialize"]

EPSILON = 1e-7


def _shape(t):
    return tuple(t.shape)


def _fail(loss_name, message):
    return ValueError(f"{loss_name}: {message} (at {user_frame()})")


def _same_rank(y_true, y_pred):
    """Keras's squeeze_or_expand_to_same_rank: (N,) targets against (N, 1) predictions and back."""
    if y_true.ndim == y_pred.ndim - 1 and y_pred.shape[-1] == 1:
        y_true = y_true.unsqueeze(-1)
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = y_true.squeeze(-1)
    return y_true


def _float_target(y_true, y_pred):
    return y_true if y_true.dtype == y_pred.dtype else y_true.to(y_pred.dtype)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Integer class labels (N,) against class scores (N, C); one value per sample."""
    name = "sparse_categorical_crossentropy"
    if y_pred.ndim < 2:
        raise _fail(name, f"predictions must have a class axis, shape (batch, classes); got y_pred of shape "
                          f"{_shape(y_pred)}")
    n_cls = y_pred.shape[-1]
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true.squeeze(-1)
    if _shape(y_true) != _shape(y_pred)[:-1]:
        hint = ""
        if _shape(y_true) == _shape(y_pred):
            hint = ("; y looks one-hot encoded: use loss='categorical_crossentropy' for one-hot targets, "
                    "or pass the class indices (y.argmax(axis=-1))")
        raise _fail(name, f"expected integer class labels y of shape {_shape(y_pred)[:-1]} for predictions of "
                          f"shape {_shape(y_pred)} ({n_cls} classes), got y of shape {_shape(y_true)}{hint}")
    if y_true.dtype.is_floating_point:
        y_true = y_true.long()
    elif y_true.dtype.name != "int64":
        y_true = y_true.long()
    valid = None
    if ignore_class is not None:   # Keras: those labels count as class 0, and their loss is 0
        valid = y_true != int(ignore_class)
        y_true = M.where(valid, y_true, 0)
    if y_true.numel():
        lo, hi = int(y_true.min().item()), int(y_true.max().item())
        if lo < 0 or hi >= n_cls:
            bad = hi if hi >= n_cls else lo
            raise _fail(name, f"Received a label value of {bad} which is outside the valid range of "
                              f"[0, {n_cls}): the model has {n_cls} output units (classes 0..{n_cls - 1})")
    flat_pred = y_pred.reshape(-1, n_cls)
    flat_true = y_true.reshape(-1)
    if from_logits:
        losses = F.cross_entropy(flat_pred, flat_true, reduction="none")
    else:
        p = flat_pred / flat_pred.sum(dim=-1, keepdim=True)
        losses = F.nll_loss(M.log(p.clamp(EPSILON, 1 - EPSILON)), flat_true, reduction="none")
    losses = losses.reshape(_shape(y_true))
    return losses if valid is None else M.where(valid, losses, 0.0)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """One-hot (or soft) targets (N, C) against class scores (N, C); one value per sample."""
    name = "categorical_crossentropy"
    if _shape(y_true) != _shape(y_pred):
        hint = ""
        if y_true.ndim == y_pred.ndim - 1 or (y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1):
            hint = (f"; y looks like integer class labels: use loss='sparse_categorical_crossentropy', or "
                    f"one-hot encode y to shape {_shape(y_pred)}")
        raise _fail(name, f"Arguments `target` and `output` must have the same shape. Received: target.shape="
                          f"{_shape(y_true)}, output.shape={_shape(y_pred)}{hint}")
    y_true = _float_target(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1 - label_smoothing) + label_smoothing / y_pred.shape[-1]
    if from_logits:
        log_p = F.log_softmax(y_pred, dim=-1)
    else:
        p = y_pred / y_pred.sum(dim=-1, keepdim=True)
        log_p = M.log(p.clamp(EPSILON, 1 - EPSILON))
    return -(y_true * log_p).sum(dim=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """0/1 targets against probabilities (or logits) of the same shape; mean over the last axis."""
    name = "binary_crossentropy"
    y_true = _same_rank(y_true, y_pred)
    if _shape(y_true) != _shape(y_pred):
        raise _fail(name, f"Arguments `target` and `output` must have the same shape. Received: target.shape="
                          f"{_shape(y_true)}, output.shape={_shape(y_pred)} (binary_crossentropy compares each "
                          f"output unit with a 0/1 target; for {y_pred.shape[-1]} classes use "
                          f"'sparse_categorical_crossentropy')")
    y_true = _float_target(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        losses = F.binary_cross_entropy_with_logits(y_pred, y_true, reduction="none")
    else:
        losses = F.binary_cross_entropy(y_pred.clamp(EPSILON, 1 - EPSILON), y_true, reduction="none")
    return losses.mean(dim=-1)


def _regression(name, y_true, y_pred):
    y_true = _same_rank(y_true, y_pred)
    if _shape(y_true) != _shape(y_pred):
        raise _fail(name, f"y of shape {_shape(y_true)} does not match the model's output shape {_shape(y_pred)}")
    return _float_target(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    y_true = _regression("mean_squared_error", y_true, y_pred)
    return ((y_pred - y_true) ** 2).mean(dim=-1)


def mean_absolute_error(y_true, y_pred):
    y_true = _regression("mean_absolute_error", y_true, y_pred)
    return (y_pred - y_true).abs().mean(dim=-1)


def huber(y_true, y_pred, delta=1.0):
    y_true = _regression("huber", y_true, y_pred)
    return F.huber_loss(y_pred, y_true, reduction="none", delta=delta).mean(dim=-1)


def _expand(w, values):
    """Per-sample weights (N,) against values (N, ...): one weight for each sample's values."""
    while w.ndim < values.ndim:
        w = w.unsqueeze(-1)
    return w


def reduce_weighted(values, sample_weight=None):
    """Keras's "sum_over_batch_size": sum(values * weight) / number of values."""
    if sample_weight is not None:
        values = values * _expand(sample_weight, values).to(values.dtype)
    return values.sum() / max(values.numel(), 1)


class Loss:
    """A loss object: `loss(y_true, y_pred, sample_weight=None)` -> a scalar tensor."""
    fn = None

    def __init__(self, name=None, reduction="sum_over_batch_size", **kwargs):
        if reduction not in ("sum_over_batch_size", "sum", "none", "mean"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'sum_over_batch_size', 'sum', 'mean' or "
                             f"'none', got {reduction!r}")
        # Keras: a built-in loss (or a subclass of one) has the built-in's name; a subclass of Loss gets
        # auto_name, its class name in snake case made unique
        builtin = next((_CLASS_TO_NAME[c.__name__] for c in type(self).__mro__ if c.__name__ in _CLASS_TO_NAME), None)
        self.name = name or builtin or unique_name(to_snake_case(type(self).__name__))
        self.reduction = reduction
        self.kwargs = kwargs

    def call(self, y_true, y_pred):
        return type(self).fn(y_true, y_pred, **self.kwargs)

    def _mask(self, y_true, values):
        """The entries that count (Keras's mask on the losses), or None for all."""
        return None

    def __call__(self, y_true, y_pred, sample_weight=None):
        from .layers.base import to_tensor
        y_true, y_pred = to_tensor(y_true), to_tensor(y_pred)
        if y_pred.dtype in (_dtype.float16, _dtype.bfloat16):
            y_pred = y_pred.to(_dtype.float32)    # Keras: a loss computes in floatx (a mixed-precision model's output)
        values = self.call(y_true, y_pred)
        sw = None if sample_weight is None else to_tensor(sample_weight)
        mask = self._mask(y_true, values)
        if mask is not None:   # Keras's losses.loss.apply_mask: the mean is over the valid entries
            mask = mask.to(values.dtype)
            if self.reduction in ("sum_over_batch_size", "mean"):
                mask = mask * (max(values.numel(), 1) / (float(mask.sum().item()) + EPSILON))
            sw = mask if sw is None else mask * _expand(sw, mask).to(mask.dtype)
        if self.reduction == "none":
            return values if sw is None else values * sw
        if self.reduction == "sum":
            return reduce_weighted(values, sw) * max(values.numel(), 1)
        return reduce_weighted(values, sw)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, **self.kwargs}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class SparseCategoricalCrossentropy(Loss):
    fn = staticmethod(sparse_categorical_crossentropy)

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction, from_logits=from_logits, ignore_class=ignore_class)

    def _mask(self, y_true, values):
        ignore = self.kwargs["ignore_class"]
        if ignore is None:
            return None
        if y_true.ndim == values.ndim + 1:
            y_true = y_true.squeeze(-1)
        return y_true.long() != int(ignore)


class CategoricalCrossentropy(Loss):
    fn = staticmethod(categorical_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction, from_logits=from_logits, label_smoothing=label_smoothing)


class BinaryCrossentropy(Loss):
    fn = staticmethod(binary_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction, from_logits=from_logits, label_smoothing=label_smoothing)


class MeanSquaredError(Loss):
    fn = staticmethod(mean_squared_error)

    def __init__(self, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction)


class MeanAbsoluteError(Loss):
    fn = staticmethod(mean_absolute_error)

    def __init__(self, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction)


class Huber(Loss):
    fn = staticmethod(huber)

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name=None):
        super().__init__(name, reduction, delta=delta)


class _FunctionLoss(Loss):
    """A plain function fn(y_true, y_pred) -> per-sample losses, used as a loss."""

    def __init__(self, fn, name=None):
        super().__init__(name or getattr(fn, "__name__", "loss"))
        self._fn = fn

    def call(self, y_true, y_pred):
        return self._fn(y_true, y_pred)


_CLASS_TO_NAME = {"SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
                  "CategoricalCrossentropy": "categorical_crossentropy",
                  "BinaryCrossentropy": "binary_crossentropy", "MeanSquaredError": "mean_squared_error",
                  "MeanAbsoluteError": "mean_absolute_error", "Huber": "huber_loss"}
ALL = {"sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
       "categorical_crossentropy": CategoricalCrossentropy, "binary_crossentropy": BinaryCrossentropy,
       "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "mean_absolute_error": MeanAbsoluteError,
       "mae": MeanAbsoluteError, "huber": Huber, "huber_loss": Huber}


def get(identifier) -> Loss:
    """'sparse_categorical_crossentropy' -> its Loss object; a Loss as it is; a function as a loss."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        return ALL[identifier["class_name"]].from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = ALL.get(identifier) or next((c for c in ALL.values() if c.__name__ == identifier), None)
        if cls is not None:
            return cls()
    elif callable(identifier):
        return _FunctionLoss(identifier)
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}. Known losses: "
                     f"{', '.join(sorted(ALL))}, a keras.losses.Loss, or a function (y_true, y_pred)")


def serialize(loss: Loss) -> dict:
    name = next((n for n, c in ALL.items() if type(loss) is c), None)
    if name is None:
        raise ValueError(f"loss {loss!r} is not one of Keras's named losses and cannot be saved with the model")
    return {"class_name": name, "config": loss.get_config()}
