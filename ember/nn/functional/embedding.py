"""Embedding lookup and one_hot."""
from __future__ import annotations

import numpy as np

from ..._errors import check_same_device, op_error, user_frame
from ..._tensor import Tensor
from ...backends import array_module
from ...autograd.grad_mode import no_grad
from ...ops import math as M
from ...ops.layers import Embedding as EmbeddingLookup


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; the padding_idx row gets no gradient."""
    if input.dtype.is_floating_point:
        raise op_error("embedding", f"expected an integer index tensor, got {input.dtype.name}")
    check_same_device("embedding", weight, input, "indices", "weight")
    if scale_grad_by_freq or sparse:
        raise op_error("embedding", "scale_grad_by_freq and sparse are not supported", NotImplementedError)
    if max_norm is not None:
        with no_grad():
            rows = Tensor._make(array_module(input).unique(input._data.reshape(-1)), input._device)
            w = weight[rows]
            norms = w.norm(norm_type, dim=1, keepdim=True)
            scale = M.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
            weight[rows] = w * scale
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= weight.shape[0]):
        raise op_error("embedding", f"index out of range: indices must be in [0, {weight.shape[0]}), got "
                       f"[{int(idx.min())}, {int(idx.max())}]", IndexError)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return EmbeddingLookup.apply(weight, idx=idx, padding_idx=padding_idx)


def one_hot(tensor, num_classes=-1) -> Tensor:
    """(...) integer classes -> (..., num_classes) int64 one-hot."""
    if tensor.dtype.is_floating_point:
        raise RuntimeError(f"one_hot is only applicable to index tensor (at {user_frame()})")
    a = tensor._data
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    if a.size and (int(a.min()) < 0 or int(a.max()) >= num_classes):
        raise op_error("one_hot", f"class values must be in [0, {num_classes}), got [{int(a.min())}, {int(a.max())}]")
    out = (a[..., None] == array_module(tensor).arange(num_classes)).astype(np.int64)
    return Tensor._make(out, tensor._device)
