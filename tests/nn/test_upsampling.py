"""ember/nn/upsampling.py (Upsample, UpsamplingNearest2d, UpsamplingBilinear2d) against torch."""
import pytest
import torch

import ember
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
