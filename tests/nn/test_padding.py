"""ember/nn/padding.py against torch: every padding layer, int and tuple padding, batched and unbatched."""
import numpy as np
import pytest
import torch

import ember
from helpers import raises_exactly
from .nn_helpers import check_module

LAYERS = {1: ["ZeroPad1d", "ConstantPad1d", "ReflectionPad1d", "ReplicationPad1d", "CircularPad1d"],
          2: ["ZeroPad2d", "ConstantPad2d", "ReflectionPad2d", "ReplicationPad2d", "CircularPad2d"],
          3: ["ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"]}
PADDINGS = {1: [2, (1, 3), (0, 2), (-1, 2)],
            2: [1, (1, 2, 0, 3), (2, -1, 1, 0)],
            3: [1, (1, 0, 2, 1, 0, 2), (0, 1, -1, 1, 1, 0)]}
SIZE = {1: (5,), 2: (4, 5), 3: (3, 4, 5)}


def _build(name, padding):
    def build(lib):
        cls = getattr(lib.nn, name)
        return cls(padding, 1.5) if name.startswith("Constant") else cls(padding)
    return build


CASES = [(name, d, p, batched) for d in (1, 2, 3) for name in LAYERS[d] for p in PADDINGS[d]
         for batched in (True, False)]


@pytest.mark.parametrize("name,d,padding,batched", CASES,
                         ids=[f"{n}-{p}-{'batched' if b else 'unbatched'}" for n, d, p, b in CASES])
def test_padding_layers(name, d, padding, batched):
    shape = ((2, 3) if batched else (3,)) + SIZE[d]
    check_module(_build(name, padding), shape, modes=("train",))


def test_constant_padding_of_other_ranks_and_empty_batches():
    check_module(lambda lib: lib.nn.ZeroPad2d((1, 2, 3, 0)), (4, 5), modes=("train",))            # 2-D, as torch
    check_module(lambda lib: lib.nn.ConstantPad1d(2, -1.0), (2, 2, 2, 3), modes=("train",))      # 4-D
    check_module(lambda lib: lib.nn.ReflectionPad2d(1), (0, 2, 3, 3), modes=("train",))
    check_module(lambda lib: lib.nn.ZeroPad3d(1), (0, 2, 2, 2, 2), modes=("train",))


def test_padding_values_on_a_known_input():
    x = ember.arange(4.0).reshape(1, 4)
    assert ember.nn.ReflectionPad1d((3, 2))(x).tolist() == [[3.0, 2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
    assert ember.nn.ReplicationPad1d((2, 1))(x).tolist() == [[0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 3.0]]
    assert ember.nn.CircularPad1d((1, 2))(x).tolist() == [[3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0]]
    assert ember.nn.CircularPad1d((-1, 2))(x).tolist() == [[1.0, 2.0, 3.0, 1.0, 2.0]]   # crop, then wrap
    assert ember.nn.ConstantPad1d((1, 0), 7.0)(x).tolist() == [[7.0, 0.0, 1.0, 2.0, 3.0]]


def test_padding_reprs_and_attributes():
    for lib in (torch, ember):
        assert repr(lib.nn.ZeroPad2d(2)) == "ZeroPad2d((2, 2, 2, 2))"
        assert repr(lib.nn.ZeroPad1d((1, 2))) == "ZeroPad1d((1, 2))"
        assert repr(lib.nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
        assert repr(lib.nn.ConstantPad3d(1, 0)) == "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=0)"
        assert repr(lib.nn.ReflectionPad2d((1, 0, 2, 3))) == "ReflectionPad2d((1, 0, 2, 3))"
        assert repr(lib.nn.ReplicationPad3d(1)) == "ReplicationPad3d((1, 1, 1, 1, 1, 1))"
        assert repr(lib.nn.CircularPad1d(3)) == "CircularPad1d((3, 3))"
        assert lib.nn.ZeroPad3d(1).value == 0.0 and isinstance(lib.nn.ZeroPad1d(1), lib.nn.ConstantPad1d)
        assert lib.nn.ReflectionPad1d([1, 2]).padding == (1, 2)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("kind", [1, 2, 3], ids=["Reflection", "Replication", "Circular"])
def test_non_constant_padding_takes_the_ranks_torch_takes(kind, d):
    name = LAYERS[d][kind + 1]
    build = _build(name, 1)
    for ndim in range(1, 7):
        x = np.zeros((3,) * ndim)
        try:
            build(torch)(torch.tensor(x))
            torch_ok = True
        except (RuntimeError, NotImplementedError, ValueError):
            torch_ok = False
        assert torch_ok == (ndim in (d + 1, d + 2))
        if torch_ok:
            assert build(ember)(ember.tensor(x)).shape == (3,) * (ndim - d) + (5,) * d
        else:
            with pytest.raises((ValueError, NotImplementedError), match=f"pad: |{name}: "):
                build(ember)(ember.tensor(x))


PAD_ERRORS = [
    (lambda: ember.nn.ReflectionPad2d(1)(ember.zeros(3, 3)), NotImplementedError,
     "pad: reflect padding of length 4 needs a 3-D or 4-D input, got shape (3, 3) (padding size 2, 4 or 6 pads the "
     "last 1, 2 or 3 dims of a batched or unbatched input)"),
    (lambda: ember.nn.ReplicationPad1d(1)(ember.zeros(2, 2, 2, 3)), NotImplementedError,
     "pad: replicate padding of length 2 needs a 2-D or 3-D input, got shape (2, 2, 2, 3) (padding size 2, 4 or 6 "
     "pads the last 1, 2 or 3 dims of a batched or unbatched input)"),
    (lambda: ember.nn.CircularPad2d(1)(ember.zeros(3, 3)), ValueError,
     "CircularPad2d: expected 3D or 4D input (got 2D input of shape (3, 3))"),
    (lambda: ember.nn.CircularPad3d(1)(ember.zeros(1, 2, 3, 3, 3, 3)), ValueError,
     "CircularPad3d: expected 4D or 5D input (got 6D input of shape (1, 2, 3, 3, 3, 3))"),
    (lambda: ember.nn.ReflectionPad1d(3)(ember.zeros(2, 3)), ValueError,
     "pad: reflect padding (3, 3) must be smaller than the dim size 3"),
    (lambda: ember.nn.CircularPad1d(4)(ember.zeros(2, 3)), RuntimeError,
     "pad: circular padding (4, 4) of dim 1 (size 3) would wrap around more than once"),
    (lambda: ember.nn.ZeroPad2d((1, 2, 3)), ValueError, "padding must be an int or a tuple of 4 ints, got (1, 2, 3)"),
]


@pytest.mark.parametrize("k", range(len(PAD_ERRORS)))
def test_padding_errors(k):
    call, exc, message = PAD_ERRORS[k]
    raises_exactly(call, exc, message)
