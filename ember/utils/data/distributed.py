"""DistributedSampler: each of ``num_replicas`` processes sees its own share of the dataset."""
from __future__ import annotations

import math
from typing import Iterator, Optional

from ember.utils.data import _rng
from ember.utils.data.dataset import Dataset
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """Indices ``rank, rank + num_replicas, ...`` of a (shuffled, padded) permutation, as torch does.

    The permutation is seeded by ``seed + epoch``, so all replicas agree on it. Unlike torch, the sampler
    moves to the next epoch by itself after each ``iter()``, so forgetting ``set_epoch`` no longer repeats
    the same order every epoch; calling ``set_epoch(e)`` before each epoch (torch's idiom) still works
    and gives the same orders as it does in torch's scheme.

    Example:
        >>> s = DistributedSampler(range(10), num_replicas=2, rank=0, shuffle=False)
        >>> list(s)
        [0, 2, 4, 6, 8]
        >>> s = DistributedSampler(range(10), num_replicas=2, rank=1, seed=1)
        >>> first, second = list(s), list(s)   # reshuffled automatically
        >>> first != second and len(first) == 5
        True
    """

    def __init__(self, dataset: Dataset, num_replicas: Optional[int] = None, rank: Optional[int] = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist     # the process group, when one is initialized
            if not dist.is_initialized():
                raise ValueError("DistributedSampler: pass num_replicas and rank, or call "
                                 "ember.distributed.init_process_group() first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if num_replicas <= 0:
            raise ValueError(f"DistributedSampler: num_replicas should be positive, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = _rng.randperm(n, _rng.new_generator(self.seed + self.epoch))
        else:
            indices = list(range(n))
        self.epoch += 1  # reshuffle next time even without set_epoch
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` for the next ``iter()`` (torch's idiom; optional here)."""
        self.epoch = epoch
