"""make_grid / save_image give torchvision's grids and PNG pixels."""
import numpy as np
import pytest
import torch

import ember
from tests.models._oracle import torchvision

CASES = [
    dict(shape=(10, 1, 28, 28)),
    dict(shape=(7, 3, 5, 6), nrow=3, padding=1, pad_value=0.5),
    dict(shape=(5, 3, 8, 8), normalize=True),
    dict(shape=(5, 3, 8, 8), normalize=True, scale_each=True, padding=0),
    dict(shape=(4, 1, 6, 6), normalize=True, value_range=(-0.5, 0.5), nrow=8),
    dict(shape=(1, 3, 4, 4)),
    dict(shape=(3, 9, 9)),
    dict(shape=(9, 9)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_make_grid_matches_torchvision(case):
    case = dict(case)
    shape = case.pop("shape")
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    got = ember.utils.make_grid(ember.tensor(x), **case)
    want = torchvision.utils.make_grid(torch.from_numpy(x), **case)
    assert got.shape == tuple(want.shape) and got.dtype == ember.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    listed = ember.utils.make_grid([ember.tensor(img) for img in x], **case) if len(shape) == 4 else got
    np.testing.assert_array_equal(listed.numpy(), got.numpy())


def test_make_grid_leaves_its_input_alone():
    x = ember.randn(4, 3, 5, 5)
    before = x.numpy().copy()
    ember.utils.make_grid(x, normalize=True)
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("shape,kw", [((6, 1, 10, 12), dict(nrow=4)), ((3, 3, 7, 7), dict(normalize=True)),
                                      ((1, 1, 5, 5), {})])
def test_save_image_writes_torchvisions_pixels(tmp_path, shape, kw):
    Image = pytest.importorskip("PIL.Image", reason="save_image needs Pillow (ember[plot])")
    x = np.random.RandomState(1).rand(*shape).astype(np.float32) * 1.2 - 0.1      # some values clip
    ember.utils.save_image(ember.tensor(x), tmp_path / "ours.png", **kw)
    torchvision.utils.save_image(torch.from_numpy(x), tmp_path / "theirs.png", **kw)
    ours, theirs = np.asarray(Image.open(tmp_path / "ours.png")), np.asarray(Image.open(tmp_path / "theirs.png"))
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
