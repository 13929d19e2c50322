"""Whether operations record the graph: no_grad, enable_grad, set_grad_enabled, inference_mode."""
from __future__ import annotations

import functools

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State:
    enabled = True
    inference = False


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _Mode:
    """Base of the grad-mode context managers; each also works as a decorator."""
    _target = True

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._target

    def __exit__(self, *exc):
        STATE.enabled = self._prev
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
        self._prev = STATE.enabled
        self._target = bool(mode)
        STATE.enabled = self._target

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        target = self._target
        STATE.enabled = self._prev  # used as a decorator: undo the immediate effect

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
        self._prev = (STATE.enabled, STATE.inference)
        if self.mode:
            STATE.enabled, STATE.inference = False, True

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._prev
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper
