"""ember/nn/dropout.py: identity in eval and with p=0 (compared with torch); statistics in training."""
import warnings

import numpy as np
import pytest
import torch

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


# ------------------------------------------------------------------ every input rank, as torch 2.13
# rank -> (outcome, trailing axes sharing one draw, warns): torch's functional.py reads a 3-D input to
# dropout2d as (N, C, L), other ranks of dropout2d/3d as deprecated (a warning), and dropout1d raises.
RANKS = {
    "dropout1d": {0: "error", 1: "error", 2: 1, 3: 1, 4: "error", 5: "error", 6: "error"},
    "dropout2d": {0: "error", 1: "error", 2: 0, 3: 1, 4: 2, 5: 3, 6: 4},
    "dropout3d": {0: "error", 1: 0, 2: 1, 3: 2, 4: 3, 5: 3, 6: 5},
}
QUIET = {"dropout1d": (2, 3), "dropout2d": (4,), "dropout3d": (4, 5)}
SHAPE = (64, 32, 3, 2, 2, 2)


@pytest.mark.parametrize("name", sorted(RANKS))
@pytest.mark.parametrize("rank", range(7))
def test_channel_dropout_every_rank_as_torch(name, rank):
    from test_randomness import check_dropped, positive
    expected = RANKS[name][rank]
    warns = name != "dropout1d" and rank not in QUIET[name]
    x = positive(*SHAPE[:rank], seed=rank)
    module = {"dropout1d": "Dropout1d", "dropout2d": "Dropout2d", "dropout3d": "Dropout3d"}[name]
    ember.manual_seed(rank)
    for lib in (torch, ember):
        fn = getattr(lib.nn.functional, name)
        ctx = pytest.warns(UserWarning, match=f"{name}: Received a {rank}") if warns else warnings.catch_warnings()
        with ctx:
            if not warns:
                warnings.simplefilter("error")
            if expected == "error":
                msg = "Expected 2D or 3D input" if name == "dropout1d" else "Feature dropout requires at least 2 dim"
                with pytest.raises(RuntimeError, match=msg):
                    fn(lib.tensor(x), 0.3, training=True)
                continue
            y = fn(lib.tensor(x), 0.3, training=True)
        check_dropped(x, y.numpy(), 0.3, f"{lib.__name__} {name} rank {rank}", channel_dims=expected)
        if expected and rank - expected >= 1 and SHAPE[rank - expected - 1] >= 16:   # draws differ per channel
            draws = (y.numpy() != 0).reshape(y.shape[:rank - expected] + (-1,))[..., 0]
            assert draws.reshape(-1, draws.shape[-1]).std() > 0
    # the module warns the same way, and in eval mode dropout2d/3d still warn (torch checks ranks first)
    if expected != "error":
        with pytest.warns(UserWarning, match=name) if warns else warnings.catch_warnings():
            y = getattr(ember.nn, module)(0.3)(ember.tensor(x))
        assert tuple(y.shape) == tuple(x.shape)
    if warns:
        with pytest.warns(UserWarning, match="deprecated|channel-wise 1D"):
            out = getattr(ember.nn.functional, name)(ember.tensor(x), 0.3, training=False)
        np.testing.assert_array_equal(out.numpy(), x)


def test_dropout2d_on_3d_input_warns_it_is_read_as_n_c_l():
    x = ember.ones(64, 128, 5)
    with pytest.warns(UserWarning, match=r"dropout2d: Received a 3D input to dropout2d and assuming that "
                                          r"channel-wise 1D dropout behavior is desired"):
        y = ember.nn.functional.dropout2d(x, 0.5)
    per = (y.numpy() != 0)
    assert (per.all(-1) | ~per.any(-1)).all()          # one draw per (N, C)


def test_dropout1d_rank_error_names_the_rank_like_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
            lib.nn.functional.dropout1d(lib.ones(2, 3, 4, 5))


def test_unbatched_channel_dropout_inplace_keeps_shape():
    for name, shape in (("dropout1d", (64, 5)), ("dropout3d", (64, 2, 2, 2))):
        x = ember.ones(*shape)
        y = getattr(ember.nn.functional, name)(x, 0.5, inplace=True)
        assert y is x and tuple(x.shape) == shape
        per = x.numpy().reshape(64, -1) != 0
        assert (per.all(-1) | ~per.any(-1)).all()
