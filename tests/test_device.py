"""ember/_device.py and the backend registry; CUDA code paths through EMBER_FAKE_CUDA=1 in a subprocess."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember


def test_device_objects():
    assert ember.device("cpu") is ember.device("cpu")
    d = ember.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert repr(ember.device("cpu")) == "device(type='cpu')"
    assert repr(d) == "device(type='cuda', index=1)"
    assert ember.device("cuda") == "cuda:0" and ember.device("cpu") == "cpu"
    with pytest.raises(ValueError, match="unknown device type"):
        ember.device("tpu")
    with pytest.raises(ValueError):
        ember.device("cuda:x")


def test_cpu_tensor_device_and_to_cpu():
    x = ember.ones(2)
    assert x.device == ember.device("cpu") and not x.is_cuda
    assert x.to("cpu") is x and x.cpu() is x and x.to(ember.device("cpu")) is x


def test_import_does_not_load_torch_or_cupy():
    code = "import sys, ember; print(sorted(m for m in ('torch', 'cupy', 'mpi4py', 'onnx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FAKE_CUDA = textwrap.dedent("""
    import ember, pytest
    assert ember.cuda.is_available()
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cuda")
    assert y.device == ember.device("cuda:0") and y.is_cuda and y.requires_grad
    z = (y * y).sum()
    assert z.device.type == "cuda"
    z.backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 4.0]
    c = ember.zeros(2, device="cuda")
    assert c.device.type == "cuda" and ember.randn(3, device="cuda").device.type == "cuda"
    assert (c + ember.tensor(1.0)).device.type == "cuda"      # a CPU 0-d tensor joins any device
    try:
        c + ember.ones(2)
    except RuntimeError as e:
        msg = str(e)
        assert "add:" in msg and "same device" in msg and "cuda:0" in msg and "cpu" in msg, msg
    else:
        raise AssertionError("no device mismatch error")
    try:
        ember.mm(ember.ones(2, 2, device="cuda"), ember.ones(2, 2))
    except RuntimeError as e:
        assert "mm:" in str(e) and "(2, 2) float32 cuda:0" in str(e) and "(2, 2) float32 cpu" in str(e), str(e)
    else:
        raise AssertionError("no device mismatch error in mm")
    try:
        c.numpy()
    except TypeError as e:
        assert "cpu()" in str(e)
    assert c.cpu().device.type == "cpu" and c.cuda() is c
    h = ember.tensor([1.0, 2.0], device="cuda", dtype=ember.float64)
    assert repr(h) == "tensor([1., 2.], device='cuda:0', dtype=ember.float64)", repr(h)
    print("OK")
""")


def test_cuda_paths_with_fake_cuda():
    env = dict(os.environ, EMBER_FAKE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", FAKE_CUDA], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stderr


def test_cuda_unavailable_error_is_clear():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="cuda: no CUDA device is usable"):
        ember.ones(2).to("cuda")


def test_cuda_helpers_without_a_device():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert ember.cuda.device_count() == 0
    assert ember.cuda.synchronize() is None          # nothing to wait for
    ember.manual_seed(5)                             # one generator serves every device: the seeds agree
    a = ember.rand(4)
    ember.cuda.manual_seed(5)
    assert ember.rand(4).tolist() == a.tolist()
    ember.cuda.manual_seed_all(5)
    assert ember.rand(4).tolist() == a.tolist()
