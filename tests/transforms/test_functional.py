"""ember/transforms/functional.py called directly (tests/transforms/test_transforms.py tests the classes):
resizing against torch.nn.functional.interpolate, the rest against NumPy expressions of the definition."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.transforms import functional as F

rng = np.random.default_rng(3)


def test_to_tensor_batch_and_float_input():
    nhwc = rng.integers(0, 256, (2, 5, 7, 3), dtype=np.uint8)
    out = F.to_tensor(nhwc)
    assert out.shape == (2, 3, 5, 7) and out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(nhwc, -1, -3) / np.float32(255))
    hw = rng.random((4, 6))
    out = F.to_tensor(hw)
    assert out.shape == (1, 4, 6) and out.dtype == ember.float64 and np.array_equal(out.numpy()[0], hw)
    with pytest.raises(TypeError, match="NumPy array"):
        F.to_tensor([[1, 2]])
    with pytest.raises(ValueError, match="dimensions"):
        F.to_tensor(np.zeros(3))


def test_crop_inside_and_past_the_border():
    a = rng.random((3, 6, 8)).astype(np.float32)
    np.testing.assert_array_equal(F.crop(a, 1, 2, 3, 4), a[:, 1:4, 2:6])
    out = F.crop(ember.from_numpy(a), -1, 6, 3, 4, fill=0.5)       # one row above, two columns past the right
    assert isinstance(out, ember.Tensor) and out.shape == (3, 3, 4)
    expected = np.full((3, 3, 4), 0.5, np.float32)
    expected[:, 1:, :2] = a[:, :2, 6:]
    np.testing.assert_array_equal(out.numpy(), expected)


def test_center_crop_and_padding_when_larger():
    a = rng.random((2, 7, 9))
    np.testing.assert_array_equal(F.center_crop(a, (3, 5)), a[:, 2:5, 2:7])
    big = F.center_crop(a, 9)
    assert big.shape == (2, 9, 9)
    np.testing.assert_array_equal(big[:, 1:8, :], a)
    assert not big[:, 0].any() and not big[:, 8].any()


@pytest.mark.parametrize("size,mode", [((5, 11), "bilinear"), ((9, 4), "nearest"), (6, "bilinear")])
def test_resize_matches_interpolate(size, mode):
    a = rng.random((2, 3, 8, 10)).astype(np.float32)
    out = F.resize(ember.from_numpy(a), size, interpolation=mode)
    target = size if isinstance(size, tuple) else (size, int(size * 10 / 8))   # int: the shorter side
    kw = {"align_corners": False} if mode == "bilinear" else {}
    expected = TF.interpolate(torch.from_numpy(a), size=target, mode=mode, **kw).numpy()
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-5)


def test_flips_on_arrays_and_tensors():
    a = rng.random((3, 4, 5))
    np.testing.assert_array_equal(F.hflip(a), a[..., ::-1])
    np.testing.assert_array_equal(F.vflip(a), a[..., ::-1, :])
    t = F.vflip(F.hflip(ember.from_numpy(a)))
    assert isinstance(t, ember.Tensor)
    np.testing.assert_array_equal(t.numpy(), a[..., ::-1, ::-1])


def _gray(a):
    return 0.2989 * a[..., 0:1, :, :] + 0.587 * a[..., 1:2, :, :] + 0.114 * a[..., 2:3, :, :]


def test_adjust_contrast_and_saturation_follow_the_definition():
    a = rng.random((2, 3, 4, 5)).astype(np.float32)
    mean = _gray(a).mean(axis=(-3, -2, -1), keepdims=True)
    np.testing.assert_allclose(F.adjust_contrast(a, 1.5), np.clip(1.5 * a - 0.5 * mean, 0, 1), atol=1e-6)
    np.testing.assert_allclose(F.adjust_saturation(a, 0.3), np.clip(0.3 * a + 0.7 * _gray(a), 0, 1), atol=1e-6)
    np.testing.assert_allclose(F.adjust_saturation(a, 1.0), a, atol=1e-6)
    one = a[:, :1]
    assert F.adjust_saturation(one, 0.0) is one                  # grey images have no saturation to change
    u8 = rng.integers(0, 256, (3, 4, 4), dtype=np.uint8)
    out = F.adjust_contrast(u8, 0.0)                             # contrast 0: the mean grey everywhere
    assert out.dtype == np.uint8 and len(np.unique(out)) == 1


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes_match_numpy(mode):
    a = rng.random((2, 3, 4))
    out = F.pad(ember.from_numpy(a), (1, 2, 3, 0), fill=7.0, padding_mode=mode)   # left, top, right, bottom
    kw = {"constant_values": 7.0} if mode == "constant" else {}
    np.testing.assert_array_equal(out.numpy(), np.pad(a, [(0, 0), (2, 0), (1, 3)], mode=mode, **kw))
    assert F.pad(a, 1).shape == (2, 5, 6) and F.pad(a, (1, 2)).shape == (2, 7, 6)
    with pytest.raises(ValueError, match="padding_mode"):
        F.pad(a, 1, padding_mode="wrap")
