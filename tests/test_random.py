"""ember/random.py: seeding, Generator, sampling distributions, in-place samplers."""
import numpy as np
import pytest
import torch

import ember

SAMPLERS = {
    "rand": lambda **k: ember.rand(3, 4, **k),
    "randn": lambda **k: ember.randn(3, 4, **k),
    "randint": lambda **k: ember.randint(0, 10, (3, 4), **k),
    "randint_high_only": lambda **k: ember.randint(5, (6,), **k),
    "randperm": lambda **k: ember.randperm(8, **k),
    "normal": lambda **k: ember.normal(1.0, 2.0, (5,), **k),
    "normal_tensor": lambda **k: ember.normal(ember.zeros(4), ember.ones(4) * 3, **k),
    "bernoulli": lambda **k: ember.bernoulli(ember.full((6,), 0.5), **k),
    "multinomial": lambda **k: ember.multinomial(ember.tensor([0.1, 0.5, 0.4]), 2, **k),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_manual_seed_reproducible(name):
    ember.manual_seed(123)
    a = SAMPLERS[name]()
    ember.manual_seed(123)
    b = SAMPLERS[name]()
    ember.manual_seed(124)
    c = SAMPLERS[name]()
    assert a.tolist() == b.tolist()
    if name not in ("bernoulli", "multinomial", "randint_high_only"):
        assert a.tolist() != c.tolist()


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_generator_independent_of_global(name):
    g1 = ember.Generator().manual_seed(7)
    a = SAMPLERS[name](generator=g1)
    ember.manual_seed(0)
    _ = ember.rand(10)          # consuming the default generator changes nothing for g
    g2 = ember.Generator().manual_seed(7)
    b = SAMPLERS[name](generator=g2)
    assert a.tolist() == b.tolist()


def test_dtypes_shapes_ranges():
    ember.manual_seed(0)
    r = ember.rand(1000)
    assert r.dtype is ember.float32 and 0 <= r.min().item() and r.max().item() < 1
    assert ember.rand(2, dtype=ember.float64).dtype is ember.float64
    n = ember.randn(20000, dtype=ember.float64)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
    i = ember.randint(3, 7, (1000,))
    assert i.dtype is ember.int64 and set(i.tolist()) == {3, 4, 5, 6}
    p = ember.randperm(50)
    assert p.dtype is ember.int64 and sorted(p.tolist()) == list(range(50))
    x = ember.normal(5.0, 0.1, (2000,))
    assert abs(x.mean().item() - 5) < 0.02
    with pytest.raises(ValueError, match="randint"):
        ember.randint(5, 5, (2,))
    assert ember.rand(2, 3, requires_grad=True).requires_grad


def test_rng_state_round_trip():
    ember.manual_seed(5)
    s = ember.get_rng_state()
    a = ember.randn(4)
    ember.set_rng_state(s)
    b = ember.randn(4)
    assert a.tolist() == b.tolist()
    assert ember.initial_seed() == 5


def test_inplace_samplers():
    ember.manual_seed(1)
    x = ember.empty(1000)
    assert x.uniform_(2, 3) is x and 2 <= x.min().item() and x.max().item() < 3 and x._version == 1
    x.normal_(10, 0.01)
    assert abs(x.mean().item() - 10) < 0.01
    x.bernoulli_(0.3)
    assert set(x.tolist()) <= {0.0, 1.0}
    x.exponential_()
    assert x.min().item() >= 0
    x.random_(0, 4)
    assert set(x.tolist()) <= {0.0, 1.0, 2.0, 3.0}
    g = ember.Generator().manual_seed(3)
    y1 = ember.empty(5).normal_(generator=g)
    y2 = ember.empty(5).normal_(generator=ember.Generator().manual_seed(3))
    assert y1.tolist() == y2.tolist()


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="multinomial"):
        ember.multinomial(ember.tensor([0.5, -0.1]), 1)
    with pytest.raises(RuntimeError, match="multinomial"):
        ember.multinomial(ember.tensor([1.0, 0.0]), 2)
    ember.manual_seed(0)
    m = ember.multinomial(ember.tensor([[0.0, 1.0], [1.0, 0.0]]), 3, replacement=True)
    assert m.tolist() == [[1, 1, 1], [0, 0, 0]]


def test_poisson_counts_with_the_given_rates():
    rates = ember.tensor([[0.0, 0.5, 3.0, 40.0]] * 5000, dtype=ember.float64)
    g = ember.Generator().manual_seed(11)
    k = ember.poisson(rates, generator=g)
    assert k.shape == rates.shape and k.dtype == ember.float64
    assert bool((k == k.round()).all()) and not k[:, 0].any()          # whole counts; rate 0 gives 0
    np.testing.assert_allclose(k.mean(0).numpy(), [0.0, 0.5, 3.0, 40.0], rtol=0.05)
    np.testing.assert_allclose(k.var(0).numpy(), [0.0, 0.5, 3.0, 40.0], rtol=0.1)     # variance = rate
    again = ember.random.poisson(rates, generator=ember.Generator().manual_seed(11))
    assert again.tolist() == k.tolist()


def test_seed_reseeds_nondeterministically_and_is_reported():
    s1 = ember.seed()
    a = ember.rand(3)
    assert ember.initial_seed() == s1 and isinstance(s1, int)
    ember.manual_seed(s1)
    assert ember.rand(3).tolist() == a.tolist()                  # the reported seed reproduces the stream
    assert ember.random.seed() != s1                             # a fresh seed each call


# ------------------------------------------------------------------ the counter-based generator's contract
def test_state_is_seed_and_offset_as_16_bytes():
    g = ember.Generator().manual_seed(-1)
    s = g.get_state()
    assert s.dtype is ember.uint8 and s.shape == (16,)
    assert s.numpy().view("<u8").tolist() == [2 ** 64 - 1, 0]
    ember.rand(9, generator=g)                                   # 9 float32 uniforms: 3 blocks
    assert g.get_state().numpy().view("<u8").tolist() == [2 ** 64 - 1, 3]
    with pytest.raises(TypeError, match="set_state"):
        g.set_state(ember.zeros(4))


def test_initial_seed_keeps_64_bits_as_torch():
    import torch
    for seed in (-1, 0, 2 ** 63, 12345):
        torch.manual_seed(seed)
        ember.manual_seed(seed)
        assert ember.initial_seed() == torch.initial_seed()


def test_consecutive_draws_use_the_next_counters():
    # documented contract: a draw runs at the generator's offset, which then advances by the blocks it used
    # (ceil(n * words / 4)); the next draw is the one a generator set to that offset makes
    g = ember.Generator().manual_seed(42)
    a = ember.randn(10, generator=g)                             # 10 float32 normals: 3 blocks
    b = ember.rand(3, 2, dtype=ember.float64, generator=g)
    h = ember.Generator().manual_seed(42)
    state = h.get_state().numpy().copy()
    state.view("<u8")[1] = 3
    h.set_state(ember.tensor(state))
    assert ember.rand(3, 2, dtype=ember.float64, generator=h).tolist() == b.tolist()
    assert a.tolist() != ember.randn(10, generator=g).tolist()   # not a repeat of the first draw
    # one seed, two offsets: the bits of two draws share no counter, so they agree no more than chance
    x = ember.randint(0, 2 ** 31, (4000,), generator=g).numpy()
    y = ember.randint(0, 2 ** 31, (4000,), generator=g).numpy()
    assert (x == y).sum() <= 2 and len(np.intersect1d(x, y)) <= 4


def test_seeded_draws_are_fixed_numbers():
    # Philox4x32-10 under key (seed lo, seed hi), counter (block, 0, offset lo, offset hi): the first block's
    # words for seed 0 at offset 0 are Random123's first known answer
    ember.manual_seed(0)
    words = ember.random._draw("bits", (4,), np.int64, None, None).tolist()
    assert words == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ember.manual_seed(0)
    assert ember.rand(4).tolist() == [(w >> 8) / 2 ** 24 for w in words]


def test_rng_state_round_trip_through_a_checkpoint(tmp_path):
    ember.manual_seed(3)
    ember.rand(5)
    ember.save({"rng": ember.get_rng_state()}, tmp_path / "rng.pt")
    a = ember.randn(6)
    ember.manual_seed(99)
    ember.set_rng_state(ember.load(tmp_path / "rng.pt")["rng"])
    assert ember.randn(6).tolist() == a.tolist()


def test_numpy_generator_for_host_samplers():
    g = ember.Generator().manual_seed(8)
    n1 = g.numpy_generator()
    assert g.numpy_generator() is n1                             # the same stream until the state moves
    first = n1.random(3)
    assert g.get_state().numpy().view("<u8")[1] == 1            # deriving it advanced the offset by one
    again = ember.Generator().manual_seed(8).numpy_generator().random(3)
    assert again.tolist() == first.tolist()                       # reproducible from the seed
    ember.rand(2, generator=g)
    assert g.numpy_generator() is not n1                          # a device draw ends the handed-out stream
    # save/restore covers host draws too: restoring a state replays the host stream drawn after it
    s = g.get_state()
    x = g.numpy_generator().random(4)
    g.set_state(s)
    assert g.numpy_generator().random(4).tolist() == x.tolist()


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_rand_randn_dtypes(dtype):
    ember.manual_seed(0)
    r, n = ember.rand(1000, dtype=dtype), ember.randn(1000, dtype=dtype)
    assert r.dtype is dtype and n.dtype is dtype
    assert 0 <= r.min().item() and r.max().item() < 1 and abs(n.float().mean().item()) < 0.2
    with pytest.raises(RuntimeError, match="rand: expects a floating point dtype, got int64"):
        ember.rand(2, dtype=ember.int64)


def test_inplace_samplers_statistics():
    ember.manual_seed(21)
    x = ember.empty(100_000, dtype=ember.float64)
    e = x.exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 6 * 0.5 / np.sqrt(e.size)
    gm = x.geometric_(0.25).numpy()
    assert gm.min() >= 1 and (gm == np.round(gm)).all() and abs(gm.mean() - 4) < 6 * np.sqrt(12 / gm.size)
    ln = np.log(x.log_normal_(0.5, 0.1).numpy())
    assert abs(ln.mean() - 0.5) < 6 * 0.1 / np.sqrt(ln.size)
    i = ember.empty(50_000, dtype=ember.int64).random_()
    assert i.min().item() >= 0 and i.float().mean().item() > 2 ** 61     # [0, 2**63): mean ~2**62
    b = ember.empty(40_000).bernoulli_(ember.full((40_000,), 0.3)).numpy()
    assert abs(b.mean() - 0.3) < 6 * np.sqrt(0.21 / b.size)


FAKE_CUDA_SAME_NUMBERS = """
import numpy as np, ember
from ember import backends
import ember.nn.functional as F
copies = []
cuda = backends.get("cuda")
real = cuda.to_device
cuda.to_device = lambda a, d=None: (copies.append(np.asarray(a).size), real(a, d))[1]
samplers = {   # device -> a draw (its inputs made beforehand)
    "rand": lambda d: lambda: ember.rand(3, 5, device=d),
    "rand64": lambda d: lambda: ember.rand(7, dtype=ember.float64, device=d),
    "randn": lambda d: lambda: ember.randn(1000, device=d),
    "randint": lambda d: lambda: ember.randint(-3, 9, (50,), device=d),
    "randperm": lambda d: lambda: ember.randperm(30, device=d),
    "normal": lambda d: lambda: ember.normal(2.0, 3.0, (9,), device=d),
    "bernoulli": lambda d: (lambda p: lambda: ember.bernoulli(p))(ember.full((40,), 0.3, device=d)),
    "multinomial": lambda d: (lambda w: lambda: ember.multinomial(w, 2))(ember.tensor([[1.0, 2.0, 3.0]] * 4, device=d)),
    "dropout": lambda d: (lambda x: lambda: F.dropout(x, 0.5))(ember.ones(64, device=d)),
    "uniform_": lambda d: (lambda x: lambda: x.uniform_(-1, 1))(ember.empty(6, device=d)),
    "random_": lambda d: (lambda x: lambda: x.random_(0, 100))(ember.empty(6, dtype=ember.int64, device=d)),
}
for name, f in samplers.items():
    ember.manual_seed(11)
    a = f("cpu")()
    draw = f("cuda")
    ember.manual_seed(11)
    del copies[:]
    b = draw()
    assert b.device.type == "cuda", name
    # what went to the device is the 2-word [seed, offset] state of each draw (and scalars), not samples
    assert copies and all(c <= 2 for c in copies), (name, copies)
    assert a.tolist() == b.cpu().tolist(), name
print("OK")
"""


def test_same_numbers_on_cpu_and_fake_cuda():
    import os
    import subprocess
    import sys
    env = dict(os.environ, EMBER_FAKE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", FAKE_CUDA_SAME_NUMBERS], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stderr


def test_threads_drawing_at_once_get_distinct_offsets():
    import sys
    import threading
    g = ember.Generator().manual_seed(1)
    out = []

    def work():
        for _ in range(200):
            out.append(tuple(ember.randint(0, 2 ** 32, (4,), generator=g).tolist()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)          # switch threads often, so an unguarded read-advance would race
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert len(set(out)) == 800                                   # no two draws got the same counters
    assert g.get_state().numpy().view("<u8")[1] == 800


def test_binomial_counts_successes_with_torchs_edge_cases():
    count = ember.tensor([[0.0, 10.0, 10.0, 40.0]] * 5000, dtype=ember.float64)
    prob = ember.tensor([[0.5, 0.0, 1.0, 0.25]] * 5000, dtype=ember.float64)
    k = ember.binomial(count, prob, generator=ember.Generator().manual_seed(3))
    assert k.shape == count.shape and k.dtype == ember.float64 and bool((k == k.round()).all())
    assert k[:, :3].tolist() == [[0.0, 0.0, 10.0]] * 5000                 # as torch: n=0, p=0, p=1
    np.testing.assert_allclose(k[:, 3].mean().item(), 10.0, rtol=0.03)    # n p
    np.testing.assert_allclose(k[:, 3].var().item(), 7.5, rtol=0.1)       # n p (1 - p)
    again = ember.binomial(count, prob, generator=ember.Generator().manual_seed(3))
    assert again.tolist() == k.tolist()
    assert ember.binomial(ember.ones(2, dtype=ember.float32), ember.ones(2)).dtype == ember.float32
    with pytest.raises(TypeError, match="binomial: only supports floating-point dtypes for count and prob, got int64"):
        ember.binomial(ember.tensor([5]), ember.tensor([0.5]))


def test_cauchy_follows_the_median_and_scale():
    ember.manual_seed(0)
    x = ember.empty(40000, dtype=ember.float64).cauchy_(1.0, 2.0)
    q = np.quantile(x.numpy(), [0.25, 0.5, 0.75])
    np.testing.assert_allclose(q, [-1.0, 1.0, 3.0], atol=0.1)   # median +- sigma at the quartiles
    y = ember.empty(3)
    assert y.cauchy_() is y and y.dtype == ember.float32


def test_fork_rng_restores_the_default_state_as_torch():
    for L in (torch, ember):
        L.manual_seed(0)
        want = L.rand(3)
        L.manual_seed(0)
        with L.random.fork_rng():
            L.manual_seed(5)
            L.rand(4)
        assert L.equal(L.rand(3), want)
        L.manual_seed(0)
        with pytest.raises(ValueError):
            with L.random.fork_rng():
                L.rand(2)
                raise ValueError("the state comes back on an exception too")
        assert L.equal(L.rand(3), want)
        L.manual_seed(0)
        with L.random.fork_rng(enabled=False):
            L.rand(2)
        assert not L.equal(L.rand(3), want)
