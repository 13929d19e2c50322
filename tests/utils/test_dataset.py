"""Dataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset, random_split: behaviour matches torch."""
import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
from ember.utils.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                              TensorDataset, random_split)


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


# -- issue 17: survivors of the mutation run -------------------------------------------------------------
def test_tensor_dataset_errors():
    with pytest.raises(ValueError) as e:
        TensorDataset()
    assert str(e.value) == "TensorDataset needs at least one tensor"
    for tensors, sizes, bad in [((ember.zeros(()), ember.zeros(3)), "[(), (3,)]", 0),
                                ((ember.zeros((3, 2)), ember.zeros((4, 2))), "[(3,), (4,)]", 1),
                                ((ember.zeros((3, 2)), ember.zeros(())), "[(3,), ()]", 1)]:
        with pytest.raises(ValueError) as e:
            TensorDataset(*tensors)
        assert str(e.value) == f"Size mismatch between tensors: first dimensions are {sizes} (tensor {bad} differs)"


def test_concat_dataset_errors_and_last_index():
    with pytest.raises(ValueError) as e:
        ConcatDataset([])
    assert str(e.value) == "ConcatDataset: datasets should not be an empty iterable"

    class It(IterableDataset):
        def __iter__(self):
            return iter([1])

    with pytest.raises(TypeError) as e:
        ConcatDataset([[1], It()])
    assert str(e.value) == "ConcatDataset does not support IterableDataset (use ChainDataset)"
    ds = ConcatDataset([[1, 2], [3]])
    assert ds[2] == 3 and ds[-3] == 1
    for idx in (3, 4):
        with pytest.raises(IndexError) as e:
            ds[idx]
        assert str(e.value) == f"ConcatDataset: index {idx} out of range for length 3"


def test_chain_dataset_rejects_map_style_datasets_by_name():
    class Rows(Dataset):
        def __getitem__(self, i):
            return i

    with pytest.raises(TypeError) as e:
        list(ChainDataset([Rows()]))
    assert str(e.value) == "ChainDataset only supports IterableDataset, got Rows"


def test_subset_getitems_forwards_the_mapped_indices():
    seen = []

    class Batched(Dataset):
        def __getitem__(self, i):
            return ("one", i)

        def __getitems__(self, idx):
            seen.append(list(idx))
            return [("many", i) for i in idx]

    sub = Subset(Batched(), [5, 7, 9])
    assert sub.__getitems__([2, 0]) == [("many", 9), ("many", 5)] and seen == [[9, 5]]
    assert Subset(list(range(10, 20)), [4, 1]).__getitems__([1, 0]) == [11, 14]


def test_random_split_fraction_rules_match_torch():
    ds = list(range(10))
    for lengths in ([0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.3, 0.3, 0.4]):
        ours = random_split(ds, lengths, generator=ember.Generator().manual_seed(0))
        theirs = tud.random_split(ds, lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert all(s.dataset is ds for s in ours)
    with pytest.warns(UserWarning, match=r"^random_split: length of split at index 0 is 0; this split will be empty$"):
        random_split(ds, [0.0, 1.0])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        random_split(ds, [0.1, 0.9])       # no split of length 0: no warning
        random_split(list(range(1)), [1.0])
    for lengths, message in [([-0.5, 1.5], "random_split: fraction at index 0 is not between 0 and 1: -0.5"),
                             ([1.5, -0.5], "random_split: fraction at index 0 is not between 0 and 1: 1.5")]:
        with pytest.raises(ValueError) as e:
            random_split(ds, lengths)
        assert str(e.value) == message
    # lengths summing to 2 or 1.5 are not fractions; a zero length is allowed
    # (a sum just over 1 is not taken as fractions either, as in torch)
    for lengths in ([1.5, 0.5], [2, -1, 9], [0.2, 0.3], [0.5, 0.5 + 1e-12]):
        with pytest.raises(ValueError) as e:
            random_split(ds, lengths)
        assert str(e.value) == ("random_split: lengths must be non-negative integers or fractions summing to 1, "
                                f"got {lengths}")
    assert [len(s) for s in random_split(ds, [0, 10])] == [0, 10]
    assert [len(s) for s in random_split(list(range(2)), [1, 1])] == [1, 1]


class _Batched(Dataset):
    """A list dataset with `__getitems__`, which records its batched calls (`short` drops the last item)."""

    def __init__(self, items, short=False):
        self.items, self.short, self.calls = items, short, []

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        out = [self.items[i] for i in indices]
        return out[:-1] if self.short else out


def _stack_pair(lib_data):
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    if lib_data is tud:
        return tud.TensorDataset(torch.from_numpy(x)), [10, 11, 12, 13]
    return TensorDataset(ember.from_numpy(x)), [10, 11, 12, 13]


def _plain(sample):
    """Samples of either library as plain Python values."""
    if isinstance(sample, dict):
        return {k: _plain(v) for k, v in sample.items()}
    if isinstance(sample, (tuple, list)):
        return type(sample)(_plain(v) for v in sample)
    return sample.tolist() if hasattr(sample, "tolist") else sample


@pytest.mark.parametrize("keyword", [False, True])
def test_stack_dataset_items_and_batches_match_torch(keyword):
    results = []
    for lib_data, cls in ((tud, tud.StackDataset), (None, StackDataset)):
        a, b = _stack_pair(lib_data)
        batched = _Batched([20, 21, 22, 23])
        ds = cls(x=a, y=b, z=batched) if keyword else cls(a, b, batched)
        assert len(ds) == 4
        items = [ds[i] for i in range(4)] + [ds[-1]]
        batch = ds.__getitems__([3, 0, 2])
        assert batched.calls == [[3, 0, 2]]   # the nested dataset's own batched fetch is used
        results.append((_plain(items), _plain(batch)))
    assert results[1] == results[0]
    items, batch = results[1]
    assert isinstance(batch, list) and isinstance(batch[0], dict if keyword else tuple)


def test_stack_dataset_in_a_dataloader():
    a, b = _stack_pair(None)
    loader = ember.utils.data.DataLoader(StackDataset(img=a, label=b), batch_size=3)
    first = next(iter(loader))
    assert sorted(first) == ["img", "label"] and first["label"].tolist() == [10, 11, 12]
    assert tuple(first["img"][0].shape) == (3, 2)


def test_stack_dataset_errors_match_torch():
    for lib_data, cls in ((tud, tud.StackDataset), (None, StackDataset)):
        a, b = _stack_pair(lib_data)
        with pytest.raises(ValueError, match="At least one dataset should be passed"):
            cls()
        with pytest.raises(ValueError, match="but both types are given"):
            cls(a, y=b)
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            cls(a, [1, 2, 3])
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            cls(x=a, y=[1])
        with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
            cls(a, _Batched([1, 2, 3, 4], short=True)).__getitems__([0, 1])
        with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
            cls(p=a, q=_Batched([1, 2, 3, 4], short=True)).__getitems__([0, 1])


def test_dataset_docstrings_run():
    import doctest
    import ember.utils.data.dataset as module
    result = doctest.testmod(module, extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0
