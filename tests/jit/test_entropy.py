"""Random numbers drawn outside ember's random primitives (ember/jit/entropy.py): a trace would bake
the first call's values into the graph, so such a signature runs eagerly, with a warning naming the
generator (strict: GuardError); ember's own random primitives stay compiled."""
import random
import warnings

import numpy as np
import pytest

import ember
from ember.jit import GuardError
from ember.jit import entropy


def _noise(x):
    return x + ember.from_numpy(np.random.randn(3).astype(np.float32))


def _values(f, n=3):
    return [tuple(f(ember.zeros(3)).tolist()) for _ in range(n)]


def test_numpy_global_draws_run_eagerly_and_a_watchless_trace_is_stale(monkeypatch):
    f = ember.compile(_noise)
    with pytest.warns(UserWarning, match=r"numpy.random's global generator drew numbers.*runs eagerly"):
        vals = _values(f)
    assert len(set(vals)) == 3                       # fresh numbers at every call, as eagerly
    info = f.cache_info()
    assert info.eager_entries == ["random numbers drawn outside ember"] and info.eager_calls == 2

    class Blind(entropy.Watch):                      # what the compiler did before entropy.py
        def __exit__(self, *exc):
            super().__exit__(*exc)
            self.found = []
    monkeypatch.setattr("ember.jit.capture.Watch", Blind)
    stale = _values(ember.compile(_noise))
    assert len(set(stale)) == 1                      # every replay: the first call's numbers


def test_strict_and_jit_trace_raise_naming_the_call():
    with pytest.raises(GuardError, match="numpy.random's global generator"):
        ember.compile(_noise, strict=True)(ember.zeros(3))
    with pytest.raises(GuardError, match="Python's random module drew numbers"):
        ember.jit.trace(lambda x: x * random.random(), ember.ones(2))
    mine = random.Random(0)
    with pytest.raises(GuardError, match=r"mine \(a random.Random\) drew numbers"):
        ember.jit.trace(lambda x: x * mine.choice([1.0, 2.0]), ember.ones(2))


def test_a_generator_the_function_reads_is_watched_and_one_seeded_inside_is_not():
    rng = np.random.default_rng(0)
    f = ember.compile(lambda x: x * float(rng.random()))
    with pytest.warns(UserWarning, match=r"rng \(a numpy.random._generator.Generator\) drew numbers"):
        assert len({f(ember.ones(1)).item() for _ in range(4)}) == 4
    g = ember.compile(lambda x: x * float(np.random.default_rng(7).random()))   # the same each call
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len({g(ember.ones(1)).item() for _ in range(4)}) == 1
    assert g.cache_info().hits == 3


def test_ember_host_streams_run_eagerly_and_ember_draws_stay_compiled():
    f = ember.compile(lambda r: ember.poisson(r))
    with pytest.warns(UserWarning, match=r"\(ember's host-side NumPy stream \(numpy_generator\(\): augmentations, poisson\) drew numbers\)"):
        f(ember.full((50,), 4.0))
    assert f.cache_info().eager_entries
    g = ember.compile(lambda x: x + ember.rand(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vals = {tuple(g(ember.zeros(3)).tolist()) for _ in range(4)}
    assert len(vals) == 4 and g.cache_info().hits == 3
