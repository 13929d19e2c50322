"""Static graphs: trace a function into a typed IR, optimise it, replay it as generated code.

    step = ember.compile(train_step)       # traced on the first call, replayed afterwards
    traced = ember.jit.trace(model, x)     # print(traced.graph); traced.save(path)
    loaded = ember.jit.load(path)          # runs without the model's code

See docs/design-compiler.md.
"""
from .compiler import compile, trace, CompiledFunction, GuardError, CacheInfo
from .ir import Graph, Node, Value

__all__ = ["compile", "trace", "load", "CompiledFunction", "GuardError", "CacheInfo", "Graph", "Node", "Value"]


def load(path):
    """Load a graph saved by `traced.save(path)`; returns a callable (see ember.jit.serialize)."""
    from .serialize import load as _load
    return _load(path)
