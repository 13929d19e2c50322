"""Training-mode randomness judged by its statistics, not by "two calls differ".

For every op and layer that drops or samples: the kept fraction, the rescale of what is kept, and the
shape of the mask (per element or per channel), over enough draws that a wrong probability, a missing
1/(1 - p) or an element mask where a channel mask belongs fails.

Tolerances are k-sigma binomial bounds: a fraction estimated from n draws with probability q has
standard deviation sqrt(q (1 - q) / n), and we allow SIGMAS = 6 of them (a false alarm about once in
5e8 runs per check). Every test seeds Ember's generator, so a run is deterministic anyway; the bound says
how far a correct implementation may wander on any seed, so changing a seed never needs a new tolerance.

Why the masks are not compared element by element with torch's: Ember's generator is Philox4x32-10 run on
the tensor's device (ember/ops/random_prims.py), a dropout mask taking 16 bits per element; torch's CPU
generator is an mt19937 whose bernoulli_ kernel consumes the stream in its own (vectorised, thread-chunked)
order, and its CUDA kernels spread Philox's counters over threads in their own way. The same seed gives
different streams, so the same masks cannot be had without reimplementing torch's generators and kernels. What can be compared with torch is everything around the
mask: given a mask read back from the output, the values (rescale, alpha-dropout's affine map) must be
the ones torch's formulas give, and those formulas are checked against torch's own outputs below.
"""
import math

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.transforms import RandomCrop, RandomHorizontalFlip, RandomRotation, RandomVerticalFlip

SIGMAS = 6


def assert_fraction(k, n, q, what):
    """k successes in n draws agree with probability q within SIGMAS binomial standard deviations."""
    sd = math.sqrt(q * (1 - q) / n)
    assert abs(k / n - q) <= SIGMAS * sd + 1e-12, \
        f"{what}: {k}/{n} = {k / n:.5f}, expected {q} +- {SIGMAS * sd:.5f} ({SIGMAS} sigma)"


def assert_mean(samples, mu, what):
    """The sample mean agrees with mu within SIGMAS standard errors (estimated from the samples)."""
    samples = np.asarray(samples, dtype=np.float64).ravel()
    se = samples.std() / math.sqrt(samples.size)
    assert abs(samples.mean() - mu) <= SIGMAS * se, \
        f"{what}: mean {samples.mean():.5f}, expected {mu} +- {SIGMAS * se:.5f} ({SIGMAS} sigma)"


def positive(*shape, seed=0):
    """Inputs in [0.5, 2): an output element is zero exactly where the mask dropped it."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(np.float32)


def check_dropped(x, y, p, what, channel_dims=0):
    """y is x with each element (channel_dims=0) or each channel (the trailing `channel_dims` axes share
    one draw) zeroed with probability p and the rest scaled by exactly 1/(1 - p). Returns the mask."""
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - p), rtol=1e-6, err_msg=f"{what}: kept values / (1-p)")
    if channel_dims:
        per = kept.reshape(kept.shape[:kept.ndim - channel_dims] + (-1,))
        whole = per.all(-1) | ~per.any(-1)
        assert whole.all(), f"{what}: {np.count_nonzero(~whole)} channels are partly dropped (mask not per channel)"
        draws = per[..., 0]
    else:
        draws = kept
        # an element mask: channels (last axis) mix kept and dropped elements
        rows = kept.reshape(-1, kept.shape[-1])
        assert (rows.any(-1) & ~rows.all(-1)).mean() > 0.5, f"{what}: whole rows kept or dropped together"
    assert_fraction(int(np.count_nonzero(draws)), draws.size, 1 - p, f"{what}: kept fraction")
    return kept


# ------------------------------------------------------------------ dropout, elementwise
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_fraction_rescale_and_gradient(p):
    ember.manual_seed(0)
    x = positive(300, 400)
    xe = ember.tensor(x, requires_grad=True)
    y = F.dropout(xe, p, training=True)
    kept = check_dropped(x, y.detach().numpy(), p, f"F.dropout(p={p})")
    y.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), kept / (1 - p), rtol=1e-6)   # the same mask, same scale


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_dropout_module_train_eval_and_inplace(p):
    ember.manual_seed(1)
    x = positive(200, 300, seed=1)
    m = ember.nn.Dropout(p)
    check_dropped(x, m(ember.tensor(x)).numpy(), p, "nn.Dropout train")
    m.eval()
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), x)
    xi = ember.tensor(x)
    out = F.dropout(xi, p, training=True, inplace=True)
    assert out is xi
    check_dropped(x, xi.numpy(), p, "F.dropout inplace")


def test_dropout_same_seed_same_mask_and_fresh_draws_otherwise():
    x = ember.ones(64, 64)
    ember.manual_seed(5)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    ember.manual_seed(5)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), a)
    # two draws with one generator are independent: they agree on ~half the elements, not all
    assert_fraction(int(np.count_nonzero((a != 0) == (b != 0))), a.size, 0.5, "agreement of two masks")


# ------------------------------------------------------------------ dropout, whole channels
CHANNEL_CASES = [   # name, functional, module, input shape, number of trailing axes sharing one draw
    ("dropout1d", F.dropout1d, ember.nn.Dropout1d, (64, 128, 7), 1),
    ("dropout1d_unbatched", F.dropout1d, ember.nn.Dropout1d, (4096, 5), 1),
    ("dropout2d", F.dropout2d, ember.nn.Dropout2d, (64, 128, 3, 4), 2),
    ("dropout3d", F.dropout3d, ember.nn.Dropout3d, (32, 128, 2, 3, 2), 3),
    ("dropout3d_unbatched", F.dropout3d, ember.nn.Dropout3d, (4096, 2, 2, 2), 3),
]


@pytest.mark.parametrize("name, fn, module, shape, dims", CHANNEL_CASES, ids=[c[0] for c in CHANNEL_CASES])
@pytest.mark.parametrize("p", [0.25, 0.7])
def test_channel_dropout_masks_whole_channels(name, fn, module, shape, dims, p):
    ember.manual_seed(2)
    x = positive(*shape, seed=2)
    check_dropped(x, fn(ember.tensor(x), p, training=True).numpy(), p, name, channel_dims=dims)
    m = module(p)
    check_dropped(x, m(ember.tensor(x)).numpy(), p, f"{module.__name__} train", channel_dims=dims)
    m.eval()
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), x)


def test_channel_dropout_gradient_is_the_mask():
    ember.manual_seed(3)
    x = ember.tensor(positive(16, 32, 5), requires_grad=True)
    y = F.dropout1d(x, 0.4)
    y.backward(ember.ones(16, 32, 5))
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) / 0.6, rtol=1e-6)


# ------------------------------------------------------------------ alpha dropout
SELU_NEG_SAT = 1.7580993408473766        # -scale * alpha of SELU: where dropped elements go


def alpha_constants(p):
    """torch's _dropout_impl: out = keep * a * x + b, b = (keep - 1) * alpha * a + alpha * a * p."""
    a = 1.0 / math.sqrt((SELU_NEG_SAT ** 2 * p + 1) * (1 - p))
    return a, SELU_NEG_SAT * a * p, SELU_NEG_SAT * a * (p - 1)   # a, b where kept, value where dropped


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_formula_agrees_with_torch(p):
    # read torch's own mask from its output and check the constants this file expects
    torch.manual_seed(0)
    x = torch.randn(200, 300, dtype=torch.float64)
    y = torch.nn.functional.alpha_dropout(x, p, training=True)
    a, b, dropped_value = alpha_constants(p)
    dropped = torch.isclose(y, torch.tensor(dropped_value, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(y[~dropped], a * x[~dropped] + b, rtol=1e-12, atol=1e-12)
    assert_fraction(int(dropped.sum()), dropped.numel(), p, "torch alpha_dropout dropped fraction")


ALPHA_CASES = [   # name, functional, module, input shape, trailing axes sharing one draw
    ("alpha_dropout", F.alpha_dropout, ember.nn.AlphaDropout, (400, 500), 0),
    ("feature_alpha_dropout", F.feature_alpha_dropout, ember.nn.FeatureAlphaDropout, (64, 1024, 3, 2), 2),
]


@pytest.mark.parametrize("name, fn, module, shape, dims", ALPHA_CASES, ids=[c[0] for c in ALPHA_CASES])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_keeps_mean_and_variance(name, fn, module, shape, dims, p):
    ember.manual_seed(4)
    x = np.random.default_rng(4).standard_normal(shape)          # what a SELU network feeds it
    xe = ember.tensor(x, dtype=ember.float64)
    y = fn(xe, p, training=True).numpy()
    a, b, dropped_value = alpha_constants(p)
    dropped = np.isclose(y, dropped_value, rtol=0, atol=1e-12) & ~np.isclose(a * x + b, dropped_value,
                                                                                 rtol=0, atol=1e-12)
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-12, atol=1e-12)
    draws = dropped
    if dims:
        per = dropped.reshape(shape[:2] + (-1,))
        assert (per.all(-1) | ~per.any(-1)).all(), f"{name}: channels partly dropped"
        draws = per[..., 0]
    assert_fraction(int(np.count_nonzero(draws)), draws.size, p, f"{name} dropped fraction")
    # mean 0 and variance 1 preserved; whole-channel draws are correlated within a channel, so the
    # standard error comes from per-channel means (independent) rather than from single elements
    units = y.reshape(shape[:2] + (-1,)).mean(-1) if dims else y
    assert_mean(units, 0.0, f"{name} mean")
    sq = (y.reshape(shape[:2] + (-1,)) ** 2).mean(-1) if dims else y ** 2
    assert_mean(sq, 1.0, f"{name} second moment")
    # the module: the same in training, the identity in eval; the functional is off by default
    ember.manual_seed(4)
    np.testing.assert_array_equal(module(p)(xe).numpy(), y)
    np.testing.assert_array_equal(module(p).eval()(xe).numpy(), x)
    np.testing.assert_array_equal(fn(xe, p).numpy(), x)


# ------------------------------------------------------------------ attention
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_sdpa_dropout_mask_and_rescale(p):
    # with value = identity the output *is* the (dropped) attention matrix: out_train / out_eval reads
    # the mask, which must be elementwise with probability p and scale 1/(1 - p)
    ember.manual_seed(6)
    B, H, L = 16, 4, 32
    q = ember.randn(B, H, L, 8)
    k = ember.randn(B, H, L, 8)
    v = ember.eye(L).expand(B, H, L, L)
    # the reference through the same composite path as dropout (an all-True mask), not the one-node
    # Attention, so that the two differ only by the dropout (not by float rounding)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.ones(L, L, dtype=ember.bool)).numpy()
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    check_dropped(ref, out, p, "sdpa dropout")


@pytest.mark.parametrize("p", [0.2, 0.5])
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_dropout_in_training(p, batch_first):
    # the per-head weights MHA returns are the dropped attention it multiplies with v (as in torch)
    ember.manual_seed(7)
    L, N, E = 24, 32, 16
    mha = ember.nn.MultiheadAttention(E, 4, dropout=p, batch_first=batch_first)
    x = ember.randn(N, L, E) if batch_first else ember.randn(L, N, E)
    mha.eval()
    out_eval, w_eval = mha(x, x, x, average_attn_weights=False)
    mha.train()
    out, w = mha(x, x, x, average_attn_weights=False)
    assert w.shape == (N, 4, L, L)
    w, out, out_eval = w.detach(), out.detach(), out_eval.detach()
    check_dropped(w_eval.detach().numpy(), w.numpy(), p, "MultiheadAttention dropout")
    # the output is made from those dropped weights: per head, w @ v with v = x W_v^T + b_v
    E_ = mha.embed_dim
    xs = x.transpose(0, 1) if batch_first else x                          # (L, N, E)
    v = (xs.numpy() @ mha.in_proj_weight.detach().numpy()[2 * E_:].T + mha.in_proj_bias.detach().numpy()[2 * E_:])
    v = v.reshape(L, N, 4, E_ // 4).transpose(1, 2, 0, 3)               # (N, H, L, hd)
    heads = (w.numpy() @ v).transpose(2, 0, 1, 3).reshape(L, N, E_)
    expected = heads @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()
    got = out.numpy().transpose(1, 0, 2) if batch_first else out.numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert not np.allclose(out.numpy(), out_eval.numpy())


def _record_dropouts(layer):
    records = {}
    for name, mod in layer.named_modules():
        if isinstance(mod, ember.nn.Dropout):
            mod.register_forward_hook(
                lambda m, inp, out, name=name: records.__setitem__(name, (inp[0].detach().numpy(), out.detach().numpy())))
    return records


def _check_layer_dropouts(layer, run, names, p, what):
    records = _record_dropouts(layer)
    layer.train()
    run()
    assert sorted(records) == sorted(names), f"{what}: dropout modules called: {sorted(records)}"
    for name, (inp, out) in records.items():
        nonzero = inp != 0                      # relu zeros inside the feed-forward block stay zero
        kept = (out != 0) & nonzero
        np.testing.assert_allclose(out[kept], inp[kept] / (1 - p), rtol=1e-5, err_msg=f"{what}.{name}")
        assert_fraction(int(kept.sum()), int(nonzero.sum()), 1 - p, f"{what}.{name} kept fraction")
    # the attention's own dropout is MultiheadAttention's (tested above): configured with p, in training
    for mod in layer.modules():
        if isinstance(mod, ember.nn.MultiheadAttention):
            assert mod.dropout == p and mod.training
    records.clear()
    layer.eval()
    run()
    for name, (inp, out) in records.items():
        np.testing.assert_array_equal(out, inp, err_msg=f"{what}.{name} in eval")


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_dropouts(norm_first):
    ember.manual_seed(8)
    p = 0.3
    layer = ember.nn.TransformerEncoderLayer(16, 2, dim_feedforward=64, dropout=p, norm_first=norm_first)
    src = ember.randn(20, 48, 16)
    _check_layer_dropouts(layer, lambda: layer(src), ["dropout", "dropout1", "dropout2"], p, "encoder layer")


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_layer_dropouts(norm_first):
    ember.manual_seed(9)
    p = 0.3
    layer = ember.nn.TransformerDecoderLayer(16, 2, dim_feedforward=64, dropout=p, norm_first=norm_first)
    tgt, mem = ember.randn(20, 48, 16), ember.randn(12, 48, 16)
    _check_layer_dropouts(layer, lambda: layer(tgt, mem), ["dropout", "dropout1", "dropout2", "dropout3"], p,
                          "decoder layer")


# ------------------------------------------------------------------ RNN inter-layer dropout
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("p", [0.3, 0.6])
def test_rnn_inter_layer_dropout_mask_and_rescale(mode, p):
    """Weights arranged so the mask can be read: one time step from a zero state (so weight_hh plays no
    part), layer 1 with a diagonal weight_ih per gate and zero biases. Then each unit of layer 1 depends on
    one input unit z only, and its output is exactly 0 when z was dropped (tanh(0), o * tanh(0.5 tanh 0),
    (1 - z) tanh(0)), and equals layer 1 run alone on y0 / (1 - p) when kept, y0 being layer 0's output."""
    ember.manual_seed(10)
    H, N = 32, 2048
    cls = getattr(ember.nn, mode)
    net = cls(8, H, num_layers=2, dropout=p, dtype=ember.float64)
    rng = np.random.default_rng(10)
    G = GATES[mode]
    diag = np.concatenate([np.diag(rng.uniform(0.5, 1.5, H)) for _ in range(G)])   # (G*H, H)
    with ember.no_grad():
        net.weight_ih_l1.copy_(ember.tensor(diag))
        net.bias_ih_l1.zero_()
        net.bias_hh_l1.zero_()
    layer0, layer1 = cls(8, H, dtype=ember.float64), cls(H, H, dtype=ember.float64)
    with ember.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(layer0, name + "_l0").copy_(getattr(net, name + "_l0"))
            getattr(layer1, name + "_l0").copy_(getattr(net, name + "_l1"))
    x = ember.tensor(rng.standard_normal((1, N, 8)))                  # (L=1, N, H_in)
    y0 = layer0(x)[0].detach()
    assert (y0.numpy() != 0).all()
    keep_value = layer1(y0 / (1 - p))[0].detach().numpy()
    assert (np.abs(keep_value) > 1e-12).all()
    net.train()
    out = net(x)[0].detach().numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], keep_value[kept], rtol=1e-10, atol=1e-12,
                               err_msg=f"{mode}: kept units must see y0 / (1 - p)")
    assert_fraction(int(kept.sum()), kept.size, 1 - p, f"{mode} inter-layer kept fraction")
    # the last layer's output is not dropped, and eval mode drops nothing
    net.eval()
    np.testing.assert_allclose(net(x)[0].detach().numpy(), layer1(y0)[0].detach().numpy(), rtol=1e-12)


# ------------------------------------------------------------------ random transforms
@pytest.mark.parametrize("cls, axis", [(RandomHorizontalFlip, -1), (RandomVerticalFlip, -2)])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_random_flip_fraction(cls, axis, p):
    ember.manual_seed(11)
    img = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    flipped = np.flip(img, axis)
    t = cls(p)
    n = 4000
    per_image = 0
    for _ in range(n):
        out = np.asarray(t(img))
        assert np.array_equal(out, img) or np.array_equal(out, flipped)
        per_image += np.array_equal(out, flipped)
    assert_fraction(per_image, n, p, f"{cls.__name__}(p={p}) on single images")
    batch = np.broadcast_to(img, (20000, 1, 3, 4)).copy()
    out = np.asarray(t(batch))
    is_flipped = (out == flipped).all(axis=(1, 2, 3))
    assert (is_flipped | (out == img).all(axis=(1, 2, 3))).all()
    assert_fraction(int(is_flipped.sum()), len(batch), p, f"{cls.__name__}(p={p}) on a batch")


def test_random_crop_offsets_are_uniform():
    ember.manual_seed(12)
    H, W, th, tw = 6, 7, 3, 4
    img = np.arange(H * W, dtype=np.float32).reshape(1, H, W)   # the crop's first pixel names its offset
    n_off = (H - th + 1) * (W - tw + 1)
    t = RandomCrop((th, tw))
    n = 12000
    firsts = [int(np.asarray(t(img))[0, 0, 0]) for _ in range(n // 4)]
    batch = np.broadcast_to(img, (n, 1, H, W)).copy()
    firsts_batch = np.asarray(t(batch))[:, 0, 0, 0].astype(int)
    for what, f in (("single images", np.asarray(firsts)), ("a batch", firsts_batch)):
        tops, lefts = f // W, f % W
        assert tops.max() <= H - th and lefts.max() <= W - tw
        counts = np.bincount(tops * (W - tw + 1) + lefts, minlength=n_off)
        assert len(counts) == n_off
        for c in counts:   # every offset equally likely
            assert_fraction(int(c), len(f), 1 / n_off, f"RandomCrop offset frequency on {what}")


def test_random_crop_with_padding_reaches_every_offset_uniformly():
    ember.manual_seed(13)
    img = np.ones((1, 4, 4), dtype=np.float32)
    out = np.asarray(RandomCrop(4, padding=2)(np.broadcast_to(img, (15000, 1, 4, 4)).copy()))
    # the number of zero (padding) rows on top says the vertical offset: 0..4 -> 2,1,0,0,0 zero rows at top
    top_zero_rows = (out[:, 0, :, :] == 0).all(-1)[:, :2].sum(-1)
    counts = np.bincount(top_zero_rows, minlength=3)
    for c, q in zip(counts, (3 / 5, 1 / 5, 1 / 5)):
        assert_fraction(int(c), len(out), q, "RandomCrop(padding=2) vertical offsets")


def test_random_rotation_angles_uniform():
    # a bright 5x5 square off-centre: its centroid after a nearest-neighbour rotation gives the angle
    ember.manual_seed(14)
    size = 41
    img = np.zeros((1, size, size), dtype=np.float32)
    img[0, 18:23, 32:37] = 1.0                                       # on the x axis, 14 px from the centre
    out = np.asarray(RandomRotation((-60, 60))(np.broadcast_to(img, (6000, 1, size, size)).copy()))[:, 0]
    grid = np.arange(size) - 20
    mass = out.sum((1, 2))
    assert (mass > 0).all()
    ys = (out.sum(2) * grid).sum(1) / mass
    xs = (out.sum(1) * grid).sum(1) / mass
    angles = np.degrees(np.arctan2(-ys, xs))                          # counter-clockwise, image y points down
    assert np.abs(angles).max() <= 60 + 4
    # uniform on (-60, 60): each third of the range gets a third of the draws (the pixel grid blurs the
    # edges by a few degrees, so the bins are the middle of each third)
    for lo, hi in ((-55, -25), (-15, 15), (25, 55)):
        assert_fraction(int(((angles >= lo) & (angles < hi)).sum()), len(angles), 30 / 120,
                        f"RandomRotation angles in [{lo}, {hi})")


# ------------------------------------------------------------------ sampling functions
def test_randperm_is_a_uniform_permutation():
    # each of the 4! orders equally likely (equal frequencies per position alone would pass a random
    # cyclic shift), and a larger n is a permutation with every value equally likely first
    ember.manual_seed(15)
    draws = 12000
    perms = np.stack([ember.randperm(4).numpy() for _ in range(draws)])
    codes = perms @ np.array([64, 16, 4, 1])
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == 24
    for c in counts:
        assert_fraction(int(c), draws, 1 / 24, "randperm(4) frequency of an order")
    big = np.stack([ember.randperm(50).numpy() for _ in range(2000)])
    assert (np.sort(big, 1) == np.arange(50)).all()
    assert_fraction(int((big[:, 0] < 10).sum()), 2000, 10 / 50, "randperm(50) first value below 10")


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_frequencies(replacement):
    ember.manual_seed(16)
    w = np.array([1.0, 2.0, 0.0, 5.0, 2.0])        # unnormalised; category 2 must never appear
    q = w / w.sum()
    draws = 20000
    rows = ember.tensor(np.tile(w, (draws, 1)))
    first = ember.multinomial(rows, 2, replacement=replacement).numpy()
    assert first.shape == (draws, 2) and (first != 2).all()
    counts = np.bincount(first[:, 0], minlength=5)
    for c, qi in zip(counts, q):
        assert_fraction(int(c), draws, qi, f"multinomial first draw (replacement={replacement})")
    if not replacement:
        assert (first[:, 0] != first[:, 1]).all()
        # the second draw renormalises without the first: P(second = j) = sum_i q_i q_j / (1 - q_i)
        q2 = np.array([sum(q[i] * q[j] / (1 - q[i]) for i in range(5) if i != j) for j in range(5)])
    else:
        q2 = q
    for c, qi in zip(np.bincount(first[:, 1], minlength=5), q2):
        assert_fraction(int(c), draws, qi, f"multinomial second draw (replacement={replacement})")


def test_bernoulli_fraction_per_probability():
    ember.manual_seed(17)
    probs = np.array([0.0, 0.05, 0.3, 0.5, 0.95, 1.0])
    draws = 20000
    out = ember.bernoulli(ember.tensor(np.tile(probs, (draws, 1)))).numpy()
    assert set(np.unique(out)) <= {0.0, 1.0}
    for j, pj in enumerate(probs):
        assert_fraction(int(out[:, j].sum()), draws, pj, f"bernoulli(p={pj})")
    half = ember.bernoulli(ember.zeros(draws, 4), p=0.25).numpy()
    assert_fraction(int(half.sum()), half.size, 0.25, "bernoulli(input, p=0.25)")
