"""ember/random.py: seeding, Generator, sampling distributions, in-place samplers."""
import numpy as np
import pytest

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
