"""ember/ops/creation.py against torch: factories, *_like, conversions from host data."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, to_numpy


def same(e, t):
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", ""), (e.dtype, t.dtype)
    np.testing.assert_allclose(to_numpy(e), to_numpy(t), rtol=1e-6, atol=1e-7)


FACTORIES = {
    "zeros": lambda L: L.zeros(2, 3),
    "zeros_tuple": lambda L: L.zeros((2, 3), dtype=L.int32),
    "zeros_0d": lambda L: L.zeros(()),
    "ones": lambda L: L.ones(3, dtype=L.float64),
    "ones_list": lambda L: L.ones([2, 2], dtype=L.bool),
    "full_float": lambda L: L.full((2, 2), 1.5),
    "full_int": lambda L: L.full((2,), 7),
    "full_bool": lambda L: L.full((2,), True),
    "full_dtype": lambda L: L.full((2,), 3, dtype=L.float16),
    "empty_shape": lambda L: L.empty(2, 3).shape,
    "arange": lambda L: L.arange(5),
    "arange_start": lambda L: L.arange(2, 7),
    "arange_step": lambda L: L.arange(1, 10, 3),
    "arange_float": lambda L: L.arange(0, 1, 0.25),
    "arange_neg": lambda L: L.arange(5, 0, -2),
    "arange_dtype": lambda L: L.arange(4, dtype=L.float64),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "linspace_dtype": lambda L: L.linspace(-1, 1, 4, dtype=L.float64),
    "linspace_1": lambda L: L.linspace(2, 3, 1),
    "logspace": lambda L: L.logspace(0, 2, 3),
    "eye": lambda L: L.eye(3),
    "eye_rect": lambda L: L.eye(2, 4, dtype=L.int64),
    "tensor_nested": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "tensor_int": lambda L: L.tensor([1, 2, 3]),
    "tensor_bool": lambda L: L.tensor([True, False]),
    "tensor_scalar": lambda L: L.tensor(3.5),
    "tensor_int_scalar": lambda L: L.tensor(3),
    "tensor_dtype": lambda L: L.tensor([1, 2], dtype=L.float16),
    "tensor_mixed": lambda L: L.tensor([1, 2.5]),
    "tensor_empty": lambda L: L.tensor([]),
    "tensor_np_f64": lambda L: L.tensor(np.array([1.0, 2.0])),
    "tensor_np_i32": lambda L: L.tensor(np.array([1, 2], dtype=np.int32)),
    "tensor_np_u8": lambda L: L.tensor(np.array([1, 255], dtype=np.uint8)),
    "tensor_list_of_0d": lambda L: L.tensor([L.tensor(1.0), L.tensor(2.0)]),
    "as_tensor": lambda L: L.as_tensor([1.0, 2.0], dtype=L.float64),
    "scalar_tensor": lambda L: L.scalar_tensor(2),
    "tril_indices": lambda L: L.tril_indices(3, 3),
    "triu_indices": lambda L: L.triu_indices(3, 4, 1),
    "meshgrid_ij": lambda L: L.meshgrid(L.arange(3), L.arange(2), indexing="ij"),
    "meshgrid_xy": lambda L: L.meshgrid(L.arange(3), L.arange(2), indexing="xy"),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factory(name):
    e, t = FACTORIES[name](ember), FACTORIES[name](torch)
    if isinstance(t, tuple) and not isinstance(t, torch.Size):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            same(a, b)
    elif isinstance(t, torch.Size):
        assert tuple(e) == tuple(t)
    else:
        same(e, t)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
def test_like_shape_dtype(name):
    x = ember.zeros(2, 3, dtype=ember.float64)
    y = getattr(ember, name)(x)
    assert y.shape == (2, 3) and y.dtype is ember.float64
    y = getattr(ember, name)(x, dtype=ember.float16)
    assert y.dtype is ember.float16


def test_like_values_and_requires_grad():
    check_op(lambda L, a: L.zeros_like(a), (2, 3), grad=False)
    check_op(lambda L, a: L.ones_like(a), (2, 3), grad=False)
    check_op(lambda L, a: L.full_like(a, 2.5), (2, 3), grad=False)
    check_op(lambda L, a: L.full_like(a, 2), np.arange(3), grad=False)
    x = ember.ones_like(ember.zeros(2), requires_grad=True)
    assert x.requires_grad and x.is_leaf
    r = ember.randint_like(ember.zeros(100), 3, 6)
    assert r.dtype is ember.float32 and set(r.tolist()) <= {3.0, 4.0, 5.0}


def test_new_methods():
    x = ember.zeros(2, dtype=ember.float64)
    t = torch.zeros(2, dtype=torch.float64)
    same(x.new_zeros(3, 1), t.new_zeros(3, 1))
    same(x.new_ones((2,)), t.new_ones((2,)))
    same(x.new_full((2,), 4), t.new_full((2,), 4))
    same(x.new_tensor([1, 2]), t.new_tensor([1, 2]))
    assert x.new_empty(4).shape == (4,)


def test_tensor_copies_and_requires_grad():
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = ember.tensor(a, requires_grad=True)
    a[0] = 9
    assert t.tolist() == [1.0, 2.0] and t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2], requires_grad=True)


def test_from_numpy_zero_copy_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.dtype is ember.float64          # as torch.from_numpy: no cast
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 1] = -1
    assert a[1, 1] == -1
    assert np.shares_memory(t.numpy(), a)
    i = ember.from_numpy(np.array([1, 2], dtype=np.int16))
    assert i.dtype is ember.int16
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])
    with pytest.raises(TypeError):
        ember.from_numpy(np.array([1 + 2j]))


def test_as_tensor_shares_memory():
    a = np.ones(3, dtype=np.float32)
    assert np.shares_memory(ember.as_tensor(a).numpy(), a)
    x = ember.ones(2)
    assert ember.as_tensor(x) is x


def test_tensor_bad_data():
    with pytest.raises(ValueError, match="tensor: ragged"):   # torch raises ValueError too
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor("abc")
    with pytest.raises(TypeError):
        ember.tensor(np.array(["a"]))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_take_size_as_a_keyword_with_torchs_errors(name):
    # gat's GraphAttentionLayer: nn.Parameter(torch.empty(size=(in_features, n_hidden * n_heads)))
    for size in ((2, 3), [4], ()):
        assert tuple(getattr(ember, name)(size=size).shape) == tuple(getattr(torch, name)(size=size).shape)
    assert getattr(ember, name)(size=(2,), dtype=ember.float64).dtype is ember.float64
    calls = [(lambda L: getattr(L, name)(2, size=(2,)), "got multiple values for argument 'size'"),
             (lambda L: getattr(L, name)(size=None), "argument 'size' must be tuple of ints, not NoneType"),
             (lambda L: getattr(L, name)(size=3), "argument 'size' must be tuple of ints, not int")]
    for call, message in calls:
        with pytest.raises(TypeError):
            call(torch)
        with pytest.raises(TypeError, match=f"^{name}\\(\\):? {message}$"):
            call(ember)
    assert getattr(ember, name)().shape == ()      # torch raises; Ember's own code makes 0-d tensors so


def test_factory_bad_sizes():
    with pytest.raises(ValueError, match="invalid size"):
        ember.zeros(-1, 2)
    with pytest.raises(ValueError, match="arange"):
        ember.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange"):
        ember.arange(5, 0, 1)


def test_default_dtype_controls_factories():
    prev = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.zeros(1).dtype is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
        assert ember.arange(0, 1, 0.5).dtype is ember.float64
        assert ember.rand(2).dtype is ember.float64
        with pytest.raises(TypeError):
            ember.set_default_dtype(ember.int32)
    finally:
        ember.set_default_dtype(prev)
    assert ember.zeros(1).dtype is ember.float32


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 4), (4, 3, 1), (4, 3, -1), (2, 5, 2)])
def test_tril_triu_indices_of_rectangles_and_dtypes(name, args):
    for kw in ({}, {"dtype": "int32"}):
        t = getattr(torch, name)(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        e = getattr(ember, name)(*args, **{k: getattr(ember, v) for k, v in kw.items()})
        same(e, t)
    assert getattr(ember, name)(3, 4).tolist() == getattr(torch, name)(3, 4, 0).tolist()


def test_memory_and_type_errors_name_the_factory():
    from helpers import raises_exactly
    for name in ("zeros", "ones", "empty"):
        with pytest.raises(ember.OutOfMemoryError, match=rf"^{name}: not enough memory: you tried to allocate "
                                                         r"4611686018427387904 bytes"):
            getattr(ember, name)(1 << 40, 1 << 20)
    with pytest.raises(TypeError, match=r"^expected np.ndarray \(got list\)"):
        torch.from_numpy([1, 2])
    raises_exactly(lambda: ember.from_numpy([1, 2]), TypeError, "from_numpy: expected np.ndarray (got list)",
                   located=False)


def test_empty_of_every_dtype():
    for dt in ("int64", "bool", "float16", "float64"):
        e, t = ember.empty(2, 3, dtype=getattr(ember, dt)), torch.empty(2, 3, dtype=getattr(torch, dt))
        assert e.shape == (2, 3) and e.dtype.name == dt == str(t.dtype).split(".")[1]


LIKE = ["zeros_like", "ones_like", "empty_like", "full_like"]


@pytest.mark.parametrize("name", LIKE)
def test_like_keeps_device_and_takes_requires_grad(name, fake_cuda):
    args = (2.5,) if name == "full_like" else ()
    x = ember.zeros(2, 3, dtype=ember.float64, device="cuda")
    y = getattr(ember, name)(x, *args)
    assert y.device.type == "cuda" and y.dtype is ember.float64 and y.shape == (2, 3) and not y.requires_grad
    y = getattr(ember, name)(x, *args, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    y = getattr(ember, name)(x, *args, device="cpu", dtype=ember.float16)
    assert y.device.type == "cpu" and y.dtype is ember.float16
    if name != "empty_like":
        want = getattr(torch, name)(torch.zeros(2, 3, dtype=torch.float64), *args)
        np.testing.assert_array_equal(getattr(ember, name)(x, *args).cpu().numpy(), want.numpy())


def test_factories_on_a_device_and_with_requires_grad(fake_cuda):
    made = {
        "linspace": ember.linspace(0, 1, 5, device="cuda"), "logspace": ember.logspace(0, 2, 3, device="cuda"),
        "tril_indices": ember.tril_indices(3, 4, device="cuda"),
        "triu_indices": ember.triu_indices(3, 4, device="cuda"),
        "scalar_tensor": ember.scalar_tensor(2, device="cuda"), "eye": ember.eye(3, device="cuda"),
        "arange": ember.arange(3, device="cuda"), "full": ember.full((2,), 1.5, device="cuda"),
    }
    for name, t in made.items():
        assert t.device.type == "cuda", name
    assert ember.scalar_tensor(2).dtype is ember.float32
    assert ember.scalar_tensor(2, dtype=ember.int32).dtype is ember.int32
    for make in (lambda **kw: ember.linspace(0, 1, 5, **kw), lambda **kw: ember.eye(2, **kw),
                 lambda **kw: ember.arange(3.0, **kw), lambda **kw: ember.full((2,), 1.5, **kw)):
        assert not make().requires_grad and make(requires_grad=True).requires_grad
    same(ember.logspace(0, 2, 3, base=2.0, dtype=ember.float64), torch.logspace(0, 2, 3, base=2.0, dtype=torch.float64))
    same(ember.linspace(-1, 1, 7, dtype=ember.float64), torch.linspace(-1, 1, 7, dtype=torch.float64))


def test_as_tensor_of_a_tensor_converts_and_moves_only_when_asked(fake_cuda):
    x = ember.ones(2)
    assert ember.as_tensor(x) is x
    y = ember.as_tensor(x, dtype=ember.float64)
    assert y.dtype is ember.float64 and y.device.type == "cpu"
    y = ember.as_tensor(x, device="cuda")
    assert y.device.type == "cuda" and y.dtype is ember.float32
    c = ember.ones(2, device="cuda")
    assert ember.as_tensor(c) is c and ember.as_tensor(c, dtype=ember.float16).device.type == "cuda"
    assert ember.as_tensor([1.0, 2.0], device="cuda").device.type == "cuda"
    a = np.zeros(3, np.float32)
    t = ember.as_tensor(a)
    a[0] = 5.0
    assert t.tolist() == [5.0, 0.0, 0.0]   # shares memory, as torch.as_tensor


def test_meshgrid_forms():
    for n in (1, 2, 3, 4):
        sizes = [2, 3, 4, 5][:n]
        for indexing in ("ij", "xy"):
            ts = [torch.arange(s) for s in sizes]
            es = [ember.arange(s) for s in sizes]
            kw = {"indexing": indexing}
            for want, got in ((torch.meshgrid(*ts, **kw), ember.meshgrid(*es, **kw)),
                              (torch.meshgrid(ts, **kw), ember.meshgrid(es, **kw)),
                              (torch.meshgrid(tuple(ts), **kw), ember.meshgrid(tuple(es), **kw))):
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    assert g.shape == tuple(w.shape) and g.tolist() == w.tolist()


def test_full_names_itself_in_a_scalar_overflow_and_takes_an_int_size():
    from helpers import raises_exactly
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        torch.full((2,), 300, dtype=torch.uint8)
    raises_exactly(lambda: ember.full((2,), 300, dtype=ember.uint8), RuntimeError,
                   "full: value 300 cannot be converted to type uint8 without overflow")
    assert ember.full(3, 1.5).tolist() == [1.5] * 3   # an int size, which torch refuses, is taken as (3,)


def test_tensor_of_a_tensor_is_a_detached_copy(fake_cuda):
    x = ember.tensor([1.5, 2.5], requires_grad=True)
    y = ember.tensor(x)
    assert y is not x and not y.requires_grad and y.tolist() == [1.5, 2.5] and y.dtype is ember.float32
    with ember.no_grad():
        y.add_(1.0)
    assert x.tolist() == [1.5, 2.5]                        # a copy, not a view
    z = ember.tensor(x, dtype=ember.float64)
    assert z.dtype is ember.float64 and z.tolist() == [1.5, 2.5]
    c = ember.tensor(x, device="cuda")
    assert c.device.type == "cuda" and c.tolist() == [1.5, 2.5] and not c.requires_grad
    same_place = ember.tensor(c)                           # without device=: the tensor's own (was the CPU)
    assert same_place.device.type == "cuda" and same_place.tolist() == [1.5, 2.5]
    assert ember.tensor(c, device="cpu").device.type == "cpu"
    d = ember.tensor(np.array([1.5, 2.5]), dtype=ember.int32, device="cuda")
    assert d.device.type == "cuda" and d.dtype is ember.int32 and d.tolist() == [1, 2]
    assert ember.tensor([1, 2], device="cuda").device.type == "cuda"


@pytest.mark.parametrize("data,exc,message", [
    ([[1, 2], [3]], ValueError, "tensor: ragged nested sequence: every list at one depth must have the same length"),
    (np.array(["a"]), TypeError, "tensor: can't convert np.ndarray of type <U1; the only supported types are: "
                                 "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool"),
    (np.array([1 + 2j]), TypeError, "tensor: can't convert np.ndarray of type complex128; the only supported "
                                    "types are: float64, float32, float16, bfloat16, int64, int32, int16, int8, "
                                    "uint8, and bool"),
    ([object()], TypeError, "tensor: could not infer dtype of the given data (ragged or mixed nested sequences are "
                            "not supported)"),
    ("abc", TypeError, "tensor: could not infer dtype of str"),
])
def test_tensor_refuses_what_it_cannot_convert(data, exc, message):
    from helpers import raises_exactly
    raises_exactly(lambda: ember.tensor(data), exc, message, located=False)


def test_tensor_from_dlpack_and_numpy_dtypes():
    t = torch.tensor([1.0, 2.0])
    e = ember.tensor(t)                                    # torch's tensor through DLPack: a copy
    t[0] = 5.0
    assert e.tolist() == [1.0, 2.0] and e.dtype is ember.float32
    assert ember.tensor(torch.tensor([1, 2]), dtype=ember.float64).dtype is ember.float64
    a = np.array([1, 2], dtype=np.int16)
    e = ember.tensor(a)
    a[0] = 9
    assert e.dtype is ember.int16 and e.tolist() == [1, 2]
    assert ember.as_tensor(a).tolist() == [9, 2] and ember.as_tensor(a, dtype=ember.float32).dtype is ember.float32


def test_arange_linspace_logspace_corners():
    from helpers import raises_exactly
    for args in [(0,), (2, 2), (3, 3, -1), (5, 0, -2), (0, 1, 0.25)]:
        same(ember.arange(*args), torch.arange(*args))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 3, 0)
    raises_exactly(lambda: ember.arange(0, 3, 0), ValueError, "arange: step must be nonzero", located=False)
    same(ember.linspace(0, 10, 6, dtype=ember.int64), torch.linspace(0, 10, 6, dtype=torch.int64))
    same(ember.logspace(0, 3, 4, dtype=ember.int64), torch.logspace(0, 3, 4, dtype=torch.int64))
    same(ember.linspace(0, 1, 5, dtype=ember.float32), torch.linspace(0, 1, 5, dtype=torch.float32))


def test_tensor_of_strings_and_pinned():
    from helpers import raises_exactly
    raises_exactly(lambda: ember.tensor(["a"]), TypeError, "tensor: could not infer dtype of list", located=False)
    t = ember.tensor([1.0, 2.0], pin_memory=True)
    assert t.tolist() == [1.0, 2.0] and t.dtype is ember.float32


def test_tensor_of_arrays_checks_their_dtype_and_copies():
    import ml_dtypes
    from helpers import raises_exactly
    b = ember.tensor(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
    assert b.dtype is ember.bfloat16 and b.float().tolist() == [1.5, -2.0]
    raises_exactly(lambda: ember.tensor(np.array([1], dtype=np.uint16)), TypeError,
                   "dtype uint16 is not supported by ember; supported: float16, bfloat16, float32, float64, int8, "
                   "int16, int32, int64, uint8, bool", located=False)
    t = torch.tensor([1.0, 2.0])
    e = ember.tensor(t, dtype=ember.float32)               # DLPack input of the asked dtype: still a copy
    t[0] = 5.0
    assert e.dtype is ember.float32 and e.tolist() == [1.0, 2.0]
    assert ember.tensor(torch.tensor([1, 2]), dtype=ember.float32).dtype is ember.float32


def test_as_tensor_shares_dlpack_memory_and_tensor_takes_mixed_lists():
    t = torch.tensor([1.0, 2.0])
    shared, shared_cast = ember.as_tensor(t), ember.as_tensor(t, dtype=ember.float32)
    t[0] = 5.0
    assert shared.tolist() == shared_cast.tolist() == [5.0, 2.0]   # as torch.as_tensor: no copy when it can
    assert ember.as_tensor(t, dtype=ember.float16).dtype is ember.float16
    assert ember.as_tensor(ember.ones(2), dtype=ember.float16).dtype is ember.float16
    e, w = ember.tensor([ember.tensor(1.5), 2.0]), torch.tensor([torch.tensor(1.5), 2.0])
    assert e.tolist() == w.tolist() and e.dtype is ember.float32


def test_ones_names_itself_when_out_of_memory_and_arrays_convert_to_a_dtype():
    with pytest.raises(ember.OutOfMemoryError, match=r"^ones: not enough memory"):
        ember.ones(1 << 40, 1 << 20)
    with pytest.raises(ember.OutOfMemoryError, match=r"^zeros: not enough memory"):
        ember.zeros(1 << 40, 1 << 20)
    e = ember.tensor(np.array([1, 2], dtype=np.uint16), dtype=ember.float32)   # converted, so not refused
    assert e.dtype is ember.float32 and e.tolist() == [1.0, 2.0]
