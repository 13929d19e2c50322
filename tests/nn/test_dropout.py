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


# ------------------------------------------------------------------ alpha dropout: torch's formula exactly
def _alpha_parts(x, y, p):
    """Split y = alpha_dropout(x) into kept and dropped elements by torch's formula (_dropout_impl):
    kept a*x + alpha*a*p, dropped alpha*a*(p - 1), a = ((alpha^2 p + 1)(1 - p))^-1/2, alpha = 1.7581."""
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    kept = np.isclose(y, a * x + alpha * a * p, rtol=0, atol=1e-12)
    dropped = np.isclose(y, alpha * a * (p - 1), rtol=0, atol=1e-12)
    assert (kept | dropped).all(), "values neither kept nor dropped by torch's formula"
    return kept, a


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("p", [0.2, 0.6])
def test_alpha_dropout_values_mask_and_gradient(name, p):
    fn = getattr(ember.nn.functional, name)
    x = np.random.default_rng(5).uniform(0.5, 2.0, (40, 50, 3))
    ember.manual_seed(11)
    xe = ember.tensor(x, requires_grad=True)
    y = fn(xe, p, training=True)
    assert y.dtype == ember.float64 and y.shape == (40, 50, 3)
    kept, a = _alpha_parts(x, y.detach().numpy(), p)
    if name == "feature_alpha_dropout":   # one draw per (N, C): whole rows of the last axis
        assert (kept.all(-1) | ~kept.any(-1)).all()
        draws = kept[..., 0]
    else:                                  # one draw per element: most channels are mixed
        draws = kept
        assert (kept.any(-1) & ~kept.all(-1)).mean() > 0.3
    assert abs(draws.mean() - (1 - p)) < 0.1
    y.backward(ember.ones(40, 50, 3))
    np.testing.assert_allclose(xe.grad.numpy(), kept * a, rtol=1e-12)   # d/dx = keep * a


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_edge_cases_as_torch(name):
    fn, tfn = getattr(ember.nn.functional, name), getattr(torch.nn.functional, name)
    x = np.random.default_rng(6).uniform(0.5, 2.0, (4, 5, 3))
    # off by default (training=False), identity at p=0, zeros at p=1, as torch
    for kw in ({"p": 0.5}, {"p": 0.0, "training": True}, {"p": 1.0, "training": True}):
        np.testing.assert_array_equal(fn(ember.tensor(x), **kw).numpy(), tfn(torch.tensor(x), **kw).numpy())
    y = fn(ember.tensor(x))                                     # default p=0.5, not training
    np.testing.assert_array_equal(y.numpy(), x)
    # p=1 keeps the graph: the gradient is zero, not missing
    xe = ember.tensor(x, requires_grad=True)
    fn(xe, 1.0, training=True).sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), np.zeros_like(x))
    # an empty input comes back as it is
    e = ember.zeros(0, 5, 3)
    assert fn(e, 0.5, training=True) is e
    # p is checked with the op's name
    with pytest.raises(ValueError, match=rf"^{name}: probability has to be between 0 and 1, but got 1.5 \(at "):
        fn(ember.tensor(x), 1.5, training=True)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("p", [0.3, 1.0])
def test_alpha_dropout_inplace_writes_into_the_input(name, p):
    fn = getattr(ember.nn.functional, name)
    x = np.random.default_rng(7).uniform(0.5, 2.0, (30, 20, 2))
    xe = ember.tensor(x)
    ember.manual_seed(3)
    y = fn(xe, p, training=True, inplace=True)
    assert y is xe
    ember.manual_seed(3)
    np.testing.assert_array_equal(xe.numpy(), fn(ember.tensor(x), p, training=True).numpy())
    x2 = ember.tensor(x)
    assert fn(x2, p, training=True) is not x2        # out of place by default
    np.testing.assert_array_equal(x2.numpy(), x)


def test_feature_alpha_dropout_needs_a_channel_dim():
    with pytest.raises(RuntimeError, match=r"^feature_alpha_dropout: expected an input with at least 2 "
                                           r"dimensions \(N, C, \.\.\.\), got shape \(5,\)"):
        ember.nn.functional.feature_alpha_dropout(ember.zeros(5), 0.5, training=True)


@pytest.mark.parametrize("name,shape,channel_dims", [("dropout2d", (40, 30, 2, 2), 2),
                                                     ("dropout3d", (40, 30, 2, 2, 2), 3)])
def test_channel_dropout_defaults_and_inplace(name, shape, channel_dims):
    """torch's defaults: p=0.5, training=True, out of place; inplace=True writes into the input."""
    fn = getattr(ember.nn.functional, name)
    x = np.random.default_rng(8).uniform(0.5, 2.0, shape)
    xe = ember.tensor(x)
    ember.manual_seed(1)
    y = fn(xe)
    assert y is not xe
    np.testing.assert_array_equal(xe.numpy(), x)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], 2 * x[kept], rtol=1e-12)   # 1 / (1 - 0.5)
    per = kept.reshape(shape[:2] + (-1,))
    assert (per.all(-1) | ~per.any(-1)).all() and 0.35 < per[..., 0].mean() < 0.65
    ember.manual_seed(1)
    assert fn(xe, inplace=True) is xe
    np.testing.assert_array_equal(xe.numpy(), y.numpy())
    with pytest.raises(ValueError, match=rf"^{name}: probability has to be between 0 and 1, but got -0.1 \(at "):
        fn(xe, -0.1)


@pytest.mark.parametrize("name,rank,text", [
    ("dropout2d", 2, "Received a 2-D input to dropout2d, which is deprecated and will result in an error in a "
                     "future release. To retain the behavior and silence this warning, please use dropout "
                     "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                     "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                     "inputs)."),
    ("dropout3d", 3, "Received a 3-D input to dropout3d, which is deprecated and will result in an error in a "
                     "future release. To retain the behavior and silence this warning, please use dropout "
                     "instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                     "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                     "inputs)."),
    ("dropout2d", 3, "Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
                     "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                     "behavior will change in a future release to interpret the input as one without a batch "
                     "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                     "switch to using dropout1d instead."),
])
def test_channel_dropout_warnings_are_torchs(name, rank, text):
    x = (2, 3, 4)[:rank]
    with pytest.warns(UserWarning) as got:
        getattr(ember.nn.functional, name)(ember.ones(*x), 0.5)
    with pytest.warns(UserWarning) as want:
        getattr(torch.nn.functional, name)(torch.ones(*x), 0.5)
    assert [str(w.message) for w in want] == [f"{name}: {text}"]
    assert len(got) == 1 and str(got[0].message).startswith(f"{name}: {text} (at ")


@pytest.mark.parametrize("name", ["dropout", "dropout2d", "alpha_dropout", "feature_alpha_dropout"])
def test_dropout_keeps_dtype_and_device(fake_cuda, name):
    fn = getattr(ember.nn.functional, name)
    for dt in (ember.float32, ember.float16):
        x = ember.ones(4, 6, 3, 3, dtype=dt, device="cuda")
        y = fn(x, 0.5, training=True)
        assert y.dtype == dt and y.device.type == "cuda"
