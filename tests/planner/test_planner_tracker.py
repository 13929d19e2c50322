"""The planner's Tracker (ember/planner/tracker.py): which calls allocate, which make views, the kernels'
scratch, arrays made outside primitives, and arrays freed when the last reference goes."""
import ember
import ember.nn.functional as F
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
    x, w = _meta(2, 3, 8, 8), _meta(4, 3, 3, 3)
    with Tracker() as t:
        t.track(x._data)
        t.track(w._data)
        y = F.conv2d(x, w)                           # (2, 4, 6, 6), no padding, no bias
        cols = 2 * 6 * 6 * 3 * 3 * 3 * 4             # (N * L, C * k * k) float32
        assert t.live == x._data.nbytes + w._data.nbytes + y._data.nbytes
        assert t.peak == t.live + cols
        assert sum(t.macs.values()) == 2 * 4 * 6 * 6 * 3 * 3 * 3


def test_arrays_made_outside_primitives_count_from_birth():
    with Tracker() as t:
        z = ember.zeros(1000, device="meta")         # no primitive call: the optimizer's state is made so
        assert t.live == 4000
        del z
        assert t.live == 0
    assert ember.zeros(10, device="meta").shape == (10,)   # the tracker has let go of MetaArray
