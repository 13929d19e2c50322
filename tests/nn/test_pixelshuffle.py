"""ember/nn/pixelshuffle.py (and F.pixel_shuffle, pixel_unshuffle, channel_shuffle) against torch."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, raises_exactly
from .nn_helpers import check_module

CASES = [
    ("pixel_shuffle", lambda lib: lib.nn.PixelShuffle(2), (2, 8, 3, 4)),
    ("pixel_shuffle_3", lambda lib: lib.nn.PixelShuffle(3), (1, 18, 2, 3)),
    ("pixel_shuffle_unbatched", lambda lib: lib.nn.PixelShuffle(2), (4, 3, 2)),
    ("pixel_shuffle_two_batch_dims", lambda lib: lib.nn.PixelShuffle(2), (2, 3, 8, 2, 2)),
    ("pixel_shuffle_1", lambda lib: lib.nn.PixelShuffle(1), (2, 3, 2, 2)),
    ("pixel_unshuffle", lambda lib: lib.nn.PixelUnshuffle(2), (2, 3, 4, 6)),
    ("pixel_unshuffle_3", lambda lib: lib.nn.PixelUnshuffle(3), (1, 2, 6, 3)),
    ("pixel_unshuffle_unbatched", lambda lib: lib.nn.PixelUnshuffle(2), (2, 4, 4)),
    ("pixel_unshuffle_two_batch_dims", lambda lib: lib.nn.PixelUnshuffle(2), (2, 1, 3, 2, 4)),
    ("channel_shuffle", lambda lib: lib.nn.ChannelShuffle(3), (2, 6, 4, 4)),
    ("channel_shuffle_3d", lambda lib: lib.nn.ChannelShuffle(2), (2, 8, 5)),
    ("channel_shuffle_5d", lambda lib: lib.nn.ChannelShuffle(4), (1, 8, 2, 2, 3)),
    ("channel_shuffle_one_group", lambda lib: lib.nn.ChannelShuffle(1), (2, 3, 4)),
    ("channel_shuffle_empty", lambda lib: lib.nn.ChannelShuffle(2), (0, 4, 3)),
]


@pytest.mark.parametrize("build,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_shuffle_layers(build, shape):
    check_module(build, shape, modes=("train",))


def test_functional_forms_and_round_trip():
    check_op(lambda L, x: L.nn.functional.pixel_shuffle(x, 2), (2, 12, 3, 3))
    check_op(lambda L, x: L.nn.functional.pixel_unshuffle(x, 2), (2, 3, 6, 4))
    check_op(lambda L, x: L.nn.functional.channel_shuffle(x, 2), (3, 6, 2, 2))
    F = ember.nn.functional
    x = ember.randn(2, 6, 8, 6)
    np.testing.assert_array_equal(F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2).numpy(), x.numpy())
    assert not np.array_equal(F.channel_shuffle(x, 3).numpy(), x.numpy())
    # an empty batch: torch's backward of pixel_shuffle fails on it (a gradient of the wrong shape), so values only
    check_op(lambda L, x: L.nn.functional.pixel_shuffle(x, 2), (0, 4, 2, 2), grad=False)
    x = ember.zeros(0, 4, 2, 2, requires_grad=True)
    F.pixel_shuffle(x, 2).sum().backward()
    assert x.grad.shape == (0, 4, 2, 2)


def test_shuffle_reprs():
    for lib in (torch, ember):
        assert repr(lib.nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
        assert repr(lib.nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"
        assert repr(lib.nn.ChannelShuffle(4)) == "ChannelShuffle(groups=4)"


F = ember.nn.functional
SHUFFLE_ERRORS = [
    (lambda: F.pixel_shuffle(ember.zeros(2, 7, 3, 3), 2), RuntimeError,
     "pixel_shuffle: expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=7 is not divisible by 4"),
    (lambda: F.pixel_shuffle(ember.zeros(8, 3), 2), RuntimeError,
     "pixel_shuffle: expects input to have at least 3 dimensions, but got shape (8, 3)"),
    (lambda: F.pixel_shuffle(ember.zeros(8, 3, 3), 0), RuntimeError,
     "pixel_shuffle: expects a positive upscale_factor, but got 0"),
    (lambda: F.pixel_shuffle(ember.zeros(8, 3, 3), 1.5), TypeError, "pixel_shuffle: upscale_factor must be an int, got 1.5"),
    (lambda: ember.nn.PixelUnshuffle(2)(ember.zeros(2, 2, 5, 6)), RuntimeError,
     "pixel_unshuffle: expects height to be divisible by downscale_factor, but input.size(-2)=5 is not divisible by 2"),
    (lambda: F.pixel_unshuffle(ember.zeros(2, 2, 4, 5), 2), RuntimeError,
     "pixel_unshuffle: expects width to be divisible by downscale_factor, but input.size(-1)=5 is not divisible by 2"),
    (lambda: F.pixel_unshuffle(ember.zeros(4, 6), 2), RuntimeError,
     "pixel_unshuffle: expects input to have at least 3 dimensions, but got shape (4, 6)"),
    (lambda: F.pixel_unshuffle(ember.zeros(1, 4, 6), -1), RuntimeError,
     "pixel_unshuffle: expects a positive downscale_factor, but got -1"),
    (lambda: ember.nn.ChannelShuffle(4)(ember.zeros(2, 6, 3, 3)), RuntimeError,
     "channel_shuffle: number of channels must be divisible by groups. Got 6 channels and 4 groups."),
    (lambda: F.channel_shuffle(ember.zeros(2, 6), 3), RuntimeError,
     "channel_shuffle: expects input with > 2 dims, but got shape (2, 6)"),
    (lambda: F.channel_shuffle(ember.zeros(2, 6, 3), 0), RuntimeError,
     "channel_shuffle: number of groups to divide channels in must be positive, got 0"),
]


@pytest.mark.parametrize("k", range(len(SHUFFLE_ERRORS)))
def test_shuffle_errors(k):
    call, exc, message = SHUFFLE_ERRORS[k]
    raises_exactly(call, exc, message)
