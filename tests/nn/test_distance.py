"""ember/nn/distance.py (CosineSimilarity, PairwiseDistance, Fold, Unfold), nn.Buffer, and the deprecated
F.upsample / upsample_nearest / upsample_bilinear."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import check_op
from .nn_helpers import check_module


@pytest.mark.parametrize("build,shapes", [
    (lambda L: L.nn.CosineSimilarity(), [(4, 5), (4, 5)]),
    (lambda L: L.nn.CosineSimilarity(dim=0, eps=1e-3), [(4, 5), (1, 5)]),
    (lambda L: L.nn.PairwiseDistance(), [(4, 5), (4, 5)]),
    (lambda L: L.nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True), [(4, 5), (5,)]),
    (lambda L: L.nn.PairwiseDistance(p=3.0), [(0, 5), (0, 5)]),    # empty batch
    (lambda L: L.nn.Unfold(kernel_size=2), [(2, 3, 4, 5)]),
    (lambda L: L.nn.Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2), [(1, 2, 5, 6)]),
    (lambda L: L.nn.Fold(output_size=(3, 3), kernel_size=2), [(2, 4, 4)]),
    (lambda L: L.nn.Fold(output_size=(5, 6), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2), [(1, 12, 6)]),
])
def test_modules_match_torch(build, shapes):
    check_module(build, *shapes)


def test_reprs():
    assert repr(ember.nn.Fold(3, 2)) == repr(torch.nn.Fold(3, 2))
    assert repr(ember.nn.Unfold((2, 3), padding=1)) == repr(torch.nn.Unfold((2, 3), padding=1))
    assert repr(ember.nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    assert repr(ember.nn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())


def test_module_errors_name_the_op():
    with pytest.raises(RuntimeError, match="fold"):
        ember.nn.Fold(output_size=(3, 3), kernel_size=2)(ember.ones(1, 5, 4))   # 5 is not C * 2 * 2
    with pytest.raises(ValueError, match=r"unfold: expected a 4-D input, got shape \(2, 3\)"):
        ember.nn.Unfold(kernel_size=2)(ember.ones(2, 3))


# ------------------------------------------------------------------ nn.Buffer
@pytest.mark.parametrize("L", [torch, ember])
def test_buffer_registers_on_assignment(L):
    m = L.nn.Module()
    m.steps = L.nn.Buffer(L.zeros(2))
    m.cache = L.nn.Buffer(L.ones(3), persistent=False)
    m.plain = L.zeros(1)                                          # a plain tensor is not a buffer
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert list(m.state_dict()) == ["steps"]
    assert isinstance(m.steps, L.nn.Buffer) and not isinstance(m.plain, L.nn.Buffer)
    assert type(m.steps) is L.Tensor and not m.steps.requires_grad
    m.steps = L.ones(4)                                           # reassigning a buffer keeps it one
    m.cache = L.nn.Buffer(L.ones(1))                              # a Buffer's own persistent wins
    assert list(m.state_dict()) == ["steps", "cache"] and m.steps.shape == (4,)
    m.x = 5
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = L.nn.Buffer(L.ones(1))
    m.w = L.nn.Parameter(L.ones(1))
    with pytest.raises(TypeError, match="as parameter 'w'"):
        m.w = L.nn.Buffer(L.ones(1))


def test_buffer_shares_memory_and_moves_with_the_module():
    t = ember.zeros(2)
    b = ember.nn.Buffer(t)
    t.add_(1)
    assert b.tolist() == [1.0, 1.0]
    m = ember.nn.Module()
    m.b = b
    m.double()
    assert m.b.dtype is ember.float64 and "b" in dict(m.named_buffers())
    with pytest.raises(TypeError, match="Buffer: data must be a Tensor, got list"):
        ember.nn.Buffer([1.0])


# ------------------------------------------------------------------ F.upsample*
@pytest.mark.parametrize("fn", [
    lambda L, x: L.nn.functional.upsample(x, scale_factor=2),
    lambda L, x: L.nn.functional.upsample(x, size=(5, 7), mode="bilinear", align_corners=False),
    lambda L, x: L.nn.functional.upsample_nearest(x, size=(6, 5)),
    lambda L, x: L.nn.functional.upsample_nearest(x, scale_factor=3),
    lambda L, x: L.nn.functional.upsample_bilinear(x, size=(5, 7)),          # align_corners=True
    lambda L, x: L.nn.functional.upsample_bilinear(x, scale_factor=2),
])
def test_upsample_matches_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, (2, 3, 3, 4))


@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_upsample_warns_deprecated(name):
    with pytest.warns(UserWarning, match=f"{name} is deprecated. Use nn.functional.interpolate instead"):
        getattr(ember.nn.functional, name)(ember.ones(1, 1, 2, 2), scale_factor=2)


def test_upsample_bilinear_aligns_corners():
    x = ember.tensor([[[[0.0, 1.0]]]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(ember.nn.functional.upsample_bilinear(x, size=(1, 3)).numpy().ravel(), [0, 0.5, 1])
