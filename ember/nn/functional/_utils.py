"""Argument helpers shared by the functional modules."""
from __future__ import annotations

from ..._errors import op_error, user_frame


def _ntuple(v, n, name="argument"):
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {tuple(v)} (at {user_frame()})")
        return tuple(int(i) for i in v)
    return (int(v),) * n


def _check_dim(input, dims, op):
    if input.ndim not in dims:
        raise op_error(op, f"expected a {' or '.join(f'{d}-D' for d in dims)} input, "
                       f"got shape {tuple(input.shape)}", ValueError)


def _apply_inplace(input, out, inplace):
    """`inplace=True`: write into input when no graph is being recorded; otherwise stay out of place."""
    if inplace and not out.requires_grad:
        from ...ops.inplace import assign
        return assign(input, out)
    return out
