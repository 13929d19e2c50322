"""Datasets, samplers and the DataLoader, with ``torch.utils.data``'s names and semantics.

Example:
    >>> import ember
    >>> from ember.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ember.zeros((10, 3)), ember.arange(10))
    >>> [tuple(x.shape) for x, _ in DataLoader(ds, batch_size=4)]
    [(4, 3), (4, 3), (2, 3)]
"""
from ember.utils.data.collate import default_collate, default_convert
from ember.utils.data.dataloader import DataLoader
from ember.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                                      Subset, TensorDataset, random_split)
from ember.utils.data.distributed import DistributedSampler
from ember.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                                      SubsetRandomSampler, WeightedRandomSampler)
from ember.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler", "DistributedSampler", "default_collate", "default_convert", "DataLoader",
    "WorkerInfo", "get_worker_info",
]
