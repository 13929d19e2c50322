"""The one entry point for computation on tensor data, and the modes that can intercept it.

Every primitive call goes through `dispatch(prim, inputs, attrs)` (spelled `Prim.apply(*inputs,
**attrs)` in the ops): the primitive's forward runs on the inputs' backend arrays and, with grad mode
on, a graph node is recorded. A *dispatch mode*, as torch's `TorchDispatchMode`, sees each call first:

    class Count(DispatchMode):
        def __ember_dispatch__(self, prim, inputs, attrs):
            self.n = getattr(self, "n", 0) + 1
            return prim.apply(*inputs, **attrs)      # run it (this mode is popped meanwhile)

    with Count() as c:
        model(x).sum().backward()

Modes stack per thread; while a mode's `__ember_dispatch__` runs, that mode is off the stack, so the
calls it makes go to the mode below it (or straight to the backend). `ACTIVE` counts the modes open in
all threads: while it is zero the hot path reads one list and skips the thread-local stack.
"""
from __future__ import annotations

from .grad_mode import STATE

__all__ = ["dispatch", "DispatchMode", "current_modes", "attrs_key", "check_attrs", "AttrCheck"]

# One entry per mode open in any thread (list.append/pop are atomic under the GIL).
ACTIVE: list = []


def dispatch(prim, inputs, attrs):
    """Run primitive `prim` (a Primitive subclass) on `inputs` (Tensors) with `attrs` (a dict of
    hashable values). Returns a Tensor (or a tuple for multi-output primitives)."""
    return prim.apply(*inputs, **attrs)


def attrs_key(attrs: dict):
    """A hashable key for a call's attributes (a trace or cache key): the sorted items, with slices
    (unhashable before Python 3.12) as ('slice', start, stop, step). Raises TypeError for anything
    else unhashable, which would be a data-valued attribute that belongs among the inputs."""
    return tuple(sorted((k, _hashable(v)) for k, v in attrs.items()))


def _hashable(v):
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, (tuple, list)):
        return tuple(_hashable(x) for x in v)
    hash(v)
    return v


def _stack() -> list:
    s = STATE.__dict__.get("modes")
    if s is None:
        s = STATE.modes = []
    return s


def current_modes() -> tuple:
    """The modes open in this thread, innermost last."""
    return tuple(_stack())


def to_mode(prim, inputs, attrs):
    """Called by `Primitive.apply` when a mode is open in this thread: hand the call to the innermost
    mode, with that mode popped while it decides."""
    stack = _stack()
    mode = stack.pop()
    ACTIVE.pop()
    try:
        return mode.__ember_dispatch__(prim, inputs, attrs)
    finally:
        stack.append(mode)
        ACTIVE.append(None)


def mode_open() -> bool:
    """Whether this thread has a dispatch mode open (the cheap global check first)."""
    return bool(ACTIVE) and bool(STATE.__dict__.get("modes"))


class DispatchMode:
    """Base class of dispatch modes: a context manager whose `__ember_dispatch__(prim, inputs, attrs)`
    sees every primitive call made in this thread while it is open, and returns the call's result.

    `prim` is the Primitive class (its name: `prim.__name__`), `inputs` the tuple of input Tensors,
    `attrs` the dict of its static attributes. The default runs the call unchanged.
    """

    def __ember_dispatch__(self, prim, inputs, attrs):
        return prim.apply(*inputs, **attrs)

    def backward_started(self):
        """Called when a backward pass starts in this thread while the mode is open. A no-op here."""

    def __enter__(self):
        _stack().append(self)
        ACTIVE.append(None)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if not stack or stack[-1] is not self:
            raise RuntimeError(f"{type(self).__name__}: dispatch modes must be exited in the reverse order "
                               f"they were entered")
        stack.pop()
        ACTIVE.pop()
        return False


def _type_names(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(getattr(t, "describe", t.__name__) for t in types)


def check_attrs(prim, attrs: dict) -> None:
    """Check a call's attributes against the primitive's declared `attrs` (name -> accepted type or
    tuple of types): an undeclared name or a value of another type raises TypeError naming the
    primitive; so does an unhashable value (see `attrs_key`). Not run on the hot path: `AttrCheck`
    runs it on every call, and `Primitive.apply` does when EMBER_DEBUG is set."""
    declared = prim.__dict__.get("attrs")
    if declared is None:
        declared = getattr(prim, "attrs", None)
    if declared is None:
        raise TypeError(f"{prim.__name__}: the primitive declares no `attrs` (name -> type of each attribute)")
    for name, value in attrs.items():
        types = declared.get(name) if isinstance(declared, dict) else None
        if types is None:
            allowed = ", ".join(sorted(declared)) or "none"
            raise TypeError(f"{prim.__name__}: unknown attribute {name!r}; allowed attributes: {allowed}")
        if not isinstance(value, types):
            raise TypeError(f"{prim.__name__}: attribute {name!r} expects {_type_names(types)}, "
                            f"got {type(value).__name__} ({value!r:.80})")
    try:
        attrs_key(attrs)
    except TypeError as e:
        raise TypeError(f"{prim.__name__}: attributes must be hashable (data belongs among the inputs): "
                        f"{e}") from None


class AttrCheck(DispatchMode):
    """A dispatch mode that checks every call's attributes (`check_attrs`) before running it; a test
    tool (`with AttrCheck() as m: step()`; `m.calls` counts the calls checked)."""

    def __init__(self):
        self.calls = 0

    def __ember_dispatch__(self, prim, inputs, attrs):
        check_attrs(prim, attrs)
        self.calls += 1
        return prim.apply(*inputs, **attrs)
