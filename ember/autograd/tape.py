"""`ember.GradientTape`: TensorFlow's way of asking for gradients, on Ember's autograd.

>>> x = ember.tensor(3.0)
>>> with ember.GradientTape() as tape:
...     tape.watch(x)
...     y = x * x
>>> tape.gradient(y, x)
tensor(6.)

Inside the tape, every op records the graph; watched tensors (and every tensor that already
requires grad) are the sources you can differentiate with respect to. Tapes nest: a gradient taken
inside an outer tape is itself recorded, so the outer tape can differentiate it again (Hessians).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .grad_mode import set_enabled

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["GradientTape"]


class _Recording(threading.local):
    """The tapes whose `with` block is running in this thread, innermost last (per thread, as
    TensorFlow's tape stack: a tape in another thread does not record this thread's gradients)."""

    def __init__(self):
        self.tapes = []


_RECORDING = _Recording()


class GradientTape:
    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        # watch_accessed_variables is accepted for TensorFlow's signature only: a tensor that requires
        # grad is always a source here (Ember has no separate trainable-variable type to leave unwatched)
        self.persistent = persistent
        self._watched: list[Tensor] = []
        self._used = False

    def __enter__(self):
        self._prev = set_enabled(True)
        _RECORDING.tapes.append(self)
        return self

    def __exit__(self, *exc):
        set_enabled(self._prev)
        _RECORDING.tapes.remove(self)
        return False

    def watch(self, tensor) -> None:
        """Track `tensor` (or a list of them) as a source. Ember records graphs through
        `requires_grad`, so this sets `requires_grad=True` on it (it stays a leaf)."""
        for t in (tensor if isinstance(tensor, (list, tuple)) else [tensor]):
            if not t.dtype.is_floating_point:
                raise TypeError(f"GradientTape.watch: only floating point tensors can be watched, "
                                f"got {t.dtype.name}")
            if not t.requires_grad:
                t.requires_grad = True
            self._watched.append(t)

    def watched_variables(self):
        return tuple(self._watched)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(target)/d(sources) (of the sum of target's elements); sources may be a tensor, list or
        dict. Unconnected sources give None (or zeros with unconnected_gradients='zero')."""
        from . import grad
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: unconnected_gradients must be 'none' or 'zero', "
                             f"got {unconnected_gradients!r}")
        if self._used and not self.persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on a non-persistent tape; "
                               "use GradientTape(persistent=True)")
        self._used = True
        if isinstance(sources, dict):
            keys, flat = list(sources), list(sources.values())
        else:
            flat = list(sources) if isinstance(sources, (list, tuple)) else [sources]
        targets = target if isinstance(target, (list, tuple)) else [target]
        outer = any(t is not self for t in _RECORDING.tapes)   # an enclosing tape records this gradient
        if output_gradients is None:   # as TensorFlow: a non-scalar target means the gradient of its sum
            from ..ops.creation import ones_like
            output_gradients = [ones_like(t) for t in targets]
        grads = grad(targets, flat, grad_outputs=output_gradients, retain_graph=self.persistent or outer,
                     create_graph=outer, allow_unused=True)
        if unconnected_gradients == "zero":
            from ..ops.creation import zeros_like
            grads = [g if g is not None else zeros_like(s) for g, s in zip(grads, flat)]
        if isinstance(sources, dict):
            return dict(zip(keys, grads))
        return list(grads) if isinstance(sources, (list, tuple)) else grads[0]

    def jacobian(self, target, source):
        """The Jacobian d(target)/d(source) of shape target.shape + source.shape."""
        from . import grad
        from ..ops.shape import stack
        from ..ops.creation import zeros_like
        flat = target.reshape(-1)
        rows = []
        for i in range(flat.shape[0]):
            g, = grad(flat[i], [source], retain_graph=True, allow_unused=True)
            rows.append(g if g is not None else zeros_like(source))
        return stack(rows).reshape(tuple(target.shape) + tuple(source.shape))
