"""Graph passes: each a function `graph -> graph` (it edits the graph in place and returns it).

`run_passes(graph, names)` runs a pipeline (None: DEFAULT); with EMBER_DEBUG=2 it prints the graph after
each pass.
"""
from __future__ import annotations

import sys

from .. import _debug

__all__ = ["dce", "run_passes", "DEFAULT", "PASSES"]


def dce(graph):
    """Dead-code elimination: drop pure nodes none of whose outputs is used (walking backwards, so a
    chain dies at once). In-place writes and random draws stay."""
    live = {v.id for v in graph.roots()}
    keep = []
    for n in reversed(graph.nodes):
        if n.pure and not any(o.id in live for o in n.outputs):
            continue
        keep.append(n)
        live.update(v.id for v in n.inputs)
    graph.nodes = keep[::-1]
    used = live
    graph.leaves = [v for v in graph.leaves if v.id in used or v.kind in ("input",)]
    return graph


PASSES = {"dce": dce}
DEFAULT = ["dce"]


def run_passes(graph, names=None):
    names = DEFAULT if names is None else names
    for name in names:
        fn = PASSES[name] if isinstance(name, str) else name
        if isinstance(name, str) and name not in PASSES:
            raise ValueError(f"ember.compile: unknown pass {name!r}; passes: {', '.join(PASSES)}")
        fn(graph)
        if _debug.LEVEL >= 2:
            sys.stderr.write(f"ember: graph after {getattr(fn, '__name__', name)}:\n{graph}\n")
    return graph
