"""Embedding lookup, embedding_bag and one_hot."""
from __future__ import annotations

import numpy as np

from ..._errors import check_same_device, op_error, user_frame
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...backends import array_module
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


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None) -> Tensor:
    """Sum, mean or max of the embeddings of each bag of indices: (B, D), without the (B, L, D) in between
    being the user's to hold. A 2-D input (B, L) is B bags of L; a 1-D input is cut into bags at `offsets`
    (the start of each, and with include_last_offset the end of the last too). Indices equal to padding_idx
    are left out of their bag (and of its count for 'mean'); an empty bag gives zeros. per_sample_weights
    (input's shape, mode 'sum' only) scale each embedding before the sum.

    >>> w = ember.arange(6.0).reshape(3, 2)
    >>> F.embedding_bag(ember.tensor([0, 2, 1, 1]), w, ember.tensor([0, 1]), mode="sum")
    tensor([[0., 1.],
            [6., 8.]])
    """
    op = "embedding_bag"
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise op_error(op, f"If per_sample_weights {tuple(per_sample_weights.shape)} is not None, then it must have "
                           f"the same shape as the input {tuple(input.shape)}", ValueError)
    if weight.ndim != 2:
        raise op_error(op, f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}", ValueError)
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise op_error(op, f"expected an integer index tensor, got {input.dtype.name}")
    if input.ndim == 2:
        if offsets is not None:
            raise op_error(op, f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                               f"of fixed length sequences. However, found offsets of type {type(offsets)}",
                           ValueError)
        if input.shape[1] == 0:   # torch fails here too (arange's step 0)
            raise op_error(op, f"a 2-D input holds bags of input.size(1) indices, which must not be 0; got shape "
                               f"{tuple(input.shape)}")
        starts = list(range(0, input.shape[0] * input.shape[1], input.shape[1]))
        end = input.shape[0] * input.shape[1]
    elif input.ndim == 1:
        if offsets is None:
            raise op_error(op, "offsets has to be a 1D Tensor but got None", ValueError)
        if offsets.ndim != 1:
            raise op_error(op, "offsets has to be a 1D Tensor", ValueError)
        if offsets.dtype.is_floating_point:
            raise op_error(op, f"expected integer offsets, got {offsets.dtype.name}")
        starts = [int(o) for o in offsets.tolist()]
        end = input.shape[0]
        if starts and starts[0] != 0:
            raise op_error(op, f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {starts[0]}")
        if starts and starts[-1] > end:
            raise op_error(op, f"offsets[-1] can not be greater than input's length {end} but got offsets[-1] of "
                               f"{starts[-1]}")
        if any(b < a for a, b in zip(starts, starts[1:])):
            raise op_error(op, f"offsets must not decrease, got {starts}")
        if include_last_offset:
            if not starts:
                raise op_error(op, "include_last_offset=True needs at least one offset (the end of the last bag)")
            starts, end = starts[:-1], starts[-1]
    else:
        raise op_error(op, f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}", ValueError)
    if mode not in ("sum", "mean", "max"):
        raise op_error(op, "mode has to be one of sum, mean or max", ValueError)
    if mode == "max" and scale_grad_by_freq:
        raise op_error(op, "max mode does not support scaling the gradient by the frequency", ValueError)
    if mode == "max" and sparse:
        raise op_error(op, "max mode does not support sparse weights", ValueError)
    if per_sample_weights is not None and mode != "sum":
        raise op_error(op, f"per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
                           f"(got mode='{mode}')", NotImplementedError)
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise op_error(op, f"padding_idx must be within the number of embeddings, {-n} through {n - 1}, but "
                               f"got {padding_idx}")
        padding_idx %= n
    # bag b is input[starts[b]:ends[b]]: gather it into row b of a (B, L_max) table, `valid` marking its slots
    flat = input.reshape(-1)
    ends = starts[1:] + [end]
    xp = array_module(input)
    lengths = xp.asarray([e - s for s, e in zip(starts, ends)], dtype=np.int64)
    width = int(lengths.max()) if len(starts) else 0
    slot = xp.arange(width)
    pos = xp.asarray(starts, dtype=np.int64).reshape(-1, 1) + slot                      # (B, L_max)
    valid = slot < lengths.reshape(-1, 1)
    pos = Tensor._make(xp.where(valid, pos, 0), input._device)
    valid = Tensor._make(valid, input._device)
    if padding_idx is not None:
        valid = M.logical_and(valid, flat[pos] != padding_idx)
    # looked up once per index (max_norm renorms, scale_grad_by_freq counts over the input), then gathered
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)[pos]            # (B, L, D)
    if mode == "max" and width:
        best = M.where(valid.unsqueeze(-1), rows, float("-inf")).max(1).values                     # (B, D)
        return M.where(M.any(valid, 1).unsqueeze(-1), best, 0.0)
    w = M.where(valid, 1.0, 0.0).to(weight.dtype)                                                  # (B, L)
    if per_sample_weights is not None:
        w = w * per_sample_weights.reshape(-1)[pos]
    out = (rows * w.unsqueeze(-1)).sum(1)                                                          # (B, D)
    if mode == "mean":
        out = out / M.clamp(valid.sum(1), min=1).unsqueeze(-1).to(weight.dtype)
    return out


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
