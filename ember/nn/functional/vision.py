"""Padding, interpolation, pixel and channel shuffles, and the distances normalize, cosine_similarity,
pairwise_distance."""
from __future__ import annotations

import math

import numpy as np

from ..._dims import wrap_dims
from ..._errors import op_error, user_frame
from ..._tensor import Tensor
from ...backends import array_module
from ...ops import math as M
from ...ops import primitives as P
from ._utils import _ntuple


def pad(input, pad, mode="constant", value=None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (left_last, right_last, left_prev, right_prev, ...)."""
    if len(pad) % 2:
        raise op_error("pad", f"padding length must be divisible by 2, got {len(pad)}", ValueError)
    n = len(pad) // 2
    if n > input.ndim:
        raise op_error("pad", f"padding for {n} dims given to a {input.ndim}-D input", ValueError)
    pads = [(0, 0)] * input.ndim
    for i in range(n):
        pads[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if mode == "constant":
        out = input
        short = [d for d, (b, a) in enumerate(pads) if input.shape[d] + b + a < 0]
        if short:
            d = short[0]
            raise op_error("pad", f"padding {pads[d]} would leave dim {d} of input {tuple(input.shape)} with "
                                  f"size {input.shape[d] + sum(pads[d])}")
        if any(b < 0 or a < 0 for b, a in pads):   # negative padding crops
            key = tuple(slice(-b if b < 0 else None, a if a < 0 else None) for b, a in pads)
            out = out[key]
            pads = [(max(b, 0), max(a, 0)) for b, a in pads]
        if not any(b or a for b, a in pads):
            return out
        return P.Pad.apply(out, pads=tuple(pads), value=0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise op_error("pad", f"mode {mode!r} is not supported (constant, reflect, replicate, circular)",
                       NotImplementedError)
    if not 1 <= n <= 3 or input.ndim not in (n + 1, n + 2):   # torch's rule for the non-constant modes
        raise op_error("pad", f"{mode} padding of length {len(pad)} needs a {n + 1}-D or {n + 2}-D input, got "
                              f"shape {tuple(input.shape)} (padding size 2, 4 or 6 pads the last 1, 2 or 3 dims "
                              f"of a batched or unbatched input)", NotImplementedError)
    out = input
    for d, (b, a) in enumerate(pads):
        if not (b or a):
            continue
        size = input.shape[d]
        xp = array_module(input)
        idx = xp.arange(-b, size + a)
        if mode == "reflect":
            if b >= size or a >= size:
                raise op_error("pad", f"reflect padding ({b}, {a}) must be smaller than the dim size {size}",
                               ValueError)
            idx = xp.abs(idx)
            idx = xp.where(idx >= size, 2 * (size - 1) - idx, idx)
        elif mode == "replicate":
            idx = xp.clip(idx, 0, size - 1)
        else:
            # as torch: a negative side crops first, and the other side wraps around the cropped dim
            start, kept = max(-b, 0), size - max(-b, 0) - max(-a, 0)
            b, a = max(b, 0), max(a, 0)
            if b > kept or a > kept:
                raise op_error("pad", f"circular padding ({b}, {a}) of dim {d} (size {kept}) would wrap around "
                                      f"more than once")
            idx = start + xp.arange(-b, kept + a) % kept
        out = out[(slice(None),) * d + (Tensor._make(idx, input._device),)]
    return out


def _interp_indices_linear(xp, n_in, n_out, scale, align_corners):
    dst = xp.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else xp.zeros(n_out)
    else:
        src = xp.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = xp.minimum(xp.floor(src).astype(np.int64), n_in - 1)
    i1 = xp.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:
    """Resize the spatial dims of (N, C, ...) by `size` or `scale_factor`: nearest, nearest-exact, area,
    (bi/tri)linear."""
    nd = input.ndim - 2
    if nd < 1:
        raise op_error("interpolate", f"expected (N, C, ...) input, got {tuple(input.shape)}", ValueError)
    if (size is None) == (scale_factor is None):
        raise op_error("interpolate", "give exactly one of size and scale_factor", ValueError)
    in_sizes = input.shape[2:]
    if size is not None:
        out_sizes = _ntuple(size, nd, "size")
        scales = [i / o for i, o in zip(in_sizes, out_sizes)]
    else:
        sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * nd
        out_sizes = tuple(int(math.floor(i * f)) for i, f in zip(in_sizes, sf))
        scales = [1.0 / f if not recompute_scale_factor else i / o for f, i, o in zip(sf, in_sizes, out_sizes)]
    if mode != "area" and (min(in_sizes) < 1 or min(out_sizes) < 1):   # area pools to any size, as torch
        raise op_error("interpolate", f"input and output sizes should be greater than 0, but got input "
                                      f"{tuple(in_sizes)} and output {tuple(out_sizes)}")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         f"linear | bilinear | bicubic | trilinear (at {user_frame()})")
    if mode in ("nearest", "nearest-exact"):
        # source index floor(dst * scale) ('nearest', torch's legacy rule) or of the pixel centres,
        # floor((dst + 0.5) * scale) ('nearest-exact', as PIL and scikit-image)
        half = 0.5 if mode == "nearest-exact" else 0.0
        out = input
        for i, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
            xp = array_module(input)
            idx = xp.minimum(xp.floor((xp.arange(n_out) + half) * sc).astype(np.int64), n_in - 1)
            out = out[(slice(None),) * (2 + i) + (Tensor._make(idx, input._device),)]
        return out
    if mode == "area":   # torch's 'area' is adaptive average pooling to the output size
        from .pooling import _adaptive_avg_poolnd
        return _adaptive_avg_poolnd(input, tuple(out_sizes), nd, "interpolate")
    if mode in ("linear", "bilinear", "trilinear"):
        if {"linear": 1, "bilinear": 2, "trilinear": 3}[mode] != nd:
            raise op_error("interpolate", f"mode {mode!r} needs a {2 + {'linear': 1, 'bilinear': 2}.get(mode, 3)}-D "
                           f"input, got {tuple(input.shape)}", ValueError)
        out = input
        for i, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
            i0, i1, lam = _interp_indices_linear(array_module(input), n_in, n_out, sc, bool(align_corners))
            d = 2 + i
            lead = (slice(None),) * d
            shape = (n_out,) + (1,) * (input.ndim - d - 1)
            w1 = Tensor._make(lam.reshape(shape).astype(input._data.dtype), input._device)
            a = out[lead + (Tensor._make(i0, input._device),)]
            b = out[lead + (Tensor._make(i1, input._device),)]
            out = a + (b - a) * w1
        return out
    raise op_error("interpolate", f"mode {mode!r} is not supported (nearest, nearest-exact, area, linear, "
                                  f"bilinear, trilinear)", NotImplementedError)


def normalize(input, p=2.0, dim=1, eps=1e-12) -> Tensor:
    """input / max(||input||_p over dim, eps)."""
    wrap_dims(dim, input.ndim, "normalize")
    if not input.dtype.is_floating_point:
        raise op_error("normalize", f"expected a floating point input, got {input.dtype.name}")
    n = M.norm(input, p, dim, keepdim=True)
    return input / M.clamp(n, min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8) -> Tensor:
    # broadcast first: a (1, 4) x2 beside a (3, 4) x1 has norm sqrt(3)|x2| over dim 0, not |x2|
    from ...ops.shape import broadcast_tensors
    try:
        x1, x2 = broadcast_tensors(x1, x2)
    except (ValueError, RuntimeError):
        raise op_error("cosine_similarity", f"x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} cannot be "
                                            f"broadcast together") from None
    n1 = M.clamp(M.norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = M.clamp(M.norm(x2, 2, dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False) -> Tensor:
    return M.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def _check_factor(op, what, factor):
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise op_error(op, f"{what} must be an int, got {factor!r}", TypeError)
    if factor <= 0:
        raise op_error(op, f"expects a positive {what}, but got {factor}")


def pixel_shuffle(input, upscale_factor) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): each group of r*r channels becomes an r x r block of pixels.

    >>> F.pixel_shuffle(ember.arange(4.0).reshape(1, 4, 1, 1), 2)
    tensor([[[[0., 1.],
              [2., 3.]]]])
    """
    _check_factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3:
        raise op_error("pixel_shuffle", f"expects input to have at least 3 dimensions, but got shape "
                                        f"{tuple(input.shape)}")
    r = upscale_factor
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise op_error("pixel_shuffle", f"expects its input's 'channel' dimension to be divisible by the square "
                                        f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)                       # (*, C, r, r, H, W)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)            # (*, C, H, r, W, r)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of pixel_shuffle.

    >>> F.pixel_unshuffle(ember.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
    tensor([0., 1., 2., 3.])
    """
    _check_factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3:
        raise op_error("pixel_unshuffle", f"expects input to have at least 3 dimensions, but got shape "
                                          f"{tuple(input.shape)}")
    r = downscale_factor
    *batch, c, h, w = input.shape
    for what, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise op_error("pixel_unshuffle", f"expects {what} to be divisible by downscale_factor, but "
                                              f"input.size({d})={size} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)                       # (*, C, H, r, W, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)            # (*, C, r, r, H, W)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups) -> Tensor:
    """(N, C, *) seen as (N, groups, C/groups, *), the two channel dims swapped (ShuffleNet).

    >>> F.channel_shuffle(ember.arange(6.0).reshape(1, 6, 1), 2).flatten()
    tensor([0., 3., 1., 4., 2., 5.])
    """
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise op_error("channel_shuffle", f"groups must be an int, got {groups!r}", TypeError)
    if input.ndim <= 2:
        raise op_error("channel_shuffle", f"expects input with > 2 dims, but got shape {tuple(input.shape)}")
    if groups <= 0:
        raise op_error("channel_shuffle", f"number of groups to divide channels in must be positive, got {groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise op_error("channel_shuffle", f"number of channels must be divisible by groups. Got {c} channels and "
                                          f"{groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest)                         # (N, g, C/g, *)
    return x.transpose(1, 2).reshape(input.shape)
