# Random draws for augmentations, from ember's global RNG, so that ember.manual_seed (and the DataLoader's
# per-worker seeding) makes them reproducible. One NumPy call per draw keeps per-sample overhead small.
from typing import Optional, Tuple, Union

import numpy as np

import ember


def _numpy_generator() -> Optional[np.random.Generator]:
    # Augmentations sample on the host on purpose (they run per sample in the data pipeline, on NumPy
    # images): the NumPy generator ember's default generator derives from its (seed, offset)
    g = getattr(ember, "default_generator", None)
    if g is None:
        g = getattr(getattr(ember, "random", None), "default_generator", None)
    get = getattr(g, "numpy_generator", None)
    return get() if get is not None else None


def uniform(low: float, high: float, size: Optional[int] = None) -> Union[float, np.ndarray]:
    """``low + (high - low) * U[0, 1)``; a float, or an array of ``size`` draws."""
    g = _numpy_generator()
    if size is None:  # the scalar path is the per-sample hot path: one cheap call
        u = g.random() if g is not None else float(ember.rand(1).item())
        return low + (high - low) * u
    u = g.random(size) if g is not None else np.asarray(ember.rand(size).tolist(), dtype=np.float64)
    return low + (high - low) * u


def randint(low: int, high: int, size: Optional[int] = None) -> Union[int, np.ndarray]:
    """Integers in ``[low, high)``; an int, or an array of ``size`` draws."""
    g = _numpy_generator()
    if g is None:
        out = np.asarray(ember.randint(low, high, (1 if size is None else size,)).tolist(), dtype=np.int64)
        return int(out[0]) if size is None else out
    if size is None:
        return int(g.integers(low, high))
    return g.integers(low, high, size)


def permutation(n: int) -> np.ndarray:
    g = _numpy_generator()
    if g is not None:
        return g.permutation(n)
    return np.asarray(ember.randperm(n).tolist())


def pair(x, name: str) -> Tuple[int, int]:
    if isinstance(x, (int, np.integer)):
        return int(x), int(x)
    if len(x) == 1:
        return int(x[0]), int(x[0])
    if len(x) != 2:
        raise ValueError(f"{name} should be an int or a sequence of 1 or 2 ints, got {x!r}")
    return int(x[0]), int(x[1])
