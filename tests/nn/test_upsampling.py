"""ember/nn/upsampling.py (Upsample, UpsamplingNearest2d, UpsamplingBilinear2d) against torch."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, with_specials
from .nn_helpers import check_module

CASES = [
    ("nearest_scale", lambda lib: lib.nn.Upsample(scale_factor=2), (2, 3, 3, 4)),
    ("nearest_size_1d", lambda lib: lib.nn.Upsample(size=7), (2, 3, 4)),
    ("linear", lambda lib: lib.nn.Upsample(scale_factor=1.5, mode="linear"), (2, 3, 4)),
    ("bilinear_ac", lambda lib: lib.nn.Upsample(size=(5, 3), mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    ("bicubic", lambda lib: lib.nn.Upsample(scale_factor=2, mode="bicubic"), (2, 3, 3, 4)),
    ("bicubic_ac", lambda lib: lib.nn.Upsample(scale_factor=(1.5, 2.5), mode="bicubic", align_corners=True),
     (1, 2, 4, 3)),
    ("bicubic_down", lambda lib: lib.nn.Upsample(size=(2, 3), mode="bicubic"), (1, 2, 5, 7)),
    ("bicubic_recompute", lambda lib: lib.nn.Upsample(scale_factor=1.7, mode="bicubic",
                                                      recompute_scale_factor=True), (1, 2, 3, 5)),
    ("trilinear", lambda lib: lib.nn.Upsample(scale_factor=2, mode="trilinear"), (1, 2, 2, 3, 2)),
    ("nearest_2d", lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=3), (2, 1, 2, 3)),
    ("bilinear_2d", lambda lib: lib.nn.UpsamplingBilinear2d(size=(4, 7)), (2, 1, 3, 3)),
]


@pytest.mark.parametrize("build,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_upsampling_layers(build, shape):
    check_module(build, shape, modes=("train",))


def test_upsampling_reprs():
    for lib in (torch, ember):
        assert repr(lib.nn.Upsample(scale_factor=2, mode="bicubic")) == "Upsample(scale_factor=2.0, mode='bicubic')"
        assert repr(lib.nn.Upsample(size=(3, 4))) == "Upsample(size=(3, 4), mode='nearest')"
        assert repr(lib.nn.UpsamplingBilinear2d(scale_factor=(2, 3))) == \
            "UpsamplingBilinear2d(scale_factor=(2.0, 3.0), mode='bilinear')"
        assert repr(lib.nn.UpsamplingNearest2d(size=5)) == "UpsamplingNearest2d(size=5, mode='nearest')"


# ------------------------------------------------------------------ NaN and infinities
@pytest.mark.parametrize("kw,shape", [
    (dict(size=(9, 3), mode="bilinear", align_corners=True), (1, 2, 2, 4)),
    (dict(size=(7, 9), mode="bilinear"), (2, 2, 4, 5)),
    (dict(size=(3, 7), mode="bilinear"), (1, 2, 3, 4)),            # an unchanged dim
    (dict(size=4, mode="linear"), (1, 2, 4)),                       # unchanged: infinities become NaN
    (dict(size=9, mode="linear"), (2, 2, 5)),
    (dict(size=(3, 5, 4), mode="trilinear"), (1, 2, 4, 3, 5)),
    (dict(size=(5, 7), mode="bicubic"), (1, 2, 4, 5)),
    (dict(size=(5, 3), mode="bicubic", align_corners=True), (1, 2, 3, 6)),
    (dict(size=8, mode="area"), (1, 2, 4, 1)),
    (dict(size=(3, 3), mode="area"), (1, 2, 6, 3)),
    (dict(size=5, mode="area"), (1, 2, 2)),
], ids=["bilinear_corners", "bilinear", "bilinear_same_h", "linear_same", "linear", "trilinear", "bicubic",
        "bicubic_corners", "area_up", "area", "area_1d"])
def test_interpolate_reads_only_its_taps_with_nan_and_inf(kw, shape):
    # torch: each output is w0 * x[i0] + w1 * x[i1] (+ ...) per dim, the last dim first; a NaN or inf
    # reaches the outputs whose taps hold it, and a + (b - a) * w would make inf - inf = NaN
    t_out, _ = check_op(lambda lib, x: lib.nn.functional.interpolate(x, **kw), with_specials(shape))
    assert np.isfinite(t_out.detach().numpy()).any()
