"""Transform objects (torchvision's names and arguments) over ``ember.transforms.functional``.

Every transform takes one image ``(C, H, W)`` / ``(H, W)`` (a Tensor or an array; see ``functional``) or a
batch ``(N, C, H, W)``. On a batch, the random transforms draw their parameters independently for every
image, in one vectorised pass (torchvision would use one draw for the whole batch).
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from ember.transforms import _random
from ember.transforms import functional as F

__all__ = [
    "Compose", "ToTensor", "Normalize", "Lambda", "Resize", "CenterCrop", "RandomCrop", "RandomHorizontalFlip",
    "RandomVerticalFlip", "RandomRotation", "RandomResizedCrop", "ColorJitter",
]


def _is_batch(a: np.ndarray) -> bool:
    return a.ndim == 4


class Compose:
    """Apply transforms one after another.

    Example:
        >>> import numpy as np
        >>> t = Compose([ToTensor(), Normalize((0.5,), (0.5,))])
        >>> t(np.full((2, 2), 255, dtype=np.uint8)).tolist()
        [[[1.0, 1.0], [1.0, 1.0]]]
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t!r}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor:
    """``(H, W)``/``(H, W, C)`` uint8 array -> ``(C, H, W)`` float32 Tensor in [0, 1]; ``(N, H, W, C)`` -> ``(N, C, H, W)``.

    Example:
        >>> ToTensor()(np.zeros((28, 28), dtype=np.uint8)).shape
        (1, 28, 28)
    """

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """``(x - mean[c]) / std[c]`` per channel.

    Example:
        >>> Normalize((0.5,), (0.25,))(np.ones((1, 2, 2), dtype=np.float32)).tolist()
        [[[2.0, 2.0], [2.0, 2.0]]]
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean, self.std, self.inplace = mean, std, inplace
        self._cache: dict = {}  # dtype -> (mean, std) as (C, 1, 1) arrays: the per-sample hot path

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        ms = self._cache.get(a.dtype)
        if ms is None or self.inplace or a.ndim < 3:
            out = F.normalize(img, self.mean, self.std, self.inplace)  # validates the input and the std
            if a.dtype.kind == "f":
                self._cache[a.dtype] = (np.asarray(self.mean, dtype=a.dtype).reshape(-1, 1, 1),
                                        np.asarray(self.std, dtype=a.dtype).reshape(-1, 1, 1))
            return out
        return wrap((a - ms[0]) / ms[1])

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"


class Lambda:
    """Wrap a function as a transform.

    Example:
        >>> Lambda(lambda x: x * 2)(3)
        6
    """

    def __init__(self, lambd: Callable) -> None:
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return "Lambda()"


class Resize:
    """Resize to ``size`` (an int matches the shorter side). Bilinear/nearest as ``F.interpolate`` without
    antialiasing: ``antialias`` is accepted for torchvision compatibility but not implemented.

    Example:
        >>> Resize((4, 6))(np.zeros((1, 8, 8), dtype=np.float32)).shape
        (1, 4, 6)
    """

    def __init__(self, size, interpolation: str = "bilinear", max_size: Optional[int] = None,
                 antialias: Optional[bool] = None) -> None:
        if interpolation not in F.INTERPOLATIONS:
            raise ValueError(f"Resize: interpolation should be one of {F.INTERPOLATIONS}, got {interpolation!r}")
        self.size, self.interpolation, self.max_size, self.antialias = size, interpolation, max_size, antialias

    def __call__(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size)

    def __repr__(self) -> str:
        return f"Resize(size={self.size}, interpolation={self.interpolation})"


class CenterCrop:
    """The central ``size`` window.

    Example:
        >>> CenterCrop(2)(np.arange(16.0).reshape(1, 4, 4)).tolist()
        [[[5.0, 6.0], [9.0, 10.0]]]
    """

    def __init__(self, size) -> None:
        self.size = _random.pair(size, "size")

    def __call__(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"CenterCrop(size={self.size})"


def _take_windows(a4: np.ndarray, tops: np.ndarray, lefts: np.ndarray, h: int, w: int) -> np.ndarray:
    """Window n of size (h, w) at (tops[n], lefts[n]) of each image of (N, C, H, W)."""
    rows = tops[:, None] + np.arange(h)[None, :]
    cols = lefts[:, None] + np.arange(w)[None, :]
    out = np.take_along_axis(a4, rows[:, None, :, None], axis=2)
    return np.take_along_axis(out, cols[:, None, None, :], axis=3)


class RandomCrop:
    """A random ``size`` window, after optional ``padding`` (int, (lr, tb) or (l, t, r, b)).

    Example:
        >>> RandomCrop(28, padding=4)(np.zeros((1, 28, 28), dtype=np.float32)).shape
        (1, 28, 28)
    """

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        self.size = _random.pair(size, "size")
        self.padding = None if padding is None else F._padding_ltrb(padding)
        self.pad_if_needed, self.fill, self.padding_mode = pad_if_needed, fill, padding_mode
        if padding_mode not in F._PAD_MODES:
            raise ValueError(f"RandomCrop: padding_mode should be one of {sorted(F._PAD_MODES)}, got {padding_mode!r}")

    def _total_padding(self, H: int, W: int) -> Tuple[int, int, int, int]:
        left, top, right, bottom = self.padding or (0, 0, 0, 0)
        th, tw = self.size
        if self.pad_if_needed:
            if W + left + right < tw:
                extra = tw - (W + left + right)
                left, right = left + extra, right + extra
            if H + top + bottom < th:
                extra = th - (H + top + bottom)
                top, bottom = top + extra, bottom + extra
        return left, top, right, bottom

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        H, W = a.shape[-2:]
        th, tw = self.size
        left, top, right, bottom = self._total_padding(H, W)
        PH, PW = H + top + bottom, W + left + right
        if PH < th or PW < tw:
            raise ValueError(f"RandomCrop: required crop size {(th, tw)} is larger than the (padded) input image "
                             f"size {(PH, PW)}")
        if _is_batch(a):
            n = a.shape[0]
            tops, lefts = _random.randint(0, PH - th + 1, n), _random.randint(0, PW - tw + 1, n)
            padded = a if (left, top, right, bottom) == (0, 0, 0, 0) else \
                F._pad_array(a, (left, top, right, bottom), self.fill, self.padding_mode)
            return wrap(_take_windows(padded, tops, lefts, th, tw))
        i, j = _random.randint(0, PH - th + 1), _random.randint(0, PW - tw + 1)
        if self.padding_mode == "constant":  # no padded copy: the crop fills what lies outside
            return wrap(F._crop_array(a, i - top, j - left, th, tw, self.fill))
        padded = F._pad_array(a, (left, top, right, bottom), self.fill, self.padding_mode)
        return wrap(padded[..., i:i + th, j:j + tw])

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class _RandomFlip:
    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p should be a probability in [0, 1], got {p}")
        self.p = p

    def _flip(self, a: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        if _is_batch(a):
            flip = _random.uniform(0.0, 1.0, a.shape[0]) < self.p
            out = a.copy()
            out[flip] = self._flip(a[flip])
            return wrap(out)
        if _random.uniform(0.0, 1.0) < self.p:
            return wrap(np.ascontiguousarray(self._flip(a)))
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left-right with probability ``p``.

    Example:
        >>> RandomHorizontalFlip(p=1.0)(np.array([[[1.0, 2.0]]])).tolist()
        [[[2.0, 1.0]]]
    """

    def _flip(self, a):
        return a[..., ::-1]


class RandomVerticalFlip(_RandomFlip):
    """Mirror top-bottom with probability ``p``.

    Example:
        >>> RandomVerticalFlip(p=1.0)(np.array([[[1.0], [2.0]]])).tolist()
        [[[2.0], [1.0]]]
    """

    def _flip(self, a):
        return a[..., ::-1, :]


def _range(value, name: str, center: float = 1.0, bound=(0, float("inf")), clip_first: bool = True):
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"{name}: if it is a single number, it must be non negative, got {value}")
        lo, hi = center - float(value), center + float(value)
        if clip_first:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
        if not bound[0] <= lo <= hi <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, got {value}")
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2, got {value!r}")
    return None if lo == hi == center else (lo, hi)


class RandomRotation:
    """Rotate by an angle drawn uniformly from ``degrees`` (a number d means (-d, d)), counter-clockwise.

    Example:
        >>> RandomRotation((90, 90))(np.array([[[1.0, 2.0], [3.0, 4.0]]])).tolist()
        [[[2.0, 4.0], [1.0, 3.0]]]
    """

    def __init__(self, degrees, interpolation: str = "nearest", expand: bool = False, center=None, fill=0):
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError(f"RandomRotation: if degrees is a single number, it must be positive, got {degrees}")
            degrees = (-float(degrees), float(degrees))
        if len(degrees) != 2:
            raise ValueError(f"RandomRotation: degrees should be a number or a sequence of 2, got {degrees!r}")
        if interpolation not in F.INTERPOLATIONS:
            raise ValueError(f"RandomRotation: interpolation should be one of {F.INTERPOLATIONS}, got {interpolation!r}")
        if expand:
            raise NotImplementedError("RandomRotation: expand=True is not supported")
        self.degrees = (float(degrees[0]), float(degrees[1]))
        self.interpolation, self.center, self.fill = interpolation, center, fill

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        a4, shape = F._as_batch(a)
        n = a4.shape[0] if _is_batch(a) else 1
        angles = _random.uniform(self.degrees[0], self.degrees[1], n)
        angles = np.broadcast_to(angles, (a4.shape[0],))
        return wrap(F._rotate_array(a4, angles, self.interpolation, self.center, self.fill).reshape(shape))

    def __repr__(self) -> str:
        return f"RandomRotation(degrees={self.degrees}, interpolation={self.interpolation})"


class RandomResizedCrop:
    """A random box (area fraction from ``scale``, aspect ratio from ``ratio``) resized to ``size``.

    Example:
        >>> RandomResizedCrop(8)(np.zeros((3, 32, 32), dtype=np.float32)).shape
        (3, 8, 8)
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation: str = "bilinear",
                 antialias: Optional[bool] = None) -> None:
        self.size = _random.pair(size, "size")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"RandomResizedCrop: scale and ratio should be of kind (min, max), got {scale}, {ratio}")
        if interpolation not in F.INTERPOLATIONS:
            raise ValueError(f"RandomResizedCrop: interpolation should be one of {F.INTERPOLATIONS}, "
                             f"got {interpolation!r}")
        self.scale, self.ratio, self.interpolation = tuple(scale), tuple(ratio), interpolation

    @staticmethod
    def get_params(height: int, width: int, scale, ratio) -> Tuple[int, int, int, int]:
        """(top, left, h, w) of a random box, by torchvision's recipe (10 tries, then a central crop)."""
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * _random.uniform(scale[0], scale[1])
            aspect = math.exp(_random.uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return _random.randint(0, height - h + 1), _random.randint(0, width - w + 1), h, w
        in_ratio = width / height
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        a4, shape = F._as_batch(a)
        H, W = a.shape[-2:]
        n = a4.shape[0] if _is_batch(a) else 1
        boxes = np.array([self.get_params(H, W, self.scale, self.ratio) for _ in range(n)], dtype=np.int64)
        boxes = np.broadcast_to(boxes, (a4.shape[0], 4))
        out = F._resample_boxes(a4, boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], self.size[0], self.size[1],
                                self.interpolation)
        return wrap(out.reshape(shape[:-2] + self.size))

    def __repr__(self) -> str:
        return f"RandomResizedCrop(size={self.size}, scale={self.scale}, ratio={self.ratio})"


class ColorJitter:
    """Random brightness, contrast and saturation changes, applied in a random order.

    A number v means a factor drawn from [max(0, 1 - v), 1 + v]; a pair is the range itself.
    ``hue`` is not implemented (a non-zero value raises).

    Example:
        >>> ColorJitter(brightness=(2.0, 2.0))(np.full((1, 2, 2), 0.25, dtype=np.float32)).tolist()
        [[[0.5, 0.5], [0.5, 0.5]]]
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0) -> None:
        self.brightness = _range(brightness, "brightness")
        self.contrast = _range(contrast, "contrast")
        self.saturation = _range(saturation, "saturation")
        if hue not in (0, (0, 0), [0, 0]):
            raise NotImplementedError("ColorJitter: hue jitter is not implemented; pass hue=0")
        self.hue = None

    def __call__(self, img):
        a, wrap = F.unwrap(img)
        a4, shape = F._as_batch(a)
        n = a4.shape[0] if _is_batch(a) else 1
        ops = [(self.brightness, F.adjust_brightness), (self.contrast, F.adjust_contrast),
               (self.saturation, F.adjust_saturation)]
        out = a4
        for k in _random.permutation(len(ops)):
            rng, fn = ops[k]
            if rng is None:
                continue
            factor = _random.uniform(rng[0], rng[1], n)
            out = fn(out, np.broadcast_to(factor, (a4.shape[0],)))
        return wrap(out.reshape(shape))

    def __repr__(self) -> str:
        return f"ColorJitter(brightness={self.brightness}, contrast={self.contrast}, saturation={self.saturation})"
