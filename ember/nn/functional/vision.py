"""Padding, interpolation, sampling grids (affine_grid, grid_sample), pixel and channel shuffles, and the
distances normalize, cosine_similarity, pairwise_distance."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..._dims import wrap_dims
from ..._errors import check_same_device, op_error, user_frame, warn
from ..._tensor import Tensor
from ...backends import array_module
from ...ops import math as M, creation as C
from ...ops import primitives as P
from ...ops.products import _pnorm_dist
from ._utils import _ntuple
from ...amp import autocast_op


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


_CUBIC_A = -0.75   # torch's (and OpenCV's) Keys cubic coefficient


def _interp_taps_cubic(xp, n_in, n_out, scale, align_corners):
    """torch's bicubic taps along one dim: 4 source indices per output (clamped to the border) and their
    Keys weights, both (4, n_out). The source position is not clamped at 0 as the linear modes' is."""
    dst = xp.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else xp.zeros(n_out)
    else:
        src = (dst + 0.5) * scale - 0.5
    i0 = xp.floor(src)
    t = src - i0                                                   # in [0, 1)
    a = _CUBIC_A
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1          # noqa: E731  |x| <= 1
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a     # noqa: E731  1 < |x| < 2
    weights = xp.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])
    idx = xp.clip(i0.astype(np.int64) + xp.arange(-1, 3)[:, None], 0, n_in - 1)
    return idx, weights


def _interp_taps_aa(xp, n_in, n_out, scale, cubic):
    """torch's antialiased taps along one dim: a triangle (bilinear) or Keys cubic filter with A = -0.5
    (bicubic), widened by the scale when shrinking, over the source pixels whose centres it covers, its
    weights normalised to sum 1 (as PIL). Indices and weights, both (taps, n_out); unused taps weigh 0."""
    support = (2.0 if cubic else 1.0) * (scale if scale >= 1.0 else 1.0)
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (xp.arange(n_out, dtype=np.float64) + 0.5)
    xmin = xp.maximum(xp.trunc(center - support + 0.5), 0).astype(np.int64)   # C's truncating cast, as torch
    count = xp.minimum(xp.trunc(center + support + 0.5).astype(np.int64), n_in) - xmin
    taps = int(math.ceil(support)) * 2 + 1
    idx = xmin + xp.arange(taps)[:, None]
    x = xp.abs((idx - center + 0.5) * invscale)
    if cubic:
        a = -0.5
        w = xp.where(x < 1.0, ((a + 2) * x - (a + 3)) * x * x + 1,
                     xp.where(x < 2.0, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    else:
        w = xp.maximum(1.0 - x, 0.0)
    w = xp.where(xp.arange(taps)[:, None] < count, w, 0.0)
    total = w.sum(0)
    w = w / xp.where(total != 0, total, 1.0)
    return xp.minimum(idx, n_in - 1), w


def _interp_taps(x, dim, indices, weights):
    """sum over taps k of weights[k] * x[indices[k]] along `dim` (each a host array of the output size),
    added in tap order as torch does."""
    lead = (slice(None),) * dim
    shape = (len(indices[0]),) + (1,) * (x.ndim - dim - 1)
    out = None
    for idx, w in zip(indices, weights):
        tap = x[lead + (Tensor._make(idx, x._device),)] \
            * Tensor._make(w.reshape(shape).astype(x._data.dtype), x._device)
        out = tap if out is None else out + tap
    return out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:
    """Resize the spatial dims of (N, C, ...) by `size` or `scale_factor`: nearest, nearest-exact, area,
    (bi/tri)linear, bicubic (torch's Keys kernel, A = -0.75, taps clamped at the border); `antialias=True`
    (bilinear and bicubic, 4-D) filters as torch and PIL when shrinking.

    >>> F.interpolate(ember.tensor([[[[0.0, 1.0], [2.0, 3.0]]]]), size=(3, 3), mode="bicubic",
    ...               align_corners=True)
    tensor([[[[0.0000, 0.5000, 1.0000],
              [1.0000, 1.5000, 2.0000],
              [2.0000, 2.5000, 3.0000]]]])
    """
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
    if antialias and (mode not in ("bilinear", "bicubic") or input.ndim != 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                         f"tensor as input (at {user_frame()})")
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
    if antialias:   # separable filters, the last dim first
        out = input
        for i in reversed(range(nd)):
            sc = scales[i]
            if align_corners:
                sc = (in_sizes[i] - 1) / (out_sizes[i] - 1) if out_sizes[i] > 1 else 0.0
            idx, w = _interp_taps_aa(array_module(input), in_sizes[i], out_sizes[i], sc, mode == "bicubic")
            out = _interp_taps(out, 2 + i, list(idx), list(w))
        return out
    if mode in ("linear", "bilinear", "trilinear"):
        if {"linear": 1, "bilinear": 2, "trilinear": 3}[mode] != nd:
            raise op_error("interpolate", f"mode {mode!r} needs a {2 + {'linear': 1, 'bilinear': 2}.get(mode, 3)}-D "
                           f"input, got {tuple(input.shape)}", ValueError)
        # torch's sum w0 * x[i0] + w1 * x[i1] per dim, the last dim first (as its nested loops): an output
        # reads its own taps only, and a + (b - a) * w would make inf - inf = NaN where a = b = inf
        out = input
        for i in reversed(range(nd)):
            if in_sizes[i] == out_sizes[i]:
                # torch's weights for a dim of unchanged size (whatever the scale): 1 on the value itself, 0 on
                # the same value again; x + 0 * x is x, NaN at an infinity
                out = out + out * 0
                continue
            i0, i1, lam = _interp_indices_linear(array_module(input), in_sizes[i], out_sizes[i], scales[i],
                                                 bool(align_corners))
            out = _interp_taps(out, 2 + i, [i0, i1], [1.0 - lam, lam])
        return out
    if mode == "bicubic":
        if nd != 2:
            raise op_error("interpolate", f"mode 'bicubic' needs a 4-D input, got {tuple(input.shape)}", ValueError)
        out = input
        for i in reversed(range(nd)):
            idx, w = _interp_taps_cubic(array_module(input), in_sizes[i], out_sizes[i], scales[i], bool(align_corners))
            out = _interp_taps(out, 2 + i, list(idx), list(w))
        return out
    raise op_error("interpolate", f"mode {mode!r} is not supported (nearest, nearest-exact, area, linear, "
                                  f"bilinear, bicubic, trilinear)", NotImplementedError)


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _linspace_from_neg_one(xp, n, align_corners, dtype):
    """torch's base grid coordinates along one dim: -1..1 at the pixel centres (align_corners=False) or the
    corner pixels (True); a single pixel sits at 0."""
    if n <= 1:
        return xp.zeros(max(n, 0), dtype=dtype)
    r = xp.linspace(-1, 1, n, dtype=dtype)
    return r if align_corners else r * dtype.type((n - 1) / n)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None) -> Tensor:
    """Deprecated (as in torch): `interpolate` (it warns).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     F.upsample(ember.ones(1, 1, 2), scale_factor=2).shape
    (1, 1, 4)
    """
    warn("upsample", "nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None) -> Tensor:
    """Deprecated (as in torch): `interpolate(..., mode='nearest')` (it warns)."""
    warn("upsample_nearest", "nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None) -> Tensor:
    """Deprecated (as in torch): `interpolate(..., mode='bilinear', align_corners=True)` (it warns)."""
    warn("upsample_bilinear", "nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate "
                              "instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def affine_grid(theta, size, align_corners=None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3) (or (N, 3, 4))
    over an output of `size` (N, C, H, W) (or (N, C, D, H, W)), in grid_sample's [-1, 1] coordinates.

    >>> F.affine_grid(ember.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 1, 2), align_corners=False)
    tensor([[[[-0.5000,  0.0000],
              [ 0.5000,  0.0000]]]])
    """
    if align_corners is None:
        warn("affine_grid", _ALIGN_WARNING)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise op_error("affine_grid", f"Expected theta to have floating point type, but got {theta.dtype.name}",
                       ValueError)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise op_error("affine_grid", f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                                      f"transforms, respectively. Got size {size}.", NotImplementedError)
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise op_error("affine_grid", f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for "
                                      f"size {size}. Got {tuple(theta.shape)}.", ValueError)
    if align_corners and min(size[2:]) == 1:
        warn("affine_grid", "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                            "align_corners=True. This is not an intended use case of affine_grid. See the "
                            "documentation of affine_grid for details.")
    elif min(size) <= 0:
        raise op_error("affine_grid", f"Expected non-zero, positive output size. Got {size}", ValueError)
    if theta.shape[0] != size[0]:
        raise op_error("affine_grid", f"theta {tuple(theta.shape)} holds {theta.shape[0]} matrices for a batch "
                                      f"of {size[0]} in size {size}")
    xp = array_module(theta)
    dtype = theta._data.dtype
    spatial = size[2:]                                             # (D,) H, W
    axes = [_linspace_from_neg_one(xp, n, align_corners, dtype) for n in spatial]
    mesh = xp.meshgrid(*axes, indexing="ij")                       # each (D,) H, W
    # homogeneous coordinates (x, y, (z), 1): x runs along the last dim (W)
    base = xp.stack(list(mesh[::-1]) + [xp.ones(spatial, dtype=dtype)], -1).reshape(1, -1, nd + 1)
    grid = M.matmul(Tensor._make(base, theta._device), theta.transpose(1, 2))   # (N, D*H*W, nd)
    return grid.reshape(size[0], *spatial, nd)


def _grid_unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel coordinates, -1 and 1 being the corner pixels' centres (align_corners) or edges."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _grid_clip(coord, size):
    # where, not clamp: torch's gradient is 0 at the bounds themselves, not only beyond them
    return M.where(coord <= 0, 0.0, M.where(coord >= size - 1, float(size - 1), coord))


def _grid_reflect(coord, twice_low, twice_high):
    """Reflect coord about the bounds twice_low / 2 and twice_high / 2 until it lies between them."""
    if twice_low == twice_high:
        return coord * 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = coord - low
    c = M.where(c < 0, -c, c)                                      # |c|, gradient +1 at 0 as torch's
    extra = M.fmod(c, span)
    flips = M.floor(c / span)
    return M.where(M.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _grid_pad(coord, size, padding_mode, align_corners):
    """Pixel coordinates moved inside the input by padding_mode (zeros leaves them where they are)."""
    if padding_mode == "border":
        return _grid_clip(coord, size)
    if padding_mode == "reflection":
        if align_corners:
            coord = _grid_reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _grid_reflect(coord, -1, 2 * size - 1)
        return _grid_clip(coord, size)
    return coord


def _cubic_weights(t):
    """torch's 4 Keys weights (A = -0.75) of the taps at -1, 0, 1, 2 from the point t in [0, 1)."""
    a = _CUBIC_A
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1          # noqa: E731
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a     # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@autocast_op("fp32")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None) -> Tensor:
    """Sample input (N, C, H, W) at the points grid (N, H_out, W_out, 2) (x, y in [-1, 1]; 5-D input takes
    (N, D_out, H_out, W_out, 3)): (N, C, H_out, W_out). Differentiable in input and grid.

    mode: 'bilinear' (trilinear for 5-D), 'nearest', 'bicubic' (4-D only); padding_mode: what points
    outside the input read: 'zeros', 'border' (the nearest edge pixel), 'reflection'.

    >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
    >>> F.grid_sample(x, ember.tensor([[[[0.0, 0.0], [-1.0, -1.0]]]]), align_corners=True)
    tensor([[[[1.5000, 0.0000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}' (at {user_frame()})")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}' (at {user_frame()})")
    if align_corners is None:
        warn("grid_sample", _ALIGN_WARNING)
        align_corners = False
    check_same_device("grid_sample", input, grid, "grid")
    ishape, gshape = list(input.shape), list(grid.shape)
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise op_error("grid_sample", f"expected 4D or 5D input and grid with same number of dimensions, but got "
                                      f"input with sizes {ishape} and grid with sizes {gshape}")
    nd = input.ndim - 2
    if gshape[-1] != nd:
        raise op_error("grid_sample", f"expected grid to have size {nd} in last dimension, but got grid with "
                                      f"sizes {gshape}")
    if gshape[0] != ishape[0]:
        raise op_error("grid_sample", f"expected grid and input to have same batch size, but got input with "
                                      f"sizes {ishape} and grid with sizes {gshape}")
    for d in range(2, input.ndim):
        if ishape[d] == 0:
            raise op_error("grid_sample", f"expected input to have non-empty spatial dimensions, but input has "
                                          f"sizes {ishape} with dimension {d} being empty")
    if mode == "bicubic" and nd != 2:
        raise op_error("grid_sample", "bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point or input.dtype != grid.dtype:
        raise op_error("grid_sample", f"expected floating point input and grid of the same dtype, got input "
                                      f"{input.dtype.name} and grid {grid.dtype.name}")
    n, c, sizes = ishape[0], ishape[1], ishape[2:]
    out_sizes = gshape[1:-1]
    # per spatial dim (D,) H, W: its taps, each (integer index as float, weight, in bounds); grid[..., 0] is x (W)
    taps_per_dim = []
    for k, size in enumerate(sizes):
        coord = _grid_unnormalize(grid[..., nd - 1 - k], size, align_corners)     # (N, *out)
        if mode == "bicubic":   # the taps are padded one by one, the weights come from the unpadded point
            i0 = M.floor(coord)
            taps = [(_grid_pad(i0 + (j - 1), size, padding_mode, align_corners), w)
                    for j, w in enumerate(_cubic_weights(coord - i0))]
        else:
            coord = _grid_pad(coord, size, padding_mode, align_corners)
            if mode == "bilinear":
                i0 = M.floor(coord)
                taps = [(i0, (i0 + 1) - coord), (i0 + 1, coord - i0)]
            else:   # nearest: round half to even (nearbyint); the grid stays in the graph with a zero gradient
                taps = [(M.round(coord), None)]
        taps_per_dim.append([(i.detach(), w, M.logical_and(i >= 0, i <= size - 1)) for i, w in taps])
    strides = [math.prod(sizes[k + 1:]) for k in range(nd)]
    flat = input.reshape(n, c, math.prod(sizes))                   # (N, C, D*H*W)
    out = None
    for combo in itertools.product(*taps_per_dim):
        index, weight, valid = None, None, None
        for (i, w, ok), stride in zip(combo, strides):
            index = i * stride if index is None else index + i * stride
            if w is not None:
                weight = w if weight is None else weight * w
            valid = ok if valid is None else M.logical_and(valid, ok)
        assert valid is not None   # one tap per spatial dim, of which there are 2 or 3
        index = M.where(valid, index, 0.0).long().reshape(n, 1, math.prod(out_sizes))
        vals = flat.gather(2, index.expand(n, c, index.shape[-1])).reshape(n, c, *out_sizes)
        if weight is None:
            term = M.where(valid.unsqueeze(1), vals, 0.0)
        else:
            term = vals * M.where(valid, weight, 0.0).unsqueeze(1)
        out = term if out is None else out + term
    assert out is not None   # every dim has at least one tap
    if mode == "nearest" and grid.requires_grad:
        # torch's gradient of grid under 'nearest' is zeros, not none: keep grid in the graph
        never = grid.new_zeros((), dtype=grid.dtype) != 0
        out = out + M.where(never, grid[..., 0], 0.0).unsqueeze(1)
    return out


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


def pdist(input, p=2.0) -> Tensor:
    """The p-norm distance between every pair of rows of an (N, M) input: the N(N-1)/2 entries above the
    diagonal of cdist(input, input), row by row. The gradient is 0 where a distance (or, for p < 1, a
    coordinate difference) is 0, and p=inf gives every tied coordinate the full gradient, as torch; unlike
    cdist's, pdist's p=inf max is NaN when a coordinate is (torch's kernels differ there).

    >>> F.pdist(ember.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]]))
    tensor([5., 0., 5.])
    """
    if input.ndim != 2:
        raise op_error("pdist", f"only supports 2D tensors, got: {input.ndim}D (shape {tuple(input.shape)})")
    if p < 0:
        raise op_error("pdist", f"only supports non-negative p values, got {p}")
    n = input.shape[0]
    i, j = C.triu_indices(n, n, 1, device=input.device)
    rows, other = input.index_select(0, i), input.index_select(0, j)
    return _pnorm_dist(rows - other, p, nan_max=True)                 # (N(N-1)/2,)


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
