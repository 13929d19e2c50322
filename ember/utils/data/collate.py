"""``default_collate`` (a list of samples -> one batch) and ``default_convert`` (NumPy -> Tensor), as in torch."""
from __future__ import annotations

import collections.abc
from typing import Any, List

import numpy as np

import ember

__all__ = ["default_collate", "default_convert"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _stack_arrays(arrays: List[np.ndarray]) -> np.ndarray:
    first = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != first:
            raise RuntimeError(
                f"default_collate: cannot stack a batch whose elements differ in shape: {tuple(first)} at entry 0 "
                f"and {tuple(a.shape)} at entry {i}; make the samples the same size or pass a collate_fn")
    return np.stack(arrays)


def _collate_tensors(batch: list):
    datas = [t._data for t in batch]
    if all(isinstance(d, np.ndarray) for d in datas):
        return ember.from_numpy(_stack_arrays(datas))
    return ember.stack(batch)  # device tensors: let the backend stack them


def default_collate(batch: list) -> Any:
    """Merge a list of samples into a batch, following the structure of the first sample.

    Tensors and NumPy arrays are stacked along a new first dimension; Python floats become a float64
    tensor, ints an int64 tensor, bools a bool tensor; strings stay a list; dicts, namedtuples, tuples and
    lists are collated field by field (tuples come back as lists, as in torch; strings stay a sequence).

    Example:
        >>> b = default_collate([(ember.zeros((2,)), 0, "a"), (ember.ones((2,)), 1, "b")])
        >>> b[0].shape, b[1].tolist(), b[2]
        ((2, 2), [0, 1], ('a', 'b'))
        >>> default_collate([{"x": 1.5}, {"x": 2.5}])["x"].dtype == ember.float64
        True
    """
    elem = batch[0]
    elem_type = type(elem)
    if ember.is_tensor(elem):
        return _collate_tensors(batch)
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic):
        if elem.dtype.kind in "SUO":
            raise TypeError(_ERR.format(elem.dtype))
        if isinstance(elem, np.ndarray):
            return ember.from_numpy(_stack_arrays([np.asarray(b) for b in batch]))
        return ember.from_numpy(np.array(batch))
    if isinstance(elem, bool):
        return ember.from_numpy(np.array(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return ember.from_numpy(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return ember.from_numpy(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return elem_type(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        for i, b in enumerate(batch):
            if len(b) != size:
                raise RuntimeError(f"default_collate: each element in list of batch should be of equal size; "
                                   f"entry 0 has {size} fields, entry {i} has {len(b)}")
        transposed = [default_collate(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed  # torch returns a list for tuples too
        try:
            return elem_type(transposed)
        except TypeError:
            return transposed
    raise TypeError(_ERR.format(elem_type))


def default_convert(data: Any) -> Any:
    """What the DataLoader applies to each sample when automatic batching is off (``batch_size=None``):
    NumPy arrays become tensors, containers are converted element by element, the rest is left alone.

    Example:
        >>> default_convert({"x": np.zeros(3)})["x"].shape
        (3,)
    """
    if ember.is_tensor(data):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "SUO":
            return data
        return ember.from_numpy(data)
    if isinstance(data, np.generic):
        return ember.from_numpy(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
