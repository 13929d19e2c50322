"""default_collate / default_convert produce the same structures, dtypes and values as torch's."""
import collections

import numpy as np
import pytest
import torch
from torch.utils.data import default_collate as torch_collate
from torch.utils.data import default_convert as torch_convert

import ember
from ember.utils.data import default_collate, default_convert

Point = collections.namedtuple("Point", ["x", "y"])


def same(ours, theirs):
    """Recursively compare an ember result with torch's: container types, tensor dtypes and values."""
    if isinstance(theirs, torch.Tensor):
        assert ember.is_tensor(ours), f"expected a tensor, got {type(ours)}"
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and ours.keys() == theirs.keys()
        for k in theirs:
            same(ours[k], theirs[k])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    elif isinstance(theirs, np.ndarray):
        assert type(ours) is np.ndarray and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs


def batch(kind):
    rng = np.random.default_rng(0)
    arrays = [rng.random((2, 3)).astype(np.float32) for _ in range(3)]
    return {
        "ints": [1, 2, 3],
        "floats": [0.5, 1.5, 2.5],
        "bools": [True, False, True],
        "strings": ["a", "b", "c"],
        "arrays": arrays,
        "np_scalars": [np.float32(1), np.float32(2), np.float32(3)],
        "tuples": [(a, i, "s") for i, a in enumerate(arrays)],
        "lists": [[i, float(i)] for i in range(3)],
        "dicts": [{"img": a, "label": i} for i, a in enumerate(arrays)],
        "namedtuples": [Point(i, a) for i, a in enumerate(arrays)],
        "nested": [{"p": Point(i, [i, i]), "s": "x"} for i in range(3)],
    }[kind]


KINDS = ["ints", "floats", "bools", "strings", "arrays", "np_scalars", "tuples", "lists", "dicts", "namedtuples",
         "nested"]


@pytest.mark.parametrize("kind", KINDS)
def test_default_collate_matches_torch(kind):
    same(default_collate(batch(kind)), torch_collate(batch(kind)))


def test_collate_tensors_and_errors():
    ts = [ember.from_numpy(np.full((2,), i, dtype=np.float32)) for i in range(3)]
    out = default_collate(ts)
    assert out.shape == (3, 2) and out.dtype == ember.float32
    with pytest.raises(RuntimeError, match="differ in shape"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="found"):
        default_collate([object(), object()])


class Frozen(collections.abc.Mapping):
    """A mapping that cannot be rebuilt from a dict: collate and convert fall back to a plain dict."""
    def __init__(self, **kw):
        self._d = kw

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class Pairish(collections.abc.Sequence):
    """A sequence type that cannot be rebuilt from a list: the fallback is a list."""
    def __init__(self, a, b):
        self._v = (a, b)

    def __getitem__(self, i):
        return self._v[i]

    def __len__(self):
        return 2


@pytest.mark.parametrize("kind", ["np_generic_ints", "frozen_mapping", "custom_sequence"])
def test_default_collate_fallbacks_match_torch(kind):
    b = {"np_generic_ints": [np.int16(1), np.int16(5)],
         "frozen_mapping": [Frozen(a=np.ones(2), b=1), Frozen(a=np.zeros(2), b=2)],
         "custom_sequence": [Pairish(1, 2.0), Pairish(3, 4.0)]}[kind]
    same(default_collate(b), torch_collate(b))


def test_collate_rejects_string_arrays_like_torch():
    for lib_collate in (default_collate, torch_collate):
        with pytest.raises(TypeError):
            lib_collate([np.array(["a"]), np.array(["b"])])


@pytest.mark.parametrize("sample", [np.arange(3), {"a": np.ones(2)}, (np.zeros(1), 1), [np.zeros(1), "s"], 3, "x",
                                    np.float32(2.5), np.array(["s", "t"]), Point(np.zeros(2), 1),
                                    Frozen(a=np.ones(1)), Pairish(np.ones(1), 2)])
def test_default_convert_matches_torch(sample):
    same(default_convert(sample), torch_convert(sample))


# -- issue 17: survivors of the mutation run -------------------------------------------------------------
def test_collate_stacks_device_tensors_on_their_device(fake_cuda):
    batch = [ember.tensor([1.0, 2.0], device="cuda"), ember.tensor([3.0, 4.0], device="cuda")]
    out = default_collate(batch)
    assert out.device.type == "cuda" and out.cpu().tolist() == [[1.0, 2.0], [3.0, 4.0]]


class MyList(list):
    pass


def test_default_convert_keeps_container_subclasses_like_torch():
    a = np.arange(3)
    for data in [collections.OrderedDict(b=a, a=a + 1), MyList([a, a * 2]), [a, (a, "s")], {"k": a}]:
        ours, theirs = default_convert(data), torch_convert(data)
        assert type(ours) is type(theirs)
        same(ours, theirs)
    t = ember.ones(2)
    assert default_convert(t) is t and default_convert([t])[0] is t


def test_collate_keeps_mapping_and_sequence_subclasses_like_torch():
    for batch in ([collections.OrderedDict(b=1, a=2.0), collections.OrderedDict(b=3, a=4.0)],
                  [MyList([1, 2.5]), MyList([3, 4.5])]):
        ours, theirs = default_collate(batch), torch_collate(batch)
        assert type(ours) is type(theirs)
        same(ours, theirs)


def test_collate_refuses_strings_in_arrays_and_unknown_types_naming_them():
    for batch, what in [([np.array(["a"]), np.array(["b"])], "<U1"), ([np.array([b"a"])] * 2, "|S1"),
                        ([np.array([None])] * 2, "object"), ([{1}, {2}], "<class 'set'>")]:
        with pytest.raises(TypeError) as e:
            default_collate(batch)
        assert str(e.value) == ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                f"lists; found {what}")
