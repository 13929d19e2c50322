"""Anomaly mode, as in torch: every node records the user's line of its forward call, and backward
raises at the first backward function that returns NaN, naming it and that line.

Forward outputs are not checked: `masked_fill(mask, float("-inf")).softmax(-1)` is ordinary attention
code, and infinities in a forward pass are often intended. Only NaN is an anomaly (an infinite gradient,
e.g. d sqrt(x) at 0, is not), again as in torch.

>>> with ember.autograd.detect_anomaly():
...     loss.backward()     # raises naming e.g. 'SqrtBackward' and 'train.py:12' if it made NaN

The switch is one for the whole process, as in torch (torch 2.13: anomaly mode set in one thread is
seen by every thread), so a debugging run can turn it on once at the top of a script and have it
checked in worker threads too.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .._errors import user_frame

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]

ENABLED = False
CHECK_NAN = True


def is_anomaly_enabled() -> bool:
    return ENABLED


def is_anomaly_check_nan_enabled() -> bool:
    return CHECK_NAN


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Switch anomaly mode on or off for the process (torch.set_anomaly_enabled: a plain call, no context).

    >>> ember.set_anomaly_enabled(True); ember.is_anomaly_enabled()
    True
    >>> ember.set_anomaly_enabled(False)
    """
    global ENABLED, CHECK_NAN
    ENABLED, CHECK_NAN = bool(enabled), bool(check_nan)


class set_detect_anomaly:
    """Switch anomaly mode on or off (context manager or plain call). With check_nan=False the forward
    lines are still recorded but backward outputs are not checked."""

    def __init__(self, mode: bool, check_nan: bool = True):
        global ENABLED, CHECK_NAN
        self._prev = (ENABLED, CHECK_NAN)
        ENABLED, CHECK_NAN = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global ENABLED, CHECK_NAN
        ENABLED, CHECK_NAN = self._prev
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager (and decorator) that records each op's forward line and checks backward outputs."""

    def __init__(self, check_nan: bool = True):
        self._check_nan = bool(check_nan)   # takes effect on entering, so a decorator does not switch it on
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        global ENABLED, CHECK_NAN
        self._prev = (ENABLED, CHECK_NAN)
        ENABLED, CHECK_NAN = True, self._check_nan
        return self

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self._check_nan):
                return fn(*a, **k)
        return wrapper


def record(node) -> None:
    node._where = user_frame()


def _has_nan(arr) -> bool:
    if arr.dtype.kind not in "fcV":   # V: bfloat16 (ml_dtypes)
        return False
    xp = np if isinstance(arr, np.ndarray) else __import__("ember").backends.array_module(arr)
    return bool(xp.isnan(arr).any())


def checked_backward(node, grads):
    """node.backward(*grads), then torch's check: none of the gradients it returns holds NaN."""
    in_grads = node.backward(*grads)
    if CHECK_NAN:
        for i, g in enumerate(in_grads):
            if g is not None and _has_nan(g._data):
                where = node._where or "<unknown: enable anomaly mode before the forward>"
                raise RuntimeError(f"Function '{node.name}Backward' returned nan values in its {i}th output "
                                   f"(gradient {tuple(g.shape)} {g.dtype.name}); the forward op {node.name} "
                                   f"was called at {where}")
    return in_grads
