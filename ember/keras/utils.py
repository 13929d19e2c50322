"""`keras.utils.to_categorical`: integer labels to one-hot rows (for 'categorical_crossentropy')."""
from __future__ import annotations

import numpy as np

from ..backends import host

__all__ = ["to_categorical"]


def to_categorical(x, num_classes=None):
    """(N,) integer labels -> (N, num_classes) float32 one-hot rows.

    >>> to_categorical([0, 2], num_classes=3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    labels = host.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels.reshape(labels.shape[:-1])
    labels = labels.astype(np.int64)
    n = int(num_classes) if num_classes else int(labels.max()) + 1    # as Keras: 0 or None infers it
    if labels.size and (labels.min() < 0 or labels.max() >= n):
        raise ValueError(f"to_categorical: labels must be in [0, {n}), got values from {labels.min()} to "
                         f"{labels.max()}")
    out = host.zeros(labels.shape + (n,), np.float32)
    out.reshape(-1, n)[host.arange(0, labels.size, 1, np.int64, False), labels.reshape(-1)] = 1.0
    return out
