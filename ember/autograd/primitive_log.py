"""`PrimitiveLog`: a dispatch mode that records every primitive call, and can replay them.

    log = PrimitiveLog()
    with log:
        loss = model(x).sum(); loss.backward(); opt.step(); opt.zero_grad()
    print(log.counts())                  # {'Linear': 2, 'LinearBackward...': ..., 'Assign': 12, ...}
    values = log.replay()                # the whole region again, on copies of its initial arrays
    values[model.weight]                 # == model.weight's array after the eager step, bit for bit

Values are named by the identity of their backend array. An array first seen as an input (a parameter,
the batch, an optimizer buffer made before the region) is an *initial* value: the log copies it when it
first sees it. Every other array is made by a logged call. The log keeps every array it saw alive, so
an identity is never reused while the log exists. Replay runs the same primitives on copies of the
initial values under no_grad; if anything in the region computed on tensor data without a primitive
call, the replayed values differ from the eager ones (that is what the log's tests check).
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from .dispatch import DispatchMode

if TYPE_CHECKING:
    from .function import Primitive

__all__ = ["PrimitiveLog", "Call"]


class Call(NamedTuple):
    prim: type[Primitive]
    inputs: tuple       # value ids
    attrs: dict
    outputs: tuple      # value ids

    @property
    def name(self) -> str:
        return self.prim.__name__


class PrimitiveLog(DispatchMode):
    """Record every primitive call made in this thread while open (see the module doc)."""

    def __init__(self):
        self.calls: list[Call] = []
        self._arrays = {}     # value id -> array (kept alive so ids stay unique)
        self._devices = {}    # value id -> device
        self._initial = {}    # value id -> copy of the array when first seen as an input

    def __ember_dispatch__(self, prim, inputs, attrs):
        ins = tuple(self._see(t, initial=True) for t in inputs)
        out = prim.apply(*inputs, **attrs)
        outs = tuple(self._see(t, initial=False) for t in (out if isinstance(out, tuple) else (out,)))
        self.calls.append(Call(prim, ins, dict(attrs), outs))
        return out

    def _see(self, t, initial):
        a = t._data
        k = id(a)
        if k not in self._arrays:
            self._arrays[k] = a
            self._devices[k] = t._device
            if initial:
                self._initial[k] = a.copy()
        return k

    def __len__(self):
        return len(self.calls)

    def counts(self) -> Counter:
        """How many calls of each primitive."""
        return Counter(c.name for c in self.calls)

    def replay(self) -> "Replayed":
        """Run the logged calls again on copies of the initial values; returns the values."""
        from .._tensor import Tensor
        from .grad_mode import no_grad
        env = {k: a.copy() for k, a in self._initial.items()}
        with no_grad():
            for c in self.calls:
                ins = [Tensor._make(env[k], self._devices[k]) for k in c.inputs]
                out = c.prim.apply(*ins, **c.attrs)
                for k, o in zip(c.outputs, out if isinstance(out, tuple) else (out,)):
                    env[k] = o._data
        return Replayed(env)


class Replayed:
    """The values a replay computed, looked up by the eager tensor that holds the same value."""

    def __init__(self, env):
        self._env = env

    def __getitem__(self, tensor):
        try:
            return self._env[id(tensor._data)]
        except KeyError:
            raise KeyError("PrimitiveLog.replay: this tensor's array was not seen by the log (made "
                           "outside the logged region, or rebound to a new array without a primitive)") \
                from None

    def __contains__(self, tensor):
        return id(tensor._data) in self._env
