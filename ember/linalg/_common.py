"""What several files of `ember.linalg` share: LinAlgError, the input checks with torch's messages, `_run`
(a primitive with NumPy's LinAlgError reported as Ember's), and the LAPACK-style info helpers."""
from __future__ import annotations

import numpy as np

from .._errors import describe, op_error
from .._tensor import Tensor


class LinAlgError(RuntimeError):
    """A matrix that the op cannot handle (singular, not positive-definite), as torch.linalg.LinAlgError."""


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


def _eye_like(A):
    from ..ops.creation import eye
    return eye(A.shape[-1], dtype=A.dtype, device=A.device)


def _same_dtype(op, A, B, a="A", b="B"):
    if A.dtype is not B.dtype:
        raise op_error(op, f"Expected {a} and {b} to have the same dtype, but found {a} of type "
                           f"{_TORCH_NAMES[A.dtype.name]} and {b} of type {_TORCH_NAMES[B.dtype.name]} instead "
                           f"({a} {describe(A)}, {b} {describe(B)})")


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
