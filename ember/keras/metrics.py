"""Keras's metrics: stateful averages over an epoch (`update_state`, `result`, `reset_state`).

`compile(metrics=['accuracy'])` picks the accuracy that fits the loss, as Keras does:
sparse_categorical_accuracy for integer labels, categorical_accuracy for one-hot targets,
binary_accuracy (threshold 0.5) for binary cross-entropy; the name in the logs stays 'accuracy'.
"""
from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..backends import host
from . import losses as L

__all__ = ["Metric", "Mean", "MeanMetricWrapper", "Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy",
           "BinaryAccuracy", "MeanSquaredError", "MeanAbsoluteError", "get", "resolve"]


class Metric:
    def __init__(self, name=None, dtype=None):
        self.name = name or type(self).__name__.lower()
        self.reset_state()

    def reset_state(self):
        self._total, self._count = 0.0, 0.0

    def result(self) -> float:
        return self._total / self._count if self._count else 0.0

    def update_state(self, *args, **kwargs):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name}


class Mean(Metric):
    """The (weighted) mean of the values given."""

    def update_state(self, values, sample_weight=None):
        v = host.asarray(values.detach().cpu().numpy() if hasattr(values, "detach") else values, dtype=np.float64)
        if sample_weight is None:   # Keras (reduce_to_samplewise_values): one mean per sample, counted once
            if v.ndim > 1:
                v = v.reshape(len(v), -1).mean(axis=1)
            self._total += float(v.sum())
            self._count += v.size
            return
        w = host.asarray(sample_weight.cpu().numpy() if hasattr(sample_weight, "numpy") else sample_weight,
                         dtype=np.float64).reshape(-1)
        if v.ndim:
            v = v.reshape(len(w), -1).mean(axis=1)   # one value per sample, weighted by its sample weight
        self._total += float((v * w).sum())
        self._count += float(w.sum())


class MeanMetricWrapper(Mean):
    """The mean of fn(y_true, y_pred) over the samples seen."""

    def __init__(self, fn, name=None, **kwargs):
        self._fn, self._kwargs = fn, kwargs
        super().__init__(name or fn.__name__)

    def update_state(self, y_true, y_pred, sample_weight=None):
        with no_grad():
            values = self._fn(y_true, y_pred.detach(), **self._kwargs)
        super().update_state(values, sample_weight)


def sparse_categorical_accuracy(y_true, y_pred):
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true.squeeze(-1)
    return (y_pred.argmax(dim=-1) == y_true.long()).float()


def categorical_accuracy(y_true, y_pred):
    return (y_pred.argmax(dim=-1) == y_true.argmax(dim=-1)).float()


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_true = L._same_rank(y_true, y_pred)     # one match per entry, as Keras: Mean averages each sample's
    return ((y_pred > threshold).float() == y_true.float()).float()


def accuracy(y_true, y_pred):
    """Exact equality of predictions and targets (Keras's `Accuracy`)."""
    y_true = L._same_rank(y_true, y_pred)
    return (y_pred == y_true.to(y_pred.dtype)).float()


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy"):
        super().__init__(sparse_categorical_accuracy, name)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy"):
        super().__init__(categorical_accuracy, name)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", threshold=0.5):
        super().__init__(binary_accuracy, name, threshold=threshold)


class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy"):
        super().__init__(accuracy, name)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error"):
        super().__init__(L.mean_squared_error, name)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error"):
        super().__init__(L.mean_absolute_error, name)


ALL = {"accuracy": None, "acc": None, "sparse_categorical_accuracy": SparseCategoricalAccuracy,
       "categorical_accuracy": CategoricalAccuracy, "binary_accuracy": BinaryAccuracy,
       "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError, "mae": MeanAbsoluteError,
       "mean_absolute_error": MeanAbsoluteError}


def resolve(identifier, loss, y_true_shape=None, y_pred_shape=None) -> Metric:
    """The metric object for `identifier` in `compile(metrics=[...])`, given the output's loss."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            name = getattr(loss, "name", "")
            if name == "sparse_categorical_crossentropy":
                return MeanMetricWrapper(sparse_categorical_accuracy, identifier)
            if name == "categorical_crossentropy":
                return MeanMetricWrapper(categorical_accuracy, identifier)
            if name == "binary_crossentropy":
                return MeanMetricWrapper(binary_accuracy, identifier)
            # Keras's rule from the shapes
            if y_pred_shape is not None and y_pred_shape[-1] == 1:
                return MeanMetricWrapper(binary_accuracy, identifier)
            if y_true_shape is not None and y_pred_shape is not None and \
                    (len(y_true_shape) == len(y_pred_shape) - 1 or y_true_shape[-1:] == (1,)):
                return MeanMetricWrapper(sparse_categorical_accuracy, identifier)
            return MeanMetricWrapper(categorical_accuracy, identifier)
        if identifier in ALL:
            return ALL[identifier](name=identifier)
    elif callable(identifier):
        return MeanMetricWrapper(identifier, getattr(identifier, "__name__", "metric"))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}. Known metrics: "
                     f"{', '.join(sorted(ALL))}, a keras.metrics.Metric, or a function (y_true, y_pred)")


def get(identifier) -> Metric:
    return resolve(identifier, None)
