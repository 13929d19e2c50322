"""ember/ops/primitives.py: the primitives' rules that the op-level suites do not reach, mostly against torch
(mutation testing found them: docs/testing.md, "ops: the survivors"). Forward values in float16/bfloat16,
gradients of the sum_to/broadcast rules, meta-device shape rules (with backward on meta), index-valued
primitives (argsort, unique, searchsorted, nonzero, argmax) on ties, 0-d inputs and extra axes."""
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember.ops import primitives as P
from helpers import check_op, NoGrad


def meta(*shape, dtype=None, grad=False):
    return ember.zeros(*shape, dtype=dtype or ember.float32, device="meta", requires_grad=grad)


# ------------------------------------------------------------------ forward values
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_sums_accumulate_in_float32_as_torch(dtype):
    # in a 2-byte float, 2048 + 1 (bfloat16: 256 + 1) rounds back down: only a wider accumulator keeps the ones
    big = 2048.0 if dtype == "float16" else 256.0
    t = torch.tensor([big, 1.0, 1.0], dtype=getattr(torch, dtype))
    e = ember.tensor([big, 1.0, 1.0]).to(getattr(ember, dtype))
    assert e.sum().item() == t.sum().item() == big + 2
    assert e.sum(0, keepdim=True).tolist() == t.sum(0, keepdim=True).tolist()
    assert e.sum().dtype.name == dtype


def test_erfinv_half_values_as_torch():
    x = np.array([0.5, -0.3, 0.0, 0.99, -0.999])
    for dt in ("float16", "bfloat16"):
        t = torch.erfinv(torch.tensor(x).to(getattr(torch, dt)))
        e = ember.erfinv(ember.tensor(x).to(getattr(ember, dt)))
        assert e.dtype.name == dt
        np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


def test_isclose_passes_atol_and_equal_nan():
    a = np.array([1.0, 2.0, np.nan, 0.0])
    b = np.array([1.05, 2.5, np.nan, 0.09])
    for kw in ({"atol": 0.1}, {"atol": 0.1, "equal_nan": True}, {"rtol": 0.0, "atol": 0.0, "equal_nan": True}):
        want = torch.isclose(torch.tensor(a), torch.tensor(b), **kw).tolist()
        assert ember.isclose(ember.tensor(a), ember.tensor(b), **kw).tolist() == want, kw


def test_integer_trunc_division_by_zero_raises_as_torch():
    a, b = np.array([7, -7, 2]), np.array([0, 2, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(torch.tensor(a), torch.tensor(b), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match=r"^div: ZeroDivisionError: integer division by zero \(divisor \(3,\) int64"):
        ember.div(ember.tensor(a), ember.tensor(b), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match="^div: ZeroDivisionError"):
        ember.tensor(a).div(0, rounding_mode="trunc")
    b = np.array([3, 2, -1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_op(lambda L, a, b: L.div(a, b, rounding_mode="trunc"), a, b, grad=False)
        check_op(lambda L, a: L.div(a, 2, rounding_mode="trunc"), a, grad=False)


def test_rounding_integers_keeps_their_dtype_as_torch():
    x = np.array([-3, 0, 2], dtype=np.int32)
    for name in ("floor", "ceil", "trunc", "round", "sign"):
        check_op(lambda L, a: getattr(L, name)(a), x, grad=False)
    check_op(lambda L, a: L.sign(a), np.array([True, False]), grad=False)


def test_all_any_of_uint8_give_uint8_as_torch():
    x = np.array([[0, 3], [1, 2]], dtype=np.uint8)
    check_op(lambda L, a: L.all(a), x, grad=False)
    check_op(lambda L, a: L.any(a, 1), x, grad=False)
    assert meta(2, dtype=ember.uint8).all().dtype == ember.uint8
    assert meta(2, dtype=ember.int32).any().dtype == ember.bool


def test_cat_of_one_tensor():
    check_op(lambda L, a: L.cat([a], 0), (2, 3))


def test_pad_values_and_gradient_as_torch():
    check_op(lambda L, a: L.nn.functional.pad(a, (1, 2, 0, 1)), (2, 3))
    check_op(lambda L, a: L.nn.functional.pad(a, (2, 0), value=2.5), (2, 3))


def test_pow_gradient_for_the_exponent_at_zero_base_as_torch():
    a = np.array([0.0, 0.0, 0.0, 2.0])
    b = np.array([0.0, 0.5, 1.0, 0.0])
    check_op(lambda L, a, b: L.pow(a, b), NoGrad(a), b)


def test_sum_to_a_shape_with_ones_against_more_leading_dims():
    # the gradient of a (1, 1) operand broadcast against (2, 3, 1): the size-1 dims are summed by position
    check_op(lambda L, a, b: a + b, (1, 1), (2, 3, 1))
    check_op(lambda L, a, b: a * b, (1, 4), (3, 2, 4))


# ------------------------------------------------------------------ index-valued primitives
def test_argmax_keepdim_without_dim_and_on_0d_as_torch():
    x = np.array([[1.0, 5.0, 2.0], [0.0, 5.0, 4.0]])
    for fn in (lambda L, a: L.argmax(a, keepdim=True), lambda L, a: L.argmin(a, keepdim=True),
               lambda L, a: a.argmax(dim=0, keepdim=True)):
        check_op(fn, x, grad=False)
    for dim in (0, -1):
        check_op(lambda L, a: L.argmax(a, dim=dim, keepdim=True), np.array(3.0), grad=False)
        check_op(lambda L, a: L.argmin(a, dim=dim), np.array(3.0), grad=False)


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.bool_, np.float64])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_is_stable_on_many_ties_as_torch(dtype, descending):
    # more than 16 ties: NumPy's default quicksort would reorder them
    x = np.random.default_rng(0).integers(0, 3, size=(3, 50)).astype(dtype)
    want = torch.argsort(torch.from_numpy(x), dim=-1, descending=descending, stable=True)
    got = ember.argsort(ember.tensor(x), dim=-1, descending=descending, stable=True)
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = ember.sort(ember.tensor(x), dim=0, descending=descending, stable=True).indices
    np.testing.assert_array_equal(got.numpy(), torch.sort(torch.from_numpy(x), dim=0, descending=descending, stable=True).indices)


def test_argsort_descending_uint8_extremes():
    x = np.array([0, 255, 7, 0, 255], dtype=np.uint8)
    want = torch.argsort(torch.from_numpy(x), descending=True, stable=True).tolist()
    assert ember.argsort(ember.tensor(x), descending=True, stable=True).tolist() == want


def test_unique_along_a_dim_with_inverse_and_counts_as_torch():
    x = np.array([[1, 2, 1], [0, 1, 0], [1, 2, 1], [0, 1, 0], [3, 3, 3]], dtype=np.int64)
    for dim in (0, 1):
        check_op(lambda L, a: L.unique(a, return_inverse=True, return_counts=True, dim=dim), x, grad=False)


def test_searchsorted_batched_rows_as_torch():
    seq = np.sort(np.random.default_rng(1).integers(0, 6, size=(2, 3, 5)), axis=-1).astype(np.float64)
    vals = np.random.default_rng(2).integers(0, 7, size=(2, 3, 4)).astype(np.float64)
    for right in (False, True):
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
        got = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), right=right)
        assert got.dtype == ember.int64 and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("value", [0.0, 5.0])
def test_nonzero_of_a_0d_tensor_as_torch(value):
    check_op(lambda L, a: L.nonzero(a), np.array(value), grad=False)
    check_op(lambda L, a: L.argwhere(a), np.array(value), grad=False)
    check_op(lambda L, a: L.nonzero(a, as_tuple=True), np.array(value), grad=False)


def test_cross_entropy_targets_ignore_index_and_class_range_as_torch():
    logits = np.random.default_rng(3).standard_normal((6, 4))
    target = np.array([0, 3, 1, 1, 2, 0], dtype=np.int64)
    for ignore in (1, 0, -100):
        check_op(lambda L, x, t: L.nn.functional.cross_entropy(x, t, ignore_index=ignore), logits, target)
    x = ember.tensor(logits)
    for bad in (4, -1):   # 4 == n_classes is the first bad class
        with pytest.raises(IndexError, match=rf"^nll_loss: target {bad} is out of bounds for 4 classes"):
            EF.cross_entropy(x, ember.tensor(np.array([0, bad, 1, 1, 2, 0])))
    # an ignored entry may be any value
    check_op(lambda L, x, t: L.nn.functional.cross_entropy(x, t, ignore_index=7),
             logits, np.array([7, 3, 7, 1, 2, 0], dtype=np.int64))


# ------------------------------------------------------------------ saved tensors (torch's in-place rules)
@pytest.mark.parametrize("op", ["mul", "rmul", "div"])
def test_an_operand_whose_partner_needs_no_gradient_is_not_saved(op):
    # as torch: changing such an operand in place after the op is no error
    fns = {"mul": lambda a, c: a * c, "rmul": lambda a, c: c * a, "div": lambda a, c: a / c}
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        c = lib.tensor([2.0, 4.0, 8.0])
        a = x * 1
        y = fns[op](a, c)
        a.add_(1)
        y.sum().backward()
        assert x.grad.tolist() == ([2.0, 4.0, 8.0] if op != "div" else [0.5, 0.25, 0.125])


def test_einsum_gradient_when_the_first_operand_needs_none():
    check_op(lambda L, a, b: L.einsum("ij,jk->ik", a, b), NoGrad((2, 3)), (3, 4))
    check_op(lambda L, a, b, c: L.einsum("ij,jk,k->i", a, b, c), (2, 3), NoGrad((3, 4)), (4,))


def test_double_backward_through_indexing_as_torch():
    idx = np.array([0, 2, 2, 1], dtype=np.int64)

    def fn(L, x, w, i):
        y = (x[i] ** 3).sum()
        g, = L.autograd.grad(y, x, create_graph=True)
        return (g * w).sum()
    check_op(fn, (4,), (4,), idx)


# ------------------------------------------------------------------ the meta device: shape rules and backward
def test_meta_binary_ops_broadcast_both_operands():
    a, b = meta(3, 1), meta(4)
    for fn in (lambda: a * b, lambda: a - b, lambda: b - a, lambda: ember.maximum(a, b), lambda: a ** b,
               lambda: a < b, lambda: ember.fmod(a, b), lambda: ember.where(a > 0, a, b)):
        assert tuple(fn().shape) == (3, 4)
    i, j = meta(3, 1, dtype=ember.int32), meta(4, dtype=ember.int32)
    assert tuple((i & j).shape) == (3, 4) and (i & j).dtype == ember.int32
    assert ember.logical_and(i, j).dtype == ember.bool and ember.bitwise_not(i).dtype == ember.int32
    assert ember.where(a > 0, a, meta(4, dtype=ember.float64)).dtype == torch_where_dtype()
    assert tuple(ember.where(meta(2, 3, 1) > 0, a, b).shape) == (2, 3, 4)   # the condition broadcasts too


def torch_where_dtype():
    t = torch.where(torch.zeros(3, 1) > 0, torch.zeros(3, 1), torch.zeros(4, dtype=torch.float64)).dtype
    return getattr(ember, str(t).replace("torch.", ""))


def test_meta_backward_gives_each_input_its_shape_and_dtype():
    a, b = meta(3, 1, grad=True), meta(4, grad=True)
    c = meta(2, 3, grad=True)
    h = meta(2, 3, dtype=ember.float16, grad=True)
    loss = ((a + b).sum() + (a - b).sum() + ember.cat([c, c], 0).sum() + c.reshape(6).sum()
            + c.sum(1).sum() + c.expand(4, 2, 3).sum() + h.to(ember.float32).sum()
            + c.to("meta").sum())
    loss.backward()
    for t, shape in ((a, (3, 1)), (b, (4,)), (c, (2, 3)), (h, (2, 3))):
        assert tuple(t.grad.shape) == shape and t.grad.dtype == t.dtype and t.grad.device.type == "meta"


def test_meta_reduction_shapes():
    x = meta(2, 3, 4)
    assert tuple(x.prod(1, keepdim=True).shape) == (2, 1, 4) and tuple(x.prod(2).shape) == (2, 3)
    assert tuple(x.sum((0, 2), keepdim=True).shape) == (1, 3, 1)
    assert tuple(x.argmax(1, keepdim=True).shape) == (2, 1, 4)
    assert tuple(meta().argmax(0, keepdim=True).shape) == ()


def test_meta_expand_and_bitcast_shapes():
    assert tuple(meta(3, 1).expand(-1, 4).shape) == (3, 4)
    with pytest.raises(RuntimeError, match=r"^expand: the expanded size 3 must match the existing size 2"):
        meta(2).expand(3)
    x = meta(2, 4)
    assert tuple(x.view(ember.float16).shape) == (2, 8)
    assert tuple(x.view(ember.int8).shape) == (2, 16)
    assert tuple(x.view(ember.int32).shape) == (2, 4) and x.view(ember.int32).dtype == ember.int32
    assert tuple(meta(2, 8, dtype=ember.float16).view(ember.float64).shape) == (2, 2)
    assert tuple(meta(dtype=ember.float32).view(ember.int32).shape) == ()
    y = meta(2, 3, 4)
    for dt in ("float16", "int8", "float64"):   # the same rule as on the CPU, in 3-D too
        want = torch.zeros(2, 3, 4).view(getattr(torch, dt)).shape
        got = y.view(getattr(ember, dt)).shape
        assert tuple(got) == tuple(want) and all(type(s) is int for s in got)
    for dt in ("float16", "int8", "float64"):
        want = torch.zeros(2, 4).view(getattr(torch, dt)).shape
        assert tuple(x.view(getattr(ember, dt)).shape) == tuple(want)


def test_meta_data_dependent_shapes_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="^nonzero: the output shape depends on the data"):
        ember.nonzero(meta(2))
    with pytest.raises(NotImplementedError, match="^unique: the output shape depends on the data"):
        ember.unique(meta(2))


def test_meta_to_cpu_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data"):
        meta(2).to("cpu")


# ------------------------------------------------------------------ the index slot marker
def test_the_index_slot_marker_prints_and_pickles_as_itself():
    assert repr(P.SLOT) == "<index>"
    assert pickle.loads(pickle.dumps(P.SLOT)) is P.SLOT
    assert repr((0, P.SLOT)) == "(0, <index>)"


# ------------------------------------------------------------------ a direct primitive call with an int axis
def test_sum_backward_with_an_int_axis():
    x = ember.ones(2, 3, requires_grad=True)
    P.Sum.apply(x, axis=1, keepdims=False).sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 2


# ------------------------------------------------------------------ device moves (the strict fake CUDA device)
def test_to_device_and_back_gradients(fake_cuda):
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.to("cuda")
    assert y.device.type == "cuda"
    (y * y).sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 4.0, 6.0]
    z = ember.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    w = z.to("cpu")
    assert w.device.type == "cpu"
    (w * 3).sum().backward()
    assert z.grad.device.type == "cuda" and z.grad.tolist() == [3.0, 3.0]


def test_expand_of_a_0d_tensor_is_a_view_as_torch():
    for lib in (torch, ember):
        s = lib.tensor(1.0)
        y = s.expand(3)
        s.add_(1)
        assert y.tolist() == [2.0, 2.0, 2.0]
