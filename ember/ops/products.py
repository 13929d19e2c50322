"""torch's matrix-product family beyond matmul: addmv, addr, baddbmm, addbmm (and addmm's beta=0 rule),
kron, block_diag, cross, diag_embed, cdist, adjoint. Composites of ember.ops.math and shape (no backward of
their own, so double backward and ember.compile work). Re-exported by `ember` and bound as Tensor methods.

>>> ember.addmv(ember.ones(2), ember.eye(2), ember.tensor([3.0, 4.0]), beta=0.5).tolist()
[3.5, 4.5]
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._dims import wrap_dim
from .._errors import describe, op_error, warn
from .._tensor import Tensor
from . import math as M
from . import shape as S
from . import creation as C
from ..amp import autocast_op

__all__ = ["addmm", "addmv", "addr", "baddbmm", "addbmm", "kron", "block_diag", "cross", "diag_embed", "cdist",
           "adjoint"]

_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double"}


def _check_tensor(op, x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor for {name}, got {type(x).__name__}")


def _check_same_dtype(op, *tensors):
    names = [_TORCH_NAMES[t.dtype.name] for t in tensors]
    if len(set(names)) > 1:
        raise op_error(op, f"{op} input tensors must have the same dtype, but got {', '.join(names[:-1])}, and "
                           f"{names[-1]} ({', '.join(describe(t) for t in tensors)})")


def _expand_error(op, input, shape):
    """torch's expand error for an `input` that does not broadcast to the product's `shape`, or None."""
    ishape = tuple(input.shape)
    if len(ishape) > len(shape):
        return op_error(op, f"the number of sizes provided ({len(shape)}) must be greater or equal to the number "
                            f"of dimensions in the tensor ({len(ishape)}): input {describe(input)} cannot be "
                            f"broadcast to the product's shape {tuple(shape)}")
    for k in range(1, len(ishape) + 1):   # from the right, as torch's expand
        if ishape[-k] != 1 and ishape[-k] != shape[-k]:
            return op_error(op, f"The expanded size of the tensor ({shape[-k]}) must match the existing size "
                                f"({ishape[-k]}) at non-singleton dimension {len(shape) - k}.  Target sizes: "
                                f"{list(shape)}.  Tensor sizes: {list(ishape)}")
    return None


def _scaled_sum(op, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcast to product's shape; beta == 0 ignores input's values
    (NaN and inf included, torch's rule) but still gives it a (zero) gradient."""
    err = _expand_error(op, input, tuple(product.shape))
    if err is not None:
        raise err
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        never = C.zeros((), dtype=_dtype.bool, device=input.device)
        return product + M.where(never, input, 0)
    return product + (input * beta if beta != 1 else input)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat @ vec): mat (n, m), vec (m,), input broadcastable to (n,)."""
    for name, t in (("input", input), ("mat", mat), ("vec", vec)):
        _check_tensor("addmv", t, name)
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise op_error("addmv", f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or (input.ndim == 1 and input.shape[0] not in (1, mat.shape[0])):
        raise op_error("addmv", f"size mismatch, got input ({'x'.join(map(str, input.shape))}), mat "
                                f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    _check_same_dtype("addmv", input, mat, vec)
    return _scaled_sum("addmv", input, M.matmul(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), input broadcastable to (len(vec1), len(vec2))."""
    for name, t in (("input", input), ("vec1", vec1), ("vec2", vec2)):
        _check_tensor("addr", t, name)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise op_error("addr", f"Expected 1-D argument {name}, but got {v.ndim}-D")
    _check_same_dtype("addr", input, vec1, vec2)
    return _scaled_sum("addr", input, M.outer(vec1, vec2), beta, alpha)


def _check_batches(op, input, batch1, batch2):
    for name, t in (("input", input), ("batch1", batch1), ("batch2", batch2)):
        _check_tensor(op, t, name)
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise op_error(op, f"{name} must be a 3D tensor, got {name} {describe(t)}")
    b, n, m = batch1.shape
    if op == "addbmm":
        if batch2.shape[0] != b:
            raise op_error(op, f"batch1 and batch2 must have same number of batches, got {b} and {batch2.shape[0]}")
        if batch2.shape[1] != m:
            raise op_error(op, f"Incompatible matrix sizes for bmm ({n}x{m} and {batch2.shape[1]}x{batch2.shape[2]})")
    elif tuple(batch2.shape[:2]) != (b, m):
        raise op_error(op, f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    _check_same_dtype(op, input, batch1, batch2)


@autocast_op("lower")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2): (b, n, m) @ (b, m, p), input broadcastable to (b, n, p)."""
    _check_batches("baddbmm", input, batch1, batch2)
    return _scaled_sum("baddbmm", input, M.matmul(batch1, batch2), beta, alpha)


@autocast_op("lower")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]: the batch reduced, input broadcastable to (n, p)."""
    _check_batches("addbmm", input, batch1, batch2)
    b, n, m = batch1.shape
    p = batch2.shape[2]
    # one (n, b*m) @ (b*m, p) product: the sum over the batch is part of the contraction
    product = M.matmul(batch1.permute(1, 0, 2).reshape(n, b * m), batch2.reshape(b * m, p))
    return _scaled_sum("addbmm", input, product, beta, alpha)


@autocast_op("lower")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcastable to (n, p); beta=0 ignores input's values."""
    for name, t in (("input", input), ("mat1", mat1), ("mat2", mat2)):
        _check_tensor("addmm", t, name)
    product = M.mm(mat1, mat2)
    if input.dtype is not mat1.dtype:
        raise op_error("addmm", f"self and mat2 must have the same dtype, but got {_TORCH_NAMES[input.dtype.name]} "
                                f"and {_TORCH_NAMES[mat1.dtype.name]} (input {describe(input)}, mat1 "
                                f"{describe(mat1)})")
    return _scaled_sum("addmm", input, product, beta, alpha)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block (i, j, ...) of the result is input[i, j, ...] * other; the shorter
    operand gets leading 1s, and the result's dims are the products of the operands' dims."""
    _check_tensor("kron", input, "input")
    _check_tensor("kron", other, "other")
    nd = max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(tuple(x for d in a_shape for x in (d, 1)))    # (a0, 1, a1, 1, ...)
    b = other.reshape(tuple(x for d in b_shape for x in (1, d)))    # (1, b0, 1, b1, ...)
    return (a * b).reshape(tuple(i * j for i, j in zip(a_shape, b_shape)))


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-D, 1-D as one row, or 2-D) placed along the diagonal of a zero matrix, in the
    promoted dtype of all of them."""
    if not tensors:
        return C.empty((1, 0))
    for k, t in enumerate(tensors):
        _check_tensor("block_diag", t, f"tensor {k}")
        if t.ndim > 2:
            raise op_error("block_diag", f"Input tensors must have 2 or fewer dimensions. Input {k} has {t.ndim} "
                                         f"dimensions")
    dt = _dtype.result_type(*tensors)
    blocks = [(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t).to(dt) for t in tensors]
    device = blocks[0].device
    cols = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        pieces = [C.zeros((r, left), dtype=dt, device=device), b,
                  C.zeros((r, cols - left - c), dtype=dt, device=device)]
        rows.append(S.cat(pieces, 1))
        left += c
    return S.cat(rows, 0)


def cross(input: Tensor, other: Tensor, dim=None) -> Tensor:
    """The 3-vector cross product along `dim`; without dim (deprecated in torch, with its warning) the first
    dim of size 3. `ember.linalg.cross` is the same with dim=-1 by default."""
    if dim is None:
        warn("cross", "Using torch.cross without specifying the dim arg is deprecated. Please either pass the "
                      "dim explicitly or simply use torch.linalg.cross. The default value of dim will change to "
                      "agree with that of linalg.cross in a future release.")
        if input.ndim == other.ndim:
            shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
            dim = next((d for d, n in enumerate(shape) if n == 3), None)
            if dim is None:
                raise op_error("cross", f"no dimension of size 3 in input (input {describe(input)}, other "
                                        f"{describe(other)})")
        else:
            dim = -1
    return _cross("cross", input, other, dim)


def _cross(op, input, other, dim):
    _check_tensor(op, input, "input")
    _check_tensor(op, other, "other")
    if input.ndim != other.ndim:
        raise op_error(op, f"linalg.cross: inputs must have the same number of dimensions. (input "
                           f"{describe(input)}, other {describe(other)})")
    d = wrap_dim(dim, input.ndim, op)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise op_error(op, f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype is not other.dtype:
        raise op_error(op, f"expected scalar type {_TORCH_NAMES[input.dtype.name]} but found "
                           f"{_TORCH_NAMES[other.dtype.name]} (input {describe(input)}, other {describe(other)})")
    a = [S.narrow(input, d, i, 1) for i in range(3)]
    b = [S.narrow(other, d, i, 1) for i in range(3)]
    return S.cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], d)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals (offset, over dims dim1 and dim2 of the result) are input's last dim; the
    rest is zero."""
    _check_tensor("diag_embed", input, "input")
    nd = input.ndim + 1
    d1, d2 = wrap_dim(dim1, nd, "diag_embed"), wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise op_error("diag_embed", f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    v = input.reshape(1) if input.ndim == 0 else input
    m, k = v.shape[-1], abs(offset)
    if k:   # the values padded with zeros to the result's side m + k
        v = S.cat([v, C.zeros(tuple(v.shape[:-1]) + (k,), dtype=v.dtype, device=v.device)], -1)
    on = S.diag(C.ones(m, dtype=_dtype.bool, device=v.device), offset)    # (m + k, m + k): where the values go
    # row i holds v[i] for offset >= 0 (out[i, i + k]); column j holds v[j] for offset < 0 (out[j + k, j])
    values = v.unsqueeze(-1) if offset >= 0 else v.unsqueeze(-2)
    zero = C.zeros((), dtype=v.dtype, device=v.device)
    out = M.where(on, values, zero)                                       # (..., m + k, m + k)
    return S.movedim(out, (-2, -1), (d1, d2)) if (d1, d2) != (nd - 2, nd - 1) else out


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@autocast_op("fp32")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R).
    At a zero distance the gradient is 0, as torch's. For p=2 with more than 25 rows (or compute_mode
    'use_mm_for_euclid_dist') it goes through one matmul, as torch, instead of the (..., P, R, M) differences."""
    _check_tensor("cdist", x1, "x1")
    _check_tensor("cdist", x2, "x2")
    if compute_mode not in _CDIST_MODES:
        raise op_error("cdist", f"{compute_mode} is not a valid value for compute_mode", ValueError)
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise op_error("cdist", f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
        if not x.dtype.is_floating_point:
            raise op_error("cdist", f"cdist only supports floating-point dtypes, {name} got: "
                                    f"{_TORCH_NAMES[x.dtype.name]}")
    if x1.shape[-1] != x2.shape[-1]:
        raise op_error("cdist", f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                                f"{x2.shape[-1]}")
    if p < 0:
        raise op_error("cdist", f"cdist only supports non-negative p values, got p={p}")
    if x1.dtype is not x2.dtype:
        raise op_error("cdist", f"expected scalar type {_TORCH_NAMES[x1.dtype.name]} but found "
                                f"{_TORCH_NAMES[x2.dtype.name]} (x1 {describe(x1)}, x2 {describe(x2)})")
    try:
        batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    except ValueError:
        raise op_error("cdist", f"batch dimensions of x1 {describe(x1)} and x2 {describe(x2)} cannot be broadcast "
                                f"together") from None
    P, R, width = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                         (compute_mode == _CDIST_MODES[0] and (P > 25 or R > 25)))
    if use_mm:
        return _euclidean_mm(x1.expand(batch + tuple(x1.shape[-2:])), x2.expand(batch + tuple(x2.shape[-2:])))
    if x1.dtype.name in ("float16", "bfloat16") and P * R * width > 0:   # torch's CPU kernel has neither
        raise op_error("cdist", f'"cdist" not implemented for \'{_TORCH_NAMES[x1.dtype.name]}\' (x1 {describe(x1)})',
                       NotImplementedError)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)                # (..., P, R, M)
    return _pnorm_dist(diff, p, nan_max=False)


def _pnorm_dist(d, p, nan_max):
    """The p-norm over the last dim of the differences d, with the values and gradients of torch's CPU
    distance kernels (cdist's and pdist's), NaN and inf included: p = 0 counts |d| > 0 (NaN stays NaN,
    gradient 0); p = 1's gradient is sign(d) with sign(NaN) = NaN; other p: 0 at a zero distance, 0 at
    d == 0 for p < 1; p = inf gives each coordinate tied at the max the full gradient, and the max skips
    NaN (cdist's std::max) unless nan_max (pdist's vector maximum)."""
    if p == 2:   # gradient 0 * NaN = NaN at d == 0 of a NaN distance, as torch's kernel
        return M._zero_safe_root(M.sum(d * d, -1), 2)
    a = M.abs(d)
    if p == 0:
        return M.sum(M.where(M.gt(a, 0), 1.0, a), -1)
    if p == 1 or d.shape[-1] == 0:
        sign = M.where(M.eq(d, d), M.sign(d), d).detach()
        return M.sum(d * sign, -1)
    if p == float("inf"):
        return _inf_dist(d, a, nan_max)
    if p < 1:   # |d| ** p's gradient p * |d| ** (p - 1) is inf at d == 0: torch's kernel gives 0
        zero = M.eq(a, 0)
        powered = M.where(zero, 0.0, M.where(zero, 1.0, a) ** p)
    else:       # gradient 0 * NaN = NaN at d == 0 of a NaN distance, as torch's kernel
        powered = a ** p
    return M._zero_safe_root(M.sum(powered, -1), p)


def _inf_dist(d, a, nan_max):
    """max |d| over the last dim. torch's gradient g * sign(d) * (|d| == max) is NaN where |d| or the max
    is NaN, or both are inf (inf - inf); NaN where d is NaN even when cdist's max skipped it."""
    nan = M.isnan(a)
    top = M.amax(a if nan_max else M.where(nan, 0.0, a), -1, keepdim=True).detach()   # (..., 1)
    at_top = M.eq(a, top)
    finite = top + M.sum(M.where(at_top, a - top, 0.0), -1, keepdim=True)
    # top inf: sqrt(d * d) is inf with gradient inf * 0 = NaN at the inf coordinates, 0 at the others;
    # top NaN (pdist): d * NaN is NaN with gradient NaN at every coordinate
    # (each branch's inputs are guarded so that the branches where does not pick get 0, not 0 * inf)
    is_inf = M.isinf(a)
    inf = M.sum(M.where(is_inf, M.sqrt(M.where(is_inf, d, 1.0) ** 2), 0.0), -1, keepdim=True)
    nan_top = M.isnan(top)
    nan_row = M.sum(d * M.where(nan_top, top, 1.0), -1, keepdim=True)
    out = M.where(M.isfinite(top), finite, M.where(nan_top, nan_row, inf))
    if not nan_max:   # value 0 (NaN ** 0 is 1), gradient 0 * NaN ** -1 = NaN at the skipped NaN coordinates
        out = out + M.sum(M.where(nan, d, 1.0) ** 0 - 1.0, -1, keepdim=True)
    return out.squeeze(-1)


def _euclidean_mm(x1, x2):
    """torch's `_euclidean_dist`: |a|^2 - 2 a.b + |b|^2 in one matmul, clamped at 1e-30 before the root
    (so a zero distance has gradient 0). A NaN passes with its gradient (torch's backward does not
    see the clamp): a where, not clamp, whose gradient is 0 at NaN."""
    n1 = M.sum(x1 * x1, -1, keepdim=True)                     # (..., P, 1)
    n2 = M.sum(x2 * x2, -1, keepdim=True)                     # (..., R, 1)
    a = S.cat([x1 * -2, n1, C.ones_like(n1)], -1)             # (..., P, M + 2)
    b = S.cat([x2, C.ones_like(n2), n2], -1)                  # (..., R, M + 2)
    # zero-safe root: in float16 the clamp at 1e-30 is itself 0
    squared = M.matmul(a, b.mT)                               # (..., P, R)
    return M._zero_safe_root(M.where(M.lt(squared, 1e-30), 1e-30, squared), 2)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (the transpose: Ember has no complex dtypes); a view."""
    _check_tensor("adjoint", input, "input")
    if input.ndim < 2:
        raise op_error("adjoint", f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                                  f"{input.ndim}-D tensor.")
    return S.transpose(input, -2, -1)
