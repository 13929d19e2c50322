"""ember/backends/cpu_conv.py: the small-convolution kernels (stride 1, few channels) against torch and
against layers' NumPy forwards, at one and two BLAS threads, and that they are the code that runs."""
import numpy as np
import pytest

import ember
from ember.backends import cpu_kernels
from ember.ops import layers
from helpers import check_op

numba = pytest.importorskip("numba")
from ember.backends import cpu_conv  # noqa: E402  (imports nothing heavy; numba only on the first call)

# (x shape, weight shape, padding): each inside `cpu_conv.takes`
CASES = [
    ((3, 1, 9, 8), (5, 1, 3, 3), 1),      # one input channel, 3x3: the direct loops
    ((2, 1, 7, 7), (4, 1, 5, 5), 2),      # one channel, 5x5: im2col tiles
    ((3, 8, 6, 7), (6, 8, 3, 3), 1),      # W4-like: tiles, input gradient through the flipped kernel
    ((2, 9, 5, 6), (4, 9, 3, 3), 0),      # no padding
    ((1, 8, 6, 6), (3, 8, 2, 3), (1, 2)),  # even, non-square kernel, one image
    ((4, 12, 5, 5), (7, 12, 3, 3), 2),    # padding k - 1: the input gradient's padding is 0
    ((2, 8, 6, 7), (3, 8, 2, 4), "same"),  # even kernel, 'same': padding (0, 1) and (1, 2), uneven
    ((2, 8, 4, 4), (3, 8, 3, 3), 3),      # padding as large as the kernel: border rows see only zeros
    ((2, 3, 6, 5), (64, 3, 3, 3), 1),     # 64 output channels (a VGG's first layer): the weight gradient as g^T cols
    ((0, 8, 5, 5), (3, 8, 3, 3), 1),      # an empty batch
    ((0, 1, 5, 5), (3, 1, 3, 3), 1),
]


def _pads(pad, ws):
    """conv2d's padding argument as the primitive's ((top, bottom), (left, right))."""
    if pad == "same":   # torch: the smaller half before
        return tuple(((k - 1) // 2, k - 1 - (k - 1) // 2) for k in ws[2:])
    p = (pad, pad) if isinstance(pad, int) else pad
    return ((p[0], p[0]), (p[1], p[1]))


def _close(got, want):
    """Equal up to float32 rounding of sums in another order; shapes and empty results too."""
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * (np.abs(want).max() if want.size else 1.0))


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


@pytest.mark.filterwarnings("ignore:Using padding='same'")   # torch's note on its own padded copy
@pytest.mark.parametrize("xs,ws,pad", CASES)
def test_small_conv_against_torch(xs, ws, pad, threads):
    """Values and the gradients of x, w and b (float32: the loops' dtype; float64 runs layers')."""
    check_op(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, padding=pad), xs, ws, (ws[0],),
             dtypes=("float32",))
    check_op(lambda lib, x, w: lib.relu(lib.nn.functional.conv2d(x, w, padding=pad)), xs, ws, dtypes=("float32",))


@pytest.mark.parametrize("xs,ws,pad", CASES)
def test_the_loops_run_and_agree_with_layers(xs, ws, pad, threads, monkeypatch):
    """Each case goes through cpu_conv (not back to layers' forward), and gives layers' results up to
    float32 rounding, for channels-first and channels-last x."""
    calls = []
    real = cpu_conv._forward
    monkeypatch.setattr(cpu_conv, "_forward", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs, dtype=np.float32)
    w = rng.standard_normal(ws, dtype=np.float32)
    b = rng.standard_normal(ws[0], dtype=np.float32)
    attrs = dict(stride=(1, 1), dilation=(1, 1), groups=1, padding=_pads(pad, ws))
    conv = layers.Conv.__new__(layers.Conv)
    conv.__dict__.update(attrs)
    for xx in (x, np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        y = cpu_conv.conv(conv, xx, w, b)
        assert y is not None and calls
        ref = conv.forward(xx, w, b)
        _close(y, ref)
        relu = cpu_conv.conv(conv, xx, w, b, relu=True)
        np.testing.assert_array_equal(relu, np.maximum(y, 0))
    g = rng.standard_normal(ref.shape, dtype=np.float32)
    wg = layers.ConvWeightGrad.__new__(layers.ConvWeightGrad)
    wg.__dict__.update(attrs, w_shape=ws)
    gw, gw_ref = cpu_conv.conv_weight_grad(wg, x, g), wg.forward(x, g)
    _close(gw, gw_ref)
    ig = layers.ConvInputGrad.__new__(layers.ConvInputGrad)
    ig.__dict__.update(attrs, x_shape=xs)
    gx = cpu_conv.conv_input_grad(ig, g, w)
    if ws[1] < 8:
        assert gx is None   # a few input channels: layers' per-offset GEMMs are faster
    else:
        gx_ref = ig.forward(g, w)
        _close(gx, gx_ref)


def test_what_the_loops_leave_to_layers():
    """Strides, dilation, groups, float64, many channels and Winograd's range run layers' forward."""
    x = np.zeros((2, 8, 8, 8), np.float32)
    w = np.zeros((4, 8, 3, 3), np.float32)

    def node(**kw):
        n = layers.Conv.__new__(layers.Conv)
        n.__dict__.update(dict(stride=(1, 1), dilation=(1, 1), groups=1, padding=((1, 1), (1, 1))), **kw)
        return n
    assert cpu_conv.takes(x, w, node())
    assert not cpu_conv.takes(x, w, node(stride=(2, 2)))
    assert not cpu_conv.takes(x, w, node(dilation=(2, 1)))
    assert not cpu_conv.takes(x, np.zeros((4, 4, 3, 3), np.float32), node(groups=2))
    assert not cpu_conv.takes(x.astype(np.float64), w.astype(np.float64), node())
    wide = np.zeros((2, 128, 8, 8), np.float32)
    assert not cpu_conv.takes(wide, np.zeros((4, 128, 3, 3), np.float32), node())   # > MAX_CHANNELS
    many = np.zeros((8, 64, 16, 16), np.float32)
    assert not cpu_conv.takes(many, np.zeros((64, 64, 3, 3), np.float32), node())   # Winograd's


def test_kernels_off_means_layers(monkeypatch):
    """EMBER_CPU_KERNELS=0 / disable(): not even the compiled Conv+Relu takes the loops."""
    monkeypatch.setattr(cpu_conv, "_forward", lambda *a: pytest.fail("cpu_conv ran with the kernels off"))
    cpu_kernels.disable()
    try:
        x = ember.randn(2, 4, 6, 6)
        conv = ember.nn.Conv2d(4, 5, 3, padding=1)
        step = ember.compile(lambda t: ember.relu(conv(t)).sum())
        with ember.no_grad():
            assert float(step(x)) == pytest.approx(float(ember.relu(conv(x)).sum()), rel=1e-5)
            assert float(step(x)) == pytest.approx(float(ember.relu(conv(x)).sum()), rel=1e-5)
    finally:
        cpu_kernels.enable()


def test_compiled_conv_relu_runs_as_one_kernel_and_matches_eager(monkeypatch):
    """The fused Conv+Relu of a compiled step calls the loops with relu=True; values, NaN included, as
    eager mode's."""
    seen = []
    real = cpu_conv.conv
    monkeypatch.setattr(cpu_conv, "conv", lambda *a, **k: seen.append(k.get("relu", False)) or real(*a, **k))
    conv = ember.nn.Conv2d(8, 6, 3, padding=1)
    x = ember.randn(3, 8, 7, 7)
    x[0, 0, 3, 3] = float("nan")
    f = ember.compile(lambda t: ember.relu(conv(t)))
    with ember.no_grad():
        eager = ember.relu(conv(x)).numpy()
        for _ in range(2):
            out = f(x).numpy()
    assert True in seen
    np.testing.assert_array_equal(np.isnan(out), np.isnan(eager))
    np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-5)

