"""Map-style and iterable datasets, and the ways to combine and split them (``torch.utils.data``'s API)."""
from __future__ import annotations

import bisect
import math
import warnings
from typing import Generic, Iterable, Iterator, List, Sequence, TypeVar, Union

import ember
from ember.utils.data import _rng

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "StackDataset",
    "ConcatDataset",
    "ChainDataset",
    "Subset",
    "random_split",
]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len-1``) to samples. Subclasses define ``__getitem__`` and ``__len__``.

    A subclass may also define ``__getitems__(indices) -> list`` to fetch a whole batch at once; the
    DataLoader then calls it instead of ``__getitem__`` per index.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self): return 4
        ...     def __getitem__(self, i): return i * i
        >>> [Squares()[i] for i in range(4)]
        [0, 1, 4, 9]
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples. Subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker gets a copy of the dataset; use :func:`get_worker_info` inside
    ``__iter__`` to give each worker its own share, or every sample is produced once per worker.

    Example:
        >>> class Count(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self):
        ...         info = ember.utils.data.get_worker_info()
        ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(start, self.n, step))
        >>> list(Count(5))
        [0, 1, 2, 3, 4]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: "Dataset") -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of tensors that share their first dimension.

    Example:
        >>> x, y = ember.zeros((4, 3)), ember.tensor([0, 1, 0, 1])
        >>> ds = TensorDataset(x, y)
        >>> len(ds), ds[1][1].item()
        (4, 1)
    """

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0] if len(tensors[0].shape) else None
        for i, t in enumerate(tensors):
            if len(t.shape) == 0 or t.shape[0] != n:
                sizes = [tuple(x.shape)[:1] for x in tensors]
                raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes} (tensor {i} differs)")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Several datasets of one length side by side: sample i is the tuple (positional datasets) or the dict
    (keyword datasets) of their i-th samples.

    Example:
        >>> a, b = TensorDataset(ember.tensor([1, 2])), TensorDataset(ember.tensor([3, 4]))
        >>> ds = StackDataset(a, b)
        >>> len(ds), ds[1][1][0].item()
        (2, 4)
        >>> sorted(StackDataset(x=a, y=b)[0])
        ['x', 'y']
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            lengths = [len(d) for d in parts]
            raise ValueError(f"Size mismatch between datasets: lengths {lengths}")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def _column(self, dataset, indices: List[int]) -> list:
        """The samples of one stacked dataset at `indices`, batched when it has `__getitems__`."""
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got "
                                 f"{len(items)}")
            return list(items)
        return [dataset[i] for i in indices]

    def __getitems__(self, indices: List[int]) -> list:
        if isinstance(self.datasets, dict):
            columns = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        columns = [self._column(d, indices) for d in self.datasets]
        return [tuple(col[j] for col in columns) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of several map-style datasets.

    Example:
        >>> ds = ConcatDataset([TensorDataset(ember.zeros((2, 1))), TensorDataset(ember.ones((3, 1)))])
        >>> len(ds), ds.cumulative_sizes, ds[4][0].item()
        (5, [2, 5], 1.0)
    """

    @staticmethod
    def cumsum(sequence) -> List[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: absolute value of index {idx} exceeds dataset length {len(self)}")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"ConcatDataset: index {idx} out of range for length {len(self)}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The concatenation of several iterable datasets, chained lazily.

    Example:
        >>> class R(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        >>> list(ChainDataset([R(2), R(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Example:
        >>> ds = Subset(TensorDataset(ember.tensor([10, 11, 12, 13])), [3, 0])
        >>> len(ds), ds[0][0].item()
        (2, 13)
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: List[int]) -> list:
        # Forward batched fetches when the wrapped dataset supports them.
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[Union[int, float]], generator=None) -> List[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    With fractions, ``floor(len * frac)`` samples each, and the remainder is handed out one by one
    round-robin from the first subset, as torch does.

    Example:
        >>> g = ember.Generator(); _ = g.manual_seed(0)
        >>> train, val = random_split(TensorDataset(ember.zeros((10, 2))), [0.8, 0.2], generator=g)
        >>> len(train), len(val)
        (8, 2)
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1: {frac}")
            subset_lengths.append(int(math.floor(n * frac)))
        remainder = n - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        for i, length in enumerate(subset_lengths):
            if length == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this split will be empty")
        lengths = subset_lengths
    if any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative integers or fractions summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the input dataset ({n})"
        )
    if generator is None:
        perm = ember.randperm(n).tolist()
    else:
        perm = _rng.randperm(n, generator)
    out, offset = [], 0
    for length in lengths:
        length = int(length)
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out
