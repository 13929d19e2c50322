"""ember/_tensor.py: metadata, conversions (numpy, item, tolist, __array__, DLPack), repr."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op


def test_metadata_matches_torch():
    e, t = ember.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert e.shape == tuple(t.shape) and e.size() == tuple(t.size()) and e.size(1) == t.size(1)
    assert e.ndim == t.ndim and e.dim() == t.dim() and e.numel() == t.numel()
    assert e.stride() == t.stride() and e.element_size() == t.element_size()
    assert e.permute(2, 0, 1).stride() == t.permute(2, 0, 1).stride()
    assert e.is_contiguous() and not e.transpose(0, 1).is_contiguous()
    assert len(e) == 2 and e.nbytes == 96
    assert e.is_leaf and not e.requires_grad and e.grad_fn is None


def test_item_tolist_float_int_bool():
    for L in (ember,):
        assert L.tensor(2.5).item() == 2.5 and isinstance(L.tensor(2.5).item(), float)
        assert L.tensor([3]).item() == 3 and isinstance(L.tensor([3]).item(), int)
        assert L.tensor(True).item() is True
    for data in ([[1.5, 2.0], [3.0, 4.0]], [1, 2, 3], [[True, False]], 7, 2.5):
        assert ember.tensor(data).tolist() == torch.tensor(data).tolist()
    assert ember.tensor([1.0, 2.0], dtype=ember.bfloat16).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="item: a Tensor with 2 elements"):
        ember.zeros(2).item()


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch():
    # torch 2.13 warns once per process (TORCH_WARN_ONCE), so only Ember's side can be checked in this process
    import warnings
    import ember._tensor
    ember._tensor._WARNED_FLOAT.clear()
    x = ember.ones(1, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar may lead to "
                                         "unexpected behavior"):
        float(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        float(x)                                   # once only
        ember._tensor._WARNED_FLOAT.clear()
        x.item(), int(x), bool(x), float(x.detach())


def test_python_number_protocols():
    x = ember.tensor(3.7)
    assert float(x) == pytest.approx(3.7) and int(x) == 3 and bool(x)
    assert [10, 20, 30, 40][ember.tensor(2)] == 30          # __index__
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.zeros(2))
    assert f"{ember.tensor(1.23456):.2f}" == "1.23"
    with pytest.raises(TypeError):
        len(ember.tensor(1.0))


def test_iteration_unbinds():
    x = ember.arange(6).reshape(3, 2)
    rows = list(x)
    assert len(rows) == 3 and rows[1].tolist() == [2, 3]


def test_numpy_shares_memory_and_requires_grad_error():
    x = ember.zeros(3)
    a = x.numpy()
    a[0] = 5
    assert x[0].item() == 5
    y = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        y.numpy()
    assert y.detach().numpy().shape == (3,)
    assert y.numpy(force=True).shape == (3,)


def test_array_protocol():
    x = ember.arange(4.0, requires_grad=True)
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.tolist() == [0, 1, 2, 3]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.array_equal(np.array(ember.tensor([[1, 2]])), [[1, 2]])


def test_dlpack_numpy_round_trip():
    x = ember.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(x)
    assert np.shares_memory(a, x.numpy()) and a.tolist() == x.tolist()
    b = np.arange(4, dtype=np.int32)
    y = ember.from_dlpack(b)
    assert y.dtype is ember.int32 and np.shares_memory(y.numpy(), b)


def test_dlpack_torch_round_trip():
    x = ember.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.tolist() == x.tolist()
    t[0, 0] = 100.0                       # shared memory, both directions
    assert x[0, 0].item() == 100.0
    tt = torch.arange(4, dtype=torch.float64)
    e = ember.from_dlpack(tt)
    assert e.dtype is ember.float64
    tt[1] = -3
    assert e[1].item() == -3
    assert ember.tensor(torch.ones(2)).tolist() == [1.0, 1.0]   # __dlpack__ objects as data (a copy)


REPRS = [
    lambda L: L.tensor([1.0, 2.0, 3.0]),
    lambda L: L.tensor([[1.5, -2.25], [3.0, 4.0]]),
    lambda L: L.tensor([1, 2, 3]),
    lambda L: L.tensor([True, False]),
    lambda L: L.tensor(3.0),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float64),
    lambda L: L.tensor([1, 2], dtype=L.int32),
    lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    lambda L: L.tensor([0.1234567, 10.5]),
    lambda L: L.tensor([1e-5, 1.0]),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float16),
    lambda L: L.zeros(0),
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_repr_like_torch(i):
    e, t = repr(REPRS[i](ember)), repr(REPRS[i](torch))
    assert e == t.replace("torch.", "ember."), (e, t)


def test_repr_grad_fn():
    x = ember.ones(2, requires_grad=True)
    assert "grad_fn=<" in repr(x * 2) and "requires_grad" not in repr(x * 2)


def test_requires_grad_detach_data():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and np.shares_memory(d.numpy(), y.detach().numpy())
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    assert x.data.requires_grad is False
    x.data = ember.zeros(2)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad
    z = ember.zeros(2)
    assert z.requires_grad_() is z and z.requires_grad
    y.detach_()
    assert not y.requires_grad and y.is_leaf


def test_clone_is_a_copy_with_grad():
    check_op(lambda L, a: a.clone() * 2, (3,))
    x = ember.ones(2)
    c = x.clone()
    c[0] = 5
    assert x[0].item() == 1


def test_type_conversion_methods():
    x = ember.tensor([1.7, -2.2])
    t = torch.tensor([1.7, -2.2])
    for m in ["float", "double", "half", "bfloat16", "long", "int", "short", "char", "bool"]:
        e_, t_ = getattr(x, m)(), getattr(t, m)()
        assert e_.dtype.name == str(t_.dtype).replace("torch.", "")
        np.testing.assert_allclose(e_.float().tolist(), t_.float().tolist())
    byte = ember.tensor([1.7, 2.2]).byte()
    assert byte.dtype is ember.uint8 and byte.tolist() == [1, 2]
    assert x.to(ember.float64).dtype is ember.float64
    assert x.to("float64").dtype is ember.float64
    assert x.to(torch.float64 if False else np.float64).dtype is ember.float64
    assert x.to(ember.zeros(1, dtype=ember.int32)).dtype is ember.int32
    assert x.type_as(ember.zeros(1, dtype=ember.float16)).dtype is ember.float16
    assert x.to(ember.float32) is x and x.to(ember.float32, copy=True) is not x
    check_op(lambda L, a: a.to(L.float64) * a.double(), (3,), dtypes=("float32",))
    check_op(lambda L, a: a.half().float(), (3,), dtypes=("float32",))


def test_hash_and_identity_eq():
    x = ember.zeros(2)
    d = {x: 1}
    assert d[x] == 1
    assert (x == x).tolist() == [True, True]


def test_repr_padding_nan_inf_like_torch():
    nan, inf = float("nan"), float("inf")
    for f in (lambda L: L.tensor([[1e-5, -1.0], [float("nan"), float("inf")]]), lambda L: L.tensor([-1.0, 2.0]),
              lambda L: L.tensor([1.5, float("nan")]), lambda L: L.tensor([1.0, nan, inf, -inf]),
              lambda L: L.tensor([0.0, -0.0]), lambda L: L.tensor([100.0, -inf]), lambda L: L.tensor([0.0, 0.0, inf]),
              lambda L: L.tensor([1e-8, inf]), lambda L: L.tensor([-0.0, 1.5]), lambda L: L.tensor([[nan]])):
        assert repr(f(ember)) == repr(f(torch))


def test_zero_fill_copy_inplace():
    x = ember.ones(2, 3)
    v = x[0]
    assert x.zero_() is x and x.tolist() == [[0.0] * 3] * 2 and x._version == 1 and v._version == 1
    x.fill_(2.5)
    assert v.tolist() == [2.5] * 3
    x.fill_(ember.tensor(4.0))
    assert x[1, 2].item() == 4.0
    x.copy_(ember.tensor([1.0, 2.0, 3.0]))          # broadcasts, like torch
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2 and x._version == 4
    i = ember.zeros(3, dtype=ember.int32)
    i.copy_(ember.tensor([1.7, 2.2, -3.9]))           # casts to the destination dtype
    assert i.tolist() == torch.zeros(3, dtype=torch.int32).copy_(torch.tensor([1.7, 2.2, -3.9])).tolist()
    # copy_ from a tensor that requires grad records the graph, as torch does
    check_op(lambda L, a, b: (a * 1).copy_(b) * b, (2, 3), (3,))


def test_legacy_constructor_like_torch():
    import torch
    assert ember.Tensor([1, 2]).dtype.name == str(torch.Tensor([1, 2]).dtype).split(".")[1] == "float32"
    assert ember.Tensor(2, 3).shape == tuple(torch.Tensor(2, 3).shape)
    assert ember.Tensor().shape == tuple(torch.Tensor().shape) == (0,)
    assert ember.Tensor([1.0], dtype=ember.float64).dtype is ember.float64


PRINT_CASES = [
    (dict(precision=2), lambda L: L.tensor([1.12345, -2.5])),
    (dict(precision=6), lambda L: L.tensor([0.1234567, 10.5], dtype=L.float64)),
    (dict(threshold=5), lambda L: L.arange(10)),
    (dict(threshold=5, edgeitems=1), lambda L: L.arange(12.0).reshape(3, 4)),
    (dict(linewidth=30), lambda L: L.arange(20.0)),
    (dict(sci_mode=True), lambda L: L.tensor([1.5, 2.0])),
    (dict(sci_mode=True), lambda L: L.tensor([1.0, 2.0])),
    (dict(sci_mode=False), lambda L: L.tensor([1e-5, 1.0])),
    (dict(profile="short"), lambda L: L.tensor([1.12345, 2.0, 3.0, 4.0, 5.0])),
    (dict(profile="full"), lambda L: L.arange(1200.0)),
    (dict(profile="short", precision=3), lambda L: L.tensor([1.12345])),
    (dict(), lambda L: L.tensor([0.001, 10.0])),      # spans more than 1000x: e-notation, as torch
    (dict(), lambda L: L.tensor([1.0, 2000.0])),
]


@pytest.mark.parametrize("i", range(len(PRINT_CASES)))
def test_set_printoptions_like_torch(i):
    options, make = PRINT_CASES[i]
    try:
        ember.set_printoptions(**options)
        torch.set_printoptions(**options)
        e, t = repr(make(ember)), repr(make(torch))
    finally:
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    assert e == t.replace("torch.", "ember."), (e, t)
    assert repr(ember.tensor([1.12345])) == "tensor([1.1235])"   # restored


def test_set_printoptions_rejects_bad_options():
    from helpers import raises_exactly
    raises_exactly(lambda: ember.set_printoptions(profile="long"), ValueError,
                   "set_printoptions: profile must be one of 'default', 'short' or 'full', got 'long'")
    raises_exactly(lambda: ember.set_printoptions(precision=-1), ValueError,
                   "set_printoptions: precision must be a non-negative int, got -1")
    raises_exactly(lambda: ember.set_printoptions(threshold="x"), ValueError,
                   "set_printoptions: threshold must be a number, got 'x'")
    assert repr(ember.tensor([1.12345])) == "tensor([1.1235])"


def test_is_inference_marks_tensors_made_in_inference_mode():
    x = ember.ones(2)
    with ember.inference_mode():
        y, z = x * 2, ember.zeros(3)
        with ember.inference_mode(False):
            w = x * 2
    with ember.no_grad():
        v = x * 2
    assert y.is_inference() and z.is_inference() and ember.is_inference(y)
    assert not any(t.is_inference() for t in (x, w, v, x * 2))
    tx = torch.ones(2)
    with torch.inference_mode():
        ty = tx * 2
        with torch.inference_mode(False):
            tw = tx * 2
    with torch.no_grad():
        tv = tx * 2
    assert [ty.is_inference(), tw.is_inference(), tv.is_inference(), tx.is_inference()] == \
        [y.is_inference(), w.is_inference(), v.is_inference(), x.is_inference()]


def test_comparing_with_none_or_a_container_falls_back_to_identity_as_torch():
    for L in (torch, ember):
        t = L.tensor([1])
        assert (t == None) is False and (t != None) is True and (None == t) is False   # noqa: E711
        assert (t == "a") is False and (t != "a") is True and (t == [1]) is False and (t == (1,)) is False
        assert (t == 1).tolist() == [True] and (t != L.tensor([2])).tolist() == [True]
        assert (t == np.array([1])).tolist() == [True]
