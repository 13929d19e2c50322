"""Samplers: the order in which a DataLoader visits a map-style dataset (``torch.utils.data``'s API)."""
from __future__ import annotations

from typing import Generic, Iterable, Iterator, List, Optional, Sequence, Sized, TypeVar, Union

import numpy as np

import ember
from ember.utils.data import _rng

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: an iterable over dataset keys, optionally with ``__len__``."""

    def __init__(self, data_source: Optional[Sized] = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _check_bool(name: str, value, error=ValueError) -> None:
    # torch raises TypeError for RandomSampler's flag and ValueError elsewhere; we follow it.
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value!r}")


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")


class RandomSampler(Sampler[int]):
    """A random permutation of the dataset (or ``num_samples`` draws with replacement).

    Without replacement and with ``num_samples > len``, whole permutations are concatenated. With no
    ``generator``, a fresh seed is drawn from ember's global RNG each epoch, so ``ember.manual_seed``
    makes the order reproducible.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> sorted(RandomSampler(range(5)))
        [0, 1, 2, 3, 4]
        >>> len(list(RandomSampler(range(5), replacement=True, num_samples=12)))
        12
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: Optional[int] = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("replacement", replacement, TypeError)
        _check_positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = _rng.new_generator(_rng.draw_seed())
        if self.replacement:
            # Chunks of 32 like torch, so a partially consumed epoch draws little.
            for _ in range(self.num_samples // 32):
                yield from _rng.randint(n, 32, generator)
            yield from _rng.randint(n, self.num_samples % 32, generator)
        else:
            for _ in range(self.num_samples // n):
                yield from _rng.randperm(n, generator)
            yield from _rng.randperm(n, generator)[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order.

    Example:
        >>> sorted(SubsetRandomSampler([7, 3, 5]))
        [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        if self.generator is None:
            perm = ember.randperm(len(self.indices)).tolist()
        else:
            perm = _rng.randperm(len(self.indices), self.generator)
        for i in perm:
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (which need not sum to 1).

    Example:
        >>> set(WeightedRandomSampler([0.0, 1.0, 0.0], 5))
        {1}
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        _check_positive_int("num_samples", num_samples)
        _check_bool("replacement", replacement)
        w = weights.numpy() if ember.is_tensor(weights) else np.asarray(weights)
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not replacement and num_samples > len(w):
            raise ValueError(f"WeightedRandomSampler: cannot draw num_samples={num_samples} > {len(w)} weights "
                             "without replacement")
        self.weights = ember.tensor(w, dtype=ember.float64)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from _rng.multinomial(self.weights, self.num_samples, self.replacement, self.generator)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[List[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Union[Sampler[int], Iterable[int]], batch_size: int, drop_last: bool) -> None:
        _check_positive_int("batch_size", batch_size)
        _check_bool("drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
