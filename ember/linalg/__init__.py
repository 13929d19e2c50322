"""`ember.linalg`: torch.linalg's solve, inv, det, slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh and
the norms, differentiable (twice: the backward formulas are Tensor ops) and batched over leading dims; and,
as composites of those, cross, vecdot, multi_dot, solve_triangular, pinv, cond, the _ex variants (an info
tensor instead of an error), tensorinv, tensorsolve, vander, with torch's cholesky_solve, cholesky_inverse
and vander (re-exported by `ember`); lu_factor, lu_factor_ex (LuFactor primitive: LAPACK getrf written against
xp, differentiable), householder_product, and torch's lu_unpack, geqrf, orgqr and ormqr (re-exported by `ember`);
lstsq (Householder QR, or pinv where A is rank-deficient), matrix_rank, matrix_power and matrix_exp (Pade
scaling and squaring; both re-exported by `ember`), lu and lu_solve on top of lu_factor, and the
Bunch-Kaufman ldl_factor, ldl_factor_ex and ldl_solve (LAPACK sytf2/sytrs written against xp; not
differentiable, as torch's).

Primitives live in `ember/ops/linalg.py` (forward through NumPy's or CuPy's linalg); the norms and det
are composites. Inputs are float32 or float64, as torch's CPU kernels (no half precision).

>>> A = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
>>> ember.linalg.solve(A, ember.tensor([9.0, 8.0])).tolist()
[2.0, 3.0]
"""
from __future__ import annotations

import collections
import math

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor
from ..ops import linalg as P
from ..ops import math as M
from ..ops import shape as S
from ..amp import autocast_op

__all__ = ["LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "norm", "vector_norm", "matrix_norm", "cross", "vecdot", "multi_dot", "solve_triangular",
           "pinv", "cond", "inv_ex", "solve_ex", "cholesky_ex", "tensorinv", "tensorsolve", "vander", "lu_factor",
           "lu_factor_ex", "householder_product", "diagonal", "matmul", "lstsq", "matrix_rank", "matrix_power",
           "matrix_exp", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve"]


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
@autocast_op("fp32")
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


@autocast_op("fp32")
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
@autocast_op("fp32")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L with A = L L^T (lower), or U = L^T with A = U^T U (upper=True), for symmetric positive-definite A."""
    _check_matrix("cholesky", A)
    L = _run("cholesky", P.Cholesky, A)
    return L.mT if upper else L


@autocast_op("fp32")
def qr(A: Tensor, mode: str = "reduced"):
    """(Q, R) with A = Q R: mode 'reduced' (Q (..., m, k)), 'complete' (Q (..., m, m)) or 'r' (R only; Q empty)."""
    _check_matrix("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise op_error("linalg.qr", f"qr received unrecognized mode {mode!r} but expected one of 'reduced' "
                                    f"(default), 'r', or 'complete'", ValueError)
    m, n = A.shape[-2], A.shape[-1]
    from ..autograd.grad_mode import STATE
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
        from ..ops.creation import empty
        return _QRResult(empty(0, dtype=A.dtype, device=A.device), R)
    return _QRResult(Q, R)


@autocast_op("fp32")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. Gradients as torch's (gauge-invariant losses only:
    singular vectors are defined up to sign); full_matrices=True on a non-square A is not differentiable."""
    _check_matrix("svd", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        from ..autograd.grad_mode import STATE
        if STATE.enabled and A.requires_grad:
            raise op_error("linalg.svd", f"the gradient with full_matrices=True on a non-square input is not "
                                         f"implemented (A {describe(A)}); pass full_matrices=False",
                           NotImplementedError)
        return _SVDResult(*_run("svd", P.Svd, A, full_matrices=True))
    return _SVDResult(*_run("svd", P.Svd, A))


@autocast_op("fp32")
def svdvals(A: Tensor) -> Tensor:
    """The singular values of A, descending."""
    _check_matrix("svdvals", A, square=False)
    return _run("svdvals", P.Svd, A)[1]


@autocast_op("fp32")
def eigh(A: Tensor, UPLO: str = "L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading its lower (UPLO='L') or
    upper triangle. Eigenvectors are defined up to sign: differentiate gauge-invariant losses only."""
    _check_matrix("eigh", A)
    if UPLO not in ("L", "U"):
        raise op_error("linalg.eigh", f"Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}", ValueError)
    return _EighResult(*_run("eigh", P.Eigh, A, UPLO=UPLO))


@autocast_op("fp32")
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
    from .._dims import wrap_dims
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


# ---------------------------------------------------------------- solvers (composites)
def _eye_like(A):
    from ..ops.creation import eye
    return eye(A.shape[-1], dtype=A.dtype, device=A.device)


def _same_dtype(op, A, B, a="A", b="B"):
    if A.dtype is not B.dtype:
        raise op_error(op, f"Expected {a} and {b} to have the same dtype, but found {a} of type "
                           f"{_TORCH_NAMES[A.dtype.name]} and {b} of type {_TORCH_NAMES[B.dtype.name]} instead "
                           f"({a} {describe(A)}, {b} {describe(B)})")


def _triangle(A, upper, unitriangular=False):
    """The triangle of A that a triangular solver reads (with 1s on the diagonal when unitriangular)."""
    if not unitriangular:
        return A.triu() if upper else A.tril()
    return (A.triu(1) if upper else A.tril(-1)) + _eye_like(A)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with A X = B (left=True) or X A = B, reading only A's upper or lower triangle (its diagonal taken
    as 1s when unitriangular); A's gradient is in that triangle, as torch's. B has at least 2 dims.

    >>> U = ember.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> ember.linalg.solve_triangular(U, ember.tensor([[4.0], [8.0]]), upper=True).tolist()
    [[1.0], [2.0]]
    """
    _check_matrix("solve_triangular", A)
    _check_float("solve_triangular", B, "B")
    if B.ndim < 2:
        raise op_error("linalg.solve_triangular", f"The input tensor B must have at least 2 dimensions. "
                                                  f"(B {describe(B)})")
    n = A.shape[-1]
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        eq = "AX = B" if left else "XA = B"
        raise op_error("linalg.solve_triangular", f"Incompatible shapes of A and B for the equation {eq} "
                                                  f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    _same_dtype("linalg.solve_triangular", A, B)
    return solve(_triangle(A, upper, unitriangular), B, left=left)


def _reads_triangle(L, upper):
    """L with only its (upper or lower) triangle's values, and the gradient of the whole of L: torch's
    cholesky_solve and cholesky_inverse read one triangle but differentiate A = L L^T in the full L."""
    tri = L.triu() if upper else L.tril()
    return L + (tri - L).detach()


def _check_cholesky_factor(op, L):
    _check_float(op, L, "A")
    if L.ndim < 2:
        raise op_error(op, f"{op}: The input tensor A must have at least 2 dimensions. (A {describe(L)})")
    if L.shape[-1] != L.shape[-2]:
        raise op_error(op, f"{op}: A must be batches of square matrices, but they are {L.shape[-2]} by "
                           f"{L.shape[-1]} matrices (A {describe(L)})")


@autocast_op("fp32")
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with A X = B for A = L L^T (or U^T U with upper=True), given the Cholesky factor L.

    >>> L = ember.tensor([[2.0, 0.0], [1.0, 1.0]])     # A = [[4, 2], [2, 2]]
    >>> ember.cholesky_solve(ember.tensor([[6.0], [4.0]]), L).tolist()
    [[1.0], [1.0]]
    """
    _check_float("cholesky_solve", B, "B")
    if B.ndim < 2:
        raise op_error("cholesky_solve", f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                                         f"instead (b {describe(B)})")
    _check_cholesky_factor("cholesky_solve", L)
    if B.shape[-2] != L.shape[-1]:
        raise op_error("cholesky_solve", f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                                         f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} by "
                                         f"{B.shape[-1]}")
    _same_dtype("cholesky_solve", B, L, "b", "A")
    L = _reads_triangle(L, upper)
    if upper:   # A = U^T U: X = U^-1 U^-T B
        return solve(L, solve(L.mT, B))
    return solve(L.mT, solve(L, B))


@autocast_op("fp32")
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """A^-1 for A = L L^T (or U^T U with upper=True), given the Cholesky factor L.

    >>> ember.cholesky_inverse(ember.tensor([[2.0, 0.0], [0.0, 0.5]])).tolist()
    [[0.25, 0.0], [0.0, 4.0]]
    """
    _check_cholesky_factor("cholesky_inverse", L)
    zero = (S.diagonal(L.detach(), 0, -2, -1) == 0).reshape(-1, L.shape[-1]).tolist()
    batch = next((b for b, row in enumerate(zero) if any(row)), None)
    if batch is not None:
        where = f"(Batch element {batch}): " if L.ndim > 2 else ""
        raise op_error("cholesky_inverse", f"{where}The diagonal element {zero[batch].index(True) + 1} is zero, "
                                           f"the inversion could not be completed because the input matrix is "
                                           f"singular. (A {describe(L)})", LinAlgError)
    L = _reads_triangle(L, upper)
    Linv = inv(L)
    return Linv @ Linv.mT if upper else Linv.mT @ Linv   # U^-1 U^-T, or L^-T L^-1


def _default_rtol(A, atol, rtol):
    if rtol is not None:
        return rtol
    if atol is None or (not isinstance(atol, Tensor) and atol == 0):
        return float(np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
    return 0.0


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The Moore-Penrose pseudoinverse (..., n, m) of A (..., m, n), through the SVD (or eigh with
    hermitian=True): singular values at or below max(atol, rtol * largest) count as zero. rtol defaults to
    eps * max(m, n) when atol is not given; `rcond` is torch's older name for rtol. atol and rtol may be
    tensors broadcasting with A's batch dims.

    >>> ember.linalg.pinv(ember.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    _check_float("pinv", A)
    if A.ndim < 2:
        raise op_error("linalg.pinv", f"linalg.pinv({_TORCH_NAMES[A.dtype.name]}{list(A.shape)}): expected a tensor "
                                      f"with 2 or more dimensions of float, double, cfloat or cdouble types")
    if rcond is not None:
        rtol, atol = rcond, 0.0
    rtol = _default_rtol(A, atol, rtol)
    atol = 0.0 if atol is None else atol
    if hermitian:
        values, vectors = eigh(A)
        magnitude = M.abs(values)                                          # (..., n)
    else:
        U, magnitude, Vh = svd(A, full_matrices=False)                     # S: (..., k)
    largest = M.amax(magnitude, -1, keepdim=True) if magnitude.shape[-1] else magnitude.sum(-1, keepdim=True)
    atol = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    rtol = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    cutoff = M.maximum(rtol * largest, atol) if isinstance(atol, Tensor) else M.clamp(rtol * largest, min=atol)
    keep = magnitude > cutoff
    if hermitian:
        inverse = M.where(keep, 1.0 / M.where(keep, values, 1.0), 0.0)
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mT
    inverse = M.where(keep, 1.0 / M.where(keep, magnitude, 1.0), 0.0)
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


_COND_ORDS = ("fro", "nuc", float("inf"), float("-inf"), 1, -1)


@autocast_op("fp32")
def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in the norm p: smax / smin for p=None or 2 (smin / smax for -2), else
    norm(A, p) * norm(A^-1, p) for square A, inf where A is singular.

    >>> ember.linalg.cond(ember.tensor([[2.0, 0.0], [0.0, 0.5]])).item()
    4.0
    """
    _check_float("cond", A)
    if A.ndim < 2:
        raise op_error("linalg.cond", f"linalg.cond: The input tensor must have at least 2 dimensions. "
                                      f"(A {describe(A)})")
    if p is None or p in (2, -2) and not isinstance(p, bool):
        sv = svdvals(A)
        big, small = M.amax(sv, -1), M.amin(sv, -1)
        return small / big if p == -2 else big / small
    if p not in _COND_ORDS or isinstance(p, bool):
        raise op_error("linalg.cond", f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise op_error("linalg.cond", f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                                      f"{A.shape[-2]} by {A.shape[-1]} matrices")
    info = _info(A, _lu_info)
    singular = bool((info > 0).any())
    Ainv = inv(_usable(A, info)) if singular else inv(A)
    out = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return M.where(info > 0, float("inf"), out) if singular else out


# ---------------------------------------------------------------- the _ex variants: an info tensor, no raise
_ExResult = collections.namedtuple("inv_ex", ["inverse", "info"])
_SolveExResult = collections.namedtuple("solve_ex", ["result", "info"])
_CholeskyExResult = collections.namedtuple("cholesky_ex", ["L", "info"])


def _lu_info(xp, a):
    """LAPACK getrf's info for each matrix of a (batch, n, n) array: 0, or the 1-based index of the first
    exactly-zero pivot of the LU factorisation with partial pivoting (computed in a's dtype)."""
    a = a.copy()
    count, n = a.shape[0], a.shape[-1]
    info = xp.zeros(count, dtype="int32")
    rows = xp.arange(count)
    for k in range(n):
        p = k + xp.argmax(xp.abs(a[:, k:, k]), axis=1)                 # the pivot row of each matrix
        top = a[rows, k, :].copy()
        a[rows, k, :] = a[rows, p, :]
        a[rows, p, :] = top
        pivot = a[:, k, k]
        zero = pivot == 0
        info[(info == 0) & zero] = k + 1
        factors = xp.where(zero[:, None], 0, a[:, k + 1:, k] / xp.where(zero, 1, pivot)[:, None])
        a[:, k + 1:, k + 1:] -= factors[:, :, None] * a[:, k, None, k + 1:]
    return info


def _cholesky_info(xp, a):
    """potrf's info for each (lower-triangle-read) matrix of a (batch, n, n): 0, or the order of the first
    leading minor that is not positive-definite."""
    count, n = a.shape[0], a.shape[-1]
    L = xp.zeros_like(a)
    info = xp.zeros(count, dtype="int32")
    for k in range(n):
        d = a[:, k, k] - (L[:, k, :k] ** 2).sum(-1)
        bad = ~(d > 0)                                                  # NaN counts as not positive
        info[(info == 0) & bad] = k + 1
        root = xp.sqrt(xp.where(bad, 1, d))
        L[:, k, k] = root
        L[:, k + 1:, k] = (a[:, k + 1:, k] - (L[:, k + 1:, :k] @ L[:, k, :k, None])[..., 0]) / root[:, None]
    return info


def _info(A, fn):
    """fn's info over A's batch: an int32 tensor of shape A.shape[:-2] on A's device (not differentiable)."""
    from ..backends import array_module
    data = A.detach()._data
    info = fn(array_module(data), data.reshape((-1,) + tuple(A.shape[-2:])))
    return Tensor._make(info.reshape(tuple(A.shape[:-2])), A._device)


def _raise_info(op, info, A, message):
    flat = info.reshape(-1).tolist()
    bad = next((i for i, v in enumerate(flat) if v > 0), None)
    if bad is not None:
        where = f"(Batch element {bad}): " if A.ndim > 2 else ""
        raise op_error(op, f"{where}{message(flat[bad])} (A {describe(A)})", LinAlgError)


def _nan_where(info, A, X, tail):
    """X with NaN in the results of the matrices whose info is non-zero (A's batch dims, then `tail` dims)."""
    failed = (info > 0).reshape(tuple(A.shape[:-2]) + (1,) * tail)
    return M.where(failed, float("nan"), X)


def _usable(A, info):
    """A with the identity in place of the failed matrices, so that the batched op runs for the others."""
    failed = (info > 0).reshape(tuple(A.shape[:-2]) + (1, 1))
    return M.where(failed, _eye_like(A), A)


@autocast_op("fp32")
def inv_ex(A: Tensor, *, check_errors: bool = False):
    """(inverse, info) with info (A's batch shape, int32) 0 for an invertible matrix, else the 1-based index
    of the first zero pivot of its LU factorisation; that matrix's inverse is NaN. check_errors=True raises
    LinAlgError instead.

    >>> ember.linalg.inv_ex(ember.zeros(2, 2)).info.item()
    1
    """
    _check_matrix("inv_ex", A)
    info = _info(A, _lu_info)
    if check_errors:
        _raise_info("linalg.inv_ex", info, A, lambda k: f"The diagonal element {k} is zero, the inversion could not "
                                                        f"be completed because the input matrix is singular.")
    if not bool((info > 0).any()):
        return _ExResult(inv(A), info)
    return _ExResult(_nan_where(info, A, inv(_usable(A, info)), 2), info)


@autocast_op("fp32")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """(result, info) of solve(A, B, left=left), info as inv_ex's (NaN results for singular matrices);
    check_errors=True raises LinAlgError instead."""
    _check_matrix("solve_ex", A)
    info = _info(A, _lu_info)
    if check_errors:
        _raise_info("linalg.solve_ex", info, A, lambda k: "The solver failed because the input matrix is singular.")
    if not bool((info > 0).any()):
        return _SolveExResult(solve(A, B, left=left), info)
    X = solve(_usable(A, info), B, left=left)
    return _SolveExResult(_nan_where(info, A, X, X.ndim - (A.ndim - 2)), info)


@autocast_op("fp32")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """(L, info) with info 0 where A is positive-definite, else the order of its first leading minor that
    is not (that L is NaN); check_errors=True raises LinAlgError instead.

    >>> ember.linalg.cholesky_ex(-ember.eye(2)).info.item()
    1
    """
    _check_matrix("cholesky_ex", A)
    info = _info(A, _cholesky_info)
    if check_errors:
        _raise_info("linalg.cholesky_ex", info, A, lambda k: f"The factorization could not be completed because the "
                                                             f"input is not positive-definite (the leading minor of "
                                                             f"order {k} is not positive-definite).")
    if not bool((info > 0).any()):
        return _CholeskyExResult(cholesky(A, upper=upper), info)
    return _CholeskyExResult(_nan_where(info, A, cholesky(_usable(A, info), upper=upper), 2), info)


# ---------------------------------------------------------------- tensor equations, Vandermonde
def _prod(shape):
    out = 1
    for s in shape:
        out *= s
    return out


@autocast_op("fp32")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a matrix (prod(shape[:ind]) rows): shape A.shape[ind:] + A.shape[:ind], so that
    tensordot(tensorinv(A, ind), A, ind) is the identity."""
    _check_float("tensorinv", A, low_precision=True)
    if ind <= 0:
        raise op_error("linalg.tensorinv", f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(rows) != _prod(cols):
        raise op_error("linalg.tensorinv", f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                                           f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}")
    return inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows)


@autocast_op("fp32")
def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) == B: X has shape A.shape[B.ndim:]; `dims` of A are moved to the end first."""
    _check_float("tensorsolve", A, low_precision=True)
    if dims is not None:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        A = A.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    cols = tuple(A.shape[B.ndim:])
    n = _prod(cols)
    if n != B.numel():
        raise op_error("linalg.tensorsolve", f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                                             f"== prod(self.shape[:other.ndim]), but got {n} != {B.numel()}")
    if A.numel() != n * n:
        raise op_error("linalg.tensorsolve", f"A {describe(A)} is not square when read as a ({n}, {n}) matrix "
                                             f"(B {describe(B)})")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(cols)


def vander(x: Tensor, *, N=None) -> Tensor:
    """The Vandermonde matrix of x's last dim, increasing powers: (..., n, N) with column j = x ** j
    (N defaults to n and must be > 1). `ember.vander` is NumPy's: 1-D, decreasing unless increasing=True."""
    if x.ndim == 0:
        x = x.reshape(1)
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise op_error("linalg.vander", f"N must be greater than 1. (got N={N})")
    return _powers(x, N)


def _powers(x, N):
    """[1, x, x^2, ..., x^(N-1)] along a new last dim, as torch: the cumulative product of [1, x, x, ...]."""
    from ..ops.creation import ones
    if x.dtype.name == "bool":
        x = x.to("int64")
    first = ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    return M.cumprod(S.cat([first, x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,))], -1), -1)


def _vander(x: Tensor, N=None, increasing: bool = False) -> Tensor:
    """torch.vander (NumPy's): x 1-D, N columns (len(x) by default), powers decreasing unless `increasing`.

    >>> ember.vander(ember.tensor([1, 2, 3]), N=3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    if x.ndim != 1:
        raise op_error("vander", f"x must be a one-dimensional tensor. (x {describe(x)})")
    N = x.shape[0] if N is None else N
    if N < 0:
        raise op_error("vander", f"N must be non-negative. (got N={N})")
    if N == 0:
        from ..ops.creation import empty
        return empty((x.shape[0], 0), dtype="int64" if x.dtype.name == "bool" else x.dtype, device=x.device)
    out = _powers(x, N)
    return out if increasing else S.flip(out, (-1,))


# ---------------------------------------------------------------- LU, Householder (geqrf, householder_product)
_LUFactorResult = collections.namedtuple("lu_factor", ["LU", "pivots"])
_LUFactorExResult = collections.namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
_LUUnpackResult = collections.namedtuple("lu_unpack", ["P", "L", "U"])
_GeqrfResult = collections.namedtuple("geqrf", ["a", "tau"])


def _check_lu_input(op, A, pivot):
    _check_float(op, A)
    if A.ndim < 2:
        raise op_error(f"linalg.{op}", f"Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead "
                                       f"(A {describe(A)})")
    if not pivot:
        raise op_error(f"linalg.{op}", "LU without pivoting is not implemented on the CPU", RuntimeError)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """(LU, pivots, info): the LU factorisation with partial pivoting A = P L U of each (m, n) matrix, packed
    as LAPACK's getrf: L's multipliers below the diagonal of LU (its unit diagonal implied), U on and above;
    pivots (..., min(m, n)) int32, the 1-based row swapped with row i at step i; info 0, or the 1-based
    index of the first zero pivot (U singular). Differentiable in A (as torch). check_errors=True raises
    LinAlgError where info > 0.

    >>> LU, pivots, info = ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> LU.tolist(), pivots.tolist(), info.item()
    ([[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]], [2, 2], 0)
    """
    _check_lu_input("lu_factor_ex", A, pivot)
    LU, pivots, info = P.LuFactor.apply(A)
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info, A,
                    lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero.")
    return _LUFactorExResult(LU, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True):
    """(LU, pivots) of lu_factor_ex, raising LinAlgError where U has a zero pivot (A singular).

    >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[0.0, 1.0], [2.0, 3.0]]))
    >>> LU.tolist(), pivots.tolist()
    ([[2.0, 3.0], [0.0, 1.0]], [2, 2])
    """
    _check_lu_input("lu_factor", A, pivot)
    LU, pivots, info = P.LuFactor.apply(A)
    _raise_info("linalg.lu_factor", info, A,
                lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If you "
                          f"still want to perform the factorization, consider calling linalg.lu_factor_ex(A, pivot)")
    return _LUFactorResult(LU, pivots)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True):
    """(P, L, U) with A = P L U from lu_factor's packed (LU, pivots): P (..., m, m) a permutation matrix in
    LU's dtype, L (..., m, k) unit lower triangular, U (..., k, n) upper triangular (k = min(m, n)). With
    unpack_data=False L and U, with unpack_pivots=False P, are empty tensors. L and U are differentiable.

    >>> P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(ember.tensor([[0.0, 1.0], [2.0, 3.0]])))
    >>> P.tolist(), L.tolist(), U.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [0.0, 1.0]])
    """
    _check_float("lu_unpack", LU_data, "LU_data")
    if LU_data.ndim < 2:
        raise op_error("lu_unpack", f"Expected tensor with 2 or more dimensions. Got size: {list(LU_data.shape)} "
                                    f"instead (LU_data {describe(LU_data)})")
    if not isinstance(LU_pivots, Tensor) or LU_pivots.dtype.name != "int32":
        raise op_error("lu_unpack", f"LU_pivots is expected to be a contiguous tensor of int32 dtype (got "
                                    f"{describe(LU_pivots)}); pass the pivots that linalg.lu_factor returns")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if tuple(LU_pivots.shape[:-1]) != tuple(LU_data.shape[:-2]) or LU_pivots.ndim == 0 or LU_pivots.shape[-1] > k:
        raise op_error("lu_unpack", f"LU_pivots {describe(LU_pivots)} must have shape LU_data.shape[:-2] + (k,) with "
                                    f"k <= min(m, n) = {k} (LU_data {describe(LU_data)})")
    from ..ops.creation import empty
    nothing = LU_data.reshape(-1)[:0]                 # empty, still on LU_data's graph (as torch's)
    L, U = P._unpack(LU_data) if unpack_data else (nothing, nothing)
    if not unpack_pivots:
        return _LUUnpackResult(empty(0, dtype=LU_data.dtype, device=LU_data.device), L, U)
    piv = LU_pivots.detach()._data
    if LU_pivots.numel() and not bool(((LU_pivots >= 1) & (LU_pivots <= m)).all()):
        raise op_error("lu_unpack", f"pivots passed to lu_unpack must be between 1 and LU.size(-2) = {m} inclusive "
                                    f"(LU_pivots {describe(LU_pivots)}); pass the pivots that linalg.lu_factor returns")
    from ..backends import array_module
    xp = array_module(piv)
    count = P._count(piv.shape[:-1])
    perm = P.lu_permutation(xp, piv.reshape((count, piv.shape[-1])), m)         # A[perm] = L U
    eye = xp.eye(m, dtype=LU_data.dtype.np)
    Pm = xp.swapaxes(eye[perm], -1, -2).reshape(tuple(LU_data.shape[:-2]) + (m, m))
    return _LUUnpackResult(Tensor._make(xp.ascontiguousarray(Pm), LU_data._device), L, U)


def _reflectors(A, tau):
    """[(v_i, tau_i)]: the Householder vectors H_i = I - tau_i v_i v_i^T stored below A's diagonal
    (v_i (..., m, 1): zeros above row i, 1 at row i; tau_i (..., 1, 1))."""
    from ..ops.creation import zeros, ones
    batch = tuple(A.shape[:-2])
    out = []
    for i in range(tau.shape[-1]):
        parts = [zeros(batch + (i, 1), dtype=A.dtype, device=A.device),
                 ones(batch + (1, 1), dtype=A.dtype, device=A.device), A[..., i + 1:, i:i + 1]]
        out.append((S.cat(parts, -2), tau[..., i:i + 1].unsqueeze(-1)))      # (..., m, 1), (..., 1, 1)
    return out


def _apply_reflectors(C, reflectors, left, order):
    """H_i applied to C for each reflector in `order`: H C on the left, C H on the right."""
    for v, t in order(reflectors):
        if left:
            C = C - t * (v @ (v.mT @ C))
        else:
            C = C - t * ((C @ v) @ v.mT)
    return C


def _check_householder(op, A, tau):
    _check_float(op, A, "input")
    _check_float(op, tau, "tau")
    if A.ndim < 2:
        raise op_error(op, f"input must have at least 2 dimensions. (input {describe(A)})")
    if tau.dtype is not A.dtype:
        raise op_error(op, f"tau dtype {_TORCH_NAMES[tau.dtype.name]} does not match input dtype "
                           f"{_TORCH_NAMES[A.dtype.name]}")
    if A._device is not tau._device:
        raise op_error(op, f"expected input and tau on the same device, got {describe(A)} and {describe(tau)}")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise op_error(op, f"Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])} (input {describe(A)}, tau {describe(tau)})")


@autocast_op("fp32")
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i stored below the diagonal
    of column i of A (m, n) (geqrf's output): the Q of a QR factorisation. m >= n >= k. Differentiable in
    A and tau. `ember.orgqr` is the same function.

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in ember.linalg.householder_product(a, tau).tolist()]
    [[-0.6, -0.8], [-0.8, 0.6]]
    """
    op = "linalg.householder_product"
    _check_householder(op, A, tau)
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise op_error(op, f"input.shape[-2] must be greater than or equal to input.shape[-1] (input {describe(A)})")
    if n < tau.shape[-1]:
        raise op_error(op, f"input.shape[-1] must be greater than or equal to tau.shape[-1] (input {describe(A)}, "
                           f"tau {describe(tau)})")
    from ..ops.creation import eye
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    if tau.shape[-1] == 0:   # no reflectors: the identity, still on A's and tau's graph (as torch's)
        return Q + 0 * A + 0 * tau.sum(-1, keepdim=True).unsqueeze(-1)
    return _apply_reflectors(Q, _reflectors(A, tau), True, reversed)       # H_1 (H_2 (... (H_k I)))


@autocast_op("fp32")
def geqrf(input: Tensor):
    """(a, tau): LAPACK geqrf's QR factorisation of each (m, n) matrix: R on and above a's diagonal, the
    Householder vectors of Q below it, their scales in tau (..., min(m, n)). Q is
    householder_product(a, tau). Not differentiable, as torch's (use linalg.qr).

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in a.triu().tolist()]
    [[-5.0, -2.2], [0.0, 0.4]]
    """
    _check_float("geqrf", input, "input")
    if input.ndim < 2:
        raise op_error("geqrf", f"input must have at least 2 dimensions. (input {describe(input)})")
    from ..backends import array_module
    data = input.detach()._data
    xp = array_module(data)
    m, n = input.shape[-2], input.shape[-1]
    batch = tuple(input.shape[:-2])
    if data.size == 0:   # NumPy's qr refuses empty matrices
        return _GeqrfResult(Tensor._make(data.copy(), input._device),
                            Tensor._make(xp.zeros(batch + (min(m, n),), dtype=data.dtype), input._device))
    h, tau = xp.linalg.qr(data, mode="raw")                                 # h: a transposed (Fortran order)
    a = xp.ascontiguousarray(xp.swapaxes(h, -1, -2)).astype(data.dtype, copy=False)
    return _GeqrfResult(Tensor._make(a, input._device), Tensor._make(tau.astype(data.dtype, copy=False), input._device))


@autocast_op("fp32")
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """Q other (left=True) or other Q (left=False), with Q^T instead when transpose=True, where Q (mn, mn) =
    H_1 ... H_k is given by geqrf's (input (mn, k'), tau (k)): without forming Q. Differentiable.

    >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 4) for v in row] for row in ember.ormqr(a, tau, ember.eye(2), transpose=True).tolist()]
    [[-0.6, -0.8], [-0.8, 0.6]]
    """
    _check_householder("ormqr", input, tau)
    _check_float("ormqr", other, "other")
    if other.dtype is not input.dtype:
        raise op_error("ormqr", f"other dtype {_TORCH_NAMES[other.dtype.name]} does not match input dtype "
                                f"{_TORCH_NAMES[input.dtype.name]}")
    if other.ndim != input.ndim or tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise op_error("ormqr", f"other {describe(other)} must have input's batch dimensions (input {describe(input)})")
    mn = input.shape[-2]
    side = -2 if left else -1
    if other.shape[side] != mn:
        raise op_error("ormqr", f"other.shape[{side}] must be equal to input.shape[-2] (input {describe(input)}, "
                                f"other {describe(other)})")
    if tau.shape[-1] > mn:
        raise op_error("ormqr", f"tau.shape[-1] must be less than or equal to input.shape[-2] (input "
                                f"{describe(input)}, tau {describe(tau)})")
    refl = _reflectors(input, tau)
    # Q C = H_1 (... (H_k C)); Q^T C = H_k (... (H_1 C)); C Q = ((C H_1) ...) H_k; C Q^T = ((C H_k) ...) H_1
    first_last = left == transpose
    return _apply_reflectors(other, refl, left, (lambda r: r) if first_last else reversed)


# ---------------------------------------------------------------- least squares, rank (composites)
_LstsqResult = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _empty_like(A, dtype=None):
    from ..ops.creation import empty
    return empty(0, dtype=A.dtype if dtype is None else dtype, device=A.device)


def _full_rank_lstsq(A, B):
    """The least-squares solution (m >= n) or the minimum-norm solution (m < n) of a full-rank A through
    Householder QR, as LAPACK's gels: stable in value (no normal equations) and differentiable twice."""
    m, n = A.shape[-2], A.shape[-1]
    if m >= n:                                      # A = Q R: X = R^-1 Q^T B
        Q, R = qr(A)
        return solve_triangular(R, Q.mT @ B, upper=True)
    Q, R = qr(A.mT)                                 # A^T = Q R: X = Q R^-T B
    return Q @ solve_triangular(R.mT, B, upper=False)


@autocast_op("fp32")
def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values): X minimising ||A X - B|| for A (..., m, n), B (..., m, k)
    or a batch of vectors (..., m); the minimum-norm X where A is wide or rank-deficient. As torch's CPU
    drivers: 'gelsy' (default) and 'gelsd'/'gelss' find the rank, singular values at or below rcond *
    largest counting as zero (rcond defaults to eps * max(m, n)); 'gels' assumes A has full rank. Which
    fields are filled: rank (int64, A's batch shape) for all but 'gels'; singular_values for 'gelsd' and
    'gelss'; residuals (the squared residual norm of each column of B) where m > n, for 'gels' always and
    for 'gelsd'/'gelss' when every matrix has full rank; the others are empty. Solution and residuals are
    differentiable in A and B (the gradient of pinv(A) @ B, as torch's); rank and singular values are not.
    Rank decisions use the SVD for all drivers ('gelsy' uses a pivoted QR in LAPACK).

    >>> ember.linalg.lstsq(ember.tensor([[1.0], [1.0]]), ember.tensor([[1.0], [3.0]])).solution.tolist()
    [[2.0]]
    """
    op = "linalg.lstsq"
    _check_float("lstsq", A, "input")
    _check_float("lstsq", B, "other")
    if A.ndim < 2:
        raise op_error(op, f"input must have at least 2 dimensions. (input {describe(A)})")
    if B.ndim < 1:
        raise op_error(op, f"other must have at least 1 dimension. (other {describe(B)})")
    if A.dtype is not B.dtype:
        raise op_error(op, f"Expected input and other to have the same dtype, but got input's dtype "
                           f"{_TORCH_NAMES[A.dtype.name]} and other's dtype {_TORCH_NAMES[B.dtype.name]} "
                           f"(input {describe(A)}, other {describe(B)})")
    if A._device is not B._device:
        raise op_error(op, f"expected input and other on the same device, got {describe(A)} and {describe(B)}")
    if A.ndim - B.ndim not in (0, 1):
        raise op_error(op, f"input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) "
                           f"<= 1 (input {describe(A)}, other {describe(B)})")
    vector = A.ndim - B.ndim == 1
    if vector and tuple(B.shape) != tuple(A.shape[:-1]):
        raise op_error(op, f"other {describe(B)} has one dimension fewer than input {describe(A)}, so it is read "
                           f"as a batch of vectors and must have shape input.shape[:-1] = {tuple(A.shape[:-1])}")
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise op_error(op, f"input.size(-2) should match other.size(-2) (input {describe(A)}, other {describe(B)})")
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    except ValueError:
        raise op_error(op, f"batch dimensions of input {describe(A)} and other {describe(B)} cannot be broadcast "
                           f"together") from None
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise op_error(op, f"parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got {driver!r}")
    k = min(m, n)
    rank = singular_values = None
    if driver != "gels":
        rcond = float(np.finfo(A.dtype.np).eps) * max(m, n) if rcond is None else rcond
        singular_values = svdvals(A.detach())                                    # (A's batch, k)
        if k:
            cutoff = rcond * singular_values.amax(-1, keepdim=True)
            rank = M.sum(singular_values > cutoff, -1)
        else:
            rank = M.sum(singular_values > 0, -1)
    full = rank is None or bool((rank == k).all())
    empty = m == 0 or n == 0 or Bm.shape[-1] == 0
    if empty:                 # LAPACK returns at once: X = 0, rank 0; keep both inputs on the graph
        from ..ops.creation import zeros
        X = zeros(tuple(batch) + (n, Bm.shape[-1]), dtype=A.dtype, device=A.device) + 0 * (A.sum() + B.sum())
        rank = None if rank is None else rank * 0
    elif full:
        try:
            X = _full_rank_lstsq(A, Bm)
        except LinAlgError:
            raise op_error(op, f"The least squares solution could not be computed because the input matrix does "
                               f"not have full rank (driver {driver!r}; input {describe(A)})", LinAlgError) from None
    else:
        X = pinv(A, rtol=rcond) @ Bm
    fills_residuals = driver == "gels" or (driver in ("gelsd", "gelss") and full)
    if m > n and fills_residuals:
        residuals = M.sum((A @ X - Bm) ** 2, -2)                               # (batch, k)
        if empty and driver == "gels":
            residuals = residuals * 0              # torch's gels leaves them zero, not |B|^2
    else:
        residuals = X.reshape(-1)[:0]                  # empty, still on the graph (as torch's)
    if vector:
        X = X.squeeze(-1)
    if driver == "gels":
        return _LstsqResult(X, residuals, _empty_like(A, "int64"), _empty_like(A))
    if driver == "gelsy":
        singular_values = _empty_like(A)
    return _LstsqResult(X, residuals, rank, singular_values)


def _rank_tolerances(A, atol, rtol, largest):
    """max(atol, rtol * largest), atol and rtol numbers or tensors over A's batch dims (`largest` (..., 1))."""
    rtol = _default_rtol(A, atol, rtol)
    atol = 0.0 if atol is None else atol
    atol = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    rtol = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    return M.maximum(rtol * largest, atol) if isinstance(atol, Tensor) else M.clamp(rtol * largest, min=atol)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The numerical rank of each matrix: the number of singular values (absolute eigenvalues with
    hermitian=True) above max(atol, rtol * largest), int64 over A's batch dims. rtol defaults to eps *
    max(m, n) when atol is not given; atol and rtol may be tensors over the batch. `tol` is torch's
    deprecated name for atol (with rtol=0).

    >>> ember.linalg.matrix_rank(ember.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_rank: expected a Tensor for A, got {type(A).__name__}")
    if A.dtype.name not in ("float32", "float64"):
        raise op_error("linalg.matrix_rank", f"This function doesn't handle types other than float and double "
                                             f"(A {describe(A)})")
    if A.ndim < 2:
        raise op_error("linalg.matrix_rank", f"The input tensor input must have at least 2 dimensions. "
                                             f"(A {describe(A)})")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise op_error("linalg.matrix_rank", "tol is the deprecated form of atol: pass one or the other, "
                                                 "not both", TypeError)
        atol, rtol = tol, 0.0
    if hermitian:
        _check_matrix("matrix_rank", A)
        magnitude = M.abs(eigvalsh(A.detach()))
    else:
        magnitude = svdvals(A.detach())
    largest = M.amax(magnitude, -1, keepdim=True) if magnitude.shape[-1] else magnitude.sum(-1, keepdim=True)
    return M.sum(magnitude > _rank_tolerances(A, atol, rtol, largest), -1)


# ---------------------------------------------------------------- matrix_power, matrix_exp (composites)
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n for each square matrix by repeated squaring: n = 0 gives the identity, n < 0 the power of inv(A)
    (float A only; integer A is fine for n >= 0). Also `ember.matrix_power` and `Tensor.matrix_power`.

    >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [1, 0]]), 5).tolist()
    [[8, 5], [5, 3]]
    """
    op = "linalg.matrix_power"
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: expected a Tensor for A, got {type(A).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise op_error(op, f"argument 'n' must be int, not {type(n).__name__} ({n!r})", TypeError)
    if A.ndim < 2:
        raise op_error(op, f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error(op, f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices (A {describe(A)})")
    if n == 0:   # the identity, on A's graph with a zero gradient (as torch's)
        from ..ops.creation import ones
        return M.where(ones((), dtype="bool", device=A.device), _eye_like(A).to(A.dtype), A)
    if n < 0:
        A, n = inv(A), -n
    result, z = None, None
    while n:
        z = A if z is None else z @ z
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
    return result if result is not A else A * 1


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the degrees of
# the diagonal Pade approximants, the largest 1-norm each is accurate for in double precision, and their
# coefficients b_0..b_m.
_PADE_THETA = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
               (9, 2.097847961257068e0), (13, 5.371920351148152e0))
_PADE_B = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0,
        90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0,
         1.0),
}


def _pade(A, m):
    """r_m(A) = (V - U)^-1 (V + U), U and V the odd and even parts of the degree-m Pade numerator."""
    b = _PADE_B[m]
    eye = _eye_like(A)
    A2 = A @ A
    if m == 13:
        A4 = A2 @ A2
        A6 = A4 @ A2
        U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
        V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    else:
        powers = [eye, A2]
        while len(powers) < (m + 1) // 2:
            powers.append(powers[-1] @ A2)
        U = A @ sum(b[2 * j + 1] * P_ for j, P_ in enumerate(powers))
        V = sum(b[2 * j] * P_ for j, P_ in enumerate(powers))
    return solve(V - U, V + U)


@autocast_op("fp32")
def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of each square matrix, by Pade approximation with scaling and squaring (Higham 2005): the
    degree from the largest 1-norm in the batch, the number of squarings per matrix. Differentiable (the
    derivative of the same scaled approximant, which is the Frechet derivative of exp to working accuracy;
    twice). float16/bfloat16 are computed in float32. Also `ember.matrix_exp` and `Tensor.matrix_exp`.

    >>> ember.linalg.matrix_exp(ember.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    _check_float("matrix_exp", A, low_precision=True)
    if A.ndim < 2:
        raise op_error("linalg.matrix_exp", f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error("linalg.matrix_exp", f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                                            f"{A.shape[-1]} matrices (A {describe(A)})")
    if A.dtype.name in ("float16", "bfloat16"):
        return matrix_exp(A.float()).to(A.dtype)
    if A.numel() == 0:
        return A * 1
    from ..ops.creation import tensor
    norms = M.amax(M.sum(M.abs(A.detach()), -2), -1).reshape(-1).to("float64").tolist()   # each 1-norm
    largest = max(norms)
    if not math.isfinite(largest):
        return _pade(A, 13)                     # NaN or inf in: NaN out, as torch's
    for m, theta in _PADE_THETA[:-1]:
        if largest <= theta:
            return _pade(A, m)
    theta = _PADE_THETA[-1][1]
    squarings = [max(0, math.ceil(math.log2(x / theta))) if x > 0 else 0 for x in norms]
    batch = tuple(A.shape[:-2]) + (1, 1)
    scale = tensor([2.0 ** -s for s in squarings], dtype=A.dtype, device=A.device).reshape(batch)
    R = _pade(A * scale, 13)
    steps = tensor(squarings, device=A.device).reshape(batch)
    for j in range(max(squarings)):
        R = M.where(steps > j, R @ R, R)
    return R


# ---------------------------------------------------------------- lu, lu_solve (composites of lu_factor)
_LUResult = collections.namedtuple("lu", ["P", "L", "U"])


def lu(A: Tensor, *, pivot: bool = True):
    """(P, L, U) with A = P L U, partial pivoting, for A (..., m, n): P (..., m, m), L (..., m, k) unit lower,
    U (..., k, n) upper, k = min(m, n). A singular matrix is fine (U has a zero on its diagonal). L and U
    are differentiable (as torch's).

    >>> P, L, U = ember.linalg.lu(ember.tensor([[0.0, 1.0], [2.0, 3.0]]))
    >>> P.tolist(), L.tolist(), U.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [0.0, 1.0]])
    """
    _check_lu_input("lu", A, pivot)
    LU, pivots, _ = P.LuFactor.apply(A)
    return _LUResult(*lu_unpack(LU, pivots))


def _check_factor_solve(op, LU, pivots, B, left, lu_name="LU"):
    """The checks shared by lu_solve and ldl_solve: a square factor, int32 pivots of shape LU.shape[:-1],
    B (..., n, k) (or (..., k, n) when not left) of LU's dtype."""
    _check_float(op, LU, lu_name)
    _check_float(op, B, "B")
    if LU.ndim < 2:
        raise op_error(f"linalg.{op}", f"The input tensor {lu_name} must have at least 2 dimensions. "
                                       f"({lu_name} {describe(LU)})")
    if LU.shape[-1] != LU.shape[-2]:
        raise op_error(f"linalg.{op}", f"{lu_name} must be batches of square matrices, but they are {LU.shape[-2]} "
                                       f"by {LU.shape[-1]} matrices ({lu_name} {describe(LU)})")
    if B.ndim < 2:
        raise op_error(f"linalg.{op}", f"The input tensor B must have at least 2 dimensions. (B {describe(B)})")
    if not isinstance(pivots, Tensor) or pivots.dtype.name != "int32":
        raise op_error(f"linalg.{op}", f"pivots should be a Tensor of scalar type torch.int32 (got "
                                       f"{describe(pivots)})")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise op_error(f"linalg.{op}", f"Expected {lu_name}.shape[:-1] and pivots.shape to be the same, but got "
                                       f"pivots {describe(pivots)} and {lu_name} {describe(LU)}")
    n = LU.shape[-1]
    if op == "ldl_solve" and B.shape[-2] != n:
        raise op_error(f"linalg.{op}", f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} "
                                       f"by {n} but each b matrix is {B.shape[-2]} by {B.shape[-1]} (LD "
                                       f"{describe(LU)}, B {describe(B)})")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise op_error(f"linalg.{op}", f"Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                                       f"{B.shape[-2]}x{B.shape[-1]}) ({lu_name} {describe(LU)}, B {describe(B)})")
    _same_dtype(f"linalg.{op}", LU, B, lu_name, "B")
    if LU._device is not B._device or LU._device is not pivots._device:
        raise op_error(f"linalg.{op}", f"expected {lu_name}, pivots and B on the same device, got "
                                       f"{describe(LU)}, {describe(pivots)} and {describe(B)}")


@autocast_op("fp32")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with A X = B (left=True) or X A = B, or with A^T in place of A (adjoint=True), given lu_factor's
    (LU, pivots) of A = P L U; batch dims of LU and B broadcast. Differentiable in LU and B.

    >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[3.0, 1.0], [1.0, 2.0]]))
    >>> [round(v, 4) for v in ember.linalg.lu_solve(LU, pivots, ember.tensor([[9.0], [8.0]])).flatten().tolist()]
    [2.0, 3.0]
    """
    _check_factor_solve("lu_solve", LU, pivots, B, left)
    try:
        np.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise op_error("linalg.lu_solve", f"batch dimensions of LU {describe(LU)} and B {describe(B)} cannot be "
                                          f"broadcast together") from None
    if not left:   # X A = B <=> A^T X^T = B^T; X A^T = B <=> A X^T = B^T
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    Pm, L, U = lu_unpack(LU, pivots)
    if not adjoint:                  # P L U X = B: X = U^-1 L^-1 P^T B
        Y = solve_triangular(L, Pm.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    Y = solve_triangular(U.mT, B, upper=False)   # U^T L^T P^T X = B: X = P L^-T U^-T B
    return Pm @ solve_triangular(L.mT, Y, upper=True, unitriangular=True)


# ---------------------------------------------------------------- LDL^T (Bunch-Kaufman, LAPACK sytrf)
_LDLFactorResult = collections.namedtuple("ldl_factor", ["LD", "pivots"])
_LDLFactorExResult = collections.namedtuple("ldl_factor_ex", ["LD", "pivots", "info"])


def _no_derivative(op, outputs, inputs):
    """outputs on the graph of `inputs` whose backward raises (torch: 'derivative ... is not implemented'),
    so that a loss through them fails loudly instead of getting no gradient."""
    from ..autograd.function import Function
    from ..autograd.grad_mode import STATE
    if not (STATE.enabled and any(t.requires_grad for t in inputs)):
        return outputs

    class _NotDifferentiable(Function):
        @staticmethod
        def forward(ctx, *args):
            return tuple(o.detach() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            raise op_error(op, "the derivative is not implemented (torch has none either)", NotImplementedError)
    _NotDifferentiable.__name__ = op.replace("linalg.", "").title().replace("_", "") + "Backward"
    return _NotDifferentiable.apply(*inputs)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    """(LD, pivots, info): the Bunch-Kaufman factorisation A = L D L^T of each symmetric matrix (its lower
    triangle read), as LAPACK's sytrf: D block diagonal (1x1 and 2x2 blocks) on LD's diagonal, L's
    multipliers below it (the upper triangle zero); pivots int32, 1-based (k: row k swapped in for a 1x1
    block, -k on both rows of a 2x2 block); info 0, or the index of the first zero 1x1 block of D (A is
    singular; the factorisation still completes). hermitian only matters for complex inputs. check_errors
    raises LinAlgError where info > 0. Not differentiable (as torch's: a backward through it raises).

    >>> LD, pivots, info = ember.linalg.ldl_factor_ex(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> LD.tolist(), pivots.tolist(), info.item()
    ([[4.0, 0.0], [0.5, 2.0]], [1, 2], 0)
    """
    op = "linalg.ldl_factor_ex"
    _check_float("ldl_factor_ex", A)
    if A.ndim < 2:
        raise op_error(op, f"The input tensor A must have at least 2 dimensions. (A {describe(A)})")
    if A.shape[-1] != A.shape[-2]:
        raise op_error(op, f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices (A {describe(A)})")
    from ..backends import array_module
    data = A.detach()._data
    xp = array_module(data)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    ld, piv, info = P._ldl_kernel(xp, data.reshape((-1, n, n)))
    LD = Tensor._make(ld.reshape(A.shape), A._device)
    info = Tensor._make(info.reshape(batch), A._device)
    if check_errors:
        _raise_info(op, info, A, lambda k: f"The factorization could not be completed because the input is "
                                           f"singular: D[{k},{k}] is zero.")
    LD, = _no_derivative("linalg.ldl_factor", (LD,), (A,))
    return _LDLFactorExResult(LD, Tensor._make(piv.reshape(batch + (n,)), A._device), info)


def ldl_factor(A: Tensor, *, hermitian: bool = False):
    """(LD, pivots) of ldl_factor_ex, raising LinAlgError where D is singular.

    >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[0.0, 1.0], [1.0, 0.0]]))   # a 2x2 block
    >>> LD.tolist(), pivots.tolist()
    ([[0.0, 0.0], [1.0, 0.0]], [-2, -2])
    """
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_info("linalg.ldl_factor", info, A, lambda k: f"The factorization could not be completed because the "
                                                        f"input is singular: D[{k},{k}] is zero.")
    return _LDLFactorResult(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """X with A X = B, given ldl_factor's (LD, pivots) of symmetric A (LAPACK sytrs). LD, pivots and B have
    the same batch dims (torch does not broadcast them either). Not differentiable (as torch's).

    >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> ember.linalg.ldl_solve(LD, pivots, ember.tensor([[6.0], [5.0]])).tolist()
    [[1.0], [1.0]]
    """
    op = "linalg.ldl_solve"
    _check_factor_solve("ldl_solve", LD, pivots, B, True, "LD")
    if tuple(B.shape[:-2]) != tuple(LD.shape[:-2]):
        raise op_error(op, f"LD and B must have the same batch dimensions (LD {describe(LD)}, B {describe(B)})")
    from ..backends import array_module
    ld, piv, rhs = LD.detach()._data, pivots._data, B.detach()._data
    n, k = LD.shape[-1], B.shape[-1]
    if piv.size and not bool(((abs(pivots) >= 1) & (abs(pivots) <= n)).all()):
        raise op_error(op, f"pivots must be between 1 and n = {n} in absolute value (pivots {describe(pivots)}); "
                           f"pass the pivots that linalg.ldl_factor returns")
    xp = array_module(ld)
    X = P._ldl_solve_kernel(xp, ld.reshape((-1, n, n)), piv.reshape((-1, n)), rhs.reshape((-1, n, k)))
    X = Tensor._make(X.reshape(B.shape), B._device)
    return _no_derivative("linalg.ldl_solve", (X,), (LD, B))[0]
