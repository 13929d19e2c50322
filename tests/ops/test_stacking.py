"""ember/ops/stacking.py against torch: atleast_nd, h/v/dsplit, column_stack, dstack, rot90."""
import re

import pytest
import torch

import ember
from helpers import check_op, raises_exactly


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_atleast(name, shape):
    check_op(lambda L, x: getattr(L, name)(x) * 1.0, shape)
    check_op(lambda L, x, y: getattr(L, name)(x, y), shape, (2,))
    check_op(lambda L, x, y: getattr(L, name)([x * 1.0, y * 1.0]), shape, ())


@pytest.mark.parametrize("name,shape,sections", [
    ("hsplit", (4, 6), 3), ("hsplit", (6,), 2), ("hsplit", (4, 6, 2), [1, 4]), ("vsplit", (4, 6), 2),
    ("vsplit", (5, 2), [2, 3]), ("dsplit", (2, 3, 4), 2), ("dsplit", (2, 3, 5), [1])])
def test_splits(name, shape, sections):
    check_op(lambda L, x: tuple(getattr(L, name)(x, sections)), shape)
    check_op(lambda L, x: tuple(getattr(x, name)(sections)), shape)


def test_split_errors_as_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="size of the dimension 3 is not divisible by the split_size 2"):
            lib.hsplit(lib.ones(2, 3), 2)
        with pytest.raises(RuntimeError, match="requires a tensor with at least 2 dimension"):
            lib.vsplit(lib.ones(3), 1)


def test_column_stack_and_dstack():
    check_op(lambda L, a, b, c: L.column_stack([a, b, c]), (3,), (3, 2), (3,))
    check_op(lambda L, a, b: L.column_stack([a, b]), (), ())
    check_op(lambda L, a, b, c: L.dstack([a, b, c]), (2, 3), (2, 3, 2), (2, 3))
    check_op(lambda L, a, b: L.dstack([a, b]), (3,), (3,))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0)])
def test_rot90(k, dims):
    check_op(lambda L, x: L.rot90(x, k, dims), (2, 3, 4))
    check_op(lambda L, x: x.rot90(k, dims), (2, 3, 4))


def test_rot90_errors():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="expected total rotation dims == 2"):
            lib.rot90(lib.ones(2, 2), 1, [0])
        with pytest.raises(RuntimeError, match="expected rotation dims to be different"):
            lib.rot90(lib.ones(2, 2), 1, [1, 1])


@pytest.mark.parametrize("op,shape,sections,message", [
    ("hsplit", (2, 3), 2, "attempted to split along dimension 1, but the size of the dimension 3 is not divisible "
                          "by the split_size 2!"),
    ("vsplit", (3, 4), 2, "attempted to split along dimension 0, but the size of the dimension 3 is not divisible "
                          "by the split_size 2!"),
    ("dsplit", (2, 3, 5), 2, "attempted to split along dimension 2, but the size of the dimension 5 is not "
                             "divisible by the split_size 2!"),
    ("hsplit", (), 1, "requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!"),
    ("vsplit", (3,), 1, "requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!"),
    ("dsplit", (2, 3), 1, "requires a tensor with at least 3 dimension, but got a tensor with 2 dimensions!"),
])
def test_split_errors_exactly(op, shape, sections, message):
    """torch's text (after its `torch.hsplit ` prefix) under Ember's `hsplit: `."""
    with pytest.raises(RuntimeError, match=re.escape(message)):
        getattr(torch, op)(torch.ones(shape), sections)
    raises_exactly(lambda: getattr(ember, op)(ember.ones(shape), sections), RuntimeError, f"{op}: {message}")


@pytest.mark.parametrize("dims,message", [
    ([0], "expected total rotation dims == 2, but got dims = 1"),
    ([0, 1, 2], "expected total rotation dims == 2, but got dims = 3"),
    ([1, -1], "expected rotation dims to be different, but got dim0 = 1 and dim1 = -1"),
    ([-2, 0], "expected rotation dims to be different, but got dim0 = -2 and dim1 = 0"),
])
def test_rot90_errors_exactly(dims, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.rot90(torch.ones(2, 2), 1, dims)
    raises_exactly(lambda: ember.rot90(ember.ones(2, 2), 1, dims), RuntimeError, f"rot90: {message}")


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_of_a_tuple_and_of_no_tensor(name):
    """A tuple is taken as a list (one result per tensor); the results are the inputs themselves when
    they already have enough dims, as torch."""
    a, b = ember.ones(2, 3, 4), ember.ones(())
    out = getattr(ember, name)((a, b))
    ta, tb = torch.ones(2, 3, 4), torch.ones(())
    want = getattr(torch, name)((ta, tb))
    assert isinstance(out, tuple) and [tuple(o.shape) for o in out] == [tuple(w.shape) for w in want]
    assert out[0] is a
    assert getattr(ember, name)(a) is a
    assert getattr(ember, name)() == getattr(torch, name)() == ()


def test_rot90_defaults():
    check_op(lambda L, x: L.rot90(x), (2, 3, 4))
    check_op(lambda L, x: x.rot90(), (3, 2))


@pytest.mark.parametrize("dims,bad", [([5, 0], 5), ([0, -3], -3)])
def test_rot90_dims_out_of_range(dims, bad):
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.rot90(torch.ones(2, 2), 1, dims)
    raises_exactly(lambda: ember.rot90(ember.ones(2, 2), 1, dims), IndexError,
                   f"rot90: Dimension out of range (expected to be in range of [-2, 1], but got {bad}); "
                   f"the tensor has 2 dims")
