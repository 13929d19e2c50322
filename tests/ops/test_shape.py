"""ember/ops/shape.py against torch: movement, joining, indexing, scatter/gather, sorting."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, Const, NoGrad, raises_exactly

MOVEMENT = {
    "reshape": lambda L, a: a.reshape(4, 6),
    "reshape_tuple": lambda L, a: L.reshape(a, (2, -1)),
    "reshape_-1": lambda L, a: a.reshape(-1),
    "view": lambda L, a: a.view(6, 4),
    "view_-1": lambda L, a: a.view(-1),
    "view_-1_2": lambda L, a: a.view(-1, 2),
    "contiguous_of_T": lambda L, a: a.permute(2, 0, 1).contiguous().view(-1),
    "permute": lambda L, a: a.permute(2, 0, 1),
    "permute_fn": lambda L, a: L.permute(a, (1, 2, 0)),
    "permute_neg": lambda L, a: a.permute(-1, 0, 1),
    "transpose": lambda L, a: a.transpose(0, 2),
    "transpose_fn": lambda L, a: L.transpose(a, -1, -2),
    "swapaxes": lambda L, a: a.swapaxes(0, 1),
    "mT": lambda L, a: a.mT,
    "squeeze_all": lambda L, a: a.reshape(1, 2, 1, 12).squeeze(),
    "squeeze_dim": lambda L, a: L.squeeze(a.reshape(1, 2, 1, 12), 2),
    "squeeze_nonunit": lambda L, a: a.squeeze(1),
    "squeeze_tuple": lambda L, a: a.reshape(1, 2, 1, 12).squeeze((0, 2)),
    "unsqueeze": lambda L, a: a.unsqueeze(1),
    "unsqueeze_neg": lambda L, a: L.unsqueeze(a, -1),
    "expand": lambda L, a: a[:, :1, :].expand(2, 5, 4),
    "expand_-1": lambda L, a: a[:, :1, :].expand(3, -1, 5, -1),
    "expand_as": lambda L, a: a[:1].expand_as(a),
    "broadcast_to": lambda L, a: L.broadcast_to(a[:, :, :1], (2, 3, 7)),
    "flatten": lambda L, a: a.flatten(),
    "flatten_range": lambda L, a: L.flatten(a, 1),
    "flatten_mid": lambda L, a: a.flatten(0, 1),
    "unflatten": lambda L, a: a.unflatten(2, (2, 2)),
    "unflatten_-1": lambda L, a: L.unflatten(a, 1, (3, 1)),
    "ravel": lambda L, a: a.ravel(),
    "flip": lambda L, a: a.flip(0),
    "flip_dims": lambda L, a: L.flip(a, (0, 2)),
    "fliplr": lambda L, a: a.fliplr(),
    "roll": lambda L, a: a.roll(1, 2),
    "roll_multi": lambda L, a: L.roll(a, (1, -2), (0, 2)),
    "roll_flat": lambda L, a: a.roll(5),
    "roll_flat_empty_dims": lambda L, a: L.roll(a, [5], []),    # an empty dims list is None (was a no-op)
    "roll_same_dim_twice": lambda L, a: a.roll((1, 1), (2, 2)),
    "repeat": lambda L, a: a.repeat(2, 1, 3),
    "repeat_more_dims": lambda L, a: a.repeat(2, 1, 1, 2),
    "tile": lambda L, a: a.tile((2,)),
    "tile_fn": lambda L, a: L.tile(a, (2, 1, 1, 1)),
    "narrow": lambda L, a: a.narrow(2, 1, 2),
    "narrow_fn": lambda L, a: L.narrow(a, 0, 1, 1),
    "movedim": lambda L, a: L.movedim(a, 0, -1),
    "split": lambda L, a: a.split(2, 2),
    "split_sizes": lambda L, a: L.split(a, [1, 3], dim=-1),
    "split_uneven": lambda L, a: a.split(2, 1),
    "chunk": lambda L, a: a.chunk(2, -1),
    "chunk_uneven": lambda L, a: L.chunk(a, 2, 1),
    "chunk_more": lambda L, a: a.chunk(3, 2),
    "unbind": lambda L, a: a.unbind(1),
    "unbind_fn": lambda L, a: L.unbind(a),
    "tensor_split": lambda L, a: a.tensor_split(3, dim=2),
    "tril": lambda L, a: a.tril(),
    "triu": lambda L, a: L.triu(a),
    "tril_k": lambda L, a: a.tril(1),
    "triu_k": lambda L, a: L.triu(a, -1),
    "diagonal": lambda L, a: a[0].diagonal(),
    "diag_vec": lambda L, a: L.diag(a[0, 0]),
    "diag_mat": lambda L, a: L.diag(a[0], 1),
    "trace": lambda L, a: a[0].trace(),
    "repeat_interleave": lambda L, a: a.repeat_interleave(2, dim=1),
}


@pytest.mark.parametrize("name", list(MOVEMENT))
def test_movement(name):
    check_op(MOVEMENT[name], (2, 3, 4))


def test_tril_triu_keep_bool_and_int_dtypes():
    check_op(lambda L, a: (a.triu(1), a.tril(-1)), np.ones((3, 4), dtype=bool), grad=False)
    check_op(lambda L, a: (L.triu(a), L.tril(a, 1)), np.arange(12, dtype=np.int32).reshape(3, 4), grad=False)


def test_T_on_2d_and_1d():
    check_op(lambda L, a: a.T, (3, 4))
    check_op(lambda L, a: a.t(), (3, 4))
    check_op(lambda L, a: a.t(), (3,))


def test_views_share_memory_and_version():
    x = ember.zeros(2, 3)
    for v in (x.view(-1), x.reshape(3, 2), x.T, x.permute(1, 0), x.unsqueeze(0), x.transpose(0, 1),
              x[0], x[:, 1:], x.narrow(1, 0, 2), x.expand(4, 2, 3), x.split(1)[0], x.unbind(0)[1]):
        assert np.shares_memory(v.numpy(), x.numpy()), v
    v = x.view(-1)
    x.add_(1)
    assert v._version == x._version == 1
    assert v.tolist() == [1.0] * 6


def test_view_non_contiguous_raises():
    x = ember.zeros(2, 3).T
    with pytest.raises(RuntimeError, match=r"view: .*\(at test_shape\.py:\d+\)"):
        x.view(6)
    assert x.reshape(6).shape == (6,)


def test_contiguous():
    x = ember.zeros(2, 3)
    assert x.contiguous() is x
    y = x.T
    assert not y.is_contiguous() and y.contiguous().is_contiguous()
    torch_strides = torch.zeros(2, 3).T.stride()
    assert y.stride() == torch_strides


# ------------------------------------------------------------------ joining
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_stack(dim):
    check_op(lambda L, a, b: L.cat([a, b], dim), (2, 3), (2, 3))
    check_op(lambda L, a, b, c: L.stack([a, b, c], dim), (2, 3), (2, 3), (2, 3))


def test_cat_mixed_sizes_and_dtypes():
    check_op(lambda L, a, b: L.cat((a, b), 1), (2, 3), (2, 5))
    check_op(lambda L, a, b: L.cat([a, b]), (2, 3), np.arange(6).reshape(2, 3))   # promotes
    check_op(lambda L, a, b: L.cat([a, b, a]), (3,), (0,))
    check_op(lambda L, a, b: L.concat([a, b], dim=-1), (2, 3), (2, 1))
    # only legacy empty 1-D tensors: torch checks no dim and promotes (an IndexError before)
    check_op(lambda L, a, b: L.cat([a, b.double()], dim=-2), (0,), (0,), grad=False)


def test_hstack_vstack():
    check_op(lambda L, a, b: L.hstack([a, b]), (2, 3), (2, 2))
    check_op(lambda L, a, b: L.vstack([a, b]), (3,), (3,))


# ------------------------------------------------------------------ indexing
GETITEM = {
    "int": lambda L, a: a[1],
    "neg_int": lambda L, a: a[-1],
    "int_int": lambda L, a: a[1, 2],
    "slice": lambda L, a: a[1:3],
    "slice_step": lambda L, a: a[::2],
    "slice_step_mid": lambda L, a: a[:, 1::2],
    "slice_neg": lambda L, a: a[-2:, :-1],
    "none": lambda L, a: a[None],
    "none_mid": lambda L, a: a[:, None, 1],
    "ellipsis": lambda L, a: a[..., 1],
    "ellipsis_none": lambda L, a: a[..., None],
    "ellipsis_slice": lambda L, a: a[1, ..., ::2],
    "list": lambda L, a: a[[0, 2, 2]],
    "tensor_idx": lambda L, a: a[L.tensor([3, 0, 3])],
    "tensor_idx_2d": lambda L, a: a[L.tensor([[0, 1], [2, 2]])],
    "two_tensors": lambda L, a: a[L.tensor([0, 1, 3]), L.tensor([1, 2, 0])],
    "mixed_slice_tensor": lambda L, a: a[1:, L.tensor([0, 2])],
    "mixed_tensor_slice": lambda L, a: a[L.tensor([2, 0]), :2],
    "mixed_int_list": lambda L, a: a[1, [0, 2]],
    "adv_separated": lambda L, a: a.reshape(2, 2, 3)[[0, 1], :, [2, 0]],
    "adv_ellipsis": lambda L, a: a.reshape(2, 2, 3)[..., [0, 2]],
    "bool_mask": lambda L, a: a[a > 0],
    "bool_row_mask": lambda L, a: a[L.tensor([True, False, True, True])],
    "bool_mask_col": lambda L, a: a[:, L.tensor([True, False, True])],
    "neg_list": lambda L, a: a[[-1, -2]],
    "numpy_idx": lambda L, a: a[np.array([2, 0, 2])],               # host arrays index any device, as in torch
    "numpy_mask": lambda L, a: a[:, np.array([True, False, True])],
}


@pytest.mark.parametrize("name", list(GETITEM))
def test_getitem(name):
    check_op(GETITEM[name], (4, 3))


def test_getitem_int_tensor_index_types():
    check_op(lambda L, a, i: a[i], (5, 2), np.array([4, 0, 4], dtype=np.int32))
    check_op(lambda L, a, i: a[i], (5, 2), np.array([4, 0, 1], dtype=np.int64))
    check_op(lambda L, a, m: a[m], (5, 2), np.array([True, False, True, False, True]))


def test_getitem_0d_and_int_tensor_index():
    check_op(lambda L, a: a[()], ())
    check_op(lambda L, a: a[L.tensor(2)], (4, 3))


def test_getitem_float_index_raises():
    with pytest.raises(IndexError, match="index"):
        ember.zeros(3)[ember.tensor([0.0])]


def test_getitem_out_of_range_raises_with_shape():
    with pytest.raises(IndexError, match=r"index: .*tensor shape \(3,\)"):
        ember.zeros(3)[5]


SETITEM = {
    "int_scalar": lambda L, a, v: _set(a, 1, 0.5),
    "slice_tensor": lambda L, a, v: _set(a, slice(1, 3), v[:2]),
    "step_broadcast": lambda L, a, v: _set(a, (slice(None, None, 2),), v[0]),
    "mask": lambda L, a, v: _set(a, a > 0, 0.0),
    "list_idx": lambda L, a, v: _set(a, ([0, 3],), v[:2]),
    "tensor_pair": lambda L, a, v: _set(a, (L.tensor([0, 1]), L.tensor([2, 0])), v[0, :2]),
    "ellipsis": lambda L, a, v: _set(a, (Ellipsis, 0), v[:, 1]),
    "none_int": lambda L, a, v: _set(a, (None, 2), v[1]),
}


def _set(a, key, value):
    b = a * 1            # non-leaf: writable while recording
    b[key] = value
    return b


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem(name):
    check_op(SETITEM[name], (4, 3), (4, 3))


def test_setitem_host_values_and_keys_on_the_tensors_device():
    def fn(L, a):
        b = a.detach().clone()
        b[1] = L.tensor(5.0)                     # a CPU scalar tensor
        b[np.array([2, 3]), 1] = L.tensor([7.0, 8.0], dtype=b.dtype)
        return b
    check_op(fn, (4, 3), grad=False)


def test_setitem_numpy_value_is_copied_to_the_device(fake_cuda):
    b = ember.zeros(2, 3, device="cuda")
    b[0] = np.array([1.0, 2.0, 3.0])             # torch refuses NumPy values; Ember takes them on any device
    b[1, np.array([0, 2])] = 4.0
    assert b.device.type == "cuda" and b.tolist() == [[1.0, 2.0, 3.0], [4.0, 0.0, 4.0]]


def test_setitem_no_grad_on_plain_tensor_and_views():
    x = ember.zeros(3, 4)
    x[1] = 2.0
    x[:, 0] = ember.tensor([1.0, 2.0, 3.0])
    x[x > 2.5] = -1.0
    t = torch.zeros(3, 4)
    t[1] = 2.0
    t[:, 0] = torch.tensor([1.0, 2.0, 3.0])
    t[t > 2.5] = -1.0
    assert x.tolist() == t.tolist()
    row = x[2]
    row[1] = 7.0     # writing a view writes the base
    assert x[2, 1].item() == 7.0
    x[0] += 5        # x[i] += v
    assert x[0].tolist() == [6.0, 5.0, 5.0, 5.0]


def test_setitem_version_and_shape_error_leaves_tensor_unchanged():
    x = ember.arange(6.0).reshape(2, 3)
    before, v = x.tolist(), x._version
    x[0] = 1.0
    assert x._version == v + 1
    before, v = x.tolist(), x._version
    with pytest.raises(RuntimeError):
        x[0] = ember.ones(5)
    assert x.tolist() == before and x._version == v


# ------------------------------------------------------------------ gather / scatter family
IDX = np.array([[0, 2, 1], [3, 3, 0]], dtype=np.int64)    # (2, 3) indices into dim 0 of (4, 3)


def test_gather():
    check_op(lambda L, a, i: L.gather(a, 0, i), (4, 3), IDX)
    check_op(lambda L, a, i: a.gather(1, i), (2, 4), np.array([[0, 0, 3], [1, 2, 1]]))
    check_op(lambda L, a, i: a.gather(-1, i), (2, 4), np.array([[0], [3]]))


def test_take_along_dim():
    check_op(lambda L, a, i: L.take_along_dim(a, i, 0), (4, 3), IDX)
    check_op(lambda L, a, i: a.take_along_dim(i, dim=1), (2, 4), np.array([[0, 3], [1, 1]]))
    check_op(lambda L, a, i: L.take_along_dim(a, i), (2, 4), np.array([7, 0, 3]))
    check_op(lambda L, a: L.take_along_dim(a, a.argsort(1), 1), (3, 4))


def test_scatter_scatter_add():
    idx = np.array([[0, 1, 2], [2, 0, 1]], dtype=np.int64)   # no duplicates within a column
    check_op(lambda L, a, i, s: L.scatter(a, 0, i, s), (3, 3), idx, (2, 3))
    check_op(lambda L, a, i, s: a.scatter(0, i, s), (3, 3), idx, (2, 4), grad=False)   # src larger than index
    # (torch's own scatter backward rejects a src larger than index, so no gradient comparison there)
    check_op(lambda L, a, i: a.scatter(1, i, 2.5), (2, 3), idx)
    # index longer than the input along dim (repeats): the input's gradient was a shape error
    check_op(lambda L, a, s, i: a.scatter(1, i, s), (2, 4), (2, 5), np.array([[3, 1, 0, 2, 3], [0, 0, 1, 1, 2]]))
    check_op(lambda L, a, i, s: L.scatter_add(a, 0, i, s), (4, 3), IDX, (2, 3))   # duplicates add
    check_op(lambda L, a, i, s: a.scatter_add(1, i, s), (2, 4), np.array([[0, 0, 3], [1, 1, 1]]), (2, 3))
    check_op(lambda L, a, i, s: a.scatter(0, i, s, reduce="add"), (4, 3), IDX, (2, 3), grad=False)  # torch: no derivative


def test_scatter_inplace():
    idx = np.array([[0, 1, 2]], dtype=np.int64)
    check_op(lambda L, a, i, s: (a * 1).scatter_(0, i, s), (3, 3), idx, (1, 3))
    check_op(lambda L, a, i, s: (a * 1).scatter_add_(0, i, s), (3, 3), idx, (1, 3))


def test_index_select_index_add():
    i = np.array([2, 0, 2], dtype=np.int64)
    check_op(lambda L, a, i: L.index_select(a, 0, i), (4, 3), i)
    check_op(lambda L, a, i: a.index_select(1, i), (2, 3), i)
    check_op(lambda L, a, i, s: L.index_add(a, 0, i, s), (4, 3), i, (3, 3))   # duplicates accumulate
    check_op(lambda L, a, i, s: a.index_add(1, i, s, alpha=2.0), (2, 3), i, (2, 3))
    check_op(lambda L, a, i, s: (a * 1).index_add_(0, i, s), (4, 3), i, (3, 3))
    check_op(lambda L, a, i: a.index_fill(1, i, -1.0), (2, 3), i)


def test_masked_fill_select():
    m = np.random.default_rng(0).random((3, 4)) < 0.5
    check_op(lambda L, a, m: L.masked_fill(a, m, 0.5), (3, 4), m)
    check_op(lambda L, a, m: a.masked_fill(m, -1e9), (3, 4), m)
    check_op(lambda L, a, m: a.masked_fill(m, float("-inf")).softmax(-1), (3, 4), np.array([False, True, False, True]))
    check_op(lambda L, a, m: (a * 1).masked_fill_(m, 2.0), (3, 4), m)
    check_op(lambda L, a, m: L.masked_select(a, m), (3, 4), m)
    check_op(lambda L, a, m: a.masked_select(m), (3, 4), m[0])   # broadcast mask
    check_op(lambda L, a, m, v: a.masked_fill(m, v), (3, 4), m, ())   # 0-d tensor value


def test_masked_fill_int():
    check_op(lambda L, a, m: a.masked_fill(m, 7), np.arange(6).reshape(2, 3), np.array([True, False, True]))


def test_nonzero_argwhere():
    a = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    check_op(lambda L, a: L.nonzero(a), a, grad=False)
    check_op(lambda L, a: a.nonzero(as_tuple=True), a, grad=False)
    check_op(lambda L, a: L.argwhere(a), a, grad=False)
    check_op(lambda L, a: L.nonzero(a), np.zeros((2, 3)), grad=False)


@pytest.mark.parametrize("fn", [
    lambda L, a: a.sort(),
    lambda L, a: L.sort(a, 0),
    lambda L, a: a.sort(descending=True),
    lambda L, a: L.sort(a, dim=0, descending=True).values,
    lambda L, a: a.argsort(),
    lambda L, a: L.argsort(a, 0, descending=True),
    lambda L, a: a.topk(2),
    lambda L, a: L.topk(a, 2, dim=0, largest=False),
    lambda L, a: a.topk(1, 1).values,
    lambda L, a: a.msort(),
    lambda L, a: a.kthvalue(2, 1),
])
def test_sort_argsort_topk(fn):
    check_op(fn, (3, 4))


def test_sort_stable_ties_and_ints():
    a = np.array([3, 1, 2, 1, 3, 0], dtype=np.int64)
    check_op(lambda L, a: a.sort(stable=True), a)
    check_op(lambda L, a: a.sort(descending=True, stable=True), a)
    check_op(lambda L, a: a.argsort(stable=True), a)


NAN_ROW = np.array([1.0, np.nan, 3.0, -2.0, np.nan, np.inf, 3.0, -np.inf])


@pytest.mark.parametrize("fn", [
    lambda L, a: a.sort(stable=True), lambda L, a: a.sort(descending=True, stable=True),
    lambda L, a: a.argsort(descending=True), lambda L, a: a.topk(3), lambda L, a: a.topk(3, largest=False),
    lambda L, a: a.kthvalue(2), lambda L, a: a.reshape(2, 4).sort(dim=0, descending=True, stable=True),
    lambda L, a: L.unique(a, return_inverse=True, return_counts=True),
], ids=["sort", "sort-desc", "argsort-desc", "topk", "topk-smallest", "kthvalue", "sort-dim0-desc", "unique"])
def test_sort_family_puts_nan_where_torch_does(fn):
    # descending, NaN is the largest value and comes first (it came last); bfloat16's own sort misplaced
    # NaN and everything after it; unique keeps each NaN (NumPy's merges them)
    check_op(fn, NAN_ROW, dtypes=("float32", "float64", "float16", "bfloat16"), grad=False)


def test_unique():
    a = np.array([3, 1, 2, 1, 3, 0], dtype=np.int64)
    check_op(lambda L, a: L.unique(a), a)
    check_op(lambda L, a: a.unique(return_inverse=True), a)
    check_op(lambda L, a: L.unique(a, return_counts=True), a)
    check_op(lambda L, a: L.unique(a, return_inverse=True, return_counts=True), a.reshape(2, 3))
    check_op(lambda L, a: L.unique(a), np.array([1.5, -1.0, 1.5, 2.0]), grad=False)
    check_op(lambda L, a: L.unique(a, dim=0), np.array([[1, 2], [0, 1], [1, 2]], dtype=np.int64))


def test_misc_index_ops():
    check_op(lambda L, a: L.take(a, L.tensor([[0, 5], [3, 3]], device=a.device)), (2, 3))
    check_op(lambda L, a, b: L.searchsorted(a, b), np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 2.0, 3.5]),
             grad=False)
    check_op(lambda L, a, b: L.bucketize(b, a, right=True), np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.1]),
             grad=False)
    check_op(lambda L, a, i, v: a.index_put((i,), v), (4, 2), np.array([0, 2]), (2, 2))
    check_op(lambda L, a, i, v: a.index_put((i,), v, accumulate=True), (4, 2), np.array([0, 0]), (2, 2))


# ------------------------------------------------------------------ errors
def test_shape_op_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"reshape: shape \[4, 2\] is invalid for input of size 6"):
        x.reshape(4, 2)
    with pytest.raises(RuntimeError, match="permute"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match="out of range"):
        x.transpose(0, 5)
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(4, 3, 2)
    with pytest.raises(RuntimeError, match="cat: sizes of tensors must match"):
        ember.cat([x, ember.zeros(3, 2)])
    with pytest.raises(RuntimeError, match="stack: expects each tensor to be equal size"):
        ember.stack([x, ember.zeros(3, 2)])
    with pytest.raises(RuntimeError, match="split"):
        x.split([1, 1], 1)
    with pytest.raises(RuntimeError, match="narrow"):
        x.narrow(1, 2, 3)
    with pytest.raises(RuntimeError, match="gather"):
        x.gather(0, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="masked_fill: expected a bool mask"):
        x.masked_fill(ember.ones(2, 3), 0.0)
    with pytest.raises(RuntimeError, match="topk"):
        x.topk(4)


def test_broadcast_tensors_swapdims_moveaxis_flipud():
    check_op(lambda L, a, b, c: L.broadcast_tensors(a, b, c), (3, 1), (4,), (2, 1, 1))
    check_op(lambda L, a: L.swapdims(a, 0, -1), (2, 3, 4))
    check_op(lambda L, a: L.moveaxis(a, (0, 1), (2, 0)), (2, 3, 4))
    check_op(lambda L, a: L.flipud(a), (3, 2))


def test_masked_scatter_function():
    mask = np.random.default_rng(5).random((3, 4)) < 0.5
    check_op(lambda L, a, m, s: L.masked_scatter(a, m, s), (3, 4), mask, (4, 3))
    check_op(lambda L, a, m, s: L.masked_scatter(a, m, s), (3, 4), mask[0], (12,))    # mask broadcast over rows


@pytest.mark.parametrize("src,dst,shape", [("float32", "int32", (2, 3)), ("float32", "int16", (2, 3)),
                                           ("float32", "float64", (3, 4)), ("int64", "float64", (5,)),
                                           ("float16", "bfloat16", (4,)), ("uint8", "bool", (3,))])
def test_view_dtype_reinterprets_the_bytes(src, dst, shape):
    data = np.random.default_rng(0).uniform(0, 2, shape)
    if src == "uint8":
        data = np.array([0, 1, 1])
    t = torch.tensor(data).to(getattr(torch, src))
    e = ember.tensor(t.to(torch.float64).numpy()).to(getattr(ember, src))
    ev, tv = e.view(getattr(ember, dst)), t.view(getattr(torch, dst))
    assert ev.shape == tuple(tv.shape) and ev.dtype.name == dst and not ev.requires_grad
    assert ev.detach().cpu()._data.tobytes() == tv.numpy().tobytes() if dst != "bfloat16" else \
        ev.to(ember.float32).tolist() == tv.float().tolist()
    e.zero_()                                  # a view: it sees the write, as torch's does
    assert not ev.to(ember.float64).numpy().any() and ev._version == e._version


def test_view_dtype_errors():
    with pytest.raises(RuntimeError, match=r"view: cannot view \(3,\) float32 cpu as float64"):
        ember.ones(3).view(ember.float64)
    with pytest.raises(RuntimeError, match="view: cannot view"):
        ember.ones(4, 2).t().view(ember.float16)      # last dim not contiguous


SHAPE_MISUSE = {   # the same misuse raises torch's exception type
    "t_3d": lambda L: L.ones(2, 2, 2).t(),
    "expand_fewer_sizes": lambda L: L.ones(2, 3).expand(3),
    "cat_empty": lambda L: L.cat([]),
    "cat_0d": lambda L: L.cat([L.tensor(1.0), L.tensor(2.0)]),
    "stack_empty": lambda L: L.stack([]),
    "chunk_zero": lambda L: L.ones(4).chunk(0),
    "repeat_fewer_dims": lambda L: L.ones(2, 3).repeat(2),
    "index_select_2d_index": lambda L: L.ones(3).index_select(0, L.zeros(1, 1, dtype=L.int64)),
    "gather_float_index": lambda L: L.ones(3).gather(0, L.zeros(2)),
    "masked_fill_1d_value": lambda L: L.ones(3).masked_fill(L.ones(3, dtype=L.bool), L.ones(2)),
    "masked_fill_bad_mask": lambda L: L.ones(3).masked_fill(L.ones(4, dtype=L.bool), 0.0),
}


@pytest.mark.parametrize("name", list(SHAPE_MISUSE))
def test_shape_misuse_raises_like_torch(name):
    with pytest.raises(Exception) as theirs:
        SHAPE_MISUSE[name](torch)
    with pytest.raises(Exception) as ours:
        SHAPE_MISUSE[name](ember)
    assert isinstance(ours.value, type(theirs.value)), (type(ours.value), type(theirs.value))


def test_shape_edge_cases_like_torch():
    check_op(lambda L, a: a.flatten(), ())                        # a 0-d tensor flattens to (1,)
    check_op(lambda L, a: L.sort(a), ())
    check_op(lambda L, a: L.sort(a, descending=True), np.array([True, False, True]))
    check_op(lambda L, a: a.split([1, 3], dim=1), (2, 4))
    check_op(lambda L, a: L.tensor_split(a, [1, 3]), (5, 2))
    check_op(lambda L, a: a.repeat_interleave(2), (2, 3))         # no dim: flattened first
    check_op(lambda L, a, i: a[[0, 2], i], (3, 4), np.array([1, 3]))
    check_op(lambda L, s, v: L.searchsorted(s, v), np.sort(np.random.default_rng(1).uniform(size=(2, 5))),
             np.random.default_rng(2).uniform(size=(2, 3)), grad=False)


# ------------------------------------------------------------------ mutation-testing additions (issue 17)
# Each function below kills survivors of the mutation run of ember/ops/shape.py (docs/testing.md).
def _dim_error(op, d, ndim):
    n = max(ndim, 1)
    return (f"{op}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d}); "
            f"the tensor has {ndim} dims")


def test_view_of_a_non_contiguous_tensor_where_torch_allows_it():
    check_op(lambda L, a: a[:, :4].view(3, 2, 2), (3, 6))          # splitting a dim of a column slice
    check_op(lambda L, a: a.t().view(4, 3), (3, 4))                # the same shape: always a view
    x = ember.zeros(3, 6)
    v = x[:, :4].view(3, 2, 2)
    assert np.shares_memory(v.numpy(), x.numpy())
    raises_exactly(lambda: ember.zeros(2, 3).t().view(6), RuntimeError,
                   "view: view size is not compatible with input tensor's size and stride (shape (3, 2), "
                   "non-contiguous); use .reshape(...) instead")
    # a contiguous tensor with a wrong size gets reshape's message, not view's
    raises_exactly(lambda: ember.zeros(2, 3).view(4, 2), RuntimeError,
                   "reshape: shape [4, 2] is invalid for input of size 6 (shape (2, 3))")


def test_view_dtype_of_1d_and_0d():
    check_op(lambda L, a: a.view(L.float16), np.ones(4, dtype=np.float32), grad=False, check_dtype=False)
    check_op(lambda L, a: a.view(L.int16), np.arange(3, dtype=np.int32), grad=False)
    raises_exactly(lambda: ember.tensor(1.0).view(ember.float16), RuntimeError,
                   "view: cannot view () float32 cpu as float16: with a different element size the last "
                   "dimension must be contiguous and hold a whole number of float16s")


def test_chunk_default_dim_one_chunk_and_empty_dims():
    check_op(lambda L, a: a.chunk(2), (4, 3))
    check_op(lambda L, a: L.chunk(a, 1, 1), (4, 3))
    check_op(lambda L, a: a.chunk(3), (1, 4))                      # a dim of size 1: one piece
    check_op(lambda L, a: a.chunk(2), (0, 3))                      # empty dim: `chunks` empty pieces
    check_op(lambda L, a: a.chunk(3, 1), (2, 0))
    raises_exactly(lambda: ember.ones(4).chunk(0), RuntimeError, "chunk: chunks must be greater than 0, got 0")
    raises_exactly(lambda: ember.ones(4).chunk(2, 1), IndexError, _dim_error("chunk", 1, 1))


def test_unflatten_infers_minus_one_and_errors():
    check_op(lambda L, a: a.unflatten(1, (-1, 2)), (2, 6))
    check_op(lambda L, a: L.unflatten(a, -1, (3, -1)), (2, 6))
    check_op(lambda L, a: a.unflatten(0, (2, -1, 1)), (4, 3))
    raises_exactly(lambda: ember.zeros(2, 6).unflatten(1, (4, 2)), RuntimeError,
                   "unflatten: provided sizes [4, 2] don't multiply up to the size of dim 1 (6) in the input "
                   "tensor of shape (2, 6)")
    raises_exactly(lambda: ember.zeros(2, 6).unflatten(1, (4, -1)), RuntimeError,
                   "unflatten: provided sizes [4, -1] don't multiply up to the size of dim 1 (6) in the input "
                   "tensor of shape (2, 6)")
    raises_exactly(lambda: ember.zeros(2, 6).unflatten(2, (3, 2)), IndexError, _dim_error("unflatten", 2, 2))
    # 0 elements and a -1: ambiguous, torch refuses (a RuntimeError); ours comes from reshape
    with pytest.raises(RuntimeError):
        torch.zeros(2, 0).unflatten(1, (0, -1))
    raises_exactly(lambda: ember.zeros(2, 0).unflatten(1, (0, -1)), RuntimeError,
                   "reshape: shape [2, 0, -1] is invalid for input of size 0 (shape (2, 0))")


def test_topk_k_range_0d_1d_and_errors():
    check_op(lambda L, a: a.topk(0), (3, 4))                       # k = 0: empty results
    check_op(lambda L, a: a.topk(4), (3, 4))                       # k = the dim's size
    check_op(lambda L, a: a.topk(2), (5,))                         # 1-D
    check_op(lambda L, a: L.topk(a, 1, dim=0, largest=False), (5,))
    check_op(lambda L, a: a.topk(1), ())                           # 0-d: the element itself
    check_op(lambda L, a: a.topk(1), np.array(7, dtype=np.int64), grad=False)
    check_op(lambda L, a: a.topk(2, 0), np.array([3, 9, 1], dtype=np.int32), grad=False)
    raises_exactly(lambda: ember.tensor(1.0).topk(2), RuntimeError,
                   "topk: selected index k=2 out of range for dimension 0 of size 1")
    raises_exactly(lambda: ember.ones(3, 4).topk(5), RuntimeError,
                   "topk: selected index k=5 out of range for dimension 1 of size 4")
    raises_exactly(lambda: ember.ones(3, 4).topk(-1), RuntimeError,
                   "topk: selected index k=-1 out of range for dimension 1 of size 4")
    raises_exactly(lambda: ember.ones(3, dtype=ember.bool).topk(1), RuntimeError,
                   "topk: does not support bool inputs (as torch on CPU); convert with .int() first")
    raises_exactly(lambda: ember.ones(3).topk(1, 1), IndexError, _dim_error("topk", 1, 1))


def test_repeat_interleave_with_a_tensor_of_repeats():
    r = np.array([2, 0, 3], dtype=np.int64)
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=0), (3, 2), r)
    check_op(lambda L, a, r: L.repeat_interleave(a, r, dim=1), (2, 3), r)
    check_op(lambda L, a, r: a.repeat_interleave(r), (3,), r)      # no dim: flattened
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=0), (1, 2), np.array([4], dtype=np.int64))
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=0), (0, 2), np.zeros(0, dtype=np.int64))
    check_op(lambda L, a: a.repeat_interleave(3, dim=-1), (2, 2))
    raises_exactly(lambda: ember.ones(3).repeat_interleave(2, dim=1), IndexError,
                   _dim_error("repeat_interleave", 1, 1))


def test_repeat_interleave_forms_as_torch():
    check_op(lambda L, a, r: a.repeat_interleave(r), (3,), np.array([2], dtype=np.int64))   # one count for all
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=1), (2, 3), np.array(2, dtype=np.int64))
    check_op(lambda L, r: L.repeat_interleave(r), np.array([2, 0, 1], dtype=np.int64))      # counts alone
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=0, output_size=5), (3, 2), np.array([2, 0, 3]))
    check_op(lambda L, a: L.repeat_interleave(a, 2, output_size=6), (3,))
    for L in (torch, ember):
        x = L.tensor([1, 2, 3])
        with pytest.raises(RuntimeError, match="repeats can not be negative"):
            x.repeat_interleave(L.tensor([2, 1, -1]))
        with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
            x.repeat_interleave(-1)
        with pytest.raises(RuntimeError, match="allocated size does not match required size"):
            x.repeat_interleave(L.tensor([2, 1, 1]), output_size=5)
        with pytest.raises(RuntimeError, match="repeat_interleave only accept 1D vector as repeat"):
            L.repeat_interleave(L.tensor([[2, 1]]))
        with pytest.raises(NotImplementedError):
            x.repeat_interleave(L.tensor([2.0, 1.0, 1.0]))


def test_repeat_interleave_on_a_device(fake_cuda):
    r = np.array([2, 0, 3], dtype=np.int64)
    check_op(lambda L, a: a.repeat_interleave(2, dim=0), (3, 2), device="cuda")
    check_op(lambda L, a, r: a.repeat_interleave(r, dim=0), (3, 2), r, device="cuda")
    x, reps = ember.ones(3, device="cuda"), ember.tensor([1, 2, 3])
    raises_exactly(lambda: x.repeat_interleave(reps), RuntimeError,
                   "repeat_interleave: expected all tensors to be on the same device, but found at least two "
                   f"devices, {x.device} and cpu (input (3,) float32 {x.device}, repeats (3,) int64 cpu)")


# Each op names itself in torch's "Dimension out of range" IndexError (the dim checked first).
DIM_ERRORS = {
    "take_along_dim": (lambda L, x: L.take_along_dim(x, L.zeros(2, 3, dtype=L.int64), 2), 2, 2),
    "kthvalue": (lambda L, x: x.kthvalue(1, 2), 2, 2),
    "gather": (lambda L, x: x.gather(-3, L.zeros(2, 3, dtype=L.int64)), -3, 2),
    "scatter": (lambda L, x: x.scatter(2, L.zeros(2, 3, dtype=L.int64), x), 2, 2),
    "scatter_add": (lambda L, x: x.scatter_add(2, L.zeros(2, 3, dtype=L.int64), x), 2, 2),
    "roll": (lambda L, x: x.roll(1, 2), 2, 2),
    "unbind": (lambda L, x: x.unbind(2), 2, 2),
    "unique": (lambda L, x: L.unique(x, dim=3), 3, 2),
    "argsort": (lambda L, x: x.argsort(2), 2, 2),
    "sort": (lambda L, x: x.sort(2), 2, 2),
    "narrow": (lambda L, x: x.narrow(2, 0, 1), 2, 2),
    "tensor_split": (lambda L, x: x.tensor_split(2, 2), 2, 2),
    "cat": (lambda L, x: L.cat([x, x], 2), 2, 2),
    "stack": (lambda L, x: L.stack([x, x], 3), 3, 3),
    "index_add": (lambda L, x: x.index_add(2, L.tensor([0]), x[:, :1]), 2, 2),
    "index_fill": (lambda L, x: x.index_fill(2, L.tensor([0]), 1.0), 2, 2),
    "index_select": (lambda L, x: x.index_select(2, L.tensor([0])), 2, 2),
    "split": (lambda L, x: x.split(1, 2), 2, 2),
    "flatten": (lambda L, x: x.flatten(2), 2, 2),
    "unsqueeze": (lambda L, x: x.unsqueeze(3), 3, 3),
    "movedim": (lambda L, x: x.movedim(2, 0), 2, 2),
    "diagonal": (lambda L, x: x.diagonal(0, 0, 2), 2, 2),
    "flip": (lambda L, x: x.flip(2), 2, 2),
    "squeeze": (lambda L, x: x.squeeze(-3), -3, 2),
    "transpose": (lambda L, x: x.transpose(0, 2), 2, 2),
    "permute": (lambda L, x: x.permute(0, 2), 2, 2),
}


@pytest.mark.parametrize("op", list(DIM_ERRORS))
def test_a_dim_out_of_range_names_the_op(op):
    fn, d, ndim = DIM_ERRORS[op]
    with pytest.raises(IndexError):
        fn(torch, torch.ones(2, 3))
    raises_exactly(lambda: fn(ember, ember.ones(2, 3)), IndexError, _dim_error(op, d, ndim))


def _desc(t):
    return f"{tuple(t.shape)} {t.dtype.name} {t.device}"


def _two_devices(op, first, name, other, first_name="input"):
    return (f"{op}: expected all tensors to be on the same device, but found at least two devices, {first.device} "
            f"and {other.device} ({first_name} {_desc(first)}, {name} {_desc(other)})")


# (call, the tensor checked against, its name in the message); x is on the fake CUDA device, c on the CPU
DEVICE_ERRORS = {
    "take": lambda x, c, i, m: (lambda: ember.take(x, i), i, "index"),
    "take_along_dim": lambda x, c, i, m: (lambda: ember.take_along_dim(x, i.reshape(1, 2), 1), i.reshape(1, 2),
                                          "indices"),
    "masked_scatter": lambda x, c, i, m: (lambda: ember.masked_scatter(x, m, x), m, "mask"),
    "masked_scatter_source": lambda x, c, i, m: (lambda: ember.masked_scatter(x, m.to("cuda"), c), c, "source"),
    "masked_fill": lambda x, c, i, m: (lambda: ember.masked_fill(x, m, 1.0), m, "mask"),
    "masked_select": lambda x, c, i, m: (lambda: ember.masked_select(x, m), m, "mask"),
    "bucketize": lambda x, c, i, m: (lambda: ember.bucketize(x, c[0]), c[0], "boundaries"),
    "index_add": lambda x, c, i, m: (lambda: ember.index_add(x, 0, i, x[:2]), i, "index"),
    "index_add_source": lambda x, c, i, m: (lambda: ember.index_add(x, 0, i.to("cuda"), c[:2]), c[:2], "source"),
    "index_fill": lambda x, c, i, m: (lambda: ember.index_fill(x, 0, i, 1.0), i, "index"),
    "index_select": lambda x, c, i, m: (lambda: ember.index_select(x, 0, i), i, "index"),
    "gather": lambda x, c, i, m: (lambda: ember.gather(x, 0, i.reshape(1, 2)), i.reshape(1, 2), "index"),
    "scatter": lambda x, c, i, m: (lambda: ember.scatter(x, 0, i.reshape(1, 2), x), i.reshape(1, 2), "index"),
    "scatter_add": lambda x, c, i, m: (lambda: ember.scatter_add(x, 0, i.reshape(1, 2), x), i.reshape(1, 2),
                                       "index"),
}


@pytest.mark.parametrize("case", list(DEVICE_ERRORS))
def test_index_and_mask_tensors_on_another_device_are_refused(case, fake_cuda):
    x, c = ember.ones(3, 2, device="cuda"), ember.ones(3, 2)
    i, m = ember.tensor([0, 1]), ember.ones(3, 2, dtype=ember.bool)
    call, other, name = DEVICE_ERRORS[case](x, c, i, m)
    op = case.replace("_source", "")
    raises_exactly(call, RuntimeError, _two_devices(op, x, name, other))


def test_searchsorted_names_the_sorted_sequence_on_another_device(fake_cuda):
    s, v = ember.tensor([1.0, 2.0], device="cuda"), ember.tensor([1.5])
    raises_exactly(lambda: ember.searchsorted(s, v), RuntimeError,
                   _two_devices("searchsorted", s, "values", v, "sorted_sequence"))


def test_index_ops_on_a_device_match_torch(fake_cuda):
    i = np.array([0, 2], dtype=np.int64)
    check_op(lambda L, a, i: L.take(a, i), (3, 2), i, device="cuda")
    check_op(lambda L, a, i: L.take_along_dim(a, i, 1), (2, 4), np.array([[0, 3]]), device="cuda")
    check_op(lambda L, a: L.diag(a, 1), (3,), device="cuda")
    check_op(lambda L, a: L.diag(a, -2), (3,), device="cuda")
    check_op(lambda L, a, m: a.masked_fill(m, 2.0), (3, 2), np.array([[True, False]] * 3), device="cuda")
    check_op(lambda L, a, i: a.index_add(0, i, a[:2]), (3, 2), i, device="cuda")
    check_op(lambda L, a, i: a.gather(0, i), (3, 2), np.array([[2, 0]]), device="cuda")


def test_take_along_dim_broadcasts_input_and_indices():
    check_op(lambda L, a, i: L.take_along_dim(a, i, 1), (2, 4), np.array([[3, 0]]))       # indices (1, 2)
    check_op(lambda L, a, i: L.take_along_dim(a, i, 1), (1, 4), np.array([[3, 0]] * 3))   # input (1, 4)
    check_op(lambda L, a, i: a.take_along_dim(i, dim=-1), (3, 1, 4), np.zeros((1, 2, 3), dtype=np.int64))
    check_op(lambda L, a, i: a.take_along_dim(i, 0), (2, 3), np.array([[1], [0]]))


def test_gather_index_smaller_or_larger_than_input():
    check_op(lambda L, a, i: a.gather(1, i), (3, 4), np.array([[0, 3, 1], [2, 2, 0]]))   # (2, 3) in (3, 4)
    check_op(lambda L, a, i: a.gather(0, i), (3, 4), np.array([[0, 2], [1, 1]]))         # (2, 2) in (3, 4)
    check_op(lambda L, a, i: a.gather(1, i), (2, 3), np.array([[0, 1, 2, 2, 1]] * 2))    # longer along dim
    check_op(lambda L, a, i: a.gather(1, i), (2, 3), np.array([[0], [2]], dtype=np.int32), check_dtype=False)


def test_gather_errors_like_torch():
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match="no larger than"):
        torch.ones(2, 3).gather(1, torch.zeros(3, 3, dtype=torch.int64))
    raises_exactly(lambda: x.gather(1, ember.zeros(3, 3, dtype=ember.int64)), RuntimeError,
                   "gather: size does not match: index (3, 3) must be no larger than input (2, 3) apart from "
                   "dimension 1")
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.ones(2, 3).gather(1, torch.tensor([[5, 0], [0, 0]]))
    raises_exactly(lambda: x.gather(1, ember.tensor([[5, 0], [0, 0]])), RuntimeError,
                   "gather: index 5 is out of bounds for dimension 1 with size 3; input (2, 3), index (2, 2)")
    raises_exactly(lambda: x.gather(1, ember.tensor([[0, 3]])), RuntimeError,   # the user's shapes, not a slice's
                   "gather: index 3 is out of bounds for dimension 1 with size 3; input (2, 3), index (1, 2)")
    with pytest.raises(TypeError):
        torch.ones(2, 3).gather(1, [[0]])
    with pytest.raises(TypeError) as e:
        x.gather(1, [[0]])
    assert str(e.value) == "gather: index must be a Tensor, got list"
    raises_exactly(lambda: x.gather(1, ember.zeros(2, 2)), RuntimeError,
                   "gather: expected index to be an integer tensor, got float32")
    raises_exactly(lambda: ember.scatter(x, 1, ember.zeros(2, 2), x), RuntimeError,
                   "scatter: expected index to be an integer tensor, got float32")
    raises_exactly(lambda: x.gather(1, ember.zeros(3, dtype=ember.int64)), RuntimeError,
                   "gather: index (3,) and input (2, 3) must have the same number of dimensions")


def _TAKE_ALONG(L, x, i):
    return x.take_along_dim(i * 2)   # flattened: -2 and 6 are out of range


@pytest.mark.parametrize("bad", [-1, 3], ids=["negative", "past_the_end"])
@pytest.mark.parametrize("call", [
    lambda L, x, i: x.gather(1, i),
    _TAKE_ALONG,
    lambda L, x, i: x.scatter(1, i, 1.0),
    lambda L, x, i: x.clone().scatter_(1, i, x),
    lambda L, x, i: x.scatter_add(1, i, x),
    lambda L, x, i: x.clone().scatter_add_(1, i, x),
    lambda L, x, i: x.index_add(0, i[0] % 4 - 1, x),
    lambda L, x, i: x.clone().index_add_(1, i[0], x[:, :2]),
    lambda L, x, i: x[0].index_add(0, i[0], x[1, :2]),
], ids=["gather", "take_along_dim", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add",
        "index_add_", "index_add_1d"])
def test_gather_scatter_index_add_refuse_an_index_out_of_range_as_torch(call, bad):
    # NumPy wraps a negative index (a DDPM's `schedule.gather(-1, t)` with t = -1 read the last entry)
    idx = np.array([[0, bad], [1, 2]])
    errors = []
    for L in (torch, ember):
        x = L.arange(6.0).reshape(2, 3)
        with pytest.raises((RuntimeError, IndexError)) as e:
            call(L, x, L.tensor(idx))
        errors.append(e.type)
        if L is ember:
            assert "out of" in str(e.value) and str(e.value).split(":")[0] in {
                "gather", "scatter", "scatter_add", "index_add"}
    assert errors[0] is errors[1]


def test_take_along_dim_with_a_dim_counts_a_negative_index_from_the_end():
    # as numpy.take_along_axis and torch 2.13 (which takes any index modulo the size there: 3 reads 0;
    # Ember raises past the end)
    check_op(lambda L, a, i: a.take_along_dim(i, 1), (2, 3), np.array([[0, -1], [-3, 2]]))
    check_op(lambda L, a, i: a.take_along_dim(i, dim=0), (2, 3), np.array([[-1, 0, -2]]))
    with pytest.raises(RuntimeError, match="take_along_dim|gather: index 3 is out of bounds"):
        ember.ones(2, 3).take_along_dim(ember.tensor([[3]]), 1)


def test_gather_and_scatter_take_int32_indices():
    x = ember.arange(6.0).reshape(2, 3)
    i64 = ember.tensor([[2, 0], [1, 1]])
    assert x.gather(1, i64.int()).tolist() == x.gather(1, i64).tolist() == [[2.0, 0.0], [4.0, 4.0]]
    assert ember.zeros(2, 3).scatter(1, i64.int(), x).tolist() == ember.zeros(2, 3).scatter(1, i64, x).tolist()


def test_scatter_with_a_value_and_its_errors():
    check_op(lambda L, a, i: a.scatter(0, i, value=2.5), (4, 3), IDX, grad=False)
    check_op(lambda L, a, i: L.scatter(a, 1, i, value=-1.0), (2, 4), np.array([[0, 3], [1, 1]]), grad=False)
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).scatter(0, torch.zeros(3, 3, dtype=torch.int64), torch.ones(2, 3))
    raises_exactly(lambda: x.scatter(0, ember.zeros(3, 3, dtype=ember.int64), ember.ones(2, 3)), RuntimeError,
                   "scatter: index (3, 3) is larger than src (2, 3)")
    raises_exactly(lambda: x.scatter_add(0, ember.zeros(3, 3, dtype=ember.int64), ember.ones(2, 3)),
                   RuntimeError, "scatter_add: index (3, 3) is larger than src (2, 3)")
    raises_exactly(lambda: x.scatter(0, ember.zeros(1, 3, dtype=ember.int64), "a"), TypeError,
                   "scatter: expected a Tensor or a number as operand, got str")


def test_masked_fill_values_and_errors_like_torch():
    m = np.array([True, False, True])
    check_op(lambda L, a, m: a.masked_fill(m, -1), np.array([1, 2, 3], dtype=np.uint8), m, grad=False)  # wraps
    check_op(lambda L, a, m: a.masked_fill(m, L.tensor(1.5)), np.array([1, 2, 3], dtype=np.int64), m, grad=False)
    check_op(lambda L, a, m: a.masked_fill(m, 2.0), (3,), np.array([[True, False, True], [False] * 3]))  # (2, 3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 2.0)
    raises_exactly(lambda: ember.ones(3).masked_fill_(ember.ones(2, 3, dtype=ember.bool), 2.0), RuntimeError,
                   "masked_fill_: output with shape (3,) doesn't match the broadcast shape (2, 3)", located=False)
    x, mask = ember.ones(3, dtype=ember.int8), ember.ones(3, dtype=ember.bool)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(3, dtype=torch.int8).masked_fill(torch.ones(3, dtype=torch.bool), 300)
    raises_exactly(lambda: x.masked_fill(mask, 300), RuntimeError,
                   "masked_fill: value 300 cannot be converted to type int8 without overflow")
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        torch.ones(3).masked_fill(torch.ones(3, dtype=torch.bool), torch.ones(2))
    raises_exactly(lambda: ember.ones(3).masked_fill(mask, ember.ones(2)), RuntimeError,
                   "masked_fill: only supports a 0-dimensional value tensor, got shape (2,)")


def test_kthvalue_keepdim_and_dims():
    check_op(lambda L, a: a.kthvalue(2, 0), (3, 4))
    check_op(lambda L, a: a.kthvalue(3, 0, keepdim=True), (3, 4))
    check_op(lambda L, a: L.kthvalue(a, 1, -1, True), (3, 4))
    check_op(lambda L, a: a.kthvalue(2, 1, keepdim=True), (2, 3, 4))


def test_diag_of_a_vector_with_offsets():
    for k in (1, 2, -1, -3):
        check_op(lambda L, a: L.diag(a, k), (3,))
    check_op(lambda L, a: a.diag(-1), np.array([1, 2], dtype=np.int64), grad=False)


def test_narrow_negative_start_and_errors_like_torch():
    check_op(lambda L, a: a.narrow(1, -2, 1), (2, 4))
    check_op(lambda L, a: a.narrow(1, -4, 4), (2, 4))
    check_op(lambda L, a: a.narrow(1, 4, 0), (2, 4))
    check_op(lambda L, a: L.narrow(a, 0, -1, 1), (2, 4))
    out_of_range = "start out of range (expected to be in range of [-4, 4], but got "
    for args, exc, msg in [((1, 5, 0), IndexError, out_of_range + "5)"),
                           ((1, -5, 1), IndexError, out_of_range + "-5)"),
                           ((1, 2, 3), RuntimeError, "start (2) + length (3) exceeds dimension size (4)"),
                           ((1, -4, 5), RuntimeError, "start (0) + length (5) exceeds dimension size (4)"),
                           ((1, 1, -1), RuntimeError, "length must be non-negative")]:
        with pytest.raises(exc):
            torch.ones(2, 4).narrow(*args)
        raises_exactly(lambda: ember.ones(2, 4).narrow(*args), exc, "narrow: " + msg)


def test_cat_stack_hstack_vstack_corners():
    check_op(lambda L, a, b: L.cat([a, b]), np.zeros(0, dtype=np.float64), (2, 3), check_dtype=True)  # legacy empty
    check_op(lambda L, a, b: L.cat([a, b]), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32),
             grad=False)
    check_op(lambda L, a, b: L.cat([a, b]), np.zeros(0, dtype=np.int64), np.ones((2, 3), dtype=np.int32),
             grad=False)
    check_op(lambda L, a, b: L.stack([a, b]), (2, 3), (2, 3))                       # default dim 0
    check_op(lambda L, a: L.stack([a]), (2, 3))
    check_op(lambda L, a, b: L.stack([a, b], -1), (2, 3), (2, 3))
    check_op(lambda L, a: L.hstack([a]), (3,))
    check_op(lambda L, a, b: L.hstack([a, b]), (3,), (2,))
    check_op(lambda L, a, b: L.vstack([a, b]), (2, 3), (1, 3))
    check_op(lambda L, a, b: L.vstack([a, b]), (3,), (2, 3))


def test_cat_and_stack_errors():
    with pytest.raises(ValueError):
        torch.cat([])
    raises_exactly(lambda: ember.cat([]), ValueError, "cat: expected a non-empty list of Tensors")
    with pytest.raises(RuntimeError):
        torch.stack([])
    raises_exactly(lambda: ember.stack([]), RuntimeError, "stack: expected a non-empty list of Tensors")
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        torch.cat([torch.tensor(1.0), torch.tensor(2.0)])
    raises_exactly(lambda: ember.cat([ember.tensor(1.0), ember.tensor(2.0)]), RuntimeError,
                   "cat: zero-dimensional tensor cannot be concatenated")
    raises_exactly(lambda: ember.stack([ember.ones(2, 3), ember.ones(3, 3)]), RuntimeError,
                   "stack: expects each tensor to be equal size, but got (2, 3) at entry 0 and (3, 3) at entry 1")


def test_cat_of_tensors_on_two_devices(fake_cuda):
    raises_exactly(lambda: ember.cat([ember.ones(2, device="cuda"), ember.ones(2)]), RuntimeError,
                   "cat: expected all tensors to be on the same device, but found at least two devices, cuda:0 "
                   "and cpu")


def test_t_repeat_and_vstack_messages():
    with pytest.raises(RuntimeError):
        torch.ones(2, 2, 2).t()
    raises_exactly(lambda: ember.ones(2, 2, 2).t(), RuntimeError,
                   "t: expects a tensor with <= 2 dimensions, but self is 3D")
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).repeat(2)
    raises_exactly(lambda: ember.ones(2, 3).repeat(2), RuntimeError,
                   "repeat: number of dimensions of repeat dims (1) can not be smaller than number of dimensions "
                   "of tensor (2)")


def test_setitem_keys_without_a_graph_like_torch():
    keys = [lambda L: 1, lambda L: slice(0, 2), lambda L: (None, 1), lambda L: (Ellipsis, 2),
            lambda L: ([0, 2],), lambda L: (np.array([1, 0]), 1), lambda L: [True, False, True],
            lambda L: (L.tensor([2, 0]),), lambda L: (L.tensor([True, False, False]), slice(1, 3)),
            lambda L: (slice(None), [0, 3])]
    for key in keys:
        t, e = torch.arange(12.0).reshape(3, 4), ember.arange(12.0).reshape(3, 4)
        t[key(torch)] = -1.0
        e[key(ember)] = -1.0
        assert e.tolist() == t.tolist(), key(torch)
    t, e = torch.zeros(1), ember.zeros(1)
    t[[True]] = 5.0
    e[[True]] = 5.0
    assert e.tolist() == t.tolist() == [5.0]
    e = ember.ones(3)
    e[[]] = 2.0
    assert e.tolist() == [1.0, 1.0, 1.0]


def test_setitem_key_errors_without_a_graph():
    x = ember.zeros(3)
    with pytest.raises(IndexError):
        torch.zeros(3)[torch.tensor([0.0])] = 1.0
    raises_exactly(lambda: x.__setitem__(ember.tensor([0.0]), 1.0), IndexError,
                   "index: tensors used as indices must be long, int, byte or bool tensors, got float32")
    raises_exactly(lambda: x.__setitem__([0.5], 1.0), IndexError,   # torch truncates; NumPy and Ember refuse
                   "index: lists used as indices must hold integers or bools")
    with pytest.raises(IndexError):
        torch.zeros(3)[5] = 1.0
    raises_exactly(lambda: x.__setitem__(5, 1.0), IndexError,
                   "setitem: index 5 is out of bounds for axis 0 with size 3; tensor shape (3,)")


def test_setitem_without_a_graph_on_a_device(fake_cuda):
    x = ember.zeros(4, device="cuda")
    x[ember.tensor([0, 2])] = 1.0                       # CPU indices join x's device
    x[ember.tensor([3], device="cuda")] = 2.0
    x[[1]] = 3.0
    assert x.device.type == "cuda" and x.tolist() == [1.0, 3.0, 1.0, 2.0]
    y = ember.zeros(2, 2, device="cuda")
    y[0] = [4.0, 5.0]
    y[1, np.array([1])] = ember.tensor([6.0])
    assert y.tolist() == [[4.0, 5.0], [0.0, 6.0]]
    raises_exactly(lambda: ember.zeros(2).__setitem__(ember.tensor([0], device="cuda"), 1.0), RuntimeError,
                   "index: indices on cuda:0 for a tensor on cpu")


def test_setitem_records_a_value_that_requires_grad():
    for L in (torch, ember):
        v = L.tensor(3.0, requires_grad=True)
        x = L.zeros(3)
        x[1] = v
        (x * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        assert v.grad.item() == 2.0 and x.requires_grad
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        torch.ones(3, requires_grad=True)[0] = 1.0
    raises_exactly(lambda: w.__setitem__(0, 1.0), RuntimeError,
                   "setitem: a leaf Variable that requires grad is being used in an in-place operation; wrap it "
                   "in `with ember.no_grad():` or use the out-of-place op")


def test_setitem_without_a_graph_names_itself_to_a_stale_saved_tensor():
    x, w = ember.ones(3), ember.ones(3, requires_grad=True)
    y = (x * w).sum()
    x[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
        y.backward()
    assert "modified by an inplace operation (__setitem__): [float32 (3,)]" in str(e.value), str(e.value)


def test_view_of_a_non_contiguous_tensor_on_a_device(fake_cuda):
    check_op(lambda L, a: a[:, :4].view(3, 2, 2), (3, 6), device="cuda")
    x = ember.zeros(2, 3, device="cuda")
    raises_exactly(lambda: x.t().view(6), RuntimeError,
                   "view: view size is not compatible with input tensor's size and stride (shape (3, 2), "
                   "non-contiguous); use .reshape(...) instead")


def test_movedim_and_diagonal_dims_name_the_op():
    raises_exactly(lambda: ember.ones(2, 3).movedim(0, 2), IndexError, _dim_error("movedim", 2, 2))
    raises_exactly(lambda: ember.ones(2, 3).movedim((0, 1), (0,)), RuntimeError,
                   "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same "
                   "number of dims as destination ([0] dims)")
    with pytest.raises(IndexError):
        torch.ones(3).diagonal()
    raises_exactly(lambda: ember.ones(3).diagonal(), IndexError, _dim_error("diagonal", 1, 1))
    with pytest.raises(RuntimeError):
        torch.ones(3, 3).diagonal(0, 1, 1)
    raises_exactly(lambda: ember.ones(3, 3).diagonal(0, 1, -1), RuntimeError,
                   "diagonal: dim 1 appears multiple times in the list of dims (1, -1)")


def test_diagonal_offsets_beyond_the_matrix():
    for shape in [(3, 4), (4, 3), (2, 3, 4)]:
        for k in (2, -1, -2, 3, 5, -4):
            check_op(lambda L, a: a.diagonal(k, -2, -1), shape)
    check_op(lambda L, a: L.diagonal(a, 1, 2, 0), (2, 3, 4))
    check_op(lambda L, a: a.diagonal(-1), (3, 4), device="cpu")


def test_diagonal_on_a_device(fake_cuda):
    check_op(lambda L, a: a.diagonal(1), (3, 4), device="cuda")


def test_shape_op_messages_like_torch():
    cases = [
        (lambda L: L.ones(2, 3).flatten(1, 0), RuntimeError, "flatten: start_dim 1 cannot come after end_dim 0"),
        (lambda L: L.ones(2, 3).expand(3), RuntimeError,
         "expand: the number of sizes provided (1) must be greater or equal to the number of dimensions in the "
         "tensor (2)"),
        (lambda L: L.ones(3, 1).expand(2, 4, 1), RuntimeError,
         "expand: the expanded size 4 must match the existing size 3 at non-singleton dimension 1; target sizes "
         "[2, 4, 1], tensor shape (3, 1)"),
        (lambda L: L.ones(2, 3).permute(0), RuntimeError,
         "permute: dims [0] are not a permutation of the 2 dims of a tensor of shape (2, 3)"),
        (lambda L: L.ones(3).split(0), RuntimeError, "split: split_size must be positive, got 0"),
        (lambda L: L.ones(3).split(-1), RuntimeError, "split: split_size must be positive, got -1"),
        (lambda L: L.ones(2, 3).split([1, 1], 1), RuntimeError,
         "split: split_with_sizes expects split_sizes to sum exactly to 3 (dimension 1 of (2, 3)), but got [1, 1]"),
        (lambda L: L.ones(3).index_select(0, L.tensor([[0]])), IndexError,
         "index_select: index must be 1-D, got shape (1, 1)"),
        (lambda L: L.ones(3).index_select(0, L.tensor([3])), IndexError,
         "index_select: index out of range in self: indices [3] for dim 0 of size 3 (shape (3,))"),
        (lambda L: L.ones(3).index_select(0, L.tensor([-1])), IndexError,      # torch takes no negative index
         "index_select: index out of range in self: indices [-1] for dim 0 of size 3 (shape (3,))"),
        (lambda L: L.ones(3).index_put((L.tensor([5]),), L.tensor(1.0)), IndexError,
         "index_put: index 5 is out of bounds for axis 0 with size 3; tensor shape (3,), values shape ()"),
        (lambda L: L.ones(3).index_put((L.tensor([0, 1]),), L.ones(3)), RuntimeError,
         "index_put: shape mismatch: value array of shape (3,) could not be broadcast to indexing result of shape "
         "(2,); tensor shape (3,), values shape (3,)"),
        (lambda L: L.ones(3).index_put((L.tensor([0]),), "a"), TypeError,
         "index_put: expected a Tensor or a number as operand, got str"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc):
            fn(torch)
        raises_exactly(lambda: fn(ember), exc, msg)
    raises_exactly(lambda: ember.tensor(5.0).index_select(0, ember.tensor([1])), IndexError,
                   "index_select: index out of range in self: indices [1] for dim 0 of size 1 (shape ())")
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3)[0] = torch.ones(5)
    raises_exactly(lambda: x.__setitem__(0, ember.ones(5)), RuntimeError,
                   "setitem: could not broadcast input array from shape (5,) into shape (3,); tensor shape (2, 3)")


def test_split_default_dim_and_empty_dims():
    check_op(lambda L, a: a.split(1), (2, 3))
    check_op(lambda L, a: L.split(a, [1, 1]), (2, 3))
    check_op(lambda L, a: a.split(2), (0, 3))
    check_op(lambda L, a: a.split(2, 1), (3, 0))


def test_transpose_of_0d_and_1d_and_2d_dims():
    for a, b in [(0, -1), (-1, 0), (0, 0), (-1, -1)]:
        check_op(lambda L, x: x.transpose(a, b), ())
        check_op(lambda L, x: x.transpose(a, b), (3,))
    for a, b in [(0, -1), (-1, 0), (1, 0), (0, -2), (-2, 1)]:
        check_op(lambda L, x: L.transpose(x, a, b), (2, 3))
    with pytest.raises(IndexError):
        torch.ones(3).transpose(0, 1)
    raises_exactly(lambda: ember.ones(3).transpose(0, 1), IndexError, _dim_error("transpose", 1, 1))
    raises_exactly(lambda: ember.tensor(1.0).transpose(1, 0), IndexError, _dim_error("transpose", 1, 0))


def test_flip_and_sort_of_0d():
    check_op(lambda L, a: a.flip(0), ())
    check_op(lambda L, a: a.flip((-1,)), ())
    check_op(lambda L, a: a.sort(), np.array(3, dtype=np.int64), grad=False)
    check_op(lambda L, a: a.sort(0, descending=True), np.array(3, dtype=np.int32), grad=False)


def test_indexing_results_share_a_version_only_when_they_are_views():
    for L in (torch, ember):
        x = L.ones(3, 4)
        y = x[:, [0, 2]]            # advanced: a copy
        y[0, 0] = 5.0
        z = x[1:, ::2]              # basic: a view
        z[0, 0] = 7.0
        assert (x._version, y._version, z._version) == (1, 1, 1), L.__name__
        assert x[1, 0].item() == 7.0 and x[0, 0].item() == 1.0


def test_getitem_with_index_tensors_on_a_device(fake_cuda):
    check_op(lambda L, a: a[L.tensor([0, 2])], (3, 2), device="cuda")
    check_op(lambda L, a: a[L.tensor([2, 0], device=a.device), 1], (3, 2), device="cuda")
    check_op(lambda L, a: a[[1, 1], :1], (3, 2), device="cuda")
    raises_exactly(lambda: ember.ones(3)[ember.tensor([0], device="cuda")], RuntimeError,
                   "index: indices on cuda:0 for a tensor on cpu")


def test_getitem_key_errors():
    with pytest.raises(IndexError):
        torch.ones(3)[torch.tensor([0.0])]
    raises_exactly(lambda: ember.ones(3)[ember.tensor([0.0])], IndexError,
                   "index: tensors used as indices must be long, int, byte or bool tensors, got float32")
    raises_exactly(lambda: ember.ones(3)[[0.5]], IndexError, "index: lists used as indices must hold integers or bools")
    check_op(lambda L, a: a[[True, False, True]], (3, 2))
    check_op(lambda L, a: a[[]], (3, 2))


def test_reshape_refuses_two_inferred_dims_and_other_negative_sizes():
    for shape, msg in [((-1, -1), "reshape: shape [-1, -1] is invalid for input of size 6 (shape (6,))"),
                       ((-1, 2, -1), "reshape: shape [-1, 2, -1] is invalid for input of size 6 (shape (6,))"),
                       ((-2, -3), "reshape: invalid shape dimension -2 at index 0 of shape [-2, -3]"),
                       ((3, -2), "reshape: invalid shape dimension -2 at index 1 of shape [3, -2]"),
                       ((2, -1, -6), "reshape: invalid shape dimension -6 at index 2 of shape [2, -1, -6]")]:
        with pytest.raises(RuntimeError):
            torch.ones(6).reshape(shape)
        raises_exactly(lambda: ember.ones(6).reshape(shape), RuntimeError, msg)


def test_bucketize_default_is_left():
    check_op(lambda L, a, b: L.bucketize(b, a), np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.1, 3.0, 5.0]),
             grad=False)


def test_a_view_of_a_view_has_the_root_as_base():
    for L in (torch, ember):
        x = L.ones(3, 4)
        y = x[1:]
        z = y[0]
        w = z.view(2, 2)
        assert y._base is x and z._base is x and w._base is x, L.__name__


def test_flatten_end_dim_out_of_range_names_the_op():
    with pytest.raises(IndexError):
        torch.ones(2, 3).flatten(0, 2)
    raises_exactly(lambda: ember.ones(2, 3).flatten(0, 2), IndexError, _dim_error("flatten", 2, 2))


def test_gather_index_narrower_than_input_but_not_along_dim():
    check_op(lambda L, a, i: a.gather(1, i), (3, 4), np.array([[0, 3, 1, 1], [2, 2, 0, 3]]))   # (2, 4) in (3, 4)
    check_op(lambda L, a, i: a.gather(0, i), (3, 4), np.array([[0, 2], [1, 1], [2, 0], [1, 2]]))  # (4, 2)


def test_kthvalue_keeps_other_size_1_dims():
    check_op(lambda L, a: a.kthvalue(2, 1), (1, 4))
    check_op(lambda L, a: a.kthvalue(1, 0), (3, 1))


def test_contiguous_names_itself_when_out_of_memory():
    from ember import _memory
    x = ember.ones(20, 30).t()
    old = _memory.get_limit()
    _memory.set_limit(1000)
    try:
        with pytest.raises(ember.OutOfMemoryError, match=r"^contiguous: not enough memory: you tried to allocate "
                                                         r"2400 bytes"):
            x.contiguous()
    finally:
        _memory.set_limit(old)


@pytest.mark.parametrize("shape,offset,dims,transposed", [
    ((3, 3), 0, (0, 1), False), ((3, 4), 1, (0, 1), True), ((4, 3), -2, (0, 1), True), ((2, 3, 4), 0, (1, 2), True),
    ((2, 3, 4), 1, (1, 2), False), ((3, 4), 5, (0, 1), True), ((3, 4), -1, (1, 0), True), ((1, 4), 0, (0, 1), True)])
def test_diagonal_is_a_view_that_writes_go_through(shape, offset, dims, transposed):
    # torch: z.diagonal().fill_(1) sets z's diagonal (the orthogonal parametrization's code does this)
    a = np.random.default_rng(0).random(shape).astype(np.float32)
    E, T = ember.tensor(a), torch.tensor(a)
    if transposed:
        E, T = E.mT, T.mT
    e, t = E.diagonal(offset, *dims), T.diagonal(offset, *dims)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e.mul_(-2)
    t.mul_(-2)
    np.testing.assert_array_equal(E.numpy(), T.numpy())


def test_searchsorted_keywords_as_torch():
    seq, vals = np.array([1.0, 3.0, 5.0, 7.0]), np.array([0.0, 3.0, 6.0, 9.0])
    check_op(lambda L, s, v: L.searchsorted(s, v, side="right"), seq, vals, grad=False)
    check_op(lambda L, s, v: L.searchsorted(s, v, side="left", right=False), seq, vals, grad=False)
    check_op(lambda L, s, v: L.searchsorted(s, v, out_int32=True), seq, vals, grad=False)
    check_op(lambda L, s, v: L.bucketize(v, s, out_int32=True, right=True), seq, vals, grad=False)
    check_op(lambda L, s: L.searchsorted(s, 4.0), seq, grad=False)          # a number: a 0-d result
    check_op(lambda L, s: L.bucketize(3.0, s, right=True), seq, grad=False)
    unsorted = np.array([[5.0, 1.0, 3.0], [0.0, 2.0, 1.0]])
    order = np.array([[1, 2, 0], [0, 2, 1]])
    check_op(lambda L, s, o, v: L.searchsorted(s, v, sorter=o), unsorted, order, np.array([[2.0], [1.5]]),
             grad=False)
    check_op(lambda L, s, o, v: L.searchsorted(s, v, sorter=o, right=True), unsorted[0], order[0],
             np.array([1.0, 3.0, 6.0]), grad=False)


def test_searchsorted_bad_keywords_raise_as_torch():
    s, v = ember.tensor([1.0, 3.0]), ember.tensor([2.0])
    for L, (a, b) in ((torch, (torch.tensor([1.0, 3.0]), torch.tensor([2.0]))), (ember, (s, v))):
        with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
            L.searchsorted(a, b, side="left", right=True)
        with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got middle"):
            L.searchsorted(a, b, side="middle")
        with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
            L.searchsorted(a, b, sorter=L.tensor([0]))
        with pytest.raises(RuntimeError, match="input value can be a scalar only when boundaries tensor dimension is 1"):
            L.searchsorted(a[None], 2.0)
