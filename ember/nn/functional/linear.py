"""Linear and bilinear maps."""
from __future__ import annotations

from typing import Optional


from ..._errors import op_error
from ..._tensor import Tensor
from ...ops import math as M
from ...ops.layers import Linear as LinearPrim
from ...amp import autocast_op


@autocast_op("lower")
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y = input @ weight.T + bias, over the last dim of input.

    >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    (2, 4)
    """
    if input.shape[-1] != weight.shape[-1]:
        raise op_error("linear", f"input's last dim {input.shape[-1]} != weight's in_features "
                       f"{weight.shape[-1]} (input {tuple(input.shape)}, weight {tuple(weight.shape)})")
    lead = input.shape[:-1]
    x = input if input.ndim == 2 else input.reshape(-1, input.shape[-1])  # one 2-D GEMM, not a batch
    same = x._data.dtype == weight._data.dtype and x._device is weight._device and weight.ndim == 2 and \
        (bias is None or (bias._data.dtype == x._data.dtype and bias._device is x._device and bias.ndim == 1))
    if same:   # the common case: one fused node
        out = LinearPrim.apply(x, weight) if bias is None else LinearPrim.apply(x, weight, bias)
    else:      # mixed dtypes or devices: the general ops explain
        out = M.matmul(x, weight.t())
        if bias is not None:
            if bias.dtype is not out.dtype:   # torch does not promote the bias either
                raise op_error("linear", f"expected bias of dtype {out.dtype.name} (the input's and weight's), "
                                         f"got {bias.dtype.name}; convert it with .to({out.dtype.name})")
            out = out + bias
    return out if input.ndim == 2 else out.reshape(*lead, weight.shape[0])


@autocast_op("keep")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y_k = x1 @ W_k @ x2 + b_k."""
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = M.einsum("bi,kij,bj->bk", x1, weight, x2)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])
