"""`make_grid` and `save_image` with torchvision's signatures and results: a batch of images as one
picture (PNG, JPEG, ... through Pillow, imported on first use; `pip install ember[plot]`).

>>> grid = make_grid(ember.rand(10, 1, 28, 28), nrow=5, padding=2)
>>> grid.shape                                    # gray images become RGB, as in torchvision
(3, 62, 152)
>>> import os, tempfile
>>> save_image(ember.rand(10, 1, 28, 28), os.path.join(tempfile.mkdtemp(), "samples.png"), nrow=5)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, List, Optional, Tuple, Union

import numpy as np

if TYPE_CHECKING:
    from ember._tensor import Tensor

__all__ = ["make_grid", "save_image"]


def _host(x) -> np.ndarray:
    from ember._tensor import Tensor
    if isinstance(x, Tensor):
        return np.array(x.detach().cpu().numpy(), copy=True)
    return np.array(x, copy=True)


def _grid_array(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False,
                value_range: Optional[Tuple[float, float]] = None, scale_each: bool = False,
                pad_value: float = 0.0) -> np.ndarray:
    if isinstance(tensor, (list, tuple)):
        arr = np.stack([_host(t) for t in tensor], axis=0)
    else:
        arr = _host(tensor)
    if arr.ndim == 2:                                    # (H, W): one gray image
        arr = arr[None]
    if arr.ndim == 3:                                    # (C, H, W): one image
        if arr.shape[0] == 1:
            arr = np.concatenate((arr, arr, arr), 0)
        arr = arr[None]
    if arr.ndim != 4:
        raise ValueError(f"make_grid: expected images of shape (B, C, H, W), (C, H, W) or (H, W), got {arr.shape}")
    if arr.shape[1] == 1:                                # gray batch -> RGB
        arr = np.concatenate((arr, arr, arr), 1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("make_grid: value_range has to be a tuple (min, max) if specified. min and max are "
                            "numbers")
        items = list(arr) if scale_each else [arr]
        for t in items:                                  # views: normalise in place, as torchvision does
            low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
            np.clip(t, low, high, out=t)
            t -= arr.dtype.type(low)
            t /= arr.dtype.type(max(high - low, 1e-5))
    if arr.shape[0] == 1:
        return arr[0]
    nmaps = arr.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(nmaps / xmaps))
    height, width = arr.shape[2] + padding, arr.shape[3] + padding
    grid = np.full((arr.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value, dtype=arr.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = arr[k]
    return grid


def make_grid(tensor: Union["Tensor", List["Tensor"]], nrow: int = 8, padding: int = 2,
              normalize: bool = False, value_range: Optional[Tuple[float, float]] = None,
              scale_each: bool = False, pad_value: float = 0.0):
    """Tile a (B, C, H, W) batch (or a list of (C, H, W) images) into one (C, H', W') image, `nrow` per row,
    `padding` pixels of `pad_value` between them. `normalize` maps `value_range` (default: the min and
    max, per image with `scale_each`) to [0, 1]. One-channel images become three-channel."""
    import ember
    return ember.from_numpy(_grid_array(tensor, nrow, padding, normalize, value_range, scale_each, pad_value))


def save_image(tensor, fp, format: Optional[str] = None, **kwargs) -> None:
    """Save a batch as one image file (`make_grid`'s keyword arguments); values in [0, 1] map to 0..255.
    The format comes from the file name, or `format` for file objects."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("save_image needs Pillow: pip install ember[plot]") from None
    grid = _grid_array(tensor, **kwargs)
    if grid.ndim == 2:
        grid = grid[None]
    # torchvision's rounding: x * 255 + 0.5, clamped, truncated
    ndarr = np.clip(grid * 255 + 0.5, 0, 255).transpose(1, 2, 0).astype(np.uint8)
    if ndarr.shape[2] == 1:
        ndarr = ndarr[:, :, 0]
    Image.fromarray(ndarr).save(fp, format=format)
