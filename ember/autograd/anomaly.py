"""Anomaly mode: find the first op that produced NaN or Inf, with the user's line.

>>> with ember.autograd.detect_anomaly():
...     loss.backward()     # raises naming e.g. 'Log' and 'train.py:12' if log(0) made -inf

The switch is one for the whole process, as in torch (torch 2.13: anomaly mode set in one thread is
seen by every thread), so a debugging run can turn it on once at the top of a script and have it
checked in worker threads too. Whether this thread is inside a backward is per thread.
"""
from __future__ import annotations

import threading

import numpy as np

from .._errors import user_frame

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

ENABLED = False


def is_anomaly_enabled() -> bool:
    return ENABLED


class set_detect_anomaly:
    def __init__(self, mode: bool):
        global ENABLED
        self._prev, ENABLED = ENABLED, bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global ENABLED
        ENABLED = self._prev
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager (and decorator) that checks every op's forward output and backward grads."""

    def __init__(self, check_nan: bool = True):
        self._mode = bool(check_nan)   # takes effect on entering, so a decorator does not switch it on

    def __enter__(self):
        global ENABLED
        self._prev, ENABLED = ENABLED, self._mode
        return self

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly():
                return fn(*a, **k)
        return wrapper


def record(node) -> None:
    node._where = user_frame()


def _bad(arr) -> bool:
    if arr.dtype.kind not in "fcV":   # V: bfloat16 (ml_dtypes)
        return False
    xp = np if isinstance(arr, np.ndarray) else __import__("ember").backends.array_module(arr)
    return not bool(xp.isfinite(arr).all())


class _Backward(threading.local):
    active = False   # this thread is running a node's backward (its ops are not forward ops)


_IN_BACKWARD = _Backward()


def checked_backward(node, grads):
    """node.backward(*grads), then a check of its gradients. Ops run inside a backward are not checked
    as forward ops: a NaN made there is reported as that backward's, naming the user's forward op."""
    prev, _IN_BACKWARD.active = _IN_BACKWARD.active, True
    try:
        in_grads = node.backward(*grads)
    finally:
        _IN_BACKWARD.active = prev
    check_backward(node, in_grads)
    return in_grads


def check_forward(node, result) -> None:
    if not _IN_BACKWARD.active and _bad(result._data):
        where = node._where or user_frame()
        raise RuntimeError(f"anomaly: {node.name} produced NaN or Inf in its forward output "
                           f"{tuple(result.shape)} (at {where})")


def check_backward(node, grads) -> None:
    for i, g in enumerate(grads):
        if g is not None and _bad(g._data):
            raise RuntimeError(f"anomaly: {node.name}Backward returned NaN or Inf in its gradient for "
                               f"input {i}; the forward op {node.name} was called at "
                               f"{node._where or '<unknown: enable anomaly mode before the forward>'}")
