"""Random numbers: ember.manual_seed, ember.Generator and the sampling functions.

A Generator wraps a NumPy `Generator` (PCG64). Samples are drawn on the host and moved to the
target device, so a seed gives the same numbers on every device.
"""
from __future__ import annotations

import numpy as np

from . import _dtype
from ._tensor import Tensor

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
           "multinomial", "rand_like", "randn_like", "randint_like", "poisson"]


class Generator:
    """A source of random numbers with its own state (torch.Generator).

    >>> g = ember.Generator().manual_seed(0)
    >>> ember.rand(2, generator=g).shape
    (2,)
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self._np = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> "Generator":
        seed = int(seed)
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed & ((1 << 128) - 1)))
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        return dict(self._np.bit_generator.state, _seed=self._seed)

    def set_state(self, state) -> "Generator":
        state = dict(state)
        self._seed = state.pop("_seed", self._seed)
        self._np.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and so every random op that gets no generator)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


def _rng(generator):
    return (generator or default_generator)._np


def _out(arr, dtype, device, requires_grad=False):
    from .ops.creation import _from_host, _resolve_device
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = _from_host(arr.astype(dt.np, copy=False), _resolve_device(device))
    return t.requires_grad_(True) if requires_grad else t


def _meta_empty(size, dtype, device, requires_grad):
    from .ops.creation import empty
    return empty(*_size(size), dtype=dtype, device=device, requires_grad=requires_grad)


def _size(size):
    from .ops.creation import _size as s
    return s(size)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples from [0, 1)."""
    if device is not None and str(device) == "meta":   # no values to draw
        return _meta_empty(size, dtype, device, requires_grad)
    return _out(_rng(generator).random(_size(size)), dtype, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    if device is not None and str(device) == "meta":   # no values to draw
        return _meta_empty(size, dtype, device, requires_grad)
    return _out(_rng(generator).standard_normal(_size(size)), dtype, device, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Integers uniformly from [low, high); `randint(high, size)` also works, as in torch."""
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError(f"randint: expects 'low' < 'high', got low={low}, high={high}")
    return _out(_rng(generator).integers(low, high, size=tuple(size)), dtype or _dtype.int64, device)


def randperm(n, *, generator=None, dtype=None, device=None) -> Tensor:
    return _out(_rng(generator).permutation(n), dtype or _dtype.int64, device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = np.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        ref = mean if isinstance(mean, Tensor) else std
        z = randn(*shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return z * std + mean
    return _out(_rng(generator).normal(mean, std, size=tuple(size)), dtype, device)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    probs = input._data if p is None else p
    host = np.asarray(probs.get() if hasattr(probs, "get") else probs)
    u = _rng(generator).random(input.shape)
    return _out(u < host, input.dtype, input.device)


def poisson(input, generator=None) -> Tensor:
    return _out(_rng(generator).poisson(np.asarray(input.detach().cpu()._data)), input.dtype, input.device)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Sample indices by the (unnormalised) weights in each row of `input`."""
    w = np.asarray(input.detach().cpu()._data, dtype=np.float64)
    if (w < 0).any() or not np.isfinite(w).all():
        raise RuntimeError("multinomial: probability tensor contains either inf, nan or element < 0")
    rows = w.reshape(-1, w.shape[-1])
    rng = _rng(generator)
    out = []
    for r in rows:
        if r.sum() <= 0:
            raise RuntimeError("multinomial: invalid probability distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(r):
            raise RuntimeError(f"multinomial: cannot sample n_sample={num_samples} > prob_dist.size(-1) "
                               f"non-zero categories without replacement")
        out.append(rng.choice(len(r), size=num_samples, replace=replacement, p=r / r.sum()))
    res = np.stack(out).reshape(w.shape[:-1] + (num_samples,))
    return _out(res, _dtype.int64, input.device)


def rand_like(input, *, dtype=None, device=None) -> Tensor:
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None) -> Tensor:
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randint_like(input, low=0, high=None, *, dtype=None, device=None) -> Tensor:
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)
