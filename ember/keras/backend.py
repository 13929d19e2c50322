"""The pieces every part of `ember.keras` shares: layer names, `Variable`, the symbolic `KerasTensor`
of the functional API, and the training flag that `fit` turns on.

Keras names layers by class in snake case, counting per name within a session (`dense`, `dense_1`,
...); `clear_session()` starts the count again.
"""
from __future__ import annotations

import re
import threading

import numpy as np

from .._tensor import Tensor
from ..backends import host
from ..autograd.grad_mode import no_grad
from ..nn.parameter import Parameter

__all__ = ["Variable", "KerasTensor", "clear_session", "floatx", "unique_name", "to_snake_case",
           "is_keras_tensor"]

_NAME_COUNTS: dict = {}


def clear_session() -> None:
    """Forget the names given so far, so the next Dense is `dense` again, and set the global dtype policy
    back to float32 (as `keras.backend.clear_session`, which clears Keras's global state)."""
    from . import dtype_policies
    _NAME_COUNTS.clear()
    dtype_policies.reset()


def to_snake_case(name: str) -> str:
    # Keras's rule: Conv2D -> conv2d, MaxPooling2D -> max_pooling2d, BatchNormalization -> batch_normalization
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", name))
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def unique_name(base: str) -> str:
    n = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def floatx() -> str:
    return "float32"


# --- the training flag ------------------------------------------------------------------------------
# Keras layers run in inference mode unless `training=True` is passed or `fit` is running. A call with an
# explicit `training` sets it for every layer called inside (a Model passes it to its layers this way).
class _Phase(threading.local):
    def __init__(self):
        self.stack = [False]


_PHASE = _Phase()


def in_training() -> bool:
    return _PHASE.stack[-1]


class training_phase:
    def __init__(self, training):
        self.training = training

    def __enter__(self):
        _PHASE.stack.append(in_training() if self.training is None else bool(self.training))

    def __exit__(self, *exc):
        _PHASE.stack.pop()
        return False


# --- Variable -----------------------------------------------------------------------------------------
class Variable(Parameter):
    """A weight in TensorFlow's and Keras's style: a Parameter with `assign`, `assign_add`, `assign_sub`
    and `numpy()`. `trainable=False` gives a variable that optimizers leave alone (a BatchNormalization
    moving mean).

    >>> w = ember.keras.Variable(ember.ones(2))
    >>> _ = w.assign_sub(ember.tensor([0.5, 1.0]))
    >>> w.numpy().tolist()
    [0.5, 0.0]
    """

    def __new__(cls, initializer=None, shape=None, dtype=None, trainable: bool = True, autocast: bool = True,
                name: str | None = None):
        if callable(initializer) and not isinstance(initializer, Tensor):
            if shape is None:
                raise ValueError("Variable: an initializer needs a `shape`, got shape=None")
            value = initializer(tuple(shape), dtype=dtype or "float32")
        elif isinstance(initializer, str):
            from . import initializers
            value = initializers.get(initializer)(tuple(shape), dtype=dtype or "float32")
        else:
            value = initializer
        if not isinstance(value, Tensor):
            arr = host.asarray(value)
            if dtype is None and arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            elif dtype is not None:
                arr = arr.astype(np.dtype(str(dtype).replace("ember.", "")))
            from ..ops.creation import from_numpy
            value = from_numpy(host.contiguous(arr).reshape(arr.shape))   # a scalar stays 0-d
        elif dtype is not None and value.dtype.name != str(dtype).replace("ember.", ""):
            from .. import _dtype
            value = value.to(getattr(_dtype, str(dtype).replace("ember.", "")))
        value = value.detach().clone()
        v = Parameter.__new__(cls, value, requires_grad=bool(trainable) and value.dtype.is_floating_point)
        v._own_trainable = bool(trainable)
        v.autocast = bool(autocast)          # read in a mixed-precision layer's compute dtype inside its call
        v.name = name or "variable"
        v.path = v.name
        return v

    def __init__(self, *args, **kwargs):
        pass

    @property
    def trainable(self) -> bool:
        return self.requires_grad

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._own_trainable = bool(value)
        self.requires_grad = bool(value)

    @property
    def value(self) -> Tensor:
        return self.detach()

    def numpy(self):
        return self.detach().numpy()

    def _cast_like(self, value) -> Tensor:
        if not isinstance(value, Tensor):
            from ..ops.creation import tensor
            value = tensor(host.asarray(value), dtype=self.dtype)
        if tuple(value.shape) != tuple(self.shape):
            raise ValueError(f"Variable.assign: variable {self.name!r} has shape {tuple(self.shape)}, got a "
                             f"value of shape {tuple(value.shape)}")
        return value.detach()

    def assign(self, value) -> "Variable":
        """Write `value` into the variable (in place, not recorded by autograd)."""
        with no_grad():
            self.copy_(self._cast_like(value))
        return self

    def assign_add(self, delta) -> "Variable":
        with no_grad():
            self.add_(self._cast_like(delta))
        return self

    def assign_sub(self, delta) -> "Variable":
        with no_grad():
            self.sub_(self._cast_like(delta))
        return self

    def __repr__(self):
        return f"<Variable path={self.path}, shape={tuple(self.shape)}, dtype={self.dtype.name}>"

    def __deepcopy__(self, memo):
        v = Variable(self.detach().clone(), trainable=self._own_trainable, autocast=self.autocast, name=self.name)
        v.requires_grad = self.requires_grad
        memo[id(self)] = v
        return v

    def __reduce_ex__(self, protocol):
        raise TypeError("ember.keras.Variable is not pickled; save models with model.save(path)")


# --- the functional API's symbolic tensors ------------------------------------------------------------
class KerasTensor:
    """The symbolic output of a layer called on `Input`s: a shape whose first entry is the batch (None)
    and a dtype; `_keras_history` is (layer, node index, tensor index)."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.name = name
        self._keras_history = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __array__(self, *a, **k):
        raise TypeError("A KerasTensor is symbolic (the output of a layer called on keras.Input): it has no "
                        "values. Build a Model(inputs, outputs) and call it on data instead.")


def is_keras_tensor(x) -> bool:
    return isinstance(x, KerasTensor)


class Node:
    """One call of a layer on KerasTensors: its inputs (as called: one tensor or a list) and outputs."""

    def __init__(self, layer, call_inputs, outputs):
        self.layer = layer
        self.call_inputs = call_inputs
        self.input_tensors = flatten(call_inputs)
        self.output_tensors = flatten(outputs)
        self.outputs = outputs


def flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            out.extend(flatten(item))
        return out
    if isinstance(x, dict):
        return flatten([x[k] for k in sorted(x)])
    return [x]
