"""`ember.keras`: Keras's high-level API (Sequential and functional models, compile / fit / evaluate /
predict, callbacks, summary, save) on Ember's nn, optim and data.

>>> from ember.keras import layers, models
>>> model = models.Sequential([
...     layers.Flatten(input_shape=(28, 28)),
...     layers.Dense(100, activation='relu'),
...     layers.Dense(10, activation='softmax')
... ])
>>> model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
>>> model.count_params()
79510
"""
from . import activations, initializers, layers, losses, metrics, optimizers, callbacks, models, datasets, backend, utils
from . import config, dtype_policies, mixed_precision
from .backend import Variable, KerasTensor, clear_session
from .dtype_policies import DTypePolicy, FloatDTypePolicy
from .layers import Input, Layer
from .models import Model, Sequential

__all__ = ["activations", "initializers", "layers", "losses", "metrics", "optimizers", "callbacks", "models",
           "datasets", "backend", "utils", "config", "dtype_policies", "mixed_precision", "DTypePolicy",
           "FloatDTypePolicy", "Variable", "KerasTensor", "clear_session", "Input", "Layer", "Model",
           "Sequential"]
