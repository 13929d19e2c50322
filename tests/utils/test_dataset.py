"""Dataset, TensorDataset, ConcatDataset, ChainDataset, Subset, random_split: behaviour matches torch."""
import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
from ember.utils.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,
                              random_split)


def test_tensor_dataset_rows_match_torch():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([0, 1, 0, 1])
    ours = TensorDataset(ember.from_numpy(x), ember.from_numpy(y))
    theirs = tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    assert len(ours) == len(theirs)
    for i in range(4):
        (a, b), (c, d) = ours[i], theirs[i]
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        assert b.item() == d.item()


def test_tensor_dataset_size_mismatch():
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(ember.zeros((4, 2)), ember.zeros((3,)))


def test_concat_dataset_indexing_matches_torch():
    parts = [list(range(3)), list(range(10, 15)), list(range(20, 22))]
    ours = ConcatDataset(parts)
    theirs = tud.ConcatDataset(parts)
    assert len(ours) == len(theirs) and ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-len(ours), len(ours))] == [theirs[i] for i in range(-len(theirs), len(theirs))]
    with pytest.raises(ValueError, match="exceeds"):
        ours[-11]
    with pytest.raises(IndexError):
        ours[10]


def test_dataset_add_and_chain():
    class L(Dataset):
        def __init__(self, n): self.n = n
        def __len__(self): return self.n
        def __getitem__(self, i): return i

    class R(IterableDataset):
        def __init__(self, n): self.n = n
        def __iter__(self): return iter(range(self.n))
        def __len__(self): return self.n

    assert len(L(2) + L(3)) == 5
    assert list(R(2) + R(3)) == [0, 1, 0, 1, 2]
    assert len(ChainDataset([R(2), R(3)])) == 5
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([R(2)])


def test_subset_and_batched_getitems():
    base = list(range(100, 110))
    s = Subset(base, [9, 0, 4])
    assert len(s) == 3 and [s[i] for i in range(3)] == [109, 100, 104]
    assert s.__getitems__([0, 2]) == [109, 104]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34]])
def test_random_split_lengths_match_torch(lengths):
    n = 10
    ours = random_split(list(range(n)), lengths, generator=ember.Generator().manual_seed(0))
    theirs = tud.random_split(list(range(n)), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    together = sorted(i for s in ours for i in s.indices)
    assert together == list(range(n))  # a partition


def test_random_split_is_reproducible_and_validates():
    a = random_split(list(range(50)), [25, 25], generator=ember.Generator().manual_seed(3))
    b = random_split(list(range(50)), [25, 25], generator=ember.Generator().manual_seed(3))
    assert a[0].indices == b[0].indices
    ember.manual_seed(1)
    c = random_split(list(range(50)), [25, 25])
    ember.manual_seed(1)
    d = random_split(list(range(50)), [25, 25])
    assert c[0].indices == d[0].indices
    with pytest.raises(ValueError, match="does not equal"):
        random_split(list(range(10)), [3, 3])
