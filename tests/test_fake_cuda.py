"""ember/backends/fake_cuda.py: the fake CUDA device refuses host memory where CuPy does, and Ember's
conversions (print, save, .numpy(), .tolist(), .item()) of its tensors go through the backend."""
import io

import numpy as np
import pytest

import ember
from ember.backends.fake_cuda import FakeArray, xp

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"


def dev(a):
    return xp.asarray(np.asarray(a))


def test_no_implicit_conversion_to_numpy():
    a = dev([1.0, 2.0])
    assert not isinstance(a, np.ndarray)
    for convert in (np.asarray, np.array, lambda v: np.asarray(v, dtype=np.float32), np.ascontiguousarray):
        with pytest.raises(TypeError, match=IMPLICIT):
            convert(a)


@pytest.mark.parametrize("call", [
    lambda a: np.exp(a), lambda a: np.sum(a), lambda a: np.where(a > 0, a, 0), lambda a: np.add.at(a, [0], 1.0),
    lambda a: np.concatenate([a, a]), lambda a: np.unique(a), lambda a: np.zeros_like(a),
], ids=["ufunc", "sum", "where", "add.at", "concatenate", "unique", "zeros_like"])
def test_numpy_functions_refuse_device_arrays(call):
    with pytest.raises(TypeError):
        call(dev([1.0, 2.0]))


@pytest.mark.parametrize("call", [
    lambda a, h: a + h, lambda a, h: h + a, lambda a, h: a * h, lambda a, h: a == h, lambda a, h: h < a,
    lambda a, h: a @ h, lambda a, h: a[h.astype(np.int64)], lambda a, h: a.__setitem__(slice(None), h),
    lambda a, h: xp.where(h > 0, a, 0), lambda a, h: xp.maximum(a, h), lambda a, h: xp.concatenate([a, h]),
], ids=["add", "radd", "mul", "eq", "rlt", "matmul", "index", "setitem", "xp.where", "xp.maximum", "xp.cat"])
def test_mixing_with_host_arrays_raises_as_cupy(call):
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        call(dev([1.0, 2.0]), np.array([1.0, 0.0]))


def test_scalars_and_device_arrays_mix():
    a = dev([1.0, 2.0])
    for out in (a + 1, 2.0 * a, np.float32(2) * a, a ** np.int64(2), -a, a > 1, a[dev([1, 0])], a[[1, 0]],
                a[None, ...], a[np.int64(1)]):
        assert isinstance(out, FakeArray)
    assert (a * 2).get().tolist() == [2.0, 4.0]
    a[dev([0])] = 5.0
    a += 1
    assert a.get().tolist() == [6.0, 3.0]


def test_reductions_give_0d_device_arrays_and_size_1_converts():
    a = dev([[1.0, 2.0], [3.0, 4.0]])
    s = a.sum()
    assert isinstance(s, FakeArray) and s.shape == () and isinstance(xp.max(a), FakeArray)
    assert float(s) == 10.0 and int(a.max()) == 4 and bool(a.all()) and s.item() == 10.0
    with pytest.raises(TypeError):
        float(a)
    with pytest.raises(TypeError):
        bool(a)


def test_attributes_like_cupy():
    a = dev(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert (a.shape, a.dtype, a.ndim, a.size, a.nbytes, a.itemsize, a.strides) == ((2, 3), np.float32, 2, 6, 24, 4,
                                                                                  (12, 4))
    assert a.flags.c_contiguous and not a.T.flags.c_contiguous and a.flags.owndata
    with pytest.raises(AttributeError):
        a.flags.writeable
    with pytest.raises(AttributeError):
        a.ctypes
    assert isinstance(a.T, FakeArray) and a.reshape(3, 2).shape == (3, 2) and a.astype(np.int64).dtype == np.int64
    assert a.copy().get().tolist() == a.get().tolist() and len(a) == 2 and [r.shape for r in a] == [(3,), (3,)]
    assert isinstance(a.get(), np.ndarray) and isinstance(xp.asnumpy(a), np.ndarray)
    assert a.device.id == 0
    b = a.copy()
    b.fill(7)
    assert b.get().max() == 7


def test_array_module_namespace():
    host = np.array([1.0, 2.0])
    a = xp.asarray(host)
    host[0] = 9.0
    assert a.get().tolist() == [1.0, 2.0]                              # copied to the device
    assert xp.asarray(a) is not None and xp.array([a, a]).shape == (2, 2)
    assert xp.float32 is np.float32 and xp.dtype is np.dtype and xp.finfo is np.finfo and xp.inf == np.inf
    assert xp.ndarray is FakeArray and xp.newaxis is None and isinstance(xp.linalg.norm(a), FakeArray)
    assert isinstance(xp.fft.fft(a), FakeArray) and isinstance(xp.add.reduce(a), FakeArray)
    assert isinstance(xp.indices((2, 3)), FakeArray)
    with pytest.raises(TypeError, match="sparse"):
        xp.indices((2, 3), sparse=True)
    with pytest.raises(AttributeError):
        xp.random.default_rng
    q, r = xp.linalg.qr(dev(np.eye(3)))
    assert isinstance(q, FakeArray) and isinstance(r, FakeArray)
    assert ember.backends.array_module(a) is xp


def test_ember_conversions_of_fake_cuda_tensors(fake_cuda):
    t = ember.tensor([[1.5, 2.0]], device="cuda")
    assert isinstance(t._data, FakeArray)
    assert "device='cuda:0'" in repr(t)
    assert t.tolist() == [[1.5, 2.0]] and t[0, 0].item() == 1.5 and float(t[0, 0]) == 1.5
    assert isinstance(t.cpu()._data, np.ndarray) and t.numpy(force=True).tolist() == [[1.5, 2.0]]
    assert np.asarray(t).tolist() == [[1.5, 2.0]]          # Tensor.__array__ copies through .cpu()
    buf = io.BytesIO()
    ember.save({"w": t}, buf)
    buf.seek(0)
    back = ember.load(buf)["w"]
    assert back.device == t.device and isinstance(back._data, FakeArray) and back.tolist() == t.tolist()
    assert ember.load(io.BytesIO(buf.getvalue()), map_location="cpu")["w"].device.type == "cpu"
