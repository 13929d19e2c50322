"""ember.transforms: resampling against torch.nn.functional (interpolate, grid_sample), the rest against
hand-computed expectations (torchvision is not installable here). Every transform also on a batch."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember import transforms as T
from ember.transforms import functional as F

rng = np.random.default_rng(0)


def img(shape=(3, 12, 16), dtype=np.float32):
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape).astype(dtype)


# --- conversion and normalisation ------------------------------------------------------------------------
def test_to_tensor_layouts_and_scaling():
    hwc = img((5, 7, 3), np.uint8)
    out = T.ToTensor()(hwc)
    expected = torch.from_numpy(hwc).permute(2, 0, 1).float().div(255)
    assert ember.is_tensor(out) and out.shape == (3, 5, 7) and out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert T.ToTensor()(img((5, 7), np.uint8)).shape == (1, 5, 7)
    batch = T.ToTensor()(img((4, 5, 7, 3), np.uint8))
    assert batch.shape == (4, 3, 5, 7)
    f = T.ToTensor()(np.full((2, 2, 1), 3.0, dtype=np.float64))
    assert f.dtype == ember.float64 and f.numpy().max() == 3.0  # only uint8 is scaled
    with pytest.raises(TypeError, match="NumPy array"):
        T.ToTensor()([1, 2])


def test_normalize_matches_torch_and_validates():
    x = img((2, 3, 4, 5))
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    expected = (torch.from_numpy(x) - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
    n = T.Normalize(mean, std)
    for _ in range(2):  # second call takes the cached path
        np.testing.assert_allclose(n(ember.from_numpy(x)).numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(n(x[0]), expected[0].numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="float"):
        T.Normalize((0.5,), (0.5,))(np.zeros((1, 2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="division by zero"):
        T.Normalize((0.5,), (0.0,))(np.zeros((1, 2, 2), dtype=np.float32))
    y = x.copy()
    T.Normalize(mean, std, inplace=True)(y)
    np.testing.assert_allclose(y, expected.numpy(), rtol=1e-6)


# --- resampling against torch ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("size", [(6, 8), (20, 9), (12, 16), (5, 31)])
def test_resize_matches_interpolate(mode, size):
    x = img((2, 3, 12, 16))
    ours = T.Resize(size, interpolation=mode)(x)
    kw = dict(align_corners=False) if mode == "bilinear" else {}
    theirs = TF.interpolate(torch.from_numpy(x), size=size, mode=mode, **kw)
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5)
    single = T.Resize(size, interpolation=mode)(ember.from_numpy(x[1]))
    np.testing.assert_allclose(single.numpy(), theirs[1].numpy(), atol=1e-5)


def test_resize_int_keeps_aspect_ratio():
    assert T.Resize(6)(img((1, 12, 16))).shape == (1, 6, 8)
    assert T.Resize(6)(img((1, 16, 12))).shape == (1, 8, 6)


def test_resized_crop_matches_interpolate_of_crop():
    x = img((3, 20, 20))
    ours = F.resized_crop(x, 3, 5, 10, 8, (7, 7))
    theirs = TF.interpolate(torch.from_numpy(x[None, :, 3:13, 5:13]), size=(7, 7), mode="bilinear",
                            align_corners=False)[0]
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5)


def rotation_theta(angle_deg, h, w):
    a = math.radians(angle_deg)
    return torch.tensor([[math.cos(a), -math.sin(a) * h / w, 0.0], [math.sin(a) * w / h, math.cos(a), 0.0]],
                        dtype=torch.float64)


@pytest.mark.parametrize("angle", [0.0, 17.0, -33.0, 90.0, 151.0])
def test_rotate_bilinear_matches_grid_sample(angle):
    x = img((2, 3, 11, 11)).astype(np.float64)
    ours = F.rotate(x, angle, interpolation="bilinear")
    theta = rotation_theta(angle, 11, 11)[None].repeat(2, 1, 1)
    grid = TF.affine_grid(theta, (2, 3, 11, 11), align_corners=False)
    theirs = TF.grid_sample(torch.from_numpy(x), grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_rotate_nearest_by_quarter_turns_is_rot90(k):
    x = img((3, 9, 9), np.uint8)
    np.testing.assert_array_equal(F.rotate(x, 90 * k), np.rot90(x, k, axes=(-2, -1)))
    t = T.RandomRotation((90 * k, 90 * k))(ember.from_numpy(x))
    np.testing.assert_array_equal(t.numpy(), np.rot90(x, k, axes=(-2, -1)))


def test_rotate_fill_and_validation():
    x = np.ones((1, 8, 8), dtype=np.float32)
    out = F.rotate(x, 45, fill=0.0)
    assert out[0, 0, 0] == 0.0 and out[0, 4, 4] == 1.0  # corners come from outside
    with pytest.raises(NotImplementedError, match="expand"):
        F.rotate(x, 10, expand=True)


# --- crops and flips -------------------------------------------------------------------------------------
def windows(padded, h, w):
    H, W = padded.shape[-2:]
    return [padded[..., i:i + h, j:j + w] for i in range(H - h + 1) for j in range(W - w + 1)]


def is_window(out, padded):
    return any(np.array_equal(out, win) for win in windows(padded, *out.shape[-2:]))


@pytest.mark.parametrize("padding_mode", ["constant", "edge", "reflect", "symmetric"])
def test_random_crop_is_a_window_of_the_padded_image(padding_mode):
    x = img((1, 8, 8), np.uint8)
    t = T.RandomCrop(8, padding=2, padding_mode=padding_mode, fill=7)
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[padding_mode]
    padded = np.pad(x, ((0, 0), (2, 2), (2, 2)), mode=mode, **({"constant_values": 7} if mode == "constant" else {}))
    outs = [t(x) for _ in range(20)]
    assert all(is_window(o, padded) for o in outs)
    assert len({o.tobytes() for o in outs}) > 1
    batch = t(np.repeat(x[None], 16, axis=0))
    assert batch.shape == (16, 1, 8, 8) and all(is_window(b, padded) for b in batch)
    assert len({b.tobytes() for b in batch}) > 1  # each image of a batch gets its own crop


def test_random_crop_pad_if_needed_and_errors():
    x = img((1, 5, 5))
    assert T.RandomCrop(8, pad_if_needed=True)(x).shape == (1, 8, 8)
    with pytest.raises(ValueError, match="larger than"):
        T.RandomCrop(8)(x)


def test_center_crop_hand_computed():
    x = np.arange(30.0).reshape(1, 5, 6)
    np.testing.assert_array_equal(T.CenterCrop((3, 2))(x), x[:, 1:4, 2:4])
    big = T.CenterCrop(8)(np.ones((1, 4, 4)))
    assert big.shape == (1, 8, 8) and big.sum() == 16  # padded with zeros, as torchvision


def test_flips_probability_and_batches():
    x = img((2, 4, 5))
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(x), x[..., ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(x), x[..., ::-1, :])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(x), x)
    batch = np.repeat(x[None], 400, axis=0)
    out = T.RandomHorizontalFlip(0.5)(batch)
    flipped = np.array([np.array_equal(o, x[..., ::-1]) for o in out])
    assert all(np.array_equal(o, x) for o in out[~flipped]) and 150 < flipped.sum() < 250
    with pytest.raises(ValueError, match="probability"):
        T.RandomHorizontalFlip(1.5)


def test_hwc_uint8_arrays_keep_their_layout():
    hwc = img((6, 7, 3), np.uint8)
    out = T.RandomHorizontalFlip(1.0)(hwc)
    np.testing.assert_array_equal(out, hwc[:, ::-1, :])
    assert T.CenterCrop(4)(hwc).shape == (4, 4, 3)


def test_random_resized_crop_params_and_batch():
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(20, 30, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i <= 20 - h and 0 <= j <= 30 - w and h > 0 and w > 0
    # impossible constraints fall back to the central crop
    assert T.RandomResizedCrop.get_params(10, 40, (1.0, 1.0), (1.0, 1.0)) == (0, 15, 10, 10)
    out = T.RandomResizedCrop((8, 6))(img((5, 3, 32, 32)))
    assert out.shape == (5, 3, 8, 6)
    assert T.RandomResizedCrop(8)(ember.from_numpy(img((1, 16, 16)))).shape == (1, 8, 8)


# --- colour ----------------------------------------------------------------------------------------------
def test_color_jitter_brightness_contrast_saturation_hand_computed():
    x = img((3, 4, 4))
    b = T.ColorJitter(brightness=(1.5, 1.5))(x)
    np.testing.assert_allclose(b, np.clip(1.5 * x, 0, 1), rtol=1e-6)
    gray = 0.2989 * x[0] + 0.587 * x[1] + 0.114 * x[2]
    c = T.ColorJitter(contrast=(0.5, 0.5))(x)
    np.testing.assert_allclose(c, np.clip(0.5 * x + 0.5 * gray.mean(), 0, 1), rtol=1e-5)
    s = T.ColorJitter(saturation=(0.0, 0.0))(x)
    np.testing.assert_allclose(s, np.broadcast_to(gray, x.shape), rtol=1e-5)
    u = np.array([[[10, 200]]], dtype=np.uint8)
    np.testing.assert_array_equal(F.adjust_brightness(u, 1.5), np.array([[[15, 255]]], dtype=np.uint8))
    with pytest.raises(NotImplementedError, match="hue"):
        T.ColorJitter(hue=0.1)
    with pytest.raises(ValueError, match="non negative"):
        T.ColorJitter(brightness=-1)


def test_color_jitter_per_image_factors_on_a_batch():
    batch = np.full((64, 1, 2, 2), 0.4, dtype=np.float32)
    out = T.ColorJitter(brightness=0.5)(batch)
    factors = out[:, 0, 0, 0] / 0.4
    assert factors.min() >= 0.5 - 1e-6 and factors.max() <= 1.5 + 1e-6 and len(np.unique(factors)) > 50


# --- composition, determinism, batches ---------------------------------------------------------------------
def test_compose_lambda_and_reproducibility():
    aug = T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                     T.Normalize((0.1307,), (0.3081,)), T.Lambda(lambda t: t * 1)])
    x = img((28, 28), np.uint8)
    ember.manual_seed(0)
    a = [aug(x).numpy() for _ in range(5)]
    ember.manual_seed(0)
    b = [aug(x).numpy() for _ in range(5)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert a[0].shape == (1, 28, 28)
    assert "RandomCrop" in repr(aug)
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(3)


@pytest.mark.parametrize("transform", [T.Resize((6, 5)), T.CenterCrop(5), T.Normalize((0.5,) * 3, (0.2,) * 3),
                                       T.RandomRotation((30, 30), interpolation="bilinear"),
                                       T.ColorJitter(contrast=(0.7, 0.7))])
def test_deterministic_transforms_on_a_batch_equal_per_image(transform):
    batch = img((4, 3, 9, 9))
    together = transform(batch)
    one_by_one = np.stack([transform(b) for b in batch])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build,message", [
    (lambda: T.Resize(4, interpolation="bicubic"), "Resize: interpolation should be one of"),
    (lambda: T.RandomCrop(4, padding=1, padding_mode="wrap"), "RandomCrop: padding_mode should be one of"),
    (lambda: T.ColorJitter(brightness=(0.5, 3.0), saturation=(-1, 1)), r"saturation values should be between \(0"),
    (lambda: T.ColorJitter(contrast=-0.1), "contrast: if it is a single number, it must be non negative"),
    (lambda: T.RandomRotation(-5), "if degrees is a single number, it must be positive"),
    (lambda: T.RandomRotation((1, 2, 3)), "RandomRotation: degrees should be a number or a sequence of 2"),
    (lambda: T.RandomRotation(5, interpolation="bicubic"), "RandomRotation: interpolation should be one of"),
    (lambda: T.RandomResizedCrop(4, scale=(1.0, 0.5)), "RandomResizedCrop: scale and ratio should be of kind"),
    (lambda: T.RandomResizedCrop(4, interpolation="area"), "RandomResizedCrop: interpolation should be one of"),
])
def test_transform_arguments_are_checked(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_transform_reprs():
    assert repr(T.Resize(8)) == "Resize(size=8, interpolation=bilinear)"
    assert repr(T.CenterCrop(5)) == "CenterCrop(size=(5, 5))"
    assert repr(T.RandomRotation(10)) == "RandomRotation(degrees=(-10.0, 10.0), interpolation=nearest)"
    assert repr(T.RandomResizedCrop(4)) == "RandomResizedCrop(size=(4, 4), scale=(0.08, 1.0), ratio=(0.75, 1.3333333333333333))"
    assert repr(T.ColorJitter(brightness=0.5)) == "ColorJitter(brightness=(0.5, 1.5), contrast=None, saturation=None)"


@pytest.mark.parametrize("shape,ratio,expected_hw", [((10, 40), (0.5, 1.0), (10, 10)),    # too wide: full height
                                                     ((40, 10), (1.0, 2.0), (10, 10)),    # too tall: full width
                                                     ((10, 12), (0.5, 2.0), (10, 12))])   # in range: everything
def test_random_resized_crop_falls_back_to_a_centre_crop(shape, ratio, expected_hw):
    # a scale range no window can meet (area above the image's) forces torchvision's fallback: the
    # largest centred window whose aspect ratio is within `ratio`
    top, left, h, w = T.RandomResizedCrop.get_params(*shape, scale=(2.0, 3.0), ratio=ratio)
    assert (h, w) == expected_hw and (top, left) == ((shape[0] - h) // 2, (shape[1] - w) // 2)
