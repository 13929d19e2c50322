"""ember.accelerator (torch.accelerator) and Tensor's is_* predicates, against torch on CPU; the CUDA side
through EMBER_FAKE_CUDA=1 in a subprocess."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import ember

DEVICE_PROPS = ["is_cpu", "is_cuda", "is_meta", "is_xpu", "is_mps", "is_mtia", "is_ipu", "is_maia", "is_vulkan",
                "is_xla", "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_leaf"]


@pytest.mark.parametrize("name", DEVICE_PROPS)
def test_device_and_layout_predicates_match_torch(name):
    t, e = torch.ones(2, 3), ember.ones(2, 3)
    assert isinstance(getattr(e, name), bool) and getattr(e, name) == getattr(t, name)


def test_is_meta_follows_the_device_type():
    class FakeMeta:
        type, index = "meta", None
    e = ember.ones(2)
    assert not e.is_meta
    e._device = FakeMeta()   # a stand-in until Ember has a meta device
    assert e.is_meta and not e.is_cpu and not e.is_cuda


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int64", "int8", "uint8", "bool"])
def test_is_signed_matches_torch(dtype):
    assert ember.ones(2, dtype=getattr(ember, dtype)).is_signed() == torch.ones(2, dtype=getattr(torch, dtype)).is_signed()


def test_value_and_memory_predicates_match_torch():
    for lib in (torch, ember):
        x = lib.ones(4)
        assert x.is_same_size(lib.zeros(4)) and not x.is_same_size(lib.zeros(2, 2))
        assert x.is_set_to(x) and x.is_set_to(x[:]) and not x.is_set_to(x[1:]) and not x.is_set_to(x.clone())
        assert not x.is_complex() and not x.is_conj() and not x.is_neg() and not x.is_shared()
        assert not x.is_distributed()
        assert lib.ones(()).is_nonzero() and not lib.tensor([0.0]).is_nonzero()
        with pytest.raises(RuntimeError, match="more than one value"):
            x.is_nonzero()
        with pytest.raises(RuntimeError, match="no values"):
            lib.ones(0).is_nonzero()
        with pytest.raises(RuntimeError, match="is_coalesced expected sparse"):
            x.is_coalesced()


def test_accelerator_without_cuda_matches_torch():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    A, T = ember.accelerator, torch.accelerator
    assert A.is_available() is T.is_available() is False
    assert A.current_accelerator() is None and T.current_accelerator() is None
    assert A.device_count() == T.device_count() == 0
    for fn in ("current_device_index", "current_device_idx", "synchronize"):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            getattr(A, fn)()
    for fn in ("set_device_index", "set_device_idx"):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            getattr(A, fn)(0)
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        with A.device_index(0):
            pass
    with A.device_index(None):   # no switch: fine without a device, as torch
        pass


def test_accelerator_import_does_not_load_cupy():
    code = "import sys, ember; ember.accelerator.is_available(); print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


FAKE = textwrap.dedent("""
    import ember, pytest
    A = ember.accelerator
    assert A.is_available() and A.current_accelerator() == ember.device("cuda")
    assert A.device_count() == ember.cuda.device_count() >= 1
    assert A.current_device_index() == A.current_device_idx() == 0
    A.set_device_index(0); A.set_device_idx("cuda:0"); A.set_device_index(ember.device("cuda", 0))
    A.synchronize(); A.synchronize(0)
    with A.device_index(0):
        assert A.current_device_index() == 0
    with pytest.raises(RuntimeError, match="device index 99 is out of range"):
        A.set_device_index(99)
    with pytest.raises(ValueError, match="not the current accelerator"):
        A.set_device_index("cpu")
    x = ember.ones(2, device=A.current_accelerator())
    assert x.is_cuda and not x.is_cpu and not x.is_meta
    print("OK")
""")


def test_accelerator_with_fake_cuda():
    env = dict(os.environ, EMBER_FAKE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", FAKE], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stderr
