"""Samplers: same index-stream semantics as torch's (exact where no randomness is involved)."""
from collections import Counter

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
from ember.utils.data import (BatchSampler, DataLoader, DistributedSampler, RandomSampler, Sampler,
                              SequentialSampler, SubsetRandomSampler, TensorDataset, WeightedRandomSampler)


def test_user_sampler_subclass_drives_the_loader():
    class EvensThenOdds(Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(list(range(0, self.n, 2)) + list(range(1, self.n, 2)))

        def __len__(self):
            return self.n

    ds = TensorDataset(ember.arange(7))
    loader = DataLoader(ds, batch_size=3, sampler=EvensThenOdds(7))
    assert [b[0].tolist() for b in loader] == [[0, 2, 4], [6, 1, 3], [5]]
    assert len(loader) == 3 and isinstance(RandomSampler(range(3)), Sampler)


def test_sequential_matches_torch():
    assert list(SequentialSampler(range(7))) == list(tud.SequentialSampler(range(7)))


@pytest.mark.parametrize("n,bs,drop", [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False)])
def test_batch_sampler_matches_torch(n, bs, drop):
    ours = BatchSampler(SequentialSampler(range(n)), bs, drop)
    theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("kwargs", [dict(batch_size=0, drop_last=False), dict(batch_size=2, drop_last=1)])
def test_batch_sampler_validation_like_torch(kwargs):
    with pytest.raises((ValueError, TypeError)) as ours:
        BatchSampler(range(3), **kwargs)
    with pytest.raises((ValueError, TypeError)) as theirs:
        tud.BatchSampler(range(3), **kwargs)
    assert "batch_size" in str(ours.value) or "drop_last" in str(ours.value)
    assert ours.type is theirs.type


@pytest.mark.parametrize("num_samples", [None, 5, 23, 40])
def test_random_sampler_without_replacement(num_samples):
    n = 10
    ours = list(RandomSampler(range(n), num_samples=num_samples))
    theirs = list(tud.RandomSampler(range(n), num_samples=num_samples))
    assert len(ours) == len(theirs)
    # torch's recipe: whole permutations, then a prefix of one more
    full = len(ours) // n
    for k in range(full):
        assert sorted(ours[k * n:(k + 1) * n]) == list(range(n))
    assert len(set(ours[full * n:])) == len(ours) - full * n


def test_random_sampler_with_replacement_and_validation():
    ours = list(RandomSampler(range(5), replacement=True, num_samples=100))
    assert len(ours) == 100 and set(ours) <= set(range(5)) and len(set(ours)) == 5
    for bad in (dict(num_samples=0), dict(replacement=1)):
        with pytest.raises((ValueError, TypeError)) as e1:
            RandomSampler(range(5), **bad)
        with pytest.raises((ValueError, TypeError)) as e2:
            tud.RandomSampler(range(5), **bad)
        assert e1.type is e2.type


def test_random_sampler_seeding():
    ember.manual_seed(0)
    a = list(RandomSampler(range(20)))
    b = list(RandomSampler(range(20)))
    ember.manual_seed(0)
    assert list(RandomSampler(range(20))) == a and a != b  # a new order each epoch, reproducible
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    assert list(RandomSampler(range(20), generator=g1)) == list(RandomSampler(range(20), generator=g2))


def test_subset_random_sampler():
    idx = [3, 8, 11, 20]
    out = list(SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(1)))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0]
    out = list(WeightedRandomSampler(w, 4000, generator=ember.Generator().manual_seed(0)))
    c = Counter(out)
    assert c[0] == 0 and 0.7 < c[2] / 4000 < 0.8
    no_rep = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler(w, 0)
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0, 2.0]], 2)


@pytest.mark.parametrize("n,replicas,drop", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False)])
def test_distributed_sampler_unshuffled_matches_torch(n, replicas, drop):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
        theirs = tud.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffles_each_epoch_and_ranks_agree():
    n, replicas = 20, 4
    samplers = [DistributedSampler(range(n), replicas, r, seed=7) for r in range(replicas)]
    epoch0 = [list(s) for s in samplers]
    epoch1 = [list(s) for s in samplers]  # no set_epoch: reshuffles by itself
    for ep in (epoch0, epoch1):
        assert sorted(i for part in ep for i in part) == list(range(n))  # ranks partition the data
    assert epoch0 != epoch1
    again = DistributedSampler(range(n), replicas, 0, seed=7)
    again.set_epoch(1)
    assert list(again) == epoch1[0]  # set_epoch (torch's idiom) selects the same order
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(range(n), 2, 2)
