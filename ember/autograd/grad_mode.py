"""Whether operations record the graph: no_grad, enable_grad, set_grad_enabled, inference_mode.

Grad mode and inference mode belong to the running thread, as in torch: `no_grad()` in one thread
does not stop another thread from recording its graph, and a new thread starts with grad enabled
and inference mode off whatever the thread that started it was doing.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State(threading.local):
    """The calling thread's modes. The class attributes are the defaults every thread starts from;
    an assignment lands in the assigning thread's own dict (threading.local). Change `enabled`
    only through `set_enabled`, which keeps `OFF` in step."""
    enabled = True
    inference = False


STATE = _State()

# One entry per thread whose grad mode is off right now. Reading a threading.local attribute costs
# about three times a plain one, which showed on tiny ops; while OFF is empty (no no_grad block open
# in any thread) the hot path, `(not OFF or STATE.enabled)`, reads only this list. list.append and
# list.pop are atomic under the GIL, so no lock is needed. A thread that ends with grad mode off
# leaves its entry behind: harmless, the hot path then reads STATE, which is always right.
OFF: list = []


def set_enabled(mode) -> bool:
    """Set this thread's grad mode; returns the previous one."""
    state = STATE
    prev = state.enabled
    if mode:
        if not prev:
            state.enabled = True
            OFF.pop()
    elif prev:
        OFF.append(None)
        state.enabled = False
    return prev


def is_grad_enabled() -> bool:
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _Mode:
    """Base of the grad-mode context managers; each also works as a decorator."""
    _target = True

    def __enter__(self):
        self._prev = set_enabled(self._target)

    def __exit__(self, *exc):
        set_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class _BareDecorator(_Mode):
    """Also usable as a bare decorator, `@ember.no_grad` (no parentheses), as torch allows."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (got {orig_func!r})")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator):
    """Operations inside do not record the graph.

    >>> with ember.no_grad():
    ...     w -= lr * w.grad
    """
    _target = False


class enable_grad(_BareDecorator):
    """Operations inside record the graph, even within no_grad."""
    _target = True


class set_grad_enabled(_Mode):
    """Turn recording on or off; as a function call it takes effect at once (like torch)."""

    def __init__(self, mode: bool):
        self._target = bool(mode)
        self._prev = set_enabled(self._target)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_enabled(self._prev)
        return False

    def __call__(self, fn):
        target = self._target
        set_enabled(self._prev)  # used as a decorator: undo the immediate effect

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(target):
                return fn(*args, **kwargs)
        return wrapper


class inference_mode(_Mode):
    """no_grad for inference (`with ember.inference_mode():`, `@ember.inference_mode()` or bare)."""

    def __new__(cls, mode=True):
        if callable(mode):   # bare decorator
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        # as torch's InferenceMode(mode): inference on means grad off; inference_mode(False) turns
        # inference mode off and grad mode on inside, even within no_grad or inference_mode
        from ember import _tensor
        self._prev = (STATE.enabled, STATE.inference)
        set_enabled(not self.mode)
        STATE.inference = bool(self.mode)
        _tensor.INFERENCE_OPEN += 1   # tensors made inside are marked (Tensor.is_inference)

    def __exit__(self, *exc):
        from ember import _tensor
        set_enabled(self._prev[0])
        STATE.inference = self._prev[1]
        _tensor.INFERENCE_OPEN -= 1
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper
