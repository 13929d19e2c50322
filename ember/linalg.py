"""`ember.linalg`: torch.linalg's solve, inv, det, slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh and
the norms, differentiable (twice: the backward formulas are Tensor ops) and batched over leading dims.

Primitives live in `ember/ops/linalg.py` (forward through NumPy's or CuPy's linalg); the norms and det
are composites. Inputs are float32 or float64, as torch's CPU kernels (no half precision).

>>> A = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
>>> ember.linalg.solve(A, ember.tensor([9.0, 8.0])).tolist()
[2.0, 3.0]
"""
from __future__ import annotations

import collections

import numpy as np

from ._errors import describe, op_error
from ._tensor import Tensor
from .ops import linalg as P
from .ops import math as M

__all__ = ["LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "norm", "vector_norm", "matrix_norm", "cross", "vecdot", "multi_dot"]


class LinAlgError(RuntimeError):
    """A matrix that the op cannot handle (singular, not positive-definite), as torch.linalg.LinAlgError."""


_SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])
_QRResult = collections.namedtuple("qr", ["Q", "R"])
_SVDResult = collections.namedtuple("svd", ["U", "S", "Vh"])
_EighResult = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])

_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double"}


def _check_float(op, A, name="A", low_precision=False):
    """A float tensor; float16/bfloat16 only for the composites (`low_precision`), as torch's CPU kernels."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}: expected a Tensor for {name}, got {type(A).__name__}")
    if A.dtype.name in ("float16", "bfloat16") and not low_precision:
        raise op_error(f"linalg.{op}", f"Low precision dtypes not supported. Got {_TORCH_NAMES[A.dtype.name]} "
                                       f"({name} {describe(A)}); convert with .float()")
    if not A.dtype.is_floating_point:
        raise op_error(f"linalg.{op}", f"Expected a floating point or complex tensor as input. Got "
                                       f"{_TORCH_NAMES[A.dtype.name]} ({name} {describe(A)})")


def _check_matrix(op, A, square=True):
    _check_float(op, A)
    if A.ndim < 2:
        raise op_error(f"linalg.{op}", f"The input tensor A must have at least 2 dimensions (A {describe(A)}).")
    if square and A.shape[-1] != A.shape[-2]:
        raise op_error(f"linalg.{op}", f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                                       f"{A.shape[-1]} matrices (A {describe(A)})")


def _run(op, prim, *args, **params):
    """prim.apply, with NumPy's LinAlgError as Ember's (naming the op and the user's line)."""
    try:
        return prim.apply(*args, **params)
    except np.linalg.LinAlgError as e:
        why = {"solve": "The solver failed because the input matrix is singular.",
               "inv": "The input matrix is singular, the inversion could not be completed.",
               "cholesky": "The factorization could not be completed because the input is not positive-definite."
               }.get(op, f"The algorithm failed to converge ({e}).")
        raise op_error(f"linalg.{op}", f"{why} (A {describe(args[0])})", LinAlgError) from None


# ---------------------------------------------------------------- solve, inv, det
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (left=True) or X A = B (left=False); B may be a vector (or a batch of vectors)."""
    _check_matrix("solve", A)
    _check_float("solve", B, "B")
    if A.dtype is not B.dtype:
        raise op_error("linalg.solve", f"Expected A and B to have the same dtype, but found A of type "
                                       f"{_TORCH_NAMES[A.dtype.name]} and B of type {_TORCH_NAMES[B.dtype.name]} "
                                       f"instead (A {describe(A)}, B {describe(B)})")
    if A._device is not B._device:
        raise op_error("linalg.solve", f"expected A and B on the same device, got A {describe(A)} and B {describe(B)}")
    if not left:   # X A = B  <=>  A^T X^T = B^T
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if Bm.ndim < 2 or Bm.shape[-2] != n:
        shown = f"{Bm.shape[-2]}x{Bm.shape[-1]}" if Bm.ndim >= 2 else f"{B.shape[0]}x1"
        raise op_error("linalg.solve", f"Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                                       f"{shown}) (A {describe(A)}, B {describe(B)})")
    try:
        np.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    except ValueError:
        raise op_error("linalg.solve", f"batch dimensions of A {describe(A)} and B {describe(B)} cannot be "
                                       f"broadcast together") from None
    X = _run("solve", P.Solve, A, Bm)
    return X.squeeze(-1) if vector else X


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix in A (..., n, n)."""
    _check_matrix("inv", A)
    return _run("inv", P.Inv, A)


def slogdet(A: Tensor):
    """(sign, log|det A|) of each square matrix: the log is differentiable, the sign is not."""
    _check_matrix("slogdet", A)
    return _SlogdetResult(P.SlogdetSign.apply(A), P.LogAbsDet.apply(A))


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix: sign * exp(log|det|), so its gradient is det(A) A^-T
    (not finite at a singular matrix)."""
    _check_matrix("det", A)
    sign, logabsdet = slogdet(A)
    return sign * M.exp(logabsdet)


# ---------------------------------------------------------------- decompositions
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L with A = L L^T (lower), or U = L^T with A = U^T U (upper=True), for symmetric positive-definite A."""
    _check_matrix("cholesky", A)
    L = _run("cholesky", P.Cholesky, A)
    return L.mT if upper else L


def qr(A: Tensor, mode: str = "reduced"):
    """(Q, R) with A = Q R: mode 'reduced' (Q (..., m, k)), 'complete' (Q (..., m, m)) or 'r' (R only; Q empty)."""
    _check_matrix("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise op_error("linalg.qr", f"qr received unrecognized mode {mode!r} but expected one of 'reduced' "
                                    f"(default), 'r', or 'complete'", ValueError)
    m, n = A.shape[-2], A.shape[-1]
    from .autograd.grad_mode import STATE
    if STATE.enabled and A.requires_grad:
        if mode == "r":
            raise op_error("linalg.qr", "The derivative of linalg.qr depends on Q, which is not computed when "
                                        "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                                        "differentiate through linalg.qr.")
        if m < n:
            raise op_error("linalg.qr", f"the gradient for wide matrices (m < n) is not implemented in Ember "
                                        f"(A {describe(A)}); factor A.mT instead", NotImplementedError)
        if mode == "complete" and m > n:
            raise op_error("linalg.qr", "The QR decomposition is not differentiable when mode='complete' and "
                                        "nrows > ncols.")
    Q, R = _run("qr", P.Qr, A, mode="complete" if mode == "complete" and m > n else "reduced")
    if mode == "r":
        from .ops.creation import empty
        return _QRResult(empty(0, dtype=A.dtype, device=A.device), R)
    return _QRResult(Q, R)


def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. Gradients as torch's (gauge-invariant losses only:
    singular vectors are defined up to sign); full_matrices=True on a non-square A is not differentiable."""
    _check_matrix("svd", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        from .autograd.grad_mode import STATE
        if STATE.enabled and A.requires_grad:
            raise op_error("linalg.svd", f"the gradient with full_matrices=True on a non-square input is not "
                                         f"implemented (A {describe(A)}); pass full_matrices=False",
                           NotImplementedError)
        return _SVDResult(*_run("svd", P.Svd, A, full_matrices=True))
    return _SVDResult(*_run("svd", P.Svd, A))


def svdvals(A: Tensor) -> Tensor:
    """The singular values of A, descending."""
    _check_matrix("svdvals", A, square=False)
    return _run("svdvals", P.Svd, A)[1]


def eigh(A: Tensor, UPLO: str = "L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading its lower (UPLO='L') or
    upper triangle. Eigenvectors are defined up to sign: differentiate gauge-invariant losses only."""
    _check_matrix("eigh", A)
    if UPLO not in ("L", "U"):
        raise op_error("linalg.eigh", f"Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}", ValueError)
    return _EighResult(*_run("eigh", P.Eigh, A, UPLO=UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of symmetric A, ascending."""
    _check_matrix("eigvalsh", A)
    return eigh(A, UPLO).eigenvalues


# ---------------------------------------------------------------- norms (composites)
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The ord-norm of x over `dim` (all elements by default): sum(|x|^ord)^(1/ord); inf/-inf: max/min |x|;
    0: the number of non-zeros."""
    if dtype is not None:
        x = x.to(dtype)
    _check_float("vector_norm", x, "x", low_precision=True)
    if isinstance(ord, str):
        raise op_error("linalg.vector_norm", f"ord must be a number, got {ord!r}", TypeError)
    if ord in (0, 1, float("inf"), float("-inf")):
        return M.norm(x, ord, dim, keepdim)
    powered = x * x if ord == 2 else M.pow(M.abs(x), ord)
    return _root(M.sum(powered, dim, keepdim), ord)


def _root(s, p):
    """s^(1/p), with torch's zero gradient where s == 0 (the plain root's gradient there is inf * 0 = NaN)."""
    zero = s == 0
    safe = M.where(zero, 1.0, s)
    return M.where(zero, 0.0, M.sqrt(safe) if p == 2 else M.pow(safe, 1.0 / p))


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', 2/-2 (largest/smallest singular value),
    1/-1 (max/min column abs sum), inf/-inf (max/min row abs sum)."""
    if dtype is not None:
        A = A.to(dtype)
    _check_float("matrix_norm", A, low_precision=True)
    if A.ndim < 2:
        raise op_error("linalg.matrix_norm", f"The input tensor A must have at least 2 dimensions (A {describe(A)}).")
    from ._dims import wrap_dims
    if len(dim) != 2:
        raise op_error("linalg.matrix_norm", f"dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = wrap_dims(dim, A.ndim, "linalg.matrix_norm")
    if d0 == d1:
        raise op_error("linalg.matrix_norm", f"dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _root(M.sum(A * A, (d0, d1), keepdim), 2)
    if ord in ("nuc", 2, -2):
        sv = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = sv.sum(-1) if ord == "nuc" else (sv.amax(-1) if ord == 2 else sv.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord in (1, -1, float("inf"), float("-inf")):
        summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)   # 1: column sums; inf: row sums
        s = M.sum(M.abs(A), summed, keepdim=True)
        out = s.amax(reduced, keepdim=True) if ord in (1, float("inf")) else s.amin(reduced, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    raise op_error("linalg.matrix_norm", f"Order {ord!r} not supported; expected 'fro', 'nuc', 2, -2, 1, -1, "
                                         f"inf or -inf", ValueError)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector norm (dim an int, or a 1-D input) or a matrix norm (dim a pair, or a 2-D input) as torch:
    with ord=None and dim=None, the 2-norm of all elements."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise op_error("linalg.norm", f"If dim is not specified but ord is, the input must be 1D or 2D. "
                                          f"Got {A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ---------------------------------------------------------------- products (composites)
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The 3-vector cross product along `dim`; input and other have the same number of dims and broadcast."""
    from .ops.products import _cross
    return _cross("linalg.cross", input, other, dim)


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
