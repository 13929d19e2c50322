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


# -- issue 17: survivors of the mutation run (samplers with a generator, DistributedSampler) -----------
def _gen(seed):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


@pytest.mark.parametrize("kwargs", [dict(), dict(replacement=True, num_samples=70), dict(num_samples=13)])
def test_random_sampler_draws_from_its_generator_only(kwargs):
    # the same generator state gives the same order, whatever the global RNG does in between; with
    # replacement, 70 = two chunks of 32 and 6 more draws, all from the generator
    a = list(RandomSampler(range(10), generator=_gen(3), **kwargs))
    ember.manual_seed(1)
    b = list(RandomSampler(range(10), generator=_gen(3), **kwargs))
    ember.manual_seed(2)
    c = list(RandomSampler(range(10), generator=_gen(3), **kwargs))
    assert a == b == c and len(a) == kwargs.get("num_samples", 10)
    g = _gen(3)
    if kwargs.get("replacement"):
        expected = sum((ember.randint(0, 10, (k,), generator=g).tolist() for k in (32, 32, 6)), [])
    else:
        expected = sum((ember.randperm(10, generator=g).tolist() for _ in range(kwargs.get("num_samples", 10) // 10 + 1)), [])
        expected = expected[:kwargs.get("num_samples", 10)]
    assert a == expected


def test_random_sampler_without_generator_follows_the_global_seed():
    ember.manual_seed(7)
    a = list(RandomSampler(range(50)))
    ember.manual_seed(7)
    b = list(RandomSampler(range(50)))
    c = list(RandomSampler(range(50)))   # the global RNG moved on: a new seed for the next epoch
    assert a == b and sorted(a) == list(range(50)) and c != a


def test_subset_random_sampler_uses_its_generator_or_the_global_rng():
    idx = [10, 20, 30, 40, 50, 60, 70, 80]
    with_gen = SubsetRandomSampler(idx, generator=_gen(5))
    assert with_gen.generator is not None
    ember.manual_seed(0)
    a = list(with_gen)
    assert a == [idx[i] for i in ember.randperm(8, generator=_gen(5)).tolist()]
    ember.manual_seed(0)
    expected = [idx[i] for i in ember.randperm(8).tolist()]
    ember.manual_seed(0)
    assert list(SubsetRandomSampler(idx)) == expected


def test_weighted_random_sampler_uses_its_generator_and_float64_weights():
    w = [0.1, 0.5, 0.0, 2.0, 1.0]
    s = WeightedRandomSampler(ember.tensor(w, dtype=ember.float32), 20, generator=_gen(9))
    assert s.weights.dtype == ember.float64 and s.weights.tolist() == [float(np.float32(v)) for v in w]
    assert s.generator is not None
    ember.manual_seed(4)
    a = list(s)
    expected = ember.multinomial(ember.tensor(np.float32(w).astype(np.float64)), 20, True,
                                 generator=_gen(9)).tolist()
    assert a == expected and 2 not in a
    ints = WeightedRandomSampler([1, 3], 2, replacement=False)
    assert ints.weights.dtype == ember.float64


def test_weighted_random_sampler_errors_match_torch():
    with pytest.raises(ValueError) as e:
        WeightedRandomSampler([1.0, 2.0], 3, replacement=False)
    assert str(e.value) == "WeightedRandomSampler: cannot draw num_samples=3 > 2 weights without replacement"
    for ours, theirs in [((lambda: WeightedRandomSampler([1.0], 2, replacement=1)),
                          (lambda: tud.WeightedRandomSampler([1.0], 2, replacement=1))),
                         ((lambda: WeightedRandomSampler([1.0], 0)), (lambda: tud.WeightedRandomSampler([1.0], 0)))]:
        with pytest.raises(ValueError) as a:
            ours()
        with pytest.raises(ValueError) as b:
            theirs()
        assert str(a.value) == str(b.value)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (1, 4, False),
                                                  (12, 4, False), (12, 4, True), (7, 2, True)])
def test_distributed_sampler_unshuffled_matches_torch(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                                        drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs), rank
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


def test_distributed_sampler_shuffle_is_seed_plus_epoch_and_advances_by_one():
    n = 11

    def expected(seed, epoch, rank):
        perm = ember.randperm(n, generator=_gen(seed + epoch)).tolist()
        perm += perm[:12 - n]
        return perm[rank:12:2]

    s = DistributedSampler(range(n), num_replicas=2, rank=1, seed=5)
    assert [list(s) for _ in range(3)] == [expected(5, e, 1) for e in range(3)]
    s.set_epoch(1)
    assert list(s) == expected(5, 1, 1) == expected(6, 0, 1)
    d = DistributedSampler(range(n), num_replicas=2, rank=0)   # defaults: shuffle, seed 0, no drop_last
    assert (d.shuffle, d.seed, d.drop_last, len(d)) == (True, 0, False, 6) and list(d) == expected(0, 0, 0)


def test_distributed_sampler_errors():
    import ember.distributed as dist
    assert not dist.is_initialized()
    for kwargs in [dict(), dict(num_replicas=2), dict(rank=0)]:
        with pytest.raises(ValueError) as e:
            DistributedSampler(range(4), **kwargs)
        assert str(e.value) == ("DistributedSampler: pass num_replicas and rank, or call "
                                "ember.distributed.init_process_group() first")
    for replicas in (0, -1):
        with pytest.raises(ValueError) as e:
            DistributedSampler(range(4), num_replicas=replicas, rank=0)
        assert str(e.value) == f"DistributedSampler: num_replicas should be positive, got {replicas}"
    DistributedSampler(range(4), num_replicas=1, rank=0)
    for rank in (3, -1):
        with pytest.raises(ValueError) as a:
            DistributedSampler(range(4), num_replicas=3, rank=rank)
        with pytest.raises(ValueError) as b:
            tud.DistributedSampler(range(4), num_replicas=3, rank=rank)
        assert str(a.value) == str(b.value)


def test_distributed_sampler_takes_world_size_and_rank_from_the_process_group(monkeypatch):
    import ember.distributed as dist
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda: 3)
    monkeypatch.setattr(dist, "get_rank", lambda: 2)
    for kwargs, want in [(dict(), (3, 2)), (dict(num_replicas=4), (4, 2)), (dict(rank=1), (3, 1))]:
        s = DistributedSampler(range(9), shuffle=False, **kwargs)
        assert (s.num_replicas, s.rank) == want


def test_random_sampler_without_generator_seeds_like_torch_recipe():
    # a fresh generator seeded with one int64 draw in [0, 2**63 - 1) from the global RNG, per epoch
    for s in (0, 11):
        ember.manual_seed(s)
        seed = int(ember.empty((), dtype=ember.int64).random_(0, 2 ** 63 - 1).item())
        ember.manual_seed(s)
        assert list(RandomSampler(range(20))) == ember.randperm(20, generator=_gen(seed)).tolist()
    assert len(list(RandomSampler(range(10), replacement=True, num_samples=64))) == 64


@pytest.mark.parametrize("build", [
    lambda m: m.BatchSampler(range(3), batch_size=True, drop_last=False),
    lambda m: m.BatchSampler(range(3), batch_size=0, drop_last=False),
    lambda m: m.BatchSampler(range(3), batch_size=1.5, drop_last=False),
    lambda m: m.BatchSampler(range(3), batch_size=2, drop_last=2),
    lambda m: m.RandomSampler(range(3), replacement=1),
    lambda m: m.RandomSampler(range(3), num_samples=0),
])
def test_sampler_argument_errors_match_torch(build):
    with pytest.raises((ValueError, TypeError)) as theirs:
        build(tud)
    with pytest.raises((ValueError, TypeError)) as ours:
        build(ember.utils.data)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("n,bs", [(5, 2), (4, 2), (1, 3), (7, 7), (0, 2)])
def test_batch_sampler_len_matches_torch(n, bs):
    for drop_last in (False, True):
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
        theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop_last)
        assert len(ours) == len(theirs) == len(list(ours))


def test_base_classes_name_the_missing_method():
    from ember.utils.data import Dataset, IterableDataset

    class S(Sampler):
        pass

    class D(Dataset):
        pass

    class I(IterableDataset):
        pass

    for call, message in [(lambda: iter(S()), "S must implement __iter__"), (lambda: D()[0], "D must implement __getitem__"),
                          (lambda: iter(I()), "I must implement __iter__")]:
        with pytest.raises(NotImplementedError) as e:
            call()
        assert str(e.value) == message
