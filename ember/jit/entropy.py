"""Random numbers drawn outside ember's random primitives, seen while a function is traced.

A trace records primitives; `np.random.randn(3)` or `random.random()` inside the traced function run
once, while tracing, and their results become constants of the graph: every replay would reuse the
first call's numbers. (`ember.rand`, dropout and the other random primitives are recorded and draw
fresh numbers at each replay: they are not this.) So `Watch`, open while the function is traced,
compares the states of the generators it could have drawn from before and after the call: NumPy's
global `RandomState`, Python's global `Random`, ember's host streams (`Generator.numpy_generator()`:
augmentations, `poisson`) and every generator the function reads (found by `capture.discover`). The
compiler runs a signature that drew from one eagerly, with a warning naming the generator
(`strict=True`: GuardError). A generator seeded and used inside the call gives the same numbers at each
call: its values are constants indeed.

Not seen: clocks (`time.time()` read into a tensor is baked in as well; documented in
docs/design-compiler.md) and generators reachable only through containers deeper than `discover` looks.
(A `sys.setprofile` hook sees clocks, but it made W5's trace 50% slower.)
"""
from __future__ import annotations

import random

import numpy as np

from .. import random as _ember_random

__all__ = ["Watch", "RNG_TYPES"]

RNG_TYPES = (random.Random, np.random.RandomState, np.random.Generator, _ember_random.Generator)


def _state(rng):
    if isinstance(rng, _ember_random.Generator):
        return rng._handouts                      # host streams handed out (its device draws are recorded)
    if isinstance(rng, random.Random):
        return rng.getstate()
    if isinstance(rng, np.random.Generator):
        return _plain(rng.bit_generator.state)
    return _plain(rng.get_state(legacy=False))    # RandomState


def _plain(state):
    """A bit generator's state dict as a comparable value (its arrays as bytes)."""
    if isinstance(state, dict):
        return tuple((k, _plain(v)) for k, v in state.items())
    return state.tobytes() if isinstance(state, np.ndarray) else state


class Watch:
    """Open while a function is traced; afterwards `found` lists the generators it drew from
    ("numpy.random's global generator drew numbers"). `rngs`: (generator, label) pairs of the
    generators the function reads, beside the global ones."""

    def __init__(self, rngs=()):
        self.rngs = [(random._inst, "Python's random module"),
                     (np.random.mtrand._rand, "numpy.random's global generator"),
                     (_ember_random.default_generator, "ember's host-side NumPy stream (numpy_generator(): "
                                                       "augmentations, poisson)")]
        for r, label in rngs:
            if all(r is not x for x, _ in self.rngs):
                self.rngs.append((r, f"{label} (a {type(r).__module__}.{type(r).__name__})"))

    def __enter__(self):
        self.before = [_state(r) for r, _ in self.rngs]
        return self

    def __exit__(self, *exc):
        self.found = [f"{label} drew numbers" for (r, label), s in zip(self.rngs, self.before) if _state(r) != s]
        return False
