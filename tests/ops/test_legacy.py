"""Legacy and deprecated torch names (ember/ops/aliases.py's last sections, Tensor.type, apply_, map_,
output_nr in ember/_tensor_methods.py), each against torch."""
import doctest
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.ops import aliases
from helpers import Const, NoGrad, check_op, raises_exactly

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _on(L, a):
    """The module holding the legacy types of a's device (check_op's fake-CUDA pass puts Ember's on cuda)."""
    return L.cuda if a.device.type == "cuda" else L


def _both(name):
    return getattr(torch, name), getattr(ember, name)


# ------------------------------------------------------------------ Tensor.type
@pytest.mark.parametrize("dtype", DTYPES)
def test_type_string_is_torchs(dtype):
    t, e = torch.ones(2, dtype=getattr(torch, dtype)), ember.ones(2, dtype=getattr(ember, dtype))
    assert e.type() == t.type()
    assert e.to("meta").type() == t.to("meta").type()


def test_type_string_on_cuda(fake_cuda):
    assert ember.ones(2).cuda().type() == "torch.cuda.FloatTensor"
    assert ember.ones(2, dtype=ember.int64).cuda().type() == "torch.cuda.LongTensor"


@pytest.mark.parametrize("name", TYPES)
def test_type_converts(name):
    x = [1.5, -2.0, 0.0]
    t, e = torch.tensor(x), ember.tensor(x)
    for arg_t, arg_e in [(f"torch.{name}", f"torch.{name}"), (getattr(torch, name), getattr(ember, name)),
                         (getattr(torch, name).dtype, getattr(ember, name).dtype)]:
        rt, re_ = t.type(arg_t), e.type(arg_e)
        assert re_.type() == rt.type()
        np.testing.assert_array_equal(re_.double().numpy(), rt.double().numpy())
    assert e.type(f"ember.{name}").type() == f"torch.{name}"


def test_type_returns_self_when_already_of_that_type():
    e = ember.ones(2)
    assert e.type("torch.FloatTensor") is e and e.type(ember.FloatTensor) is e and e.type(ember.float32) is e
    assert e.type(ember.Tensor) is e and e.type("torch.Tensor") is e   # the default type
    assert e.type(dtype=ember.float64, non_blocking=True).dtype is ember.float64


def test_type_gradient():
    check_op(lambda L, a: a.type(L.float64) * 2, (3, 4), dtypes=("float32",))
    check_op(lambda L, a: a.type("torch.cuda.DoubleTensor" if a.is_cuda else "torch.DoubleTensor").sum(), (3,), dtypes=("float32",))
    check_op(lambda L, a: a.type(_on(L, a).FloatTensor) * a, (3,), dtypes=("float64",))


def test_type_moves_between_devices(fake_cuda):
    e = ember.ones(2)
    g = e.type("torch.cuda.DoubleTensor")
    assert g.device.type == "cuda" and g.dtype is ember.float64
    assert g.type(ember.LongTensor).device.type == "cpu"
    assert g.type(ember.float32).device.type == "cuda"          # a dtype keeps the device
    assert isinstance(e.type(ember.cuda.HalfTensor), ember.cuda.HalfTensor)


@pytest.mark.parametrize("bad", [float, "float", "FloatTensor", "torch.float32", "torch.Foo", "numpy.FloatTensor"])
def test_type_rejects_what_is_no_tensor_type(bad):
    with pytest.raises(ValueError) as t:
        torch.ones(2).type(bad)
    name = getattr(bad, "__name__", bad)
    raises_exactly(lambda: ember.ones(2).type(bad), ValueError, f"type: invalid type: {name!r}")
    assert f"invalid type: {name!r}" in str(t.value)


def test_type_rejects_other_arguments():
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        torch.ones(2).type(3)
    raises_exactly(lambda: ember.ones(2).type(3), TypeError, "type: dtype must be a type, str, or dtype object, "
                                                             "got int 3")


# ------------------------------------------------------------------ legacy constructors and isinstance
@pytest.mark.parametrize("name", TYPES)
def test_legacy_constructor_from_data(name):
    T, E = _both(name)
    for data in ([1, 0, 3], [[1.5, 2.5], [0.0, -1.0]], [True, False], np.array([1, 2]), [], ()):
        if name in ("ByteTensor", "BoolTensor") and np.any(np.asarray(data, dtype=float) < 0):
            continue
        t, e = T(data), E(data)
        assert e.type() == t.type() and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(e.double().numpy(), t.double().numpy())


@pytest.mark.parametrize("name", TYPES)
def test_legacy_constructor_from_sizes(name):
    T, E = _both(name)
    for args, kw in [((2, 3), {}), ((4,), {}), ((), {}), ((), {"size": (2, 1)}), ((), {"size": ()}),
                     ((0, 2), {})]:
        t, e = T(*args, **kw), E(*args, **kw)   # torch's values are uninitialised; Ember's are zeros
        assert e.type() == t.type() and tuple(e.shape) == tuple(t.shape)
        assert not e.double().abs().sum().item()
    assert E(2, device="cpu").device.type == "cpu"


def test_legacy_constructor_from_a_tensor_is_an_alias():
    t, e = torch.tensor([1.5, 2.5], requires_grad=True), ember.tensor([1.5, 2.5], requires_grad=True)
    at, ae = torch.FloatTensor(t), ember.FloatTensor(e)
    assert ae is not e and ae.data_ptr() == e.data_ptr() and at.data_ptr() == t.data_ptr()
    assert ae.requires_grad == at.requires_grad
    check_op(lambda L, a: _on(L, a).DoubleTensor(a) * 3, (2, 3), dtypes=("float64",))


@pytest.mark.parametrize("call,exc,message", [
    (lambda L: L.FloatTensor(L.tensor([1, 2])), TypeError, "FloatTensor: expected ember.FloatTensor (got "
                                                           "torch.LongTensor)"),
    (lambda L: L.LongTensor(L.tensor([1.5])), TypeError, "LongTensor: expected ember.LongTensor (got "
                                                         "torch.FloatTensor)"),
    (lambda L: L.FloatTensor(2.5), TypeError, "FloatTensor: data must be a sequence (got float)"),
    (lambda L: L.FloatTensor(2, 3.0), TypeError, "FloatTensor: expected data or integer sizes, got 2 arguments "
                                                 "(int, float)"),
    (lambda L: L.FloatTensor([1], [2]), TypeError, "FloatTensor: expected data or integer sizes, got 2 arguments "
                                                   "(list, list)"),
    (lambda L: L.FloatTensor(2, -1), RuntimeError, "FloatTensor: Trying to create tensor with negative dimension -1: "
                                                   "[2, -1]"),
    (lambda L: L.FloatTensor([1.0], device="meta"), RuntimeError, "FloatTensor: legacy constructor expects device "
                                                                  "type: cpu but device type: meta was passed"),
])
def test_legacy_constructor_errors(call, exc, message):
    with pytest.raises(exc):
        call(torch)
    raises_exactly(lambda: call(ember), exc, message)
    with pytest.raises(TypeError):
        torch.FloatTensor([1], dtype=torch.float64)
    with pytest.raises(TypeError):
        ember.FloatTensor([1], dtype=ember.float64)


@pytest.mark.parametrize("name", TYPES)
def test_isinstance_checks_dtype_and_device(name):
    T, E = _both(name)
    for dtype in DTYPES:
        t, e = torch.ones(2, dtype=getattr(torch, dtype)), ember.ones(2, dtype=getattr(ember, dtype))
        assert isinstance(e, E) == isinstance(t, T), (name, dtype)
        assert isinstance(e, getattr(ember.cuda, name)) is False
    assert isinstance(E([1]), ember.Tensor) and not isinstance([1.0], E) and not issubclass(E, ember.Tensor)
    assert E.dtype is getattr(ember, T.dtype.__str__().replace("torch.", ""))
    assert E.is_cuda is T.is_cuda is False and getattr(ember.cuda, name).is_cuda is True
    assert E.__name__ == T.__name__ and repr(E) == f"<class 'ember.{name}'>"


def test_cuda_types(fake_cuda):
    x = ember.cuda.FloatTensor([1.0, 2.0])
    assert x.device.type == "cuda" and x.dtype is ember.float32 and x.type() == "torch.cuda.FloatTensor"
    assert isinstance(x, ember.cuda.FloatTensor) and not isinstance(x, ember.FloatTensor)
    assert tuple(ember.cuda.LongTensor(2, 3).shape) == (2, 3)
    raises_exactly(lambda: ember.cuda.FloatTensor([1.0], device="cpu"), RuntimeError,
                   "FloatTensor: legacy constructor expects device type: cuda but device type: cpu was passed")


# ------------------------------------------------------------------ set_default_tensor_type
def test_set_default_tensor_type(monkeypatch):
    monkeypatch.setattr(aliases, "_WARNED_DEFAULT_TYPE", False)
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type: ember.set_default_tensor_type\\(\\) is "
                                             "deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() is ember.float64 and ember.tensor([1.5]).dtype is ember.float64
        assert ember.FloatTensor([1]).dtype is ember.float32          # a legacy type keeps its own dtype
        with warnings.catch_warnings():
            warnings.simplefilter("error")                           # once per process, as torch's
            ember.set_default_tensor_type("torch.HalfTensor")
            assert ember.get_default_dtype() is ember.float16
            ember.set_default_tensor_type("ember.FloatTensor")
        assert ember.get_default_dtype() is ember.float32
    finally:
        ember.set_default_dtype(ember.float32)
        ember.set_default_device(None)


def test_set_default_tensor_type_cuda(fake_cuda):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ember.set_default_tensor_type("torch.cuda.DoubleTensor")
            assert ember.zeros(2).device.type == "cuda" and ember.zeros(2).dtype is ember.float64
            ember.set_default_tensor_type(ember.FloatTensor)
            assert ember.zeros(2).device.type == "cpu" and ember.zeros(2).dtype is ember.float32
        finally:
            ember.set_default_dtype(ember.float32)
            ember.set_default_device(None)


@pytest.mark.parametrize("bad,exc,message", [
    (lambda L: L.LongTensor, TypeError, "set_default_tensor_type: only floating-point types are supported as the "
                                        "default type (got LongTensor)"),
    (lambda L: "torch.BoolTensor", TypeError, "set_default_tensor_type: only floating-point types are supported as "
                                              "the default type (got torch.BoolTensor)"),
    (lambda L: L.float64, TypeError, None),
    (lambda L: "torch.Foo", (ValueError, AttributeError), "set_default_tensor_type: invalid type: 'torch.Foo'"),
])
def test_set_default_tensor_type_errors(bad, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc):
            torch.set_default_tensor_type(bad(torch))
        if message is None:
            raises_exactly(lambda: ember.set_default_tensor_type(bad(ember)), TypeError,
                           "set_default_tensor_type: expected a tensor type or its name, got dtype ember.float64")
        else:
            raises_exactly(lambda: ember.set_default_tensor_type(bad(ember)),
                           exc if isinstance(exc, type) else ValueError, message)
    assert ember.get_default_dtype() is ember.float32 and torch.get_default_dtype() is torch.float32


# ------------------------------------------------------------------ row_stack, trapz, pinverse, chain_matmul
def test_row_stack():
    check_op(lambda L, a, b: L.row_stack([a, b]), (3,), (3,))
    check_op(lambda L, a, b: L.row_stack((a, b)), (2, 3), (1, 3))


def test_trapz():
    check_op(lambda L, y: L.trapz(y), (3, 5))
    check_op(lambda L, y: L.trapz(y, dx=0.5, dim=0), (4, 3))
    check_op(lambda L, y, x: L.trapz(y, x), (3, 5), (5,))
    check_op(lambda L, y, x: L.trapz(y, x, dim=0), (4, 3), (4, 3))
    check_op(lambda L, y: L.trapz(y), (0,), grad=False)


@pytest.mark.parametrize("call,message", [
    (lambda L, y: L.trapz(y, L.ones(3), dx=2.0), "trapz: expected trapz(y, *, dx=1, dim=-1) or trapz(y, x, *, "
                                                 "dim=-1) with x a Tensor, got x and dx"),
    (lambda L, y: L.trapz(y, 2.0), "trapz: expected trapz(y, *, dx=1, dim=-1) or trapz(y, x, *, dim=-1) with x a "
                                   "Tensor, got x of type float"),
])
def test_trapz_errors(call, message):
    with pytest.raises(TypeError):
        call(torch, torch.ones(3))
    raises_exactly(lambda: call(ember, ember.ones(3)), TypeError, message)


def test_pinverse():
    check_op(lambda L, a: L.pinverse(a), (4, 3), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: a.pinverse(), (2, 3, 4), atol=1e-4, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3)
    check_op(lambda L, a: L.pinverse(a, rcond=0.5), np.diag([4.0, 1.0, 3.0]), grad=False)   # 1 is cut off
    e = ember.pinverse(ember.tensor([[1.0, 0.0], [0.0, 7e-16]], dtype=ember.float64))
    t = torch.pinverse(torch.tensor([[1.0, 0.0], [0.0, 7e-16]], dtype=torch.float64))
    np.testing.assert_array_equal(e.numpy(), t.numpy())            # torch's rcond 1e-15, not eps * n
    with pytest.raises(RuntimeError):
        torch.pinverse(torch.ones(3))
    with pytest.raises(RuntimeError, match="linalg.pinv"):
        ember.pinverse(ember.ones(3))


def test_chain_matmul():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(lambda L, a, b, c: L.chain_matmul(a, b, c), (2, 3), (3, 4), (4, 1))
        check_op(lambda L, a, b: L.chain_matmul(a, b), (5, 3), (3, 2))
        check_op(lambda L, a: L.chain_matmul(a), (2, 3))
    a = ember.ones(2, 3)
    with pytest.warns(UserWarning, match="chain_matmul: ember.chain_matmul is deprecated"):
        assert ember.chain_matmul(a) is not a


def test_spmm_multiplies_strided_matrices_as_torch():
    # the GCN example's torch.spmm(adj_mat, support), with a dense normalised adjacency matrix
    check_op(lambda L, a, b: L.spmm(a, b), (4, 4), (4, 3))
    assert not hasattr(ember.Tensor, "spmm") and not hasattr(torch.Tensor, "spmm")
    with pytest.raises(RuntimeError):
        torch.spmm(torch.ones(2, 3), torch.ones(4, 2))
    with pytest.raises(RuntimeError, match="mm: shapes"):
        ember.spmm(ember.ones(2, 3), ember.ones(4, 2))


@pytest.mark.parametrize("shapes,message", [
    ((), "chain_matmul: chain_matmul(): Expected one or more matrices"),
    (((2, 3, 3), (3, 4)), "chain_matmul: Tensor dimension is 3, expected 2 instead (matrix 0 (2, 3, 3))"),
    (((3,), (3, 4)), "chain_matmul: Tensor dimension is 1, expected 2 instead (matrix 0 (3,))"),
    (((2, 3), (4, 4)), None),
])
def test_chain_matmul_errors(shapes, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError):
            torch.chain_matmul(*[torch.ones(s) for s in shapes])
        if message is None:
            with pytest.raises(RuntimeError, match="multi_dot"):
                ember.chain_matmul(*[ember.ones(s) for s in shapes])
        else:
            raises_exactly(lambda: ember.chain_matmul(*[ember.ones(s) for s in shapes]), RuntimeError, message)


# ------------------------------------------------------------------ norm_except_dim
@pytest.mark.parametrize("shape,p,dim", [((3, 4, 5), 2, 0), ((3, 4, 5), 2, 1), ((3, 4, 5), 3, 2), ((3, 4, 5), 1, -2),
                                         ((3, 4, 5), 2, -1), ((4, 6), 2, 0), ((4, 6), 2, 1), ((5,), 2, 0),
                                         ((2, 0, 3), 2, 0), ((4, 6), 0, 1)])
def test_norm_except_dim(shape, p, dim):
    check_op(lambda L, v: L.norm_except_dim(v, p, dim), shape, grad=p != 0)
    check_op(lambda L, v: L.norm_except_dim(v), (3, 2))


def test_norm_except_dim_errors():
    with pytest.raises(IndexError):
        torch.norm_except_dim(torch.ones(2, 3), 2, 2)
    raises_exactly(lambda: ember.norm_except_dim(ember.ones(2, 3), 2, 2), IndexError,
                   "norm_except_dim: Dimension out of range (expected to be in range of [-2, 1], but got 2); the "
                   "tensor has 2 dims")
    with pytest.raises(IndexError):
        torch.norm_except_dim(torch.tensor(3.0), 2, 0)
    raises_exactly(lambda: ember.norm_except_dim(ember.tensor(3.0), 2, 0), IndexError,
                   "norm_except_dim: Dimension specified as 0 but tensor has no dimensions")


# ------------------------------------------------------------------ apply_, map_, map2_
@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_(dtype):
    data = [[1, 0, 3], [2, 5, 1]]
    t, e = torch.tensor(data, dtype=getattr(torch, dtype)), ember.tensor(data, dtype=getattr(ember, dtype))
    fn = (lambda v: not v) if dtype == "bool" else (lambda v: v * 2.7 + 1)
    assert e.apply_(fn) is e
    t.apply_(fn)
    assert e.dtype.name == dtype
    np.testing.assert_array_equal(e.double().numpy(), t.double().numpy())


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_map_and_map2_(dtype):
    a, b, c = [1, 2, 3], [[10], [20]], [4, 5, 6]
    tt = lambda x: torch.tensor(x, dtype=getattr(torch, dtype))         # noqa: E731
    et = lambda x: ember.tensor(x, dtype=getattr(ember, dtype))         # noqa: E731
    t, e = tt([a, a]), et([a, a])
    assert e.map_(et(b), lambda x, y: x * y + 0.5) is e
    t.map_(tt(b), lambda x, y: x * y + 0.5)
    np.testing.assert_array_equal(e.double().numpy(), t.double().numpy())
    assert e.map2_(et(b), et(c), lambda s, x, y: s - x + y) is e
    t.map2_(tt(b), tt(c), lambda s, x, y: s - x + y)
    np.testing.assert_array_equal(e.double().numpy(), t.double().numpy())


def test_apply_bumps_the_version_and_returns_numbers_from_tensors():
    e = ember.ones(2)
    v = e._version
    e.apply_(lambda x: ember.tensor(x + 1))
    assert e._version == v + 1 and e.tolist() == torch.ones(2).apply_(lambda x: torch.tensor(x + 1)).tolist()


@pytest.mark.parametrize("call,exc,message", [
    (lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v), RuntimeError,
     "apply_: Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead."),
    (lambda L: L.ones(2).map_(L.ones(2, requires_grad=True), lambda a, b: a), RuntimeError,
     "map_: Can't call map_() on Variable that requires grad. Use var.detach().map_() instead."),
    (lambda L: L.ones(2).apply_(lambda v: "a"), TypeError, "apply_: the callable must return a real number, got "
                                                           "str 'a'"),
    (lambda L: L.ones(2).apply_(lambda v: None), TypeError, "apply_: the callable must return a real number, got "
                                                            "NoneType None"),
    (lambda L: L.ones(2, dtype=L.uint8).apply_(lambda v: 300), RuntimeError,
     "apply_: value 300 cannot be converted to type uint8 without overflow"),
    (lambda L: L.ones(2).map_([1.0, 2.0], lambda a, b: a), TypeError, "map_: argument 'other' must be Tensor, "
                                                                      "not list"),
    (lambda L: L.ones(2).map_(L.ones(2, dtype=L.int64), lambda a, b: a), TypeError,
     "map_: expected torch.FloatTensor for argument 'other' (got torch.LongTensor)"),
    (lambda L: L.ones(2).map2_(L.ones(2), L.ones(2, dtype=L.int64), lambda a, b, c: a), TypeError,
     "map2_: expected torch.FloatTensor for argument 'y' (got torch.LongTensor)"),
    (lambda L: L.ones(2).map_(L.ones(2, 1), lambda a, b: a), RuntimeError,
     "map_: the tensors [(2, 1)] do not broadcast to this tensor's shape (2,)"),
])
def test_apply_and_map_errors(call, exc, message):
    with pytest.raises(exc):
        call(torch)
    raises_exactly(lambda: call(ember), exc, message)
    with ember.no_grad(), pytest.raises(RuntimeError, match="requires grad"):   # whatever the grad mode
        ember.ones(2, requires_grad=True).apply_(lambda v: v)


def test_apply_is_cpu_only(fake_cuda):
    raises_exactly(lambda: ember.ones(2).cuda().apply_(lambda v: v), TypeError,
                   "apply_: apply_ is only implemented on CPU tensors (got cuda:0)")


# ------------------------------------------------------------------ output_nr
def test_output_nr():
    def outputs(L):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3, x * 4

            @staticmethod
            def backward(ctx, a, b, c):
                return 2 * a + 3 * b + 4 * c
        x = L.ones(3, requires_grad=True)
        return [x, x * 2, L.ones(2)] + list(Two.apply(x))
    assert [t.output_nr for t in outputs(ember)] == [t.output_nr for t in outputs(torch)] == [0, 0, 0, 0, 1, 2]


def test_docstring_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # chain_matmul's, range's and set_default_tensor_type's deprecations
        result = doctest.testmod(aliases, extraglobs={"ember": ember})
    assert result.attempted >= 15 and result.failed == 0
    import ember._tensor_methods as methods
    result = doctest.testmod(methods, extraglobs={"ember": ember})
    assert result.attempted >= 5 and result.failed == 0


def test_unused_helpers_are_exercised():
    # Const/NoGrad keep check_op's argument kinds in use here: a constant dx and a non-differentiable x
    check_op(lambda L, y, dx: L.trapz(y, dx=dx), (4,), Const(0.25))
    check_op(lambda L, y, x: L.trapz(y, x), (4,), NoGrad((4,)))
