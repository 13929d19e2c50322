"""Embedding lookup and one_hot."""
from __future__ import annotations


from ..._errors import check_same_device, op_error, user_frame
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import math as M, creation as C
from ...ops.layers import Embedding as EmbeddingLookup


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; the padding_idx row gets no gradient;
    with scale_grad_by_freq each row's gradient is divided by its index's count in `input`."""
    if input.dtype.is_floating_point:
        raise op_error("embedding", f"expected an integer index tensor, got {input.dtype.name}")
    check_same_device("embedding", weight, input, "indices", "weight")
    if sparse:
        raise op_error("embedding", "sparse gradients are not supported", NotImplementedError)
    if max_norm is not None:
        with no_grad():
            rows = input.unique()
            w = weight[rows]
            norms = w.norm(norm_type, dim=1, keepdim=True)
            scale = M.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
            weight[rows] = w * scale
    idx = input.detach()
    # meta indices have no values to check. One boolean is read, not the bounds: a compiled step guards
    # on what it read, and "all in range" stays true from batch to batch where min/max would not.
    n = weight.shape[0]
    if idx.numel() and not idx.is_meta and M.any(M.logical_or(M.lt(idx, 0), M.ge(idx, n))).item():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        raise op_error("embedding", f"index out of range: indices must be in [0, {n}), got [{lo}, {hi}]",
                       IndexError)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if scale_grad_by_freq:   # each row's gradient divided by its index's count in `input`
        return EmbeddingLookup.apply(weight, idx, padding_idx=padding_idx, freq=True)
    return EmbeddingLookup.apply(weight, idx, padding_idx=padding_idx)


def one_hot(tensor, num_classes=-1) -> Tensor:
    """(...) integer classes -> (..., num_classes) int64 one-hot."""
    if tensor.dtype.is_floating_point:
        raise RuntimeError(f"one_hot is only applicable to index tensor (at {user_frame()})")
    t = tensor.detach()
    lo, hi = (int(t.min().item()), int(t.max().item())) if t.numel() else (0, -1)
    if num_classes == -1:
        if not t.numel():   # as torch: nothing to count the classes from
            raise op_error("one_hot", "can not infer the total number of classes from an empty tensor; pass "
                                      "num_classes")
        num_classes = hi + 1
    if t.numel() and (lo < 0 or hi >= num_classes):
        raise op_error("one_hot", f"class values must be in [0, {num_classes}), got [{lo}, {hi}]")
    return M.eq(t.unsqueeze(-1), C.arange(num_classes, device=t.device)).long()
