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
    else:
        raise AssertionError("numpy() of a cuda tensor did not raise")
    assert c.cpu().device.type == "cpu" and c.cuda() is c
    h = ember.tensor([1.0, 2.0], device="cuda", dtype=ember.float64)
    assert repr(h) == "tensor([1., 2.], device='cuda:0', dtype=ember.float64)", repr(h)
    print("OK")
""")


def test_cuda_paths_with_fake_cuda():
    env = dict(os.environ, EMBER_FAKE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", FAKE_CUDA], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stderr


def test_tensor_to_an_int_is_an_accelerator_index_as_torch(fake_cuda):
    # the DDP tutorial's single_gpu.py: model.to(gpu_id) and source.to(gpu_id) with gpu_id = 0
    x = ember.ones(2)
    assert x.to(0).device == ember.device("cuda:0") == ember.nn.Linear(2, 2).to(0).weight.device
    y = x.to(0, ember.float64)
    assert y.device == ember.device("cuda:0") and y.dtype is ember.float64
    assert x.to(0, dtype=ember.float16).dtype is ember.float16 and x.to(device=0).device.type == "cuda"


def test_cuda_unavailable_error_is_clear():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="cuda: no CUDA device is usable"):
        ember.ones(2).to("cuda")


def _device_cases():
    F = ember.nn.functional
    x = lambda *s: ember.randn(*s, device="cuda")    # noqa: E731  data on the device
    i = lambda *a: ember.tensor(list(a))              # noqa: E731  an index/target left on the CPU
    m = ember.zeros(4, 5).bool()                      # a mask left on the CPU
    return [
        ("cross_entropy", "target", lambda: F.cross_entropy(x(4, 5), i(0, 1, 2, 3))),
        ("cross_entropy", "target", lambda: F.cross_entropy(x(4, 5), ember.rand(4, 5))),
        ("cross_entropy", "weight", lambda: F.cross_entropy(x(4, 5), i(0, 1, 2, 3).cuda(), ember.ones(5))),
        ("nll_loss", "target", lambda: F.nll_loss(x(4, 5), i(0, 1, 2, 3))),
        ("multi_margin_loss", "target", lambda: F.multi_margin_loss(x(4, 5), i(0, 1, 2, 3))),
        ("mse_loss", "target", lambda: F.mse_loss(x(4, 5), ember.rand(4, 5))),
        ("binary_cross_entropy", "target", lambda: F.binary_cross_entropy(x(4).sigmoid(), ember.rand(4))),
        ("kl_div", "target", lambda: F.kl_div(x(4, 5), ember.rand(4, 5), reduction="batchmean")),
        ("margin_ranking_loss", "target", lambda: F.margin_ranking_loss(x(4), x(4), ember.ones(4))),
        ("embedding", "indices", lambda: F.embedding(i(0, 1), x(5, 3))),
        ("embedding", "indices", lambda: F.embedding(i(0, 1).cuda(), ember.randn(5, 3))),
        ("scaled_dot_product_attention", "attn_mask",
         lambda: F.scaled_dot_product_attention(x(1, 4, 8), x(1, 4, 8), x(1, 4, 8), attn_mask=ember.ones(4, 4).bool())),
        ("gather", "index", lambda: x(4, 5).gather(1, ember.zeros(4, 1, dtype=ember.int64))),
        ("take_along_dim", "indices", lambda: ember.take_along_dim(x(4, 5), ember.zeros(4, 1, dtype=ember.int64), 1)),
        ("take", "index", lambda: ember.take(x(4, 5), i(0, 3))),
        ("index_select", "index", lambda: x(4, 5).index_select(0, i(0, 3))),
        ("scatter", "index", lambda: x(4, 5).scatter(1, ember.zeros(4, 1, dtype=ember.int64), 1.0)),
        ("scatter", "index", lambda: x(4, 5).scatter_(1, ember.zeros(4, 1, dtype=ember.int64), 1.0)),
        ("scatter_add", "index", lambda: x(4, 5).scatter_add(1, ember.zeros(4, 1, dtype=ember.int64), x(4, 1))),
        ("index_add", "index", lambda: x(4, 5).index_add(0, i(0, 3), x(2, 5))),
        ("index_add", "source", lambda: x(4, 5).index_add(0, i(0, 3).cuda(), ember.ones(2, 5))),
        ("index_fill", "index", lambda: x(4, 5).index_fill(0, i(0, 3), 1.0)),
        ("masked_fill", "mask", lambda: x(4, 5).masked_fill(m, 0.0)),
        ("masked_fill", "mask", lambda: x(4, 5).masked_fill_(m, float("-inf"))),
        ("masked_select", "mask", lambda: x(4, 5).masked_select(m)),
        ("masked_scatter", "mask", lambda: x(4, 5).masked_scatter(m, x(20))),
        ("where", "condition", lambda: ember.where(m, x(4, 5), x(4, 5))),
        ("bucketize", "boundaries", lambda: ember.bucketize(x(4), ember.tensor([0.0, 1.0]))),
        ("searchsorted", "values", lambda: ember.searchsorted(ember.tensor([0.0, 1.0]).cuda(), ember.tensor([0.5]))),
    ]


@pytest.mark.cuda
@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device (or EMBER_FAKE_CUDA=1)")
@pytest.mark.parametrize("op,arg,fn", _device_cases(), ids=[f"{c[0]}-{c[1]}-{n}" for n, c in enumerate(_device_cases())])
def test_index_target_and_mask_must_be_on_the_data_device(op, arg, fn):
    """As torch on CUDA: an index, target, mask or condition left on the CPU is an error naming the op,
    the argument and both devices, at the user's line (indexing x[i] with CPU indices stays allowed)."""
    with pytest.raises(RuntimeError) as e:
        fn()
    msg = str(e.value)
    assert msg.startswith(f"{op}: expected all tensors to be on the same device, but found at least two "
                          f"devices"), msg
    assert "cuda:0" in msg and "cpu" in msg and f" {arg} (" in msg, msg
    assert msg.endswith(f"(at test_device.py:{fn.__code__.co_firstlineno})"), msg


@pytest.mark.cuda
@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device (or EMBER_FAKE_CUDA=1)")
def test_cpu_indices_for_indexing_and_cpu_scalar_condition_stay_allowed():
    x = ember.arange(6.0).reshape(2, 3).cuda()
    idx = ember.tensor([1, 0])
    assert x[idx].device.type == "cuda" and x[idx].cpu().tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert ember.where(ember.tensor(True), x, x).device.type == "cuda"
    two = ember.tensor(2.0)                                   # a CPU scalar tensor joins from either side
    assert (two * x).device.type == "cuda" and (x * two).device.type == "cuda"
    assert x.masked_fill(x > 2, ember.tensor(0.0)).cpu().tolist() == [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]
    assert ember.where(x > 2, two, x).device.type == "cuda"


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


def test_set_default_device_moves_factory_functions_and_is_restored():
    from helpers import raises_exactly
    assert ember.get_default_device() == ember.device("cpu")
    try:
        ember.set_default_device("meta")
        assert ember.get_default_device() is ember.device("meta")
        made = [ember.zeros(2), ember.ones(2, 3), ember.full((2,), 1.5), ember.empty(1), ember.tensor([1.0, 2.0]),
                ember.arange(3), ember.linspace(0, 1, 4), ember.eye(2), ember.rand(2), ember.randn(2),
                ember.hann_window(4)]
        assert all(t.device.type == "meta" for t in made), [t.device for t in made]
        assert ember.zeros(2).shape == (2,) and ember.zeros(2, device="cpu").device.type == "cpu"
        assert ember.zeros_like(ember.zeros(2, device="cpu")).device.type == "cpu"   # *_like keeps its input's
        ember.set_default_device("cpu")
        assert ember.zeros(2).device.type == "cpu" and ember.zeros(2).tolist() == [0.0, 0.0]
        ember.set_default_device(ember.device("meta"))
        assert ember.zeros(2).device.type == "meta"
    finally:
        ember.set_default_device(None)
    assert ember.get_default_device() is ember.device("cpu") and ember.zeros(2).device.type == "cpu"
    raises_exactly(lambda: ember.set_default_device(1.5), TypeError,
                   "set_default_device: expected a device, a string or None, got float 1.5", located=False)
    with pytest.raises(ValueError, match="unknown device type 'foo'"):
        ember.set_default_device("foo")
    assert ember.get_default_device() is ember.device("cpu")


def test_device_as_a_context_manager_sets_the_factory_default():
    # torch: `with torch.device("meta"): model = Net()` builds a model without memory (then to_empty)
    import torch
    with torch.device("meta"):
        t = torch.nn.Linear(1000, 1000)
    with ember.device("meta") as d:
        e = ember.nn.Linear(1000, 1000)
        assert d is ember.device("meta") and ember.get_default_device() == "meta"
        with ember.device("cpu"):
            assert ember.zeros(1).device == "cpu"
        assert ember.zeros(1).device == "meta"
    assert e.weight.is_meta and t.weight.is_meta and e.weight.shape == tuple(t.weight.shape)
    assert ember.get_default_device() == "cpu" and ember.zeros(1).device == "cpu"
    try:
        with ember.device("meta"):
            raise KeyError("inside")
    except KeyError:
        pass
    assert ember.get_default_device() == "cpu"
    e = e.to_empty(device="cpu")
    assert e.weight.device == "cpu" and e(ember.zeros(2, 1000)).shape == (2, 1000)
