"""Image operations behind ``ember.transforms``, written once against NumPy.

Images are ember Tensors or NumPy arrays laid out ``(..., C, H, W)`` (or ``(H, W)``), as torchvision's tensor
transforms take them; a 4-D input is a batch ``(N, C, H, W)``. A NumPy ``uint8`` array whose last axis has
1, 3 or 4 entries (and whose third-from-last does not) is an image as loaded from disk, ``(H, W, C)``, as
torchvision takes PIL images and arrays; it is transformed in place of its channels-first view and comes
back in the same layout. The output has the input's type (Tensor or ndarray) and dtype.
"""
from __future__ import annotations

from typing import Callable, Sequence, Tuple

import numpy as np

import ember

__all__ = [
    "to_tensor", "normalize", "crop", "pad", "center_crop", "resize", "resized_crop", "hflip", "vflip",
    "rotate", "adjust_brightness", "adjust_contrast", "adjust_saturation",
]

INTERPOLATIONS = ("nearest", "bilinear")


# --- layout ------------------------------------------------------------------------------------------------
def _is_hwc(a: np.ndarray) -> bool:
    return a.ndim >= 3 and a.dtype == np.uint8 and a.shape[-1] in (1, 3, 4) and a.shape[-3] not in (1, 3, 4)


def unwrap(img) -> Tuple[np.ndarray, Callable[[np.ndarray], object]]:
    """The channels-first NumPy view of ``img`` and a function turning a result back into ``img``'s kind."""
    if ember.is_tensor(img):
        data = img._data if isinstance(getattr(img, "_data", None), np.ndarray) else img.numpy()
        return data, ember.from_numpy
    if isinstance(img, np.ndarray):
        if _is_hwc(img):
            return np.moveaxis(img, -1, -3), lambda a: np.ascontiguousarray(np.moveaxis(a, -3, -1))
        return img, lambda a: a
    raise TypeError(f"expected an ember Tensor or a NumPy array image, got {type(img).__name__}")


def _bound(a: np.ndarray) -> float:
    return 255.0 if a.dtype == np.uint8 else 1.0


def _cast_like(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    if like.dtype == np.uint8:
        return x.astype(np.uint8)  # truncates, as torch's .to(uint8) does
    return x.astype(like.dtype, copy=False)


def _as_batch(a: np.ndarray) -> Tuple[np.ndarray, Tuple[int, ...]]:
    """View ``(..., H, W)`` as ``(N, C, H, W)``; the shape to restore is returned alongside."""
    shape = a.shape
    if a.ndim == 2:
        return a[None, None], shape
    if a.ndim == 3:
        return a[None], shape
    return a.reshape((-1,) + shape[-3:]), shape


# --- conversion and normalisation --------------------------------------------------------------------------
def to_tensor(pic) -> "ember.Tensor":
    """``(H, W)`` / ``(H, W, C)`` array -> ``(C, H, W)`` Tensor; a batch ``(N, H, W, C)`` -> ``(N, C, H, W)``.
    ``uint8`` is scaled to float32 in ``[0, 1]``; other dtypes keep their values and dtype."""
    if not isinstance(pic, np.ndarray):
        raise TypeError(f"to_tensor: pic should be a NumPy array (H, W) or (H, W, C), got {type(pic).__name__}")
    if pic.ndim == 2:
        chw = pic[None]
    elif pic.ndim in (3, 4):
        chw = np.moveaxis(pic, -1, -3)
    else:
        raise ValueError(f"to_tensor: pic should be 2/3 dimensional (or a 4-D batch), got {pic.ndim} dimensions")
    if pic.dtype == np.uint8:
        out = np.divide(chw, 255, dtype=np.float32)
    else:
        out = np.ascontiguousarray(chw)
    return ember.from_numpy(out)


def normalize(img, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
    """``(img - mean[c]) / std[c]`` per channel (axis -3). The image must be floating point."""
    a, wrap = unwrap(img)
    if a.dtype.kind != "f":
        raise TypeError(f"normalize: input should be a float image, got {a.dtype}; apply ToTensor first")
    if a.ndim < 3:
        raise ValueError(f"normalize: expected an image of shape (..., C, H, W), got shape {tuple(a.shape)}")
    m = np.asarray(mean, dtype=a.dtype).reshape(-1, 1, 1)
    s = np.asarray(std, dtype=a.dtype).reshape(-1, 1, 1)
    if (s == 0).any():
        raise ValueError(f"normalize: std evaluated to zero after conversion to {a.dtype}, leading to division by zero")
    if inplace:
        np.subtract(a, m, out=a)
        np.divide(a, s, out=a)
        return img
    return wrap((a - m) / s)


# --- geometry ---------------------------------------------------------------------------------------------
def _padding_ltrb(padding) -> Tuple[int, int, int, int]:
    if isinstance(padding, (int, np.integer)):
        p = int(padding)
        return p, p, p, p
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return padding[0], padding[0], padding[0], padding[0]
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return tuple(padding)  # type: ignore[return-value]
    raise ValueError(f"padding must be an int or a sequence of 1, 2 or 4 ints, got {padding!r}")


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def _pad_array(a: np.ndarray, ltrb, fill=0, padding_mode: str = "constant") -> np.ndarray:
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"padding_mode should be one of {sorted(_PAD_MODES)}, got {padding_mode!r}")
    left, top, right, bottom = ltrb
    widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
    if padding_mode == "constant":
        return np.pad(a, widths, mode="constant", constant_values=fill)
    return np.pad(a, widths, mode=_PAD_MODES[padding_mode])


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad the last two axes: ``padding`` is an int, (left/right, top/bottom) or (left, top, right, bottom)."""
    a, wrap = unwrap(img)
    return wrap(_pad_array(a, _padding_ltrb(padding), fill, padding_mode))


def crop(img, top: int, left: int, height: int, width: int, fill=0):
    """The ``height x width`` window at (``top``, ``left``); parts outside the image are ``fill``."""
    a, wrap = unwrap(img)
    return wrap(_crop_array(a, top, left, height, width, fill))


def _crop_array(a: np.ndarray, top: int, left: int, h: int, w: int, fill=0) -> np.ndarray:
    H, W = a.shape[-2:]
    if 0 <= top and top + h <= H and 0 <= left and left + w <= W:
        return a[..., top:top + h, left:left + w]
    out = np.full(a.shape[:-2] + (h, w), fill, dtype=a.dtype)
    y0, y1 = max(top, 0), min(top + h, H)
    x0, x1 = max(left, 0), min(left + w, W)
    if y0 < y1 and x0 < x1:
        out[..., y0 - top:y1 - top, x0 - left:x1 - left] = a[..., y0:y1, x0:x1]
    return out


def center_crop(img, output_size):
    """The central ``output_size`` window (padded with zeros when the image is smaller), as torchvision."""
    from ember.transforms._random import pair
    th, tw = pair(output_size, "output_size")
    a, wrap = unwrap(img)
    H, W = a.shape[-2:]
    top = int(round((H - th) / 2.0))
    left = int(round((W - tw) / 2.0))
    return wrap(_crop_array(a, top, left, th, tw))


def hflip(img):
    """Mirror left-right (last axis)."""
    a, wrap = unwrap(img)
    return wrap(np.ascontiguousarray(a[..., ::-1]))


def vflip(img):
    """Mirror top-bottom (second-to-last axis)."""
    a, wrap = unwrap(img)
    return wrap(np.ascontiguousarray(a[..., ::-1, :]))


def _source_positions(out_size: int, box: np.ndarray, start: np.ndarray, in_size: int, mode: str):
    """Per-image source rows (or columns) for resampling a box of ``box`` pixels starting at ``start``
    to ``out_size`` pixels, with torch's conventions (``align_corners=False``; nearest = floor)."""
    scale = box[:, None] / out_size  # (N, 1)
    dst = np.arange(out_size)[None, :]
    if mode == "nearest":
        src = np.minimum(np.floor(dst * scale).astype(np.int64), box[:, None] - 1)
        return start[:, None] + src, None, None
    src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, box[:, None] - 1)
    i1 = np.minimum(i0 + 1, box[:, None] - 1)
    frac = (src - i0).astype(np.float32)
    return start[:, None] + i0, start[:, None] + i1, frac


def _resample_boxes(a4: np.ndarray, top, left, h, w, out_h: int, out_w: int, mode: str) -> np.ndarray:
    """Resize box ``n`` of image ``n`` of the batch ``a4`` (N, C, H, W) to (out_h, out_w), separably."""
    if mode not in INTERPOLATIONS:
        raise ValueError(f"interpolation should be one of {INTERPOLATIONS}, got {mode!r}")
    N = a4.shape[0]
    top, left, h, w = (np.broadcast_to(np.asarray(v, dtype=np.int64), (N,)) for v in (top, left, h, w))
    x = a4 if mode == "nearest" else a4.astype(np.float32)
    r0, r1, fy = _source_positions(out_h, h, top, a4.shape[-2], mode)
    rows = np.take_along_axis(x, r0[:, None, :, None], axis=2)  # (N, C, out_h, W)
    if mode == "bilinear":
        rows1 = np.take_along_axis(x, r1[:, None, :, None], axis=2)
        rows = rows + (rows1 - rows) * fy[:, None, :, None]
    c0, c1, fx = _source_positions(out_w, w, left, a4.shape[-1], mode)
    out = np.take_along_axis(rows, c0[:, None, None, :], axis=3)  # (N, C, out_h, out_w)
    if mode == "bilinear":
        out1 = np.take_along_axis(rows, c1[:, None, None, :], axis=3)
        out = out + (out1 - out) * fx[:, None, None, :]
        if a4.dtype == np.uint8:
            out = np.clip(np.rint(out), 0, 255)
        out = out.astype(a4.dtype, copy=False)
    return out


def _resize_shape(H: int, W: int, size, max_size=None) -> Tuple[int, int]:
    if isinstance(size, (int, np.integer)) or len(size) == 1:
        s = int(size if isinstance(size, (int, np.integer)) else size[0])
        short, long = (H, W) if H <= W else (W, H)
        new_short, new_long = s, int(s * long / short)
        if max_size is not None and new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_short, new_long) if H <= W else (new_long, new_short)
    return int(size[0]), int(size[1])


def resize(img, size, interpolation: str = "bilinear", max_size=None):
    """Resize the last two axes to ``size`` (an int matches the shorter side, keeping the aspect ratio).

    ``bilinear`` matches ``torch.nn.functional.interpolate(..., align_corners=False, antialias=False)``;
    ``nearest`` matches its ``mode="nearest"``. No antialiasing: shrink in steps for large factors."""
    a, wrap = unwrap(img)
    H, W = a.shape[-2:]
    oh, ow = _resize_shape(H, W, size, max_size)
    a4, shape = _as_batch(a)
    out = _resample_boxes(a4, 0, 0, H, W, oh, ow, interpolation)
    return wrap(out.reshape(shape[:-2] + (oh, ow)))


def resized_crop(img, top: int, left: int, height: int, width: int, size, interpolation: str = "bilinear"):
    """Crop the box then resize it to ``size``, in one resampling pass."""
    from ember.transforms._random import pair
    a, wrap = unwrap(img)
    oh, ow = pair(size, "size")
    a4, shape = _as_batch(a)
    out = _resample_boxes(a4, top, left, height, width, oh, ow, interpolation)
    return wrap(out.reshape(shape[:-2] + (oh, ow)))


def _rotate_array(a4: np.ndarray, angles: np.ndarray, interpolation: str, center, fill) -> np.ndarray:
    """Rotate image n of (N, C, H, W) by angles[n] degrees counter-clockwise about ``center`` (x, y)."""
    N, C, H, W = a4.shape
    cx, cy = ((W - 1) / 2, (H - 1) / 2) if center is None else (center[0], center[1])
    theta = np.deg2rad(np.asarray(angles, dtype=np.float64)).reshape(N, 1, 1)
    cos, sin = np.cos(theta), np.sin(theta)
    ys, xs = np.mgrid[0:H, 0:W]
    dx, dy = xs[None] - cx, ys[None] - cy
    # Output pixel (x', y') comes from the source point rotated back by -angle (y points down).
    sx = cos * dx - sin * dy + cx  # (N, H, W)
    sy = sin * dx + cos * dy + cy
    n_idx = np.arange(N)[:, None, None]
    fill_arr = np.asarray(fill, dtype=np.float64).reshape(-1, 1, 1) if np.ndim(fill) else float(fill)
    if interpolation == "nearest":
        ix, iy = np.rint(sx).astype(np.int64), np.rint(sy).astype(np.int64)
        inside = (ix >= 0) & (ix < W) & (iy >= 0) & (iy < H)
        g = a4[n_idx, :, np.clip(iy, 0, H - 1), np.clip(ix, 0, W - 1)]  # (N, H, W, C)
        g = np.moveaxis(g, -1, 1)
        out = np.where(inside[:, None], g, np.asarray(fill_arr).astype(a4.dtype) if np.ndim(fill) else
                       a4.dtype.type(fill))
        return out.astype(a4.dtype, copy=False)
    if interpolation != "bilinear":
        raise ValueError(f"interpolation should be one of {INTERPOLATIONS}, got {interpolation!r}")
    x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
    fx, fy = (sx - x0)[:, None], (sy - y0)[:, None]
    x = a4.astype(np.float64)
    out = np.zeros((N, C, H, W))
    weight = np.zeros((N, 1, H, W))  # how much of each output pixel came from inside the image
    for yy, wy in ((y0, 1 - fy), (y0 + 1, fy)):
        for xx, wx in ((x0, 1 - fx), (x0 + 1, fx)):
            inside = ((xx >= 0) & (xx < W) & (yy >= 0) & (yy < H))[:, None]
            g = np.moveaxis(x[n_idx, :, np.clip(yy, 0, H - 1), np.clip(xx, 0, W - 1)], -1, 1)
            out += np.where(inside, g * wy * wx, 0.0)
            weight += np.where(inside, wy * wx, 0.0)
    if np.any(np.asarray(fill) != 0):  # torchvision blends the fill in by the missing weight
        out = out + (1 - weight) * fill_arr
    if a4.dtype == np.uint8:
        out = np.clip(np.rint(out), 0, 255)
    return out.astype(a4.dtype)


def rotate(img, angle: float, interpolation: str = "nearest", expand: bool = False, center=None, fill=0):
    """Rotate by ``angle`` degrees counter-clockwise about the image centre (or ``center`` = (x, y) in pixels);
    corners that come from outside the image are ``fill``. ``expand=True`` is not supported."""
    if expand:
        raise NotImplementedError("rotate: expand=True is not supported; rotate then Resize/CenterCrop instead")
    a, wrap = unwrap(img)
    a4, shape = _as_batch(a)
    angles = np.broadcast_to(np.asarray(angle, dtype=np.float64), (a4.shape[0],))
    return wrap(_rotate_array(a4, angles, interpolation, center, fill).reshape(shape))


# --- colour -----------------------------------------------------------------------------------------------
def _factors(f, a4: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.asarray(f, dtype=np.float32), (a4.shape[0],)).reshape(-1, 1, 1, 1)


def _grayscale(a4: np.ndarray) -> np.ndarray:
    """(N, C, H, W) -> (N, 1, H, W) with ITU-R 601-2 luma weights, in the input's dtype (as torchvision)."""
    if a4.shape[1] == 1:
        return a4
    if a4.shape[1] != 3:
        raise ValueError(f"expected 1 or 3 channels for a colour adjustment, got {a4.shape[1]}")
    r, g, b = a4[:, 0:1].astype(np.float32), a4[:, 1:2].astype(np.float32), a4[:, 2:3].astype(np.float32)
    return _cast_like(0.2989 * r + 0.587 * g + 0.114 * b, a4)


def _blend(a4: np.ndarray, other, factor: np.ndarray) -> np.ndarray:
    out = factor * a4.astype(np.float32) + (1.0 - factor) * other
    return _cast_like(np.clip(out, 0, _bound(a4)), a4)


def adjust_brightness(img, brightness_factor):
    """Multiply by ``brightness_factor`` (per image for a batch), clamped to the valid range."""
    a, wrap = unwrap(img)
    a4, shape = _as_batch(a)
    return wrap(_blend(a4, 0.0, _factors(brightness_factor, a4)).reshape(shape))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level of each image by ``contrast_factor``."""
    a, wrap = unwrap(img)
    a4, shape = _as_batch(a)
    mean = _grayscale(a4).astype(np.float32).mean(axis=(-3, -2, -1), keepdims=True)
    return wrap(_blend(a4, mean, _factors(contrast_factor, a4)).reshape(shape))


def adjust_saturation(img, saturation_factor):
    """Blend with the grey version of each image by ``saturation_factor`` (one-channel images: unchanged)."""
    a, wrap = unwrap(img)
    a4, shape = _as_batch(a)
    if a4.shape[1] == 1:
        return img
    gray = _grayscale(a4).astype(np.float32)
    return wrap(_blend(a4, gray, _factors(saturation_factor, a4)).reshape(shape))
