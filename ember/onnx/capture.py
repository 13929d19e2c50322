"""Capture the primitives a forward pass runs, as a small graph the ONNX writer reads.

    g = capture(model, args)                # runs model(*args) once under a dispatch mode
    g.calls                                 # [Call(prim, inputs, attrs, outputs, where)], in order
    g.leaves                                # value id -> the array a call read but no call made

This is the only place that knows how a graph is captured: when the compiler's IR (ember.jit) lands it
can produce the same `Graph` and the rest of ember.onnx does not change.

Values are numbered in the order they are first seen (so two captures of the same program at two
batch sizes give the same numbers, which is how `export` finds what depends on a dynamic axis). A
backend array is a value; an in-place write (`Assign`) returns its destination's array, which then
becomes a new value (SSA), so the graph stays a pure data flow.
"""
from __future__ import annotations

from typing import NamedTuple

from .._errors import user_frame
from ..autograd.dispatch import DispatchMode

__all__ = ["Call", "Graph", "capture"]


class Call(NamedTuple):
    prim: type          # the Primitive class
    inputs: tuple       # value ids
    attrs: dict
    outputs: tuple      # value ids
    where: str          # the user's 'file.py:LINE' that made the call
    scope: str = ""     # the innermost module running it: "blocks.0.attn (MultiheadAttention)"

    @property
    def name(self) -> str:
        return self.prim.__name__


class Graph:
    """What one capture saw: calls, each value's shape and dtype, the leaf arrays, the outputs."""

    def __init__(self):
        self.calls: list[Call] = []
        self.shapes: dict = {}      # value id -> tuple
        self.dtypes: dict = {}      # value id -> numpy dtype
        self.leaves: dict = {}      # value id -> the array (read by a call, made by none)
        self.inputs: list = []      # value id of each positional argument
        self.outputs: list = []     # value id of each output tensor (flattened)
        self.skipped: list = []     # Calls not run: in-place writes into a parameter or buffer


class _Capture(DispatchMode):
    def __init__(self, graph: Graph, protected: set):
        self.g = graph
        self.protected = protected   # ids of parameter and buffer arrays: never written during export
        self.current = {}            # id(array) -> value id holding it now
        self.alive = []              # every array seen, so an id() is never reused during the capture
        self.scopes = []             # the module path being run (forward pre/post hooks push and pop)

    def value(self, t, leaf=True):
        a = t._data
        v = self.current.get(id(a))
        if v is None:
            v = self._new(a)
            if leaf:
                self.g.leaves[v] = a
        return v

    def _new(self, a):
        v = len(self.g.shapes)
        self.current[id(a)] = v
        self.alive.append(a)
        self.g.shapes[v] = tuple(a.shape)
        self.g.dtypes[v] = a.dtype
        return v

    def __ember_dispatch__(self, prim, inputs, attrs):
        ins = tuple(self.value(t) for t in inputs)
        where = user_frame()
        scope = self.scopes[-1] if self.scopes else ""
        if prim.__name__ == "Assign" and id(inputs[0]._data) in self.protected:
            # a write into the model's state: export must leave the model unchanged, so it is not run
            # (and export reports it as unsupported)
            self.g.skipped.append(Call(prim, ins, dict(attrs), (), where, scope))
            return inputs[0]
        out = prim.apply(*inputs, **attrs)
        outs = []
        for t in out if isinstance(out, tuple) else (out,):
            a = t._data
            # a fresh array, or an old one written in place (Assign returns its destination): a new value
            outs.append(self._new(a))
        self.g.calls.append(Call(prim, ins, dict(attrs), tuple(outs), where, scope))
        return out


    def opaque(self, module, forward, args, kwargs):
        """Run a whole module as one call (its own primitives unrecorded): the call's prim is the
        module's class, its inputs and outputs the tensors it takes and returns, flattened."""
        from .._tensor import Tensor
        ins = [t for t in _flatten((args, tuple(kwargs.values())), strict=False) if isinstance(t, Tensor)]
        vids = tuple(self.value(t) for t in ins)
        where, scope = user_frame(), self.scopes[-1] if self.scopes else ""
        self.__exit__(None, None, None)
        try:
            out = forward(*args, **kwargs)
        finally:
            self.__enter__()
        outs = tuple(self._new(t._data) for t in _flatten(out))
        self.g.calls.append(Call(type(module), vids, {"module": module}, outs, where, scope))
        return out


def _flatten(out, path="output", strict=True):
    """The tensors of a (nested) tuple/list output, in order."""
    from .._tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for i, o in enumerate(out) for t in _flatten(o, f"{path}[{i}]", strict)]
    if not strict:
        return []
    raise TypeError(f"ember.onnx.export: the model returned {path} = {type(out).__name__} ({out!r:.60}); "
                    f"only tensors and (nested) tuples or lists of tensors can be graph outputs")


def capture(fn, args: tuple, protected: set, opaque: tuple = ()) -> Graph:
    """Run fn(*args) under no_grad and record every primitive call. `protected` holds the ids of the
    arrays (parameters, buffers) that must not be written; submodules of the classes in `opaque` are
    recorded as one call each (their class as the prim: nn.LSTM becomes ONNX's LSTM)."""
    from ..autograd.grad_mode import no_grad
    g = Graph()
    mode = _Capture(g, protected)
    for a in _flatten(args, "args"):       # a (nested) tuple argument: one input per tensor
        g.inputs.append(mode.value(a))
    def enter(module, args):
        mode.scopes.append(labels[id(module)])

    def leave(module, args, out):
        mode.scopes.pop()          # (a forward hook that returned a value would replace the output)

    def opaque_forward(module):
        forward = module.forward
        return lambda *a, **k: mode.opaque(module, forward, a, k)

    labels, handles, wrapped = {}, [], []
    if hasattr(fn, "named_modules"):
        for name, m in fn.named_modules():
            if name:    # the model itself: the user's line says enough
                labels[id(m)] = f"{name} ({type(m).__name__})"
                handles += [m.register_forward_pre_hook(enter), m.register_forward_hook(leave)]
            if type(m) in opaque and "forward" not in m.__dict__:
                object.__setattr__(m, "forward", opaque_forward(m))    # the instance's, for this capture
                wrapped.append(m)
    try:
        with no_grad(), mode:
            out = fn(*args)
    finally:
        for h in handles:
            h.remove()
        for m in wrapped:
            del m.__dict__["forward"]
    g.outputs = [mode.value(t) for t in _flatten(out)]
    g.output_count = len(g.outputs)
    return g
