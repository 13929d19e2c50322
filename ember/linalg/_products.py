"""matmul, diagonal, cross, vecdot and multi_dot (its multiplication order from the textbook dynamic
programme): composites of Tensor ops."""
from __future__ import annotations

from .._errors import describe, op_error
from .._tensor import Tensor
from ..amp import autocast_op
from ..ops import math as M
from ..ops import shape as S
from ._common import _TORCH_NAMES, _check_float


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """torch.linalg.matmul: `ember.matmul`.

    >>> ember.linalg.matmul(ember.ones(2, 3), ember.ones(3)).tolist()
    [3.0, 3.0]
    """
    return M.matmul(input, other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices in the last two dims (`ember.diagonal` with dim1=-2, dim2=-1 by default).

    >>> ember.linalg.diagonal(ember.arange(8.0).reshape(2, 2, 2)).tolist()
    [[0.0, 3.0], [4.0, 7.0]]
    """
    return S.diagonal(A, offset, dim1, dim2)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The 3-vector cross product along `dim`; input and other have the same number of dims and broadcast."""
    from ..ops.products import _cross
    return _cross("linalg.cross", input, other, dim)


@autocast_op("lower")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along `dim`, broadcasting the other dims."""
    _check_float("vecdot", x, "x", low_precision=True)
    _check_float("vecdot", y, "y", low_precision=True)
    if x.dtype is not y.dtype:
        raise op_error("linalg.vecdot", f"Expected x and y to have the same dtype, but found x of type "
                                        f"{_TORCH_NAMES[x.dtype.name]} and y of type {_TORCH_NAMES[y.dtype.name]} "
                                        f"instead (x {describe(x)}, y {describe(y)})")
    return M.sum(x * y, dim)


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices, in the order of fewest multiplications; the first may be a 1-D
    row vector and the last a 1-D column vector (their dim is dropped from the result)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise op_error("linalg.multi_dot", f"multi_dot(): expected at least 2 tensors but got {n}")
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg.multi_dot: expected a Tensor for tensor {k}, got {type(t).__name__}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise op_error("linalg.multi_dot", f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise op_error("linalg.multi_dot", f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for k in range(1, n - 1):
        if tensors[k].ndim != 2:
            raise op_error("linalg.multi_dot", f"multi_dot(): tensor {k} must be 2D but got {tensors[k].ndim}D")
    for k, t in enumerate(tensors):
        if t.dtype is not first.dtype:
            raise op_error("linalg.multi_dot", f"multi_dot(): all tensors must have be the same dtype but tensor 0 "
                                               f"is {_C_NAMES.get(first.dtype.name, first.dtype.name)} and "
                                               f"tensor {k} {_C_NAMES.get(t.dtype.name, t.dtype.name)} "
                                               f"({describe(first)}, {describe(t)})")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(-1) if last.ndim == 1 else last]
    for k in range(n - 1):
        if mats[k].shape[1] != mats[k + 1].shape[0]:
            raise op_error("linalg.multi_dot", f"multi_dot(): tensors {k} and {k + 1} with shapes "
                                               f"{list(tensors[k].shape)} and {list(tensors[k + 1].shape)} cannot be "
                                               f"multiplied")
    out = _chain(mats, _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]]), 0, n - 1)
    if first.ndim == 1:
        out = out.squeeze(0)
    if last.ndim == 1:
        out = out.squeeze(-1)
    return out


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (the textbook dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return M.matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))
