# Random draws for augmentations, from ember's global RNG, so that ember.manual_seed (and the DataLoader's
# per-worker seeding) makes them reproducible. One NumPy call per draw keeps per-sample overhead small.
from typing import Optional, Tuple, Union

import numpy as np

import ember


def _numpy_generator() -> Optional[np.random.Generator]:
    g = getattr(ember, "default_generator", None)
    if g is None:
        g = getattr(getattr(ember, "random", None), "default_generator", None)
    np_g = getattr(g, "_np", None)
    return np_g if isinstance(np_g, np.random.Generator) else None


def uniform(low: float, high: float, size: Optional[int] = None) -> Union[float, np.ndarray]:
    """``low + (high - low) * U[0, 1)``; a float, or an array of ``size`` draws."""
    g = _numpy_generator()
    n = 1 if size is None else size
    u = g.random(n) if g is not None else np.asarray(ember.rand(n).tolist(), dtype=np.float64)
    out = low + (high - low) * u
    return float(out[0]) if size is None else out


def randint(low: int, high: int, size: Optional[int] = None) -> Union[int, np.ndarray]:
    """Integers in ``[low, high)``; an int, or an array of ``size`` draws."""
    g = _numpy_generator()
    n = 1 if size is None else size
    if g is not None:
        out = g.integers(low, high, n)
    else:
        out = np.asarray(ember.randint(low, high, (n,)).tolist(), dtype=np.int64)
    return int(out[0]) if size is None else out


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
