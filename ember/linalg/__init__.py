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

The files, one concern each: `_basic.py` (solve, inv, det, slogdet and the decompositions), `_norms.py`,
`_products.py`, `_solvers.py` (solve_triangular, cholesky_solve, cholesky_inverse, pinv, cond), `_ex.py`,
`_tensors.py` (tensorinv, tensorsolve, vander), `_lu.py`, `_householder.py` (geqrf, householder_product,
ormqr), `_lstsq.py` (lstsq, matrix_rank), `_matrix_functions.py` (matrix_power, matrix_exp), `_ldl.py`, and
`_common.py` (LinAlgError and the checks they share). This file only re-exports.

>>> A = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
>>> ember.linalg.solve(A, ember.tensor([9.0, 8.0])).tolist()
[2.0, 3.0]
"""

from ._common import LinAlgError
from ._basic import solve, inv, det, slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh
from ._norms import norm, vector_norm, matrix_norm
from ._products import matmul, diagonal, cross, vecdot, multi_dot
from ._solvers import solve_triangular, cholesky_solve, cholesky_inverse, pinv, cond  # noqa: F401  (torch.* names)
from ._ex import inv_ex, solve_ex, cholesky_ex
from ._tensors import tensorinv, tensorsolve, vander
from ._lu import lu_factor, lu_factor_ex, lu_unpack, lu, lu_solve  # noqa: F401  (torch.* names)
from ._householder import householder_product, geqrf, ormqr  # noqa: F401  (torch.* names)
from ._lstsq import lstsq, matrix_rank
from ._matrix_functions import matrix_power, matrix_exp
from ._ldl import ldl_factor, ldl_factor_ex, ldl_solve

__all__ = ["LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "norm", "vector_norm", "matrix_norm", "cross", "vecdot", "multi_dot", "solve_triangular",
           "pinv", "cond", "inv_ex", "solve_ex", "cholesky_ex", "tensorinv", "tensorsolve", "vander", "lu_factor",
           "lu_factor_ex", "householder_product", "diagonal", "matmul", "lstsq", "matrix_rank", "matrix_power",
           "matrix_exp", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
