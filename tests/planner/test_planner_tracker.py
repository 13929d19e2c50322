"""The planner's Tracker (ember/planner/tracker.py): which calls allocate, which make views, the kernels'
scratch, arrays made outside primitives, and arrays freed when the last reference goes."""
import pytest

import ember
import ember.nn.functional as F
from ember.ops import primitives as P
from ember.planner.tracker import Tracker


def _meta(*shape):
    return ember.empty(*shape, device="meta")


def test_views_add_no_bytes_and_copies_do():
    x = _meta(64, 32)                                # 8 KiB
    with Tracker() as t:
        t.track(x._data)
        base = t.live
        v = x.reshape(32, 64)                        # a view of a contiguous array
        assert t.live == base
        w = x.t()                                    # a view (permuted strides)
        assert t.live == base
        c = w.reshape(-1)                            # NumPy must copy a transposed array to flatten it
        assert t.live == base + x._data.nbytes
        s = x[:, :16].reshape(64, 4, 4)              # a slice split along its last dim: still a view
        assert t.live == base + x._data.nbytes
        y = x * 2                                    # a new array
        assert t.live == base + 2 * x._data.nbytes
        del c, y
        assert t.live == base                        # freed with their last reference
    assert v.shape == (32, 64) and s.shape == (64, 4, 4)


def test_conv_scratch_is_im2col_columns():
    """Where the CPU kernels are off (or numba is missing), the NumPy conv's scratch: its im2col matrix."""
    from ember.backends import cpu_kernels
    x, w = _meta(2, 3, 8, 8), _meta(4, 3, 3, 3)
    cpu_kernels.disable()
    try:
        with Tracker() as t:
            t.track(x._data)
            t.track(w._data)
            y = F.conv2d(x, w)                           # (2, 4, 6, 6), no padding, no bias
            cols = 2 * 6 * 6 * 3 * 3 * 3 * 4             # (N * L, C * k * k) float32
            assert t.live == x._data.nbytes + w._data.nbytes + y._data.nbytes
            assert t.peak == t.live + cols
            assert sum(t.macs.values()) == 2 * 4 * 6 * 6 * 3 * 3 * 3
    finally:
        cpu_kernels.enable()


def test_small_conv_scratch_is_the_padded_copy_and_its_columns():
    """The small-convolution kernels (backends/cpu_conv.py) copy x padded and channels-last, then lay
    its im2col matrix out; for one input channel at 3x3 there is no matrix."""
    pytest.importorskip("numba")
    for C in (3, 1):
        x, w = _meta(2, C, 8, 8), _meta(4, C, 3, 3)
        with Tracker() as t:
            t.track(x._data)
            t.track(w._data)
            y = F.conv2d(x, w, padding=1)                # (2, 4, 8, 8)
            padded = 2 * 10 * 10 * C * 4
            cols = 2 * 8 * 8 * 9 * C * 4 if C > 1 else 0
            assert t.live == x._data.nbytes + w._data.nbytes + y._data.nbytes
            assert t.peak == t.live + padded + cols


def test_arrays_made_outside_primitives_count_from_birth():
    with Tracker() as t:
        z = ember.zeros(1000, device="meta")         # no primitive call: the optimizer's state is made so
        assert t.live == 4000
        y = z * 2                                    # after a primitive call too
        s = ember.zeros(500, device="meta")
        assert t.live == 4000 + 4000 + 2000
        del y, s
        del z
        assert t.live == 0
    assert ember.zeros(10, device="meta").shape == (10,)   # the tracker has let go of MetaArray


def test_index_strides_follow_numpy():
    """The strides of a basic index (ints, slices with steps, None, Ellipsis), in elements, as NumPy's view."""
    import numpy as np
    from ember.planner.tracker import index_strides
    base = np.zeros((4, 6, 5))
    st = tuple(s // 8 for s in base.strides)
    keys = [(slice(None), slice(2, 4)), (Ellipsis, 1), (None, slice(None, None, 2)), (0, Ellipsis, None),
            (slice(1, None, 3), None, 2), (Ellipsis,), (1, slice(None, None, -2), Ellipsis, None, 3),
            (None, Ellipsis, slice(0, 5, 2), None)]
    for key in keys:
        view = base[key]
        assert index_strides(base.shape, st, key, view.ndim) == tuple(s // 8 for s in view.strides), key
    assert index_strides(base.shape, st, (0,), 3) is None        # not the output's rank: unsure
    assert index_strides(base.shape, None, (0,), 2) is None      # the input's strides unknown


def test_advanced_index_keys_are_copies():
    from ember.ops import primitives as P
    from ember.planner.tracker import _basic_key
    assert _basic_key((slice(None), 0, None, Ellipsis))
    assert not _basic_key((slice(None), [0, 2])) and not _basic_key((P.SLOT, 0))
    x = _meta(8, 4)
    with Tracker() as t:
        t.track(x._data)
        base = t.live
        y = x[[0, 2, 5]]                                  # a gather: three new rows
        assert t.live == base + 3 * 4 * 4
    assert y.shape == (3, 4)


def test_workspace_of_the_numpy_kernels_by_hand():
    """Scratch bytes beyond inputs and output: multiples of the first input, max-pool's window copy."""
    from ember.ops import layers as L
    from ember.ops.optim_prims import AdamStep
    from ember.planner.tracker import WORKSPACE
    x, other = _meta(2, 8, 6, 6)._data, _meta(3)._data     # 2304 bytes; a second input of another size
    for prim, k in ((L.Softmax, 1), (L.LogSoftmax, 1), (L.SoftmaxGrad, 1), (L.Normalize, 1), (L.LayerNorm, 2),
                    (L.LayerNormGrad, 3), (AdamStep, 4)):
        assert WORKSPACE[prim]({}, [x, other], x) == k * 2304, prim
    out = _meta(2, 8, 2, 2)._data                           # 64 values, 256 bytes
    # 3x3 windows: a (2, 8, 2, 2, 9) float32 copy and the output, or five int64-sized arrays of the output
    assert WORKSPACE[L.MaxPoolIndex]({"kernel": (3, 3)}, [x], out) == max(64 * 9 * 4 + 256, 5 * 256) == 2560
    assert WORKSPACE[L.MaxPoolIndex]({"kernel": (1, 1)}, [x], out) == max(64 * 4 + 256, 5 * 256) == 1280
    x16 = _meta(2, 8, 6, 6).to(ember.float16)._data
    out16 = _meta(2, 8, 2, 2).to(ember.float16)._data
    assert WORKSPACE[L.MaxPoolIndex]({"kernel": (3, 3)}, [x16], out16) == max(64 * 9 * 2 + 128, 5 * 128) == 1280


def test_workspace_of_the_convolutions_by_hand():
    """im2col's columns (N * L, C * kh * kw) and what each kernel keeps beside them, for a 3x2 kernel on a
    7x5 image (output 5x4): forward, input gradient (g's rows and the columns, or the columns and dx) and
    weight gradient (the columns and g)."""
    from ember.ops import layers as L
    from ember.planner.tracker import WORKSPACE
    x, w, out = _meta(2, 3, 7, 5)._data, _meta(16, 3, 3, 2)._data, _meta(2, 16, 5, 4)._data
    cols = (2 * 5 * 4) * (3 * 3 * 2) * 4                                      # 2880 bytes
    assert WORKSPACE[L.Conv]({"groups": 1}, [x, w], out) == cols
    xg, wg, outg = _meta(2, 4, 7, 5)._data, _meta(4, 2, 3, 2)._data, _meta(2, 4, 5, 4)._data
    # + one group's GEMM result (N * L, O / G) before it is copied into the output
    assert WORKSPACE[L.Conv]({"groups": 2}, [xg, wg], outg) == (2 * 20) * (4 * 6) * 4 + (2 * 20) * 2 * 4
    # depthwise: no columns, two products beside the running sum (one for 2 taps, none for 1)
    xd, outd = _meta(2, 4, 7, 5)._data, _meta(2, 8, 5, 4)._data                  # 1280 bytes out
    assert WORKSPACE[L.Conv]({"groups": 4}, [xd, _meta(8, 1, 3, 2)._data], outd) == 2 * 1280
    assert WORKSPACE[L.Conv]({"groups": 4}, [xd, _meta(8, 1, 2, 1)._data], outd) == 1280
    assert WORKSPACE[L.Conv]({"groups": 4}, [xd, _meta(8, 1, 1, 1)._data], outd) == 0
    dx = _meta(2, 3, 7, 5)._data                                               # 840 bytes
    attrs = {"x_shape": (2, 3, 7, 5), "groups": 1}
    assert WORKSPACE[L.ConvInputGrad](attrs, [out, w], dx) == 2560 + cols - 840   # g (2560 bytes) is larger than dx
    small_g = _meta(2, 1, 5, 4)._data                                           # 160 bytes: the columns dominate
    assert WORKSPACE[L.ConvInputGrad](attrs, [small_g, _meta(1, 3, 3, 2)._data], dx) == cols
    attrs = {"w_shape": (16, 3, 3, 2), "groups": 1}
    assert WORKSPACE[L.ConvWeightGrad](attrs, [x, out], _meta(16, 3, 3, 2)._data) == cols + 2560


def test_conv_mult_adds_are_integers():
    x, w = _meta(2, 4, 6, 6), _meta(6, 2, 3, 3)
    with Tracker() as t:
        F.conv2d(x, w, groups=2)
    macs = sum(t.macs.values())
    assert macs == 2 * 6 * 4 * 4 * (4 // 2) * 3 * 3 and type(macs) is int


def _work(fn):
    with Tracker() as t:
        fn()
    return sum(t.macs.values()), sum(t.flops.values())


def test_mult_adds_and_flops_by_hand():
    """2 FLOPs per multiply-add; a reduction one per element it reads, an elementwise op one per element it
    writes; views, copies and casts none."""
    x, w = _meta(3, 4), _meta(4, 5)
    assert _work(lambda: x.sum()) == _work(lambda: x.amax(1)) == (0, 12)
    assert _work(lambda: x * 2) == _work(lambda: x.softmax(-1)) == (0, 12)
    assert _work(lambda: (x.reshape(4, 3), x.t(), x[0], x[:, 1:], x.to(ember.float64), ember.cat([x, x]))) == (0, 0)
    for product in (lambda: x @ w, lambda: F.linear(x, _meta(5, 4), _meta(5)),
                    lambda: ember.einsum("ij,jk->ik", x, w)):
        assert _work(product) == (3 * 4 * 5, 2 * 3 * 4 * 5)
    with Tracker() as t:
        x @ w
    assert t.macs == {"": 60} and t.flops == {"": 120}   # no module running: charged to ''
    x3 = _meta(2, 3, 4)                                   # batched: every leading dim counts
    for product in (lambda: x3 @ w, lambda: F.linear(x3, _meta(5, 4)), lambda: ember.einsum("bij,jk->bik", x3, w)):
        assert _work(product) == (2 * 3 * 4 * 5, 2 * 2 * 3 * 4 * 5)
    y = _meta(3, 4)                                       # in place: a copy is free, arithmetic is not
    assert _work(lambda: (y.copy_(x), y.fill_(1.0), y.__setitem__(0, 1.0))) == (0, 0)
    assert _work(lambda: y.add_(x)) == _work(lambda: y.mul_(2.0)) == (0, 12)
    # attention: q k^T and p v, (2 x 3 queries) x 5 keys x (E 4 + Ev 6)
    q, k, v = _meta(2, 3, 4).requires_grad_(), _meta(2, 5, 4).requires_grad_(), _meta(2, 5, 6).requires_grad_()
    assert _work(lambda: F.scaled_dot_product_attention(q, k, v)) == (300, 600)
    # its backward is twice the forward's; the sum reads the (2, 3, 6) output once
    assert _work(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward()) == (900, 2 * 900 + 36)
    # a grouped conv: (2, 6, 4, 4) outputs x 2 channels per group x 3x3, and each gradient the same again
    xc, wc = _meta(2, 4, 6, 6).requires_grad_(), _meta(6, 2, 3, 3).requires_grad_()
    per = 2 * 6 * 4 * 4 * 2 * 9
    assert _work(lambda: F.conv2d(xc, wc, groups=2).sum().backward()) == (3 * per, 2 * 3 * per + 192)


def _conv(x, groups=1):
    return F.conv2d(x, ember.ones(4, x.shape[1] // groups, 3, 3, device=x.device), groups=groups)


def _same(x):
    return x


VIEW_CHAINS = {   # (input shape, before, after): whether `after` makes a view depends on the strides `before` left
    "expand-merge": ((4, 1, 3), _same, lambda x: x.expand(4, 5, 3).reshape(20, 3)),
    "expand-two": ((4, 1, 3), _same, lambda x: x.expand(4, 2, 3).reshape(4, 6)),
    "expand-split": ((3,), _same, lambda x: x.expand(4, 3).reshape(2, 2, 3)),
    "expand-lead": ((1, 3), _same, lambda x: x.expand(2, 4, 3).reshape(8, 3)),
    "permute-flat": ((4, 6), _same, lambda x: x.permute(1, 0).reshape(24)),
    "permute-split": ((4, 6), _same, lambda x: x.permute(1, 0).reshape(6, 2, 2)),
    "step-flat": ((4, 6), _same, lambda x: x[:, ::2].reshape(12)),
    "bitcast-same-size": ((4, 6), lambda x: x.view(ember.int32), lambda v: v.reshape(24)),
    "bitcast-half": ((4, 6), lambda x: x.view(ember.float16), lambda v: v.reshape(48)),
    "bitcast-double-split": ((4, 6), lambda x: x.view(ember.float64), lambda v: v.reshape(2, 2, 3)),
    "bitcast-double-slice": ((4, 6), lambda x: x[:, :4].view(ember.float64), lambda v: v.reshape(8)),
    "bitcast-permute": ((4, 6), lambda x: x.view(ember.float16).permute(1, 0), lambda v: v.reshape(48)),
    "bitcast-step": ((4, 6), lambda x: x[:, ::2].view(ember.int32), lambda v: v.reshape(12)),
    # rows of 20 bytes are no whole number of float64s: strides unknown, and a permute of that
    "bitcast-odd-rows": ((4, 5), lambda x: x[:, :4].view(ember.float64).permute(1, 0), lambda v: v.reshape(8)),
    "rows-flat": ((4, 6), _same, lambda x: x[1:3].reshape(12)),
    "every-other-row": ((4, 6), _same, lambda x: x[::2].reshape(12)),
    "ellipsis-none": ((4, 6), _same, lambda x: x[..., None, 1:4].reshape(4, 3)),
    "int-index": ((4, 6, 2), _same, lambda x: x[1].reshape(12)),
    "size-one-dim": ((4, 1, 3), _same, lambda x: x.reshape(12)),
    "conv-flat": ((2, 3, 5, 5), _conv, lambda y: y.reshape(2, -1)),
    "conv-nhwc": ((2, 3, 5, 5), _conv, lambda y: y.permute(0, 2, 3, 1).reshape(18, 4)),
    "conv-split": ((2, 3, 5, 5), _conv, lambda y: y.reshape(2, 2, 2, 3, 3)),
}


def _check_chain(name, shape, before, after):
    import numpy as np
    b = before(ember.randn(*shape))
    cpu_view = np.shares_memory(after(b)._data, b._data)
    m = _meta(*shape)
    with Tracker() as t:
        t.track(m._data)
        bm = before(m)
        live = t.live
        am = after(bm)
        assert t.shares(am._data, bm._data) == cpu_view, name
        assert t.live - live == (0 if cpu_view else am._data.nbytes), name


def test_views_and_copies_match_the_cpu_run():
    """The Tracker follows strides through expand, permute, basic indexes and convolutions (whose output is a
    transposed view of the matmul's) to tell whether the reshape after them is a view: the same chain on real
    CPU arrays is the oracle (np.shares_memory), and a copy costs exactly the output's bytes."""
    for name, (shape, before, after) in VIEW_CHAINS.items():
        _check_chain(name, shape, before, after)


def test_grouped_conv_output_layout_matches_the_cpu_run():
    _check_chain("grouped-conv-flat", (2, 4, 5, 5), lambda x: _conv(x, 2), lambda y: y.reshape(2, -1))


def _conv_cases():
    """(name, x -> conv output) for grouped and depthwise convolutions, with or without padding, of a C-ordered
    input or a channels-last one (another conv's output)."""
    def conv(groups, per_group, padding, channels_last):
        def f(x):
            if channels_last:
                x = F.conv2d(x, ember.ones(4, 4, 1, 1, device=x.device))
            w = ember.ones(groups * per_group, 4 // groups, 3, 3, device=x.device)
            return F.conv2d(x, w, padding=padding, groups=groups)
        return f
    for groups in (2, 4):
        for per_group in (1, 2):
            for padding in (0, 1):
                for channels_last in (False, True):
                    yield f"g{groups}x{per_group}-p{padding}-{'cl' if channels_last else 'c'}", \
                        conv(groups, per_group, padding, channels_last)


def test_conv_output_strides_match_the_cpu_run():
    """A grouped conv's output is the same channels-last view as groups=1's; a depthwise one with one output
    per group and no padding is laid out like its input (NumPy's product of views of it)."""
    for name, f in _conv_cases():
        y = f(ember.randn(2, 4, 6, 6))
        real = tuple(s // y._data.itemsize for s in y._data.strides)
        with Tracker() as t:
            x = _meta(2, 4, 6, 6)
            t.track(x._data)
            ym = f(x)
            assert t._storage[id(ym._data)][1] == real, name


def test_a_filled_tensor_is_new_memory():
    with Tracker() as t:
        x = ember.full((100,), 2.0, device="meta")        # made outside primitives
        assert t.live == 400
        z = ember.empty((), device="meta")
        g = P.Expand.apply(z, shape=(100,), fill=True)    # a full sum's gradient: NumPy fills a new array
        assert t.live == 804 and not t.shares(g._data, z._data)
        e = z.expand(100)                                 # any other Expand of a 0-d value is a view
        assert t.live == 804 and t.shares(e._data, z._data)
        assert ember.empty(0, 6, device="meta").reshape(3, 0, 2).shape == (3, 0, 2)   # empty: a view
        assert t.live == 804
    assert x.shape == (100,)
