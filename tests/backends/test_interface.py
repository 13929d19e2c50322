"""ember/backends/: every backend (cpu, meta, cuda through the fake device) has the same interface:
xp, is_available, allocate, from_host/to_host, copy, synchronize, stream, kernels and run."""
import numpy as np
import pytest

import ember
from ember import backends
from ember.backends.meta import MetaArray, MetaDataError
from ember.ops.primitives import Exp

INTERFACE = ("xp", "is_available", "allocate", "from_host", "to_device", "to_host", "copy", "synchronize",
             "stream", "kernels", "run", "pin_memory", "is_pinned", "erf")


@pytest.fixture(params=["cpu", "meta", "cuda"])
def kind(request):
    if request.param == "cuda":
        request.getfixturevalue("fake_cuda")
    return request.param


def test_every_backend_has_the_interface(kind):
    b = backends.get(kind)
    missing = [name for name in INTERFACE if not hasattr(b, name)]
    assert not missing, f"{kind}: missing {missing}"
    assert b.is_available()
    assert isinstance(b.kernels, dict)


def test_allocate_from_host_to_host_copy_roundtrip(kind):
    b, dev = backends.get(kind), ember.device(kind)
    a = b.allocate((2, 3), np.float32, dev)
    assert tuple(a.shape) == (2, 3) and a.dtype == np.float32
    assert backends.backend_of(a) is b
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = b.from_host(host, dev)
    assert b.to_device is b.from_host
    assert backends.backend_of(d) is b
    if kind == "meta":
        assert isinstance(d, MetaArray) and d.shape == (2, 3)
        with pytest.raises(NotImplementedError, match="no data"):
            b.to_host(d)
        assert isinstance(b.copy(d, ember.device("meta")), MetaArray)
        with pytest.raises(NotImplementedError, match="no data"):
            b.copy(d, ember.device("cpu"))
        return
    np.testing.assert_array_equal(b.to_host(d), host)
    back = b.copy(d, ember.device("cpu"))           # to the host: a new NumPy array
    assert isinstance(back, np.ndarray) and back is not host
    np.testing.assert_array_equal(back, host)
    same = b.copy(d, dev)                            # on the same device: a new array
    assert same is not d and backends.backend_of(same) is b
    np.testing.assert_array_equal(b.to_host(same), host)
    m = b.copy(d, ember.device("meta"))
    assert isinstance(m, MetaArray) and m.shape == (2, 3)


def test_cpu_to_fake_cuda_copy(fake_cuda):
    from ember.backends.fake_cuda import FakeArray
    host = np.ones(4, np.float32)
    d = backends.copy(host, ember.device("cuda"))
    assert isinstance(d, FakeArray)
    np.testing.assert_array_equal(backends.get("cuda").to_host(d), host)


def test_synchronize_and_stream(kind):
    b = backends.get(kind)
    b.synchronize()
    b.synchronize(ember.device(kind))
    with b.stream():
        pass


def test_run_uses_a_registered_kernel_then_the_forward(kind):
    b, dev = backends.get(kind), ember.device(kind)
    x = ember.ones(3, device=dev)
    calls = []

    def kernel(node, a):
        calls.append(type(node))
        return b.from_host(np.full(3, 7.0, np.float32), dev)

    b.kernels[Exp] = kernel
    try:
        y = ember.exp(x)                              # through Primitive.apply
        z = b.run(Exp(), [x._data])                   # through the interface
    finally:
        del b.kernels[Exp]
    if kind == "meta":   # apply never runs anything on meta (infer); the interface's run does use it
        assert calls == [Exp]
        assert y.shape == (3,) and z.shape == (3,)
    else:
        assert calls == [Exp, Exp]
        np.testing.assert_array_equal(y.cpu().numpy(), np.full(3, 7.0, np.float32))
        np.testing.assert_array_equal(b.to_host(z), np.full(3, 7.0, np.float32))
    assert Exp not in b.kernels
    w = ember.exp(x)                                  # unregistered: the forward again
    if kind != "meta":
        np.testing.assert_allclose(w.cpu().numpy(), np.full(3, np.e, np.float32), rtol=1e-6)
        np.testing.assert_allclose(b.to_host(b.run(Exp(), [x._data])), np.full(3, np.e), rtol=1e-6)
    else:
        assert isinstance(b.run(Exp(), [x._data]), MetaArray)


def test_meta_xp_raises():
    with pytest.raises(MetaDataError):
        backends.get("meta").xp.exp(MetaArray((2,), np.float32))


def test_cudnn_flags_are_torchs_and_change_nothing():
    # `torch.backends.cudnn.benchmark = True` is in most training scripts: it must port. Ember calls no
    # cuDNN, so the flags are kept (torch's names and defaults) and read by nothing.
    import torch
    cd = ember.backends.cudnn
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit"):
        assert getattr(cd, name) == getattr(torch.backends.cudnn, name), name
    old = cd.benchmark
    try:
        cd.benchmark = True
        assert ember.backends.cudnn.benchmark is True
    finally:
        cd.benchmark = old
    assert cd.is_available() is False and cd.version() is None


def test_cuda_matmul_flags_and_mps_queries_are_torchs():
    # nanoGPT sets torch.backends.cuda.matmul.allow_tf32; device pickers ask torch.backends.mps
    import sys
    import torch
    m = ember.backends.cuda.matmul
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(m, name) == getattr(torch.backends.cuda.matmul, name), name
    assert "cupy" not in sys.modules or ember.cuda.is_available()   # the flags cost no CuPy import
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
