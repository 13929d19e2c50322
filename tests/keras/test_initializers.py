"""ember.keras.initializers against Keras 3 (keras/src/initializers): fans of dense and conv kernels, each
distribution's scale (std and bounds over many draws), seeds, configs, `get`/`serialize` and errors."""
import math

import numpy as np
import pytest

import ember
from ember import keras
from ember.keras import initializers as I
from ember.keras import layers

TRUNC = 0.87962566103423978          # the std of a unit normal truncated at +-2


def draw(init, shape, dtype=None):
    out = init(shape) if dtype is None else init(shape, dtype=dtype)
    assert tuple(out.shape) == tuple(shape)
    return out.numpy().astype(np.float64)


def check_normal(w, std, truncated, mean=0.0):
    assert abs(w.mean() - mean) < 4 * std / math.sqrt(w.size)
    assert w.std() == pytest.approx(std, rel=0.02)
    if truncated:
        # `std` is the one after truncation: the normal's own is std / TRUNC, cut at 2 of those
        assert np.abs(w - mean).max() <= 2 * std / TRUNC + 1e-6
        assert np.abs(w - mean).max() >= 1.95 * std / TRUNC
    else:
        assert np.abs(w - mean).max() > 3.5 * std


def check_uniform(w, limit, low=None):
    low = -limit if low is None else low
    assert w.min() >= low and w.max() < limit
    assert w.min() < low + 0.01 * (limit - low) and w.max() > limit - 0.01 * (limit - low)
    assert w.mean() == pytest.approx((low + limit) / 2, abs=0.01 * (limit - low))


def test_fans_as_keras_compute_fans():
    assert I._fans(()) == (1, 1)
    assert I._fans((7,)) == (7, 7)
    assert I._fans((3, 5)) == (3, 5)
    assert I._fans((3, 3, 4, 8)) == (36, 72)             # a Conv2D kernel (kh, kw, in, out)
    assert I._fans((2, 3, 4, 5, 6)) == (24 * 5, 24 * 6)


CONV = (3, 3, 64, 128)                                   # fan_in 576, fan_out 1152, 73728 draws


@pytest.mark.parametrize("name,scale,fan,dist", [
    ("glorot_uniform", 1.0, (576 + 1152) / 2, "uniform"), ("glorot_normal", 1.0, (576 + 1152) / 2, "normal"),
    ("he_normal", 2.0, 576, "normal"), ("he_uniform", 2.0, 576, "uniform"),
    ("lecun_normal", 1.0, 576, "normal"), ("lecun_uniform", 1.0, 576, "uniform")])
def test_named_variance_scaling_on_a_conv_kernel(name, scale, fan, dist):
    ember.manual_seed(0)
    w = draw(I.get(name), CONV)
    if dist == "uniform":
        check_uniform(w, math.sqrt(3 * scale / fan))
    else:
        check_normal(w, math.sqrt(scale / fan), truncated=True)   # std after truncation = sqrt(scale / n)


@pytest.mark.parametrize("mode,n", [("fan_in", 576), ("fan_out", 1152), ("fan_avg", 864)])
@pytest.mark.parametrize("distribution", ["truncated_normal", "untruncated_normal", "uniform"])
def test_variance_scaling_modes_and_distributions(mode, n, distribution):
    ember.manual_seed(1)
    w = draw(I.VarianceScaling(scale=0.5, mode=mode, distribution=distribution), CONV)
    std = math.sqrt(0.5 / n)
    if distribution == "uniform":
        check_uniform(w, math.sqrt(3 * 0.5 / n))
    else:
        check_normal(w, std, truncated=distribution == "truncated_normal")


def test_variance_scaling_small_fans_use_one_and_vectors_use_their_length():
    ember.manual_seed(2)
    # fan_in 1 (< 1 for an empty axis): scale / max(1, fan) = scale
    check_normal(draw(I.VarianceScaling(2.0, "fan_in", "untruncated_normal"), (1, 40000)), math.sqrt(2.0), False)
    check_normal(draw(I.VarianceScaling(3.0, "fan_out", "untruncated_normal"), (40000,)),
                 math.sqrt(3.0 / 40000), False)
    assert draw(I.HeNormal(), (0, 4)).size == 0
    # a 0-d weight: fans (1, 1), so the scale itself
    vals = [float(draw(I.VarianceScaling(4.0, "fan_avg", "uniform"), ())) for _ in range(400)]
    assert max(np.abs(vals)) <= math.sqrt(12.0) and max(np.abs(vals)) > 0.9 * math.sqrt(12.0)


def test_variance_scaling_arguments_as_keras():
    assert I.VarianceScaling(distribution="normal").distribution == "truncated_normal"
    assert I.VarianceScaling(distribution="Uniform").distribution == "uniform"
    assert I.VarianceScaling(distribution="UNTRUNCATED_NORMAL").distribution == "untruncated_normal"
    v = I.VarianceScaling(scale=0.3, mode="fan_out", distribution="uniform", seed=5)
    assert (v.scale, v.mode, v.distribution, v.seed) == (0.3, "fan_out", "uniform", 5)
    with pytest.raises(ValueError, match=r"^VarianceScaling: `scale` must be a positive float, got scale=0\.0$"):
        I.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError, match=r"^VarianceScaling: `scale` must be a positive float, got scale=-1$"):
        I.VarianceScaling(scale=-1)
    with pytest.raises(ValueError, match=r"^VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', "
                                         r"got 'fan_sum'$"):
        I.VarianceScaling(mode="fan_sum")
    with pytest.raises(ValueError, match=r"^VarianceScaling: distribution must be 'truncated_normal', "
                                         r"'untruncated_normal' or 'uniform', got 'gamma'$"):
        I.VarianceScaling(distribution="Gamma")


def test_random_normal_uniform_truncated():
    ember.manual_seed(3)
    check_normal(draw(I.RandomNormal(), (200, 300)), 0.05, False)
    check_normal(draw(I.RandomNormal(mean=1.5, stddev=0.2), (200, 300)), 0.2, False, mean=1.5)
    check_uniform(draw(I.RandomUniform(), (200, 300)), 0.05)
    check_uniform(draw(I.RandomUniform(minval=2.0, maxval=3.0), (200, 300)), 3.0, low=2.0)
    w = draw(I.TruncatedNormal(mean=-1.0, stddev=0.5), (200, 300))
    assert w.min() >= -2.0 - 1e-6 and w.max() <= 1e-6          # mean +- 2 stddev
    assert w.min() < -1.95 and w.max() > -0.05
    assert w.std() == pytest.approx(0.5 * TRUNC, rel=0.02)      # the stddev before truncation, as Keras
    assert w.mean() == pytest.approx(-1.0, abs=0.01)
    check_normal(draw(I.TruncatedNormal(), (200, 300)), 0.05 * TRUNC, True)


def test_constant_zeros_ones_identity_orthogonal():
    assert draw(I.Constant(2.5), (2, 3)).tolist() == [[2.5] * 3] * 2
    assert draw(I.Constant(), (2,)).tolist() == [0.0, 0.0]
    assert I.Constant(3).value == 3.0 and isinstance(I.Constant(3).value, float)
    assert draw(I.Zeros(), (2, 2)).tolist() == [[0, 0], [0, 0]] and draw(I.Ones(), (3,)).tolist() == [1, 1, 1]
    assert draw(I.Identity(), (2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert draw(I.Identity(gain=2.0), (3, 2)).tolist() == [[2, 0], [0, 2], [0, 0]]
    with pytest.raises(ValueError, match=r"^Identity initializer needs a 2-D shape, got \(2, 2, 2\)$"):
        I.Identity()((2, 2, 2))
    ember.manual_seed(4)
    q = draw(I.Orthogonal(gain=3.0), (3, 3, 2, 8))          # flattened to (18, 8): orthogonal columns
    flat = q.reshape(18, 8)
    np.testing.assert_allclose(flat.T @ flat, 9.0 * np.eye(8), atol=1e-4)
    wide = draw(I.Orthogonal(), (4, 10))                     # more columns: orthogonal rows
    np.testing.assert_allclose(wide @ wide.T, np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match=r"^Orthogonal: the tensor to initialize must be at least two-dimensional\. "
                                         r"Received: shape=\(5,\) of rank 1\.$"):
        I.Orthogonal()((5,))


@pytest.mark.parametrize("dtype", ["float64", "float32", ember.float64, None])
def test_dtypes(dtype):
    want = "float32" if dtype is None else str(dtype).replace("ember.", "")
    for init in [I.Zeros(), I.Ones(), I.Constant(1.0), I.RandomNormal(), I.RandomUniform(), I.TruncatedNormal(),
                 I.GlorotUniform(), I.HeNormal(), I.VarianceScaling(distribution="untruncated_normal"),
                 I.Orthogonal(), I.Identity()]:
        out = init((3, 4)) if dtype is None else init((3, 4), dtype=dtype)
        assert out.dtype.name == want, type(init).__name__


SEEDED = [lambda s: I.RandomNormal(seed=s), lambda s: I.RandomUniform(seed=s), lambda s: I.TruncatedNormal(seed=s),
          lambda s: I.VarianceScaling(seed=s), lambda s: I.VarianceScaling(distribution="uniform", seed=s),
          lambda s: I.VarianceScaling(distribution="untruncated_normal", seed=s), lambda s: I.GlorotUniform(s),
          lambda s: I.GlorotNormal(s), lambda s: I.HeNormal(s), lambda s: I.HeUniform(s), lambda s: I.LecunNormal(s),
          lambda s: I.LecunUniform(s), lambda s: I.Orthogonal(seed=s)]


@pytest.mark.parametrize("make", SEEDED)
def test_an_integer_seed_gives_the_same_values_at_every_call(make):
    """Keras 3: "an initializer seeded with an integer ... will produce the same random values across
    multiple calls"; the global generator plays no part. Ember used to ignore `seed`."""
    ember.manual_seed(0)
    a = draw(make(7), (6, 5))
    ember.manual_seed(1)
    b = draw(make(7), (6, 5))
    init = make(7)
    c, d = draw(init, (6, 5)), draw(init, (6, 5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(a, draw(make(8), (6, 5)))
    # unseeded: Ember's global generator (ember.manual_seed repeats it; two calls differ)
    ember.manual_seed(5)
    e, f = draw(make(None), (6, 5)), draw(make(None), (6, 5))
    ember.manual_seed(5)
    np.testing.assert_array_equal(e, draw(make(None), (6, 5)))
    assert not np.array_equal(e, f)
    assert make(7).get_config()["seed"] == 7 and make(None).get_config()["seed"] is None


def test_a_seed_that_is_not_an_integer_is_refused():
    for bad in [1.5, "3", [1]]:
        with pytest.raises(ValueError, match=r"^`seed` argument should be an integer or None\. Received: seed="
                                             + __import__("re").escape(repr(bad)) + "$"):
            I.RandomNormal(seed=bad)
    with pytest.raises(ValueError, match="`seed` argument should be an integer"):
        I.GlorotUniform(seed=2.0)


def test_configs_as_keras3():
    assert I.Zeros().get_config() == {} and I.Ones().get_config() == {}
    assert I.Constant(2).get_config() == {"value": 2.0}
    assert I.RandomNormal().get_config() == {"seed": None, "mean": 0.0, "stddev": 0.05}
    assert I.RandomUniform(seed=1).get_config() == {"seed": 1, "minval": -0.05, "maxval": 0.05}
    assert I.TruncatedNormal(1.0, 2.0).get_config() == {"seed": None, "mean": 1.0, "stddev": 2.0}
    assert I.VarianceScaling().get_config() == {"seed": None, "scale": 1.0, "mode": "fan_in",
                                                "distribution": "truncated_normal"}
    for cls in [I.GlorotUniform, I.GlorotNormal, I.HeNormal, I.HeUniform, I.LecunNormal, I.LecunUniform]:
        assert cls(seed=3).get_config() == {"seed": 3}
    assert I.Orthogonal(2.0).get_config() == {"seed": None, "gain": 2.0}
    assert I.Identity(0.5).get_config() == {"gain": 0.5}
    assert I.Initializer().get_config() == {}
    with pytest.raises(NotImplementedError):
        I.Initializer()((2,))


KERAS_DEFAULTS = {   # name -> (class, scale, mode, distribution) of Keras 3's subclasses
    "glorot_uniform": ("GlorotUniform", 1.0, "fan_avg", "uniform"),
    "glorot_normal": ("GlorotNormal", 1.0, "fan_avg", "truncated_normal"),
    "he_normal": ("HeNormal", 2.0, "fan_in", "truncated_normal"),
    "he_uniform": ("HeUniform", 2.0, "fan_in", "uniform"),
    "lecun_normal": ("LecunNormal", 1.0, "fan_in", "truncated_normal"),
    "lecun_uniform": ("LecunUniform", 1.0, "fan_in", "uniform")}


def test_named_classes_and_their_settings():
    for name, (cls_name, scale, mode, dist) in KERAS_DEFAULTS.items():
        cls = getattr(I, cls_name)
        assert cls.__name__ == cls.__qualname__ == cls_name and cls.name == name
        init = cls()
        assert isinstance(init, I.VarianceScaling)
        assert (init.scale, init.mode, init.distribution, init.seed) == (scale, mode, dist, None)
        assert I.ALL[name] is cls


def test_get_serialize_round_trips_and_errors():
    names = ["zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal", "variance_scaling",
             "glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
             "orthogonal", "identity"]
    assert sorted(I.ALL) == sorted(names)
    for name in names:
        init = I.get(name)
        assert type(init) is I.ALL[name] and init.name == name
        assert type(I.get(type(init).__name__)) is I.ALL[name]      # the class name too ('GlorotUniform')
    for alias, name in {"uniform": "random_uniform", "normal": "random_normal", "zero": "zeros",
                        "one": "ones"}.items():
        assert type(I.get(alias)) is I.ALL[name]
    seeded = I.VarianceScaling(0.7, "fan_out", "uniform", seed=9)
    back = I.get(I.serialize(seeded))
    assert type(back) is I.VarianceScaling and back.get_config() == seeded.get_config()
    assert I.serialize(seeded) == {"class_name": "variance_scaling", "config": seeded.get_config()}
    he = I.get(I.serialize(I.HeUniform(seed=4)))
    assert type(he) is I.HeUniform and he.seed == 4
    np.testing.assert_array_equal(draw(he, (3, 3)), draw(I.HeUniform(seed=4), (3, 3)))
    assert type(I.get({"class_name": "Zeros"})) is I.Zeros
    same = I.Constant(1.0)
    assert I.get(same) is same
    fn = lambda shape, dtype=None: ember.ones(*shape)           # noqa: E731
    assert I.get(fn) is fn
    for bad in ["glorot", "Glorot_Uniform", None, 3]:
        with pytest.raises(ValueError, match=r"^Could not interpret initializer identifier: " +
                           __import__("re").escape(repr(bad)) + r"\. Known initializers: constant, glorot_normal, "):
            I.get(bad)
    with pytest.raises(ValueError, match=r"^initializer <function .*> is not a Keras initializer and cannot be "
                                         r"saved$"):
        I.serialize(fn)


def test_a_seeded_kernel_initializer_in_a_layer_survives_save_and_load(tmp_path):
    m = keras.Sequential([layers.Dense(4, kernel_initializer=I.GlorotNormal(seed=11), input_shape=(3,))])
    assert m.layers[0].get_config()["kernel_initializer"] == {"class_name": "glorot_normal", "config": {"seed": 11}}
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), draw(I.GlorotNormal(seed=11), (3, 4)))
    m.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert loaded.layers[0].kernel_initializer.seed == 11
