"""ember/nn/dropout.py: identity in eval and with p=0 (compared with torch); statistics in training."""
import numpy as np
import pytest

import ember
from .nn_helpers import check_module

CASES = [   # training-mode statistics of every dropout are in tests/test_randomness.py
    ("dropout_eval", lambda lib: lib.nn.Dropout(0.7), ("eval",), (2, 3, 4, 4)),
    ("dropout_p0", lambda lib: lib.nn.Dropout(0.0), ("train", "eval"), (2, 3, 4, 4)),
    ("dropout1d_eval", lambda lib: lib.nn.Dropout1d(0.5), ("eval",), (2, 3, 4)),
    ("dropout2d_eval", lambda lib: lib.nn.Dropout2d(0.5), ("eval",), (2, 3, 4, 4)),
    ("dropout3d_eval", lambda lib: lib.nn.Dropout3d(0.5), ("eval",), (2, 3, 2, 4, 4)),
    ("dropout3d_p0", lambda lib: lib.nn.Dropout3d(0.0), ("train", "eval"), (2, 3, 2, 4, 4)),
    ("alpha_dropout_eval", lambda lib: lib.nn.AlphaDropout(0.5), ("eval",), (2, 3, 4)),
    ("alpha_dropout_p0", lambda lib: lib.nn.AlphaDropout(0.0), ("train", "eval"), (2, 3, 4)),
    ("feature_alpha_dropout_eval", lambda lib: lib.nn.FeatureAlphaDropout(0.5), ("eval",), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("build,modes,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dropout_matches_torch_where_deterministic(build, modes, shape):
    check_module(build, shape, modes=modes)


def test_dropout_statistics_and_gradient():
    ember.manual_seed(0)
    x = ember.ones(200, 100, requires_grad=True)
    y = ember.nn.Dropout(0.3)(x)
    a = y.detach().numpy()
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), a, rtol=1e-6)   # gradient = the same mask


def test_dropout2d_zeroes_whole_channels():
    ember.manual_seed(1)
    y = ember.nn.Dropout2d(0.5)(ember.ones(8, 16, 3, 3)).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7


def test_dropout_p1_and_bad_p():
    assert not ember.nn.functional.dropout(ember.ones(5), 1.0).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        ember.nn.Dropout(1.5)


@pytest.mark.parametrize("name,shape", [("dropout1d", (6, 40, 5)), ("dropout2d", (6, 40, 3, 3))])
def test_functional_channel_dropout(name, shape):
    fn = getattr(ember.nn.functional, name)
    x = ember.randn(*shape)
    assert bool((fn(x, 0.5, training=False) == x).all())
    ember.manual_seed(2)
    y = fn(x, 0.25).numpy()
    ratio = (y / x.numpy()).reshape(shape[0], shape[1], -1)   # per channel: all 0 or all 1/(1-p)
    zero, kept = np.isclose(ratio, 0).all(-1), np.isclose(ratio, 1 / 0.75).all(-1)
    assert np.all(zero | kept) and zero.any() and kept.any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        fn(x, -0.1)
