"""The compiled CPU kernels (ember/backends/cpu_kernels.py, numba) behind GELU, softmax, log_softmax and
LayerNorm: the same values as torch with the kernels on and off, on shapes the W5 tests do not reach, and
proof that the kernel path is the one taken."""
import numpy as np
import pytest

from helpers import check_op

import ember
import ember.nn.functional as F
from ember.backends import cpu, cpu_kernels
from ember.ops import layers


@pytest.fixture(params=["kernels", "numpy"])
def kernels(request):
    """Each test twice: with the compiled kernels (skipped without numba) and with the NumPy forwards."""
    if request.param == "kernels":
        pytest.importorskip("numba", reason="the CPU kernels need numba (pip install ember[jit])")
        cpu_kernels.enable()
    else:
        cpu_kernels.disable()
    yield request.param
    cpu_kernels.enable()


@pytest.fixture
def calls(monkeypatch):
    """Counts calls of each compiled loop (the kernel path was taken, not silently the NumPy forward)."""
    pytest.importorskip("numba", reason="the CPU kernels need numba (pip install ember[jit])")
    cpu_kernels.enable()
    from ember.backends import _numba_kernels as K
    counts = {}
    for name in ("gelu", "gelu_grad", "softmax", "softmax_grad", "log_softmax", "layer_norm",
                 "layer_norm_grad_blocks", "batch_norm_ncs", "batch_norm_mc", "batch_norm_grad_ncs",
                 "batch_norm_grad_mc", "embedding_grad"):
        def counted(*args, _name=name, _fn=getattr(K, name)):
            counts[_name] = counts.get(_name, 0) + 1
            return _fn(*args)
        monkeypatch.setattr(K, name, counted)
    return counts


def test_registered_for_the_fused_layer_primitives():
    for cls in (layers.Gelu, layers.GeluGrad, layers.Softmax, layers.SoftmaxGrad, layers.LogSoftmax,
                layers.Normalize, layers.LayerNorm, layers.LayerNormGrad, layers.BatchNorm, layers.BatchNormGrad,
                layers.MaxPool, layers.MaxPoolGrad, layers.MaxPoolIndex, layers.EmbeddingGrad, layers.Linear,
                ember.ops.primitives.Add):
        assert cls in cpu.kernels and cls.cpu_kernel is not None
    assert ember.ops.primitives.Mul.cpu_kernel is None   # the rest keep the plain forward call


def test_the_kernel_path_is_taken(calls):
    x = ember.randn(4, 6, 32, requires_grad=True)
    w, b = ember.ones(32, requires_grad=True), ember.zeros(32, requires_grad=True)
    y = F.layer_norm(F.gelu(x), (32,), w, b)
    (F.softmax(y, -1) * 2 + F.log_softmax(y, -1)).sum().backward()
    assert calls == {"gelu": 1, "gelu_grad": 1, "softmax": 1, "softmax_grad": 1, "log_softmax": 1,
                     "layer_norm": 1, "layer_norm_grad_blocks": 1}
    F.layer_norm(x, (6, 32))   # Normalize: no affine part
    assert calls["layer_norm"] == 2


def test_float64_and_other_axes_run_the_numpy_forward(calls):
    F.gelu(ember.randn(3, 4, dtype=ember.float64))
    F.softmax(ember.randn(3, 4), 0)
    assert calls == {}


@pytest.mark.parametrize("shape", [(7, 1), (1,), (), (3, 0), (2, 1, 70001), (5, 33)])
def test_gelu_shapes(kernels, shape):
    check_op(lambda L, x: L.nn.functional.gelu(x), shape, dtypes=("float32", "float16", "bfloat16"),
             low=-6, high=6)


@pytest.mark.parametrize("shape", [(7, 1), (1,), (3, 70001), (2, 3, 5), (4, 2, 65)])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_shapes(kernels, fn, shape):
    check_op(lambda L, x: getattr(L.nn.functional, fn)(x, -1), shape, dtypes=("float32", "float16", "bfloat16"),
             low=-20, high=20)


@pytest.mark.parametrize("shape,n", [((7, 1), 1), ((1,), 1), ((3, 70001), 1), ((2, 3, 5), 2), ((4, 2, 64), 1)])
def test_layer_norm_shapes(kernels, shape, n):
    check_op(lambda L, x, w, b: L.nn.functional.layer_norm(x, shape[-n:], w, b),
             shape, shape[-n:], shape[-n:], dtypes=("float32", "float16", "bfloat16"), grad_atol=1e-3)
    check_op(lambda L, x: L.nn.functional.layer_norm(x, shape[-n:]), shape, dtypes=("float32",),
             grad_atol=1e-3)


def test_non_contiguous_inputs(kernels):
    check_op(lambda L, x: L.nn.functional.gelu(x.transpose(0, 1)), (5, 9))
    check_op(lambda L, x: L.nn.functional.softmax(x.transpose(0, 1)[::2], -1), (6, 8))
    check_op(lambda L, x, w, b: L.nn.functional.layer_norm(x.transpose(0, 1), (4,), w, b), (4, 3), (4,), (4,),
             grad_atol=1e-3)
    # a broadcast (zero-stride) gradient reaches GeluGrad / LayerNormGrad
    check_op(lambda L, x: L.nn.functional.gelu(x).sum(), (3, 4))
    check_op(lambda L, x: L.nn.functional.layer_norm(x, (4,)).sum(), (3, 4), grad_atol=1e-3)


def test_masked_and_special_values(kernels):
    x = np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf] * 4, [np.nan, 0, 0, 0], [1e30, 1e30, -1e30, 0]],
                 np.float32)
    import torch
    for name in ("softmax", "log_softmax"):
        want = getattr(torch.nn.functional, name)(torch.from_numpy(x), -1).numpy()
        got = getattr(F, name)(ember.tensor(x), -1).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)
    assert F.softmax(ember.tensor(x), -1).numpy()[0, 1] == 0.0   # a masked position is exactly 0
    g = np.array([np.nan, -np.inf, 40.0, -40.0, 0.0], np.float32)   # (torch: gelu(inf) is nan)
    want = torch.nn.functional.gelu(torch.from_numpy(g)).numpy()
    np.testing.assert_allclose(F.gelu(ember.tensor(g)).numpy(), want, rtol=1e-6, equal_nan=True)


def test_gelu_and_exp_accuracy_over_the_float32_range(kernels):
    import torch
    x = np.linspace(-100, 100, 200001, dtype=np.float32)
    want = torch.nn.functional.gelu(torch.from_numpy(x).double()).numpy()
    np.testing.assert_allclose(F.gelu(ember.tensor(x)).numpy(), want, rtol=2e-6, atol=1e-6)
    t = ember.tensor(x, requires_grad=True)
    F.gelu(t).backward(ember.ones_like(t))
    tt = torch.from_numpy(x).double().requires_grad_()
    torch.nn.functional.gelu(tt).backward(torch.ones_like(tt))
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=2e-6, atol=1e-6)
    # softmax over a wide row exercises exp from -200 to 0
    np.testing.assert_allclose(F.softmax(ember.tensor(x[None]), -1).numpy(),
                               torch.softmax(torch.from_numpy(x[None]).double(), -1).numpy(), rtol=1e-5, atol=1e-30)


def test_without_numba_the_numpy_forwards_run(monkeypatch):
    """Where numba cannot be imported the first kernel call unregisters them all and computes in NumPy."""
    import sys
    monkeypatch.setattr(cpu_kernels, "_K", None)
    import ember.backends
    monkeypatch.setitem(sys.modules, "numba", None)   # `import numba` fails, as where it is not installed
    monkeypatch.delitem(sys.modules, "ember.backends._numba_kernels", raising=False)
    monkeypatch.delattr(ember.backends, "_numba_kernels", raising=False)
    try:
        cpu_kernels.enable()
        x = ember.tensor(np.linspace(-3, 3, 12, dtype=np.float32))
        y = F.gelu(x)
        assert not cpu_kernels.enabled() and layers.Gelu.cpu_kernel is None
        cpu_kernels.disable()
        np.testing.assert_array_equal(y.numpy(), F.gelu(x).numpy())
    finally:
        monkeypatch.undo()
        cpu_kernels.enable()


def test_import_ember_does_not_import_numba():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import ember, sys; ember.randn(3) + 1; "
                          "print('numba' in sys.modules)"], capture_output=True, text=True, timeout=280)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("opt,kw", [("Adam", {}), ("AdamW", {}), ("Adam", {"weight_decay": 0.1, "amsgrad": True}),
                                    ("Adam", {"maximize": True}), ("AdamW", {"amsgrad": True, "betas": (0.3, 0.9)}),
                                    ("Adam", {"weight_decay": 1.0}), ("Adam", {"betas": (0.5, 0.999)})])
def test_adam_step_kernel_is_bit_identical_to_the_numpy_step(calls, monkeypatch, opt, kw):
    from ember.backends import _numba_kernels as K
    n = []
    orig = K.adam_step
    monkeypatch.setattr(K, "adam_step", lambda *a: (n.append(1), orig(*a)))

    def train(on):
        cpu_kernels.enable() if on else cpu_kernels.disable()
        ember.manual_seed(0)
        ps = [ember.randn(37, 5, requires_grad=True), ember.randn(3, requires_grad=True)]
        o = getattr(ember.optim, opt)(ps, lr=1e-2, **kw)
        for i in range(4):
            o.zero_grad()
            sum((p * p * (i + 1) + p).sum() for p in ps).backward()
            o.step()
        return [p.detach().numpy().copy() for p in ps] + [o.state[p]["exp_avg_sq"].numpy().copy() for p in ps]
    want = train(False)
    assert n == []
    got = train(True)
    assert len(n) == 8   # 4 steps x 2 parameters through the kernel
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("opt", ["Adam", "AdamW"])
def test_adam_step_kernel_scalars_per_group_and_rate(calls, opt):
    """The kernel computes its bias corrections once per (step, lr, hyper-parameters) and reuses them for
    the parameters at that step: groups of other rates, decays, betas or eps at the same step, and a rate
    a scheduler changed, each get their own (bit for bit the NumPy step)."""
    def train(on):
        cpu_kernels.enable() if on else cpu_kernels.disable()
        ember.manual_seed(0)
        a, b, c = (ember.randn(4, 3, requires_grad=True) for _ in range(3))
        o = getattr(ember.optim, opt)([{"params": [a]}, {"params": [b], "lr": 3e-3, "weight_decay": 0.5},
                                       {"params": [c], "betas": (0.5, 0.9), "eps": 1e-3}], lr=1e-2)
        sched = ember.optim.lr_scheduler.StepLR(o, 2, gamma=0.1)
        for i in range(5):
            o.zero_grad()
            sum((p * p * (i + 1) + p).sum() for p in (a, b, c)).backward()
            o.step()
            sched.step()
        return [p.detach().numpy().copy() for p in (a, b, c)]
    want = train(False)
    got = train(True)
    cpu_kernels.enable()
    for x, y in zip(want, got):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("shape,cl", [((8, 5, 7, 9), False), ((8, 5, 7, 9), True), ((3, 4), False),
                                      ((6, 3, 11), False), ((2, 2, 1, 1), False), ((2, 16, 4, 4), True)])
def test_batch_norm_layouts(kernels, shape, cl):
    """Training-mode batch norm, values and the gradients of x, weight and bias, NCHW and channels-last
    (the layout the convolutions return), against torch; the running statistics too."""
    lay = _channels_last if cl else (lambda x: x)
    check_op(lambda L, x, w, b: L.nn.functional.batch_norm(lay(x * 3 + 2), None, None, w, b, training=True),
             shape, shape[1:2], shape[1:2], dtypes=("float32",), grad_atol=1e-3, grad_rtol=1e-3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32) * 3 + 2
    bn = ember.nn.BatchNorm2d(shape[1]) if len(shape) == 4 else ember.nn.BatchNorm1d(shape[1])
    bn(lay(ember.tensor(x)))
    axes = (0,) + tuple(range(2, len(shape)))
    n = x.size // shape[1]
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean(axis=axes), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x.var(axis=axes) * n / max(n - 1, 1),
                               rtol=1e-5)


def test_the_batch_norm_kernels_are_taken(calls):
    x = ember.randn(4, 3, 5, 5, requires_grad=True)
    bn = ember.nn.BatchNorm2d(3)
    bn(x).sum().backward()
    assert calls == {"batch_norm_ncs": 1, "batch_norm_grad_ncs": 1}
    y = bn(_channels_last(x))
    (y * ember.randn(4, 3, 5, 5)).sum().backward()     # a gradient in NCHW for a channels-last x: copied
    assert calls == {"batch_norm_ncs": 1, "batch_norm_grad_ncs": 1, "batch_norm_mc": 1,
                     "batch_norm_grad_mc": 1}
    bn.double()(x.double())                            # float64: the NumPy forward
    assert calls["batch_norm_ncs"] == 1
# ---- 2-D max pooling: MaxPool, MaxPoolGrad, MaxPoolIndex (channels-last, >= 8 channels) ------------

def _channels_last(x):
    """x (N, C, H, W) laid out channels-last in memory, as Conv leaves its output (what the pooling
    loops take); the same code for torch and Ember."""
    return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


# small integers: many ties in every window, so the gradient's first-maximum rule (torch's) is exercised
TIES = np.round(np.random.default_rng(3).standard_normal((2, 16, 9, 10)) * 1.5)
POOLS = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=1, padding=1),
         dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)), dict(kernel_size=2, ceil_mode=True),
         dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 0))]


@pytest.mark.parametrize("kw", POOLS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("layout", ["channels_last", "nchw"])
def test_max_pool2d_with_ties(kernels, kw, layout):
    def fn(L, x):
        x = _channels_last(x) if layout == "channels_last" else x
        return L.nn.functional.max_pool2d(x * 1, **kw)
    check_op(fn, TIES)                                                      # float32 and float64
    check_op(lambda L, x: L.nn.functional.max_pool2d(_channels_last(x), return_indices=True, **kw)[1],
             TIES, grad=False)


def test_max_pool2d_odd_sizes_and_a_conv_output(kernels):
    check_op(lambda L, x: L.nn.functional.max_pool2d(_channels_last(x), 2), (3, 8, 7, 5))   # edges uncovered
    check_op(lambda L, x: L.nn.functional.max_pool2d(_channels_last(x), (1, 3), 2), (1, 24, 1, 4))
    check_op(lambda L, x, w: L.nn.functional.max_pool2d(L.relu(L.nn.functional.conv2d(x, w, padding=1)), 2),
             (2, 3, 8, 8), (16, 3, 3, 3), grad_atol=1e-4)


def test_max_pool2d_infinities(kernels):
    """An inf in the upstream gradient reaches only each window's maximum (not inf * 0 = NaN elsewhere);
    a window whose maximum is -inf sends its gradient to its first -inf inside x, never to padding."""
    import torch
    x = np.full((1, 8, 5, 5), -np.inf, np.float32)
    x[0, :, 2, 2] = 1.0
    x[0, 3, 0, 1] = 2.0
    for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, padding=1), dict(kernel_size=2),
               dict(kernel_size=3, stride=1, padding=1)):
        grads = []
        for L in (torch, ember):
            t = L.tensor(x, requires_grad=True)
            y = L.nn.functional.max_pool2d(_channels_last(t), **kw)
            g = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(np.float32)
            g[0, :, 0, 0] = np.inf
            y.backward(L.tensor(g))
            grads.append(t.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=0, err_msg=str(kw))   # no NaN


def test_max_pool2d_kernel_path_is_taken(calls, monkeypatch):
    from ember.backends import _numba_kernels as K
    for name in ("max_pool2d", "max_pool2d_grad", "max_pool2d_index"):
        def counted(*args, _name=name, _fn=getattr(K, name)):
            calls[_name] = calls.get(_name, 0) + 1
            return _fn(*args)
        monkeypatch.setattr(K, name, counted)
    x = _channels_last(ember.randn(2, 8, 6, 6)).requires_grad_()
    F.max_pool2d(x, 2).sum().backward()
    F.max_pool2d(x.detach(), 3, 1, return_indices=True)   # the values' MaxPool, the result's MaxPoolIndex
    assert calls == {"max_pool2d": 2, "max_pool2d_grad": 1, "max_pool2d_index": 1}
    # NCHW memory, fewer than 8 channels, 1-D pooling, float16: the NumPy forwards
    F.max_pool2d(ember.randn(2, 8, 6, 6, requires_grad=True), 2).sum().backward()
    F.max_pool2d(_channels_last(ember.randn(2, 4, 6, 6)), 2)
    F.max_pool1d(ember.randn(2, 8, 6), 2)
    F.max_pool2d(_channels_last(ember.randn(2, 8, 6, 6, dtype=ember.float16)), 2)
    assert calls == {"max_pool2d": 2, "max_pool2d_grad": 1, "max_pool2d_index": 1}


# ties, NaN and infinities: a window holding NaN gives NaN, its index and its gradient at its LAST NaN
# (torch's CPU kernels: `val > max || isnan(val)`), a window of -infs its first -inf inside x
SPECIALS = TIES.copy()
_u = np.random.default_rng(4).random(TIES.shape)
SPECIALS[_u < 0.06] = np.nan
SPECIALS[(_u >= 0.06) & (_u < 0.09)] = np.inf
SPECIALS[(_u >= 0.09) & (_u < 0.2)] = -np.inf


@pytest.mark.parametrize("kw", POOLS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("layout", ["channels_last", "nchw"])
def test_max_pool2d_nan_and_infinities_as_torch(kernels, kw, layout):
    def fn(L, x):
        x = _channels_last(x) if layout == "channels_last" else x
        return L.nn.functional.max_pool2d(x * 1, **kw)
    check_op(fn, SPECIALS)
    check_op(lambda L, x: L.nn.functional.max_pool2d(_channels_last(x), return_indices=True, **kw)[1],
             SPECIALS, grad=False)


def test_max_pool2d_without_numba(monkeypatch):
    """Without numba the pooling primitives run their NumPy forwards, with the same values."""
    import sys
    import ember.backends
    x = _channels_last(ember.tensor(TIES.astype(np.float32)))
    cpu_kernels.disable()
    want = F.max_pool2d(x, 3, 2, 1)
    monkeypatch.setattr(cpu_kernels, "_K", None)
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "ember.backends._numba_kernels", raising=False)
    monkeypatch.delattr(ember.backends, "_numba_kernels", raising=False)
    try:
        cpu_kernels.enable()
        got = F.max_pool2d(x, 3, 2, 1)
        assert layers.MaxPool.cpu_kernel is None and layers.MaxPoolGrad.cpu_kernel is None
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    finally:
        monkeypatch.undo()
        cpu_kernels.enable()


# ---- Winograd's input transform (layers._winograd_input) ---------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd_input_transform_is_bit_identical(calls, monkeypatch, dtype):
    from ember.backends import _numba_kernels as K
    n = []
    orig = K.winograd_input
    monkeypatch.setattr(K, "winograd_input", lambda *a: (n.append(1), orig(*a))[1])
    x = np.random.default_rng(0).standard_normal((3, 5, 9, 7)).astype(dtype)
    for xx in (x, np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        for pads in ((1, 1, 5, 4), (0, 2, 4, 5)):
            got = layers._winograd_input(xx, *pads)
            cpu_kernels.disable()
            want = layers._winograd_input(xx, *pads)
            cpu_kernels.enable()
            np.testing.assert_array_equal(got, want)
    assert len(n) == 4


def test_winograd_convs_with_and_without_the_kernel(kernels):
    """The three Winograd paths (forward, input and weight gradients) of a 64-channel conv, against torch."""
    check_op(lambda L, x, w: L.nn.functional.conv2d(x, w, padding=1), (4, 64, 18, 18), (64, 64, 3, 3),
             atol=1e-4, grad_atol=1e-3)


def test_will_run_knows_the_layouts_the_pooling_index_kernel_takes():
    """The planner counts no scratch for a kernel that will run: MaxPoolIndex's runs on channels-last x only."""
    pytest.importorskip("numba", reason="the CPU kernels need numba (pip install ember[jit])")
    cpu_kernels.enable()
    x = np.zeros((2, 8, 6, 6), np.float32)
    assert not cpu_kernels.will_run(layers.MaxPoolIndex, [x])
    assert cpu_kernels.will_run(layers.MaxPoolIndex, [np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)])
    assert cpu_kernels.will_run(layers.Gelu, [x])


@pytest.mark.parametrize("kw", POOLS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_kernels_are_bit_identical_to_the_numpy_forwards(kw, dtype):
    """Ties and overlapping windows: the kernels' maxima, indices and gradient sums equal the NumPy
    forwards' bit for bit (a position several windows pick sums their gradients in the same order)."""
    pytest.importorskip("numba", reason="the CPU kernels need numba (pip install ember[jit])")
    g = np.random.default_rng(4).standard_normal((2, 16, 9, 10))

    def run():
        x = _channels_last(ember.tensor(TIES.astype(dtype))).requires_grad_()
        y = F.max_pool2d(x, **kw)
        y.backward(ember.tensor(g[tuple(slice(0, n) for n in y.shape)].astype(dtype)))
        return y.detach().numpy(), x.grad.numpy(), F.max_pool2d(x.detach(), return_indices=True, **kw)[1].numpy()
    try:
        cpu_kernels.enable()
        got = run()
        cpu_kernels.disable()
        want = run()
    finally:
        cpu_kernels.enable()
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("idx_shape", [(40,), (4, 25), (3, 0)])
def test_embedding_grad_with_repeated_indices(kernels, padding_idx, idx_shape):
    # 40 rows into 5 entries: every entry is hit several times; the padding row gets no gradient
    idx = np.random.default_rng(0).integers(0, 5, idx_shape)
    check_op(lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=padding_idx), (5, 7), idx)


def test_the_embedding_grad_kernel_is_taken_and_sums_each_entry_in_order(calls):
    idx = ember.tensor([3, 1, 3, 3, 0, 1])
    w = ember.zeros(4, 2, requires_grad=True)
    g = ember.tensor([[1e8, 1.0], [2.0, 2.0], [1.0, 3.0], [-1e8, 4.0], [5.0, 5.0], [6.0, 6.0]])
    (F.embedding(idx, w) * g).sum().backward()
    assert calls == {"embedding_grad": 1}
    # entry 3 gets 1e8 + 1 + (-1e8) in that order: float32 loses the 1 (a pairwise sum may not)
    np.testing.assert_array_equal(w.grad.numpy(), [[5, 5], [8, 8], [0, 0], [0, 8]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", ["full", "scalar a", "scalar b", "broadcast cond", "small"])
def test_where_select_as_torch(kernels, dtype, form):
    # the select loop (NumPy's where branches per element: 10x slower on a random mask); NaN and
    # infinities pass through unchanged from the side chosen
    shape = (3, 60, 50) if form != "small" else (4, 5)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    a.flat[::7], b.flat[::11], a.flat[3::13] = np.nan, np.inf, -np.inf
    cond = rng.random(shape) < 0.5
    if form == "scalar a":
        check_op(lambda L, c, y: L.where(c, L.tensor(-2.5, dtype=y.dtype), y), cond, b, dtypes=(dtype,))
    elif form == "scalar b":
        check_op(lambda L, c, x: L.where(c, x, L.tensor(np.inf, dtype=x.dtype)), cond, a, dtypes=(dtype,))
    elif form == "broadcast cond":
        check_op(lambda L, c, x, y: L.where(c, x, y), cond[:, :1], a, b, dtypes=(dtype,))
    else:
        check_op(lambda L, c, x, y: L.where(c, x, y), cond, a, b, dtypes=(dtype,))


def test_where_kernel_path_is_taken(monkeypatch):
    pytest.importorskip("numba", reason="the CPU kernels need numba (pip install ember[jit])")
    cpu_kernels.enable()
    from ember.backends import _numba_kernels as K
    seen = []
    for name in ("where_select", "where_select_a", "where_select_b"):
        monkeypatch.setattr(K, name, lambda *args, _n=name, _f=getattr(K, name): (seen.append(_n), _f(*args))[1])
    x = ember.randn(100, 100, requires_grad=True)
    ember.relu(x).backward(ember.ones(100, 100))     # relu's gradient: where(y <= 0, 0, g)
    ember.where(x.detach() > 0, x.detach(), x.detach() * 2)
    ember.where(x.detach() > 0, x.detach(), 0.0)
    assert seen == ["where_select_a", "where_select", "where_select_b"]
    ember.where(x.detach()[:2] > 0, x.detach()[:2], 0.0)   # small: NumPy's where
    ember.where(x.detach() > 0, x.detach().half(), 0.0)    # float16: NumPy's where
    assert len(seen) == 3
    # a channels-last mask beside a C-order gradient (pool_relu's mask on the pooled gradient): the
    # loop, on a copy of the mask in the gradient's order, not NumPy's where over mixed orders
    p = ember.randn(8, 8, 8, 16).permute(0, 3, 1, 2)
    g = ember.randn(8, 16, 8, 8)
    got = ember.where(p <= 0, 0.0, g)
    assert len(seen) == 4
    np.testing.assert_array_equal(got.numpy(), np.where(p.numpy() <= 0, 0.0, g.numpy()))


def test_where_keeps_a_channels_last_layout_and_takes_mixed_layouts(kernels):
    rng = np.random.default_rng(1)
    y = ember.tensor(rng.standard_normal((8, 6, 10, 12)).astype(np.float32)).permute(0, 2, 3, 1).contiguous() \
        .permute(0, 3, 1, 2)   # NCHW shape over NHWC memory, as the conv kernels leave it
    g = ember.tensor(rng.standard_normal((8, 12, 10, 6)).astype(np.float32)).permute(0, 3, 2, 1)   # another order
    for cond, a, b in [(y > 0, y, 0.0), (y > 0, 0.0, y), (y > 0, y, y * 2), (y > 0, g, y), (g > 0, y, g)]:
        got = ember.where(cond, a, b)
        ref = np.where(cond.numpy(), a.numpy() if isinstance(a, ember.Tensor) else a,
                       b.numpy() if isinstance(b, ember.Tensor) else b)
        np.testing.assert_array_equal(got.numpy(), ref)
    assert ember.where(y > 0, y, 0.0)._data.strides == y._data.strides   # the memory order kept


def test_attention_scratch_arrays_never_reach_a_result():
    """k^T, v^T and ds are work arrays the kernels reuse from call to call (`_scratch`): a later call, of
    the same or another shape, must leave an earlier call's results as they were."""
    from ember.backends import cpu_kernels as ck

    class Node:
        causal, scale = True, 0.25
    rng = np.random.default_rng(0)

    def inputs(B, L):
        q, k, v = (rng.standard_normal((B, 2, L, 8)).astype(np.float32) for _ in range(3))
        return q, k, v, rng.standard_normal((B, 2, L, 8)).astype(np.float32)
    first = inputs(2, 32)
    o, p = ck.attention(Node, *first[:3])
    grads = ck.attention_grad(Node, *first[:3], p, first[3])
    kept = [a.copy() for a in (o, p, *grads)]
    for B, L in ((2, 32), (3, 40)):
        q, k, v, g = inputs(B, L)
        o2, p2 = ck.attention(Node, q, k, v)
        ck.attention_grad(Node, q, k, v, p2, g)
    for a, b in zip((o, p, *grads), kept):
        assert np.array_equal(a, b)
    again = ck.attention_grad(Node, *first[:3], p, first[3])     # the scratch now of another shape
    for a, b in zip(again, kept[2:]):
        np.testing.assert_array_equal(a, b)
