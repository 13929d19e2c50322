"""ember/ops/random_prims.py: Philox4x32-10 against the published known answers, the block layout, and the
statistics of every distribution the Random primitive makes.

Statistical tolerances are SIGMAS = 6 standard errors of the estimate (a false alarm about once in 5e8 runs
per check); every draw is seeded, so a run is deterministic anyway.
"""
import math

import numpy as np
import pytest

import ember
from ember.ops import random_prims as P

SIGMAS = 6
MASK = 0xFFFFFFFF

# Random123's kat_vectors for philox4x32 10 (counter words, key words, expected output), as also checked
# by TensorFlow's and Random123-Boost's test suites
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr, key, want", KAT, ids=["zeros", "ones", "pi"])
def test_philox_known_answers(ctr, key, want):
    counters = [np.array([c], dtype=np.uint64) for c in ctr]
    got = P.philox4x32(np, np.uint64(key[0]), np.uint64(key[1]), *counters)
    assert tuple(int(w[0]) for w in got) == want
    assert [int(c[0]) for c in counters] == list(ctr)          # the inputs are left alone
    scalars = P.philox4x32(np, np.uint64(key[0]), np.uint64(key[1]), *(np.uint64(c) for c in ctr))
    assert tuple(int(w) for w in scalars) == want               # scalar words (broadcast rounds) agree


def test_philox_vectorised_over_counters_and_mixed_scalar_words():
    # the three KAT counters under one key in one call, and a counter whose words are part scalar, part array
    key = (0xA4093822, 0x299F31D0)
    ctrs = np.array([c for c, _, _ in KAT] + [(5, 0, 7, 9)], dtype=np.uint64)
    together = P.philox4x32(np, np.uint64(key[0]), np.uint64(key[1]), *ctrs.T)
    for i, c in enumerate(ctrs):
        one = P.philox4x32(np, np.uint64(key[0]), np.uint64(key[1]), *(np.uint64(v) for v in c))
        assert [int(w[i]) for w in together] == [int(w) for w in one]
    assert [int(w[2]) for w in together] == list(KAT[2][2])
    mixed = P.philox4x32(np, np.uint64(1), np.uint64(2), np.arange(3, dtype=np.uint64), np.uint64(0),
                         np.uint64(7), np.uint64(9))
    full = P.philox4x32(np, np.uint64(1), np.uint64(2), np.arange(3, dtype=np.uint64), np.zeros(3, np.uint64),
                        np.full(3, 7, np.uint64), np.full(3, 9, np.uint64))
    for a, b in zip(mixed, full):
        assert a.shape == b.shape == (3,) and a.dtype == np.uint64
        np.testing.assert_array_equal(a, b)
    # all four words scalars: the rounds never run in place; the result is still four arrays
    one = P.philox4x32(np, np.uint64(1), np.uint64(2), *(np.uint64(v) for v in (5, 0, 7, 9)))
    assert all(isinstance(w, np.ndarray) and w.shape == () and w.dtype == np.uint64 for w in one)


def test_all_full_tells_when_every_word_is_a_full_array():
    """The rounds run in place only once all four words are arrays of one shape (not 0-d, not scalars)."""
    a, b = np.zeros(3, np.uint64), np.zeros(3, np.uint64)
    assert P._all_full(a, b, a, b)
    assert not P._all_full(a, np.uint64(0), a, b) and not P._all_full(np.uint64(0), a, a, b)
    assert not P._all_full(a, b, a, np.zeros(4, np.uint64)) and not P._all_full(np.zeros(4, np.uint64), a, a, b)
    assert not P._all_full(np.zeros((), np.uint64), *[np.zeros((), np.uint64)] * 3)
    assert not P._all_full(0, a, a, a)


def draw(dist, shape, dtype, seed=0, offset=0, prob=None, **params):
    state = ember.tensor(np.array([seed, offset], dtype=np.uint64).view(np.int64))
    inputs = (state,) if prob is None else (state, prob)
    return P.Random.apply(*inputs, dist=dist, shape=tuple(shape), dtype=np.dtype(dtype), **params).numpy()


def test_layout_block_j_gives_words_4j_to_4j_plus_3():
    # key = seed's words, counter = (block, 0, offset's words): bits of one draw are those words in order
    seed, offset = (0x299F31D0 << 32) | 0xA4093822, (7 << 32) | 5
    bits = draw("bits", (10,), np.int64, seed, offset)
    want = []
    for j in range(3):
        want += [int(w) for w in P.philox4x32(np, np.uint64(0xA4093822), np.uint64(0x299F31D0), np.uint64(j),
                                              np.uint64(0), np.uint64(5), np.uint64(7))]
    assert bits.tolist() == want[:10]
    # pieces on NumPy (2**14 blocks) do not change the numbers: a long draw's tail is computed in another piece
    long = draw("bits", (4 * (P._PIECE + 3),), np.int64, seed, offset)
    tail = [int(w) for w in P.philox4x32(np, np.uint64(0xA4093822), np.uint64(0x299F31D0),
                                         np.uint64(P._PIECE + 2), np.uint64(0), np.uint64(5), np.uint64(7))]
    assert long[-4:].tolist() == tail
    b64 = draw("bits", (2,), np.int64, seed, offset, words=2).view(np.uint64)
    assert [int(v) for v in b64] == [(want[0] << 32) | want[1], (want[2] << 32) | want[3]]


@pytest.mark.parametrize("dist, dtype, n, blocks", [
    ("uniform", np.float32, 9, 3), ("uniform", np.float64, 9, 5), ("normal", np.float32, 4, 1),
    ("normal", np.float64, 5, 3), ("bits", np.int64, 8, 2), ("integers", np.int64, 3, 1),
    ("bernoulli", np.bool_, 17, 5)])
def test_blocks_count_what_a_draw_uses(dist, dtype, n, blocks):
    assert P.blocks(dist, dtype, n) == blocks
    assert P.blocks("integers", np.int64, 3, span=1 << 33) == 2
    assert P.blocks("bits", np.int64, 3, words=2) == 2
    assert P.blocks("bernoulli", np.bool_, 17, bits=16) == 3


def assert_close_mean(x, mu, sd, what):
    se = sd / math.sqrt(x.size)
    assert abs(x.mean() - mu) <= SIGMAS * se, f"{what}: mean {x.mean()} vs {mu} +- {SIGMAS * se}"


def assert_fraction(k, n, q, what):
    sd = math.sqrt(q * (1 - q) / n)
    assert abs(k / n - q) <= SIGMAS * sd + 1e-12, f"{what}: {k}/{n} vs {q} +- {SIGMAS * sd}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, "bfloat16"])
def test_uniform_statistics(dtype):
    dtype = ember.bfloat16.np if dtype == "bfloat16" else np.dtype(dtype)
    u = draw("uniform", (200_000,), dtype, seed=1).astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert_close_mean(u, 0.5, math.sqrt(1 / 12), "uniform mean")
    assert_close_mean((u - 0.5) ** 2, 1 / 12, math.sqrt(1 / 180), "uniform variance")   # var of (u-1/2)^2
    for lo in (0.0, 0.25, 0.5, 0.75):
        assert_fraction(int(((u >= lo) & (u < lo + 0.25)).sum()), u.size, 0.25, f"uniform quarter {lo}")


def test_uniform_float64_uses_53_bits():
    u = draw("uniform", (4096,), np.float64, seed=2)
    scaled = u * 2.0 ** 53
    assert (scaled == np.round(scaled)).all()
    assert (np.round(scaled) % 2 ** 21 != 0).mean() > 0.99       # more than 32 bits of each number are used


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_statistics(dtype):
    z = draw("normal", (200_001,), dtype, seed=3).astype(np.float64)    # odd: the last pair is cut
    assert np.isfinite(z).all()
    assert_close_mean(z, 0.0, 1.0, "normal mean")
    assert_close_mean(z ** 2, 1.0, math.sqrt(2.0), "normal variance")
    assert_fraction(int((np.abs(z) > 1).sum()), z.size, math.erfc(1 / math.sqrt(2)), "P(|z| > 1)")
    assert_fraction(int((np.abs(z) > 2.5).sum()), z.size, math.erfc(2.5 / math.sqrt(2)), "P(|z| > 2.5)")
    # the two normals of a Box-Muller pair are uncorrelated
    pairs = z[:200_000].reshape(-1, 2)
    assert_close_mean(pairs[:, 0] * pairs[:, 1], 0.0, 1.0, "pair correlation")


@pytest.mark.parametrize("low, span", [(0, 10), (-5, 3), (0, 1 << 32), (-(1 << 40), 1 << 41), (-(1 << 63), 1 << 64)])
def test_integers_cover_the_range_uniformly(low, span):
    v = draw("integers", (60_000,), np.int64, seed=4, low=low, span=span)
    vals = v.astype(object) if span >= 1 << 63 else v
    assert min(vals) >= low and max(vals) < low + span
    if span < 100:   # every value equally often
        for c in np.bincount(v - low, minlength=span):
            assert_fraction(int(c), v.size, 1 / span, "integers value frequency")
        return
    rel = (v.astype(np.float64) - low) / span                   # in [0, 1): each quarter equally often
    for lo in (0.0, 0.25, 0.5, 0.75):
        assert_fraction(int(((rel >= lo) & (rel < lo + 0.25)).sum()), v.size, 0.25, f"integers quarter {lo}")


@pytest.mark.parametrize("bits", [32, 16])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.97, 1.0])
def test_bernoulli_scalar_fraction(bits, p):
    m = draw("bernoulli", (100_003,), np.bool_, seed=5, threshold=round(p * 2 ** bits), bits=bits)
    assert m.dtype == np.bool_
    assert_fraction(int(m.sum()), m.size, p, f"bernoulli(p={p}, bits={bits})")
    # value: a mask in a float dtype with the success value (dropout's 1 / (1 - p))
    f = draw("bernoulli", (1000,), np.float32, seed=5, threshold=round(p * 2 ** bits), bits=bits, value=2.5)
    assert set(np.unique(f)) <= {0.0, 2.5} and ((f != 0) == m[:1000]).all()


def test_bernoulli_tensor_probabilities():
    probs = np.tile(np.array([0.0, 0.2, 0.5, 0.9, 1.0]), (20_000, 1))
    m = draw("bernoulli", probs.shape, np.float64, seed=6, prob=ember.tensor(probs))
    for j, q in enumerate(probs[0]):
        assert_fraction(int(m[:, j].sum()), m.shape[0], q, f"bernoulli(tensor p={q})")


def test_random_is_not_differentiable_and_empty_draws_work():
    state = ember.tensor(np.array([1, 0], dtype=np.int64))
    assert not P.Random.apply(state, dist="uniform", shape=(3,), dtype=np.dtype(np.float32)).requires_grad
    assert draw("normal", (0, 4), np.float32).shape == (0, 4)
    assert draw("uniform", (), np.float32).shape == ()


@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 3 * P._PIECE])
def test_permutation_is_the_order_of_the_random_keys(n):
    perm = draw("permutation", (n,), np.int64, seed=9)
    assert sorted(perm.tolist()) == list(range(n))
    keys = draw("bits", (n,), np.int64, seed=9, words=2).view(np.uint64)     # the same words
    b = max(1, (n - 1).bit_length())
    high = keys >> np.uint64(b)
    assert (np.diff(high[perm].astype(np.float64)) >= 0).all()               # sorted by the keys' high bits


# ---------------------------------------------------------------- each distribution's map from words to values,
# bit for bit, as the module docstring documents it (the words themselves: the layout test above)
SEED, OFFSET = 0x1234_5678_9ABC_DEF0, 3


def words(n):
    """The draw's first n 32-bit words, as uint64."""
    return draw("bits", (n,), np.int64, SEED, OFFSET).view(np.uint64)


def ubits(w, bits):
    return (w >> np.uint64(32 - bits)).astype(np.float32) * np.float32(2.0 ** -bits)


def u53(a, b):
    return (((a >> np.uint64(5)) << np.uint64(26)) | (b >> np.uint64(6))).astype(np.float64) * 2.0 ** -53


def box_muller(u1, u2):
    r = np.sqrt(np.log(u1) * u1.dtype.type(-2.0))
    theta = u2 * u2.dtype.type(2 * math.pi)
    return r * np.cos(theta), r * np.sin(theta)


@pytest.mark.parametrize("dtype,bits", [("float32", 24), ("float16", 11), ("bfloat16", 8)])
def test_uniform_values_are_the_top_bits_of_one_word(dtype, bits):
    dt = ember.bfloat16._np if dtype == "bfloat16" else np.dtype(dtype)
    got = draw("uniform", (3, 5), dt, SEED, OFFSET)
    want = ubits(words(15), bits).astype(dt).reshape(3, 5)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_uniform_float64_values_take_two_words_each():
    w = words(14)
    np.testing.assert_array_equal(draw("uniform", (7,), np.float64, SEED, OFFSET), u53(w[0::2], w[1::2]))


def test_normal_values_are_box_muller_of_the_documented_uniforms():
    w = words(12)
    z0, z1 = box_muller(u53(w[0::4], w[1::4]) + 2.0 ** -53, u53(w[2::4], w[3::4]))
    np.testing.assert_array_equal(draw("normal", (6,), np.float64, SEED, OFFSET), np.stack([z0, z1], 1).reshape(-1))
    w = words(16)
    one = np.float32(2.0 ** -24)
    z = [box_muller(ubits(w[a::4], 24) + one, ubits(w[a + 1::4], 24)) for a in (0, 2)]
    want = np.stack([z[0][0], z[0][1], z[1][0], z[1][1]], 1).reshape(-1)
    np.testing.assert_array_equal(draw("normal", (15,), np.float32, SEED, OFFSET), want[:15])
    np.testing.assert_array_equal(draw("normal", (16,), np.float16, SEED, OFFSET), want.astype(np.float16))


@pytest.mark.parametrize("low,span", [(0, 10), (-7, 1 << 32), (3, (1 << 32) + 5), (-(1 << 40), 1 << 41),
                                      (-(1 << 63), 1 << 64)])
def test_integers_values(low, span):
    got = draw("integers", (9,), np.int64, SEED, OFFSET, low=low, span=span).view(np.uint64)
    if span <= 1 << 32:   # one word: multiply-shift
        want = [((int(x) * span) >> 32) + low for x in words(9)]
    else:                 # two words as one 64-bit number
        w = [int(x) for x in words(18)]
        want = [(((a << 32) | b) % span) + low for a, b in zip(w[0::2], w[1::2])]
    assert [int(v) for v in got] == [v % (1 << 64) for v in want]


def test_bernoulli_values():
    w = words(8)
    t = round(0.3 * 2 ** 32)
    assert draw("bernoulli", (8,), np.bool_, SEED, OFFSET, threshold=t).tolist() == (w < t).tolist()
    assert draw("bernoulli", (3,), np.bool_, SEED, OFFSET, threshold=1 << 32).tolist() == [True] * 3
    t16 = round(0.3 * 2 ** 16)
    halves = [(int(x) >> s) & 0xFFFF for x in w for s in (0, 16)]   # each word's low, then high half
    got = draw("bernoulli", (15,), np.bool_, SEED, OFFSET, threshold=t16, bits=16)
    assert got.tolist() == [h < t16 for h in halves[:15]]
    scaled = draw("bernoulli", (15,), np.float32, SEED, OFFSET, threshold=t16, bits=16, value=2.5)
    assert scaled.dtype == np.float32 and scaled.tolist() == [2.5 * (h < t16) for h in halves[:15]]
    # probabilities given as a tensor: x / 2**32 < p, also for a draw that ends inside a block
    p = np.linspace(0.05, 0.95, 7)
    got = draw("bernoulli", (7,), np.bool_, SEED, OFFSET, prob=ember.tensor(p))
    assert got.tolist() == (words(7).astype(np.float64) * 2.0 ** -32 < p).tolist()


@pytest.mark.parametrize("n", [2, 3, 8, 9, 16])
def test_permutation_values(n):
    w = [int(x) for x in words(2 * n)]
    b = max(1, (n - 1).bit_length())
    keys = sorted((((a << 32) | c) >> b << b) | i for i, (a, c) in enumerate(zip(w[0::2], w[1::2])))
    assert draw("permutation", (n,), np.int64, SEED, OFFSET).tolist() == [k & ((1 << b) - 1) for k in keys]


def test_unknown_distribution_and_inferred_dtypes():
    from helpers import raises_exactly
    state = ember.tensor(np.array([1, 0], dtype=np.int64))
    raises_exactly(lambda: P.Random.apply(state, dist="gamma", shape=(2,), dtype=np.dtype(np.float32)), ValueError,
                   "random: unknown distribution 'gamma'", located=False)
    meta = ember.empty(2, dtype=ember.int64, device="meta")
    for dist, dtype, params, want in [("bernoulli", np.float32, {"threshold": 5}, np.float32),
                                      ("bernoulli", np.float16, {"threshold": 5}, np.float16),
                                      ("bernoulli", np.bool_, {"threshold": 5}, np.bool_),
                                      ("normal", np.float16, {}, np.float16),
                                      ("integers", np.int64, {"span": 3}, np.int64),
                                      ("permutation", np.int64, {}, np.int64)]:
        out = P.Random.apply(meta, dist=dist, shape=(3,), dtype=np.dtype(dtype), **params)
        assert out._data.dtype == np.dtype(want) and out.shape == (3,), (dist, dtype)
    for dist, params in [("bits", {}), ("integers", {"span": 3}), ("permutation", {})]:   # always int64
        out = P.Random.apply(state, dist=dist, shape=(3,), dtype=np.dtype(np.float32), **params)
        assert out.dtype is ember.int64, dist


def test_draws_on_the_device_give_the_host_values(fake_cuda):
    """The device runs one piece per draw; the host's pieces give the same values."""
    for dist, dtype, params in [("uniform", np.float32, {}), ("normal", np.float64, {}), ("bits", np.int64, {})]:
        state = np.array([SEED, OFFSET], dtype=np.uint64).view(np.int64)
        host = P.Random.apply(ember.tensor(state), dist=dist, shape=(11,), dtype=np.dtype(dtype), **params)
        dev = P.Random.apply(ember.tensor(state, device="cuda"), dist=dist, shape=(11,), dtype=np.dtype(dtype),
                             **params)
        assert dev.device.type == "cuda"
        np.testing.assert_array_equal(dev.cpu().numpy(), host.numpy())
