"""ember/keras/layers/base.py: Keras 3's Layer contract (add_weight, weights and trainable flags, build by
hand or on first call, configs, input checks, the symbolic call and its dry run, input conversion) and
InputLayer / Input."""
import numpy as np
import pytest

import ember
from ember import keras
from ember.keras import layers
from ember.keras.layers import base


def n(x):
    return x.detach().numpy()


class Scale(layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, x):
        return x * self.w


class Mixed(layers.Layer):
    """One trainable weight made after a non-trainable one, an integer weight, and an unnamed one."""

    def build(self, input_shape):
        self.counter = self.add_weight(shape=(), dtype="int32", trainable=False, name="counter")
        self.frozen = self.add_weight(shape=(2,), initializer="ones", trainable=False, name="frozen")
        self.k = self.add_weight(shape=(input_shape[-1], 2), name="k")
        self.free = self.add_weight(shape=(3,))

    def call(self, x):
        return x @ self.k + self.frozen


def test_add_weight_defaults_names_and_registration():
    layer = Mixed()
    layer(np.ones((1, 4), np.float32))
    assert [w.name for w in layer.weights] == ["k", "variable_3", "counter", "frozen"]   # trainable ones first
    assert [w.path for w in layer.weights] == ["mixed/k", "mixed/variable_3", "mixed/counter", "mixed/frozen"]
    assert [w.name for w in layer.trainable_weights] == ["k", "variable_3"]
    assert [w.name for w in layer.non_trainable_weights] == ["counter", "frozen"]
    assert layer.trainable_variables == layer.trainable_weights and layer.variables == layer.weights
    assert layer.non_trainable_variables == layer.non_trainable_weights
    assert layer.counter.dtype == ember.int32 and int(layer.counter.numpy()) == 0      # ints start at zeros
    k = layer.k.numpy()
    limit = np.sqrt(6 / (4 + 2))                                        # floats: glorot_uniform by default
    assert np.abs(k).max() <= limit and np.all(k != 0) and tuple(k.shape) == (4, 2)
    assert layer.free.dtype == ember.float32 and tuple(layer.free.shape) == (3,)
    assert layer.count_params() == 1 + 2 + 8 + 3
    named = dict(layer.named_parameters())
    assert set(named) == {"counter", "frozen", "k", "variable_3"}       # identifiers become attributes
    assert named["k"] is layer.k


def test_add_weight_keeps_an_attribute_and_a_submodule_name():
    class Odd(layers.Layer):
        def build(self, input_shape):
            self.units = 7
            self.inner = layers.Dense(2)
            self.v = self.add_weight(shape=(1,), name="units")
            self.s = self.add_weight(shape=(1,), name="inner")
            self.z = self.add_weight(shape=(1,), name="my weight", initializer="zeros")

        def call(self, x):
            return x

    layer = Odd()
    layer(np.ones((1, 2), np.float32))
    assert layer.units == 7 and isinstance(layer.inner, layers.Dense)
    assert [w.name for w in layer._own_weights] == ["units", "inner", "my weight"]
    assert "my weight" not in dict(layer.named_parameters())


def test_trainable_flags():
    layer = Mixed()
    layer.build((None, 3))
    layer.trainable = False
    assert not layer.trainable and layer.trainable_weights == []
    assert len(layer.non_trainable_weights) == 4
    assert not any(w.requires_grad for w in layer.weights)
    layer.trainable = True
    assert [w.name for w in layer.weights if w.requires_grad] == ["k", "variable_3"]   # own flags kept
    assert not layer.counter.requires_grad                              # an int never gets a gradient
    frozen = Mixed(trainable=False)
    frozen(np.ones((1, 3), np.float32))
    assert not any(w.requires_grad for w in frozen.weights) and frozen.trainable_weights == []
    assert frozen.get_config()["trainable"] is False
    assert Mixed(trainable=0).trainable is False


def test_trainable_reaches_sublayers():
    class Outer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = layers.Dense(2), layers.Dense(1)

        def call(self, x):
            return self.b(self.a(x))

    outer = Outer()
    outer(np.ones((2, 3), np.float32))
    assert outer.layers == [outer.a, outer.b]
    assert [w.path for w in outer.weights] == ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
    outer.trainable = False
    assert not outer.a.trainable and not outer.b.kernel.requires_grad
    assert outer.trainable_weights == [] and len(outer.non_trainable_weights) == 4
    outer.trainable = True
    assert outer.b.trainable and all(w.requires_grad for w in outer.weights)
    outer.a.trainable = False
    assert [w.path for w in outer.trainable_weights] == ["dense_1/kernel", "dense_1/bias"]
    assert outer.count_params() == 3 * 2 + 2 + 2 + 1


def test_build_by_hand_marks_the_layer_built():
    # Keras 3 wraps `build`: a layer built by hand is built, and its first call does not build it again
    # (Ember used to make a second set of weights here: 4 weights for a Dense, count_params 16)
    dense = layers.Dense(2)
    dense.build((None, 3))
    assert dense.built and dense.count_params() == 8
    kernel = dense.kernel.numpy().copy()
    dense(np.ones((1, 3), np.float32))
    assert len(dense.weights) == 2 and dense.count_params() == 8
    np.testing.assert_array_equal(dense.kernel.numpy(), kernel)
    scale = Scale()
    scale.build((None, 2))
    assert scale.built and repr(scale) == "<Scale name=scale, built=True>"
    assert [w.name for w in scale.weights] == ["w"]
    conv = layers.Conv2D(2, 1)
    conv.build((None, 4, 4, 3))
    conv(np.ones((1, 4, 4, 3), np.float32))
    assert len(conv.weights) == 2
    assert base._marking_built(Scale.build) is Scale.build            # wrapped once, not per subclass


def test_count_params_get_and_set_weights():
    layer = Scale()
    assert repr(layer) == "<Scale name=scale, built=False>"
    with pytest.raises(ValueError, match=r"^You tried to call `count_params` on layer 'scale', but the layer "
                                         r"isn't built. You can build it manually via: `scale.build\("
                                         r"batch_input_shape\)`.$"):
        layer.count_params()
    layer(np.ones((2, 3), np.float32))
    got = layer.get_weights()
    assert len(got) == 1 and got[0].tolist() == [1.0, 1.0, 1.0]
    got[0][0] = 5.0                                                     # a copy
    assert layer.w.numpy().tolist() == [1.0, 1.0, 1.0]
    layer.set_weights([np.array([1.0, 2.0, 3.0])])                      # float64 in, float32 kept
    assert layer.w.dtype == ember.float32 and layer.w.numpy().tolist() == [1.0, 2.0, 3.0]
    layer.set_weights([ember.tensor([4.0, 5.0, 6.0])])
    assert layer.w.numpy().tolist() == [4.0, 5.0, 6.0]
    layer.set_weights([[7, 8, 9]])
    assert layer.w.numpy().tolist() == [7.0, 8.0, 9.0]
    with pytest.raises(ValueError, match=r'^You called `set_weights\(weights\)` on layer "scale" with a weight '
                                         r"list of length 2, but the layer was expecting 1 weights.$"):
        layer.set_weights([np.ones(3), np.ones(3)])
    with pytest.raises(ValueError, match=r"^Layer scale weight shape \(3,\) is not compatible with provided weight "
                                         r"shape \(4,\) \(weight scale/w\).$"):
        layer.set_weights([np.ones(4)])
    with pytest.raises(ValueError, match=r"provided weight shape \(1, 3\)"):
        layer.set_weights([ember.ones(1, 3)])
    assert layer.w.numpy().tolist() == [7.0, 8.0, 9.0]                  # nothing assigned after an error

    mixed = Mixed()
    mixed.build((None, 2))
    values = [np.full((2, 2), 2.0), np.full(3, 3.0), np.array(7), np.zeros(2)]
    mixed.set_weights(values)                                           # in the order of `weights`
    assert int(mixed.counter.numpy()) == 7 and mixed.counter.dtype == ember.int32
    assert mixed.free.numpy().tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(ValueError, match=r"weight shape \(\) is not compatible with provided weight shape \(1,\) "
                                         r"\(weight mixed/counter\)"):
        mixed.set_weights([np.full((2, 2), 2.0), np.full(3, 3.0), np.array([7]), np.zeros(2)])


def test_config_and_input_shape_arguments():
    assert Scale(name="s").get_config() == {"name": "s", "trainable": True, "dtype": "float32"}
    assert Scale(dtype="float64").get_config()["dtype"] == "float64"
    assert Scale(input_shape=(3, 4)).get_config()["batch_input_shape"] == [None, 3, 4]
    assert Scale(input_shape=(3,), batch_size=8).get_config()["batch_input_shape"] == [8, 3]
    assert Scale(input_dim=5).get_config()["batch_input_shape"] == [None, 5]
    assert Scale(input_dim=5, input_shape=(2, 2)).get_config()["batch_input_shape"] == [None, 2, 2]
    assert Scale(batch_input_shape=(4, 2), input_shape=(9,)).get_config()["batch_input_shape"] == [4, 2]
    layer = Scale.from_config({"name": "z", "trainable": False, "dtype": "float32", "batch_input_shape": [2, 6]})
    assert (layer.name, layer.trainable, layer._batch_input_shape) == ("z", False, (2, 6))
    with pytest.raises(TypeError, match=r"^Scale: unrecognized keyword argument\(s\) \['bogus', 'units'\] \(at "):
        Scale(units=3, bogus=1)


def test_names_are_numbered_per_class():
    assert [Scale().name, Scale().name, Mixed().name, Scale().name] == ["scale", "scale_1", "mixed", "scale_2"]

    class HTTPLayer2D(layers.Layer):
        def call(self, x):
            return x
    assert HTTPLayer2D().name == "http_layer2d"
    assert Scale(name="given").name == "given"


def test_call_forms_and_training_flag():
    seen = []

    class Probe(layers.Layer):
        def call(self, x, scale=1.0, training=None):
            seen.append(training)
            return x * scale

    probe = Probe()
    x = np.ones((2, 2), np.float32)
    assert n(probe(x)).tolist() == [[1, 1], [1, 1]]
    assert n(probe(x, 3.0)).tolist() == [[3, 3], [3, 3]]
    assert n(probe(inputs=x, scale=2.0)).tolist() == [[2, 2], [2, 2]]
    assert n(probe.forward(x)).sum() == 4
    probe(x, training=True)
    with keras.backend.training_phase(True):
        probe(x)
        probe(x, training=False)
    assert seen == [False, False, False, False, True, True, False]
    with pytest.raises(TypeError, match=r"^layer 'probe' was called without inputs$"):
        probe()
    with pytest.raises(TypeError, match="without inputs"):
        probe(scale=2.0)

    class NoCall(layers.Layer):
        pass
    with pytest.raises(NotImplementedError, match=r"^Layer NoCall has no call\(\) method: subclasses of "
                                                  r"keras.layers.Layer implement call\(self, inputs\)$"):
        NoCall()(x)


def test_inputs_become_float32_tensors():
    class Echo(layers.Layer):
        def call(self, x):
            return x

    echo = Echo()
    assert echo(np.ones(2, np.float64)).dtype == ember.float32           # Keras's floatx
    assert echo(np.ones(2, np.float16)).dtype == ember.float32
    assert echo(np.ones(2, np.uint64)).dtype == ember.int64
    assert echo(np.ones(2, np.int32)).dtype == ember.int32
    assert echo([1.5, 2.5]).dtype == ember.float32 and echo(3).dtype == ember.int64
    t32, i64 = ember.ones(2), ember.ones(2, dtype=ember.int64)
    assert echo(t32) is t32 and echo(i64) is i64                        # used as they are
    t64 = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    out = echo(t64)                                                     # Keras 3 casts float inputs to float32
    assert out.dtype == ember.float32 and echo(ember.ones(2, dtype=ember.float16)).dtype == ember.float32
    (out * ember.tensor([3.0, 4.0])).sum().backward()
    assert t64.grad.dtype == ember.float64 and t64.grad.numpy().tolist() == [3.0, 4.0]
    pair = Echo()([np.ones(2), np.zeros((1, 3), np.int32)])
    assert isinstance(pair, list) and pair[0].dtype == ember.float32 and pair[1].dtype == ember.int32
    assert isinstance(Echo()((np.ones(2), np.ones(2))), tuple)
    d = base.to_tensor({"a": np.ones(2), "b": [1, 2]})
    assert d["a"].dtype == ember.float32 and d["b"].dtype == ember.int64
    nested = base.to_tensor([[1.0, 2.0], [3.0, 4.0]])                   # a nested list of numbers is one array
    assert nested.shape == (2, 2) and nested.dtype == ember.float32
    t64 = ember.ones(2, dtype=ember.float64)
    assert base.to_tensor(t64) is t64                                   # losses keep float64 tensors
    both = base.layer_input({"a": t64, "b": [ember.ones(1, dtype=ember.float16), np.ones(1, np.int32)]})
    assert (both["a"].dtype, both["b"][0].dtype, both["b"][1].dtype) == (ember.float32, ember.float32, ember.int32)
    assert isinstance(base.layer_input((t64, t64)), tuple)
    assert echo._last_output_shape == (None,)


def test_input_spec_checks():
    class Spec(layers.Layer):
        def __init__(self, spec, **kwargs):
            super().__init__(**kwargs)
            self.spec = spec

        def build(self, input_shape):
            self.input_spec = self.spec

        def call(self, x):
            return x

    x3 = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r'^Input 0 of layer "a" is incompatible with the layer: expected ndim=2, '
                                         r"found ndim=3. Full shape received: \(2, 3, 4\) \(at "):
        Spec(layers.InputSpec(ndim=2), name="a")(x3)
    Spec(layers.InputSpec(ndim=3))(x3)
    with pytest.raises(ValueError, match=r"^Input 0 of layer \"b\" is incompatible with the layer: expected "
                                         r"min_ndim=4, found ndim=3. Full shape received: \(2, 3, 4\) \(at "):
        Spec(layers.InputSpec(min_ndim=4), name="b")(x3)
    Spec(layers.InputSpec(min_ndim=3))(x3)
    Spec(layers.InputSpec(min_ndim=2))(x3)
    with pytest.raises(ValueError, match=r"^Input 0 of layer \"c\" is incompatible with the layer: expected axis 1 "
                                         r"of input shape to have value 5, but received input with shape \(2, 3, 4\) "
                                         r"\(at "):
        Spec(layers.InputSpec(axes={1: 5}), name="c")(x3)
    with pytest.raises(ValueError, match=r"expected axis -3 of input shape to have value 1, but received input with "
                                         r"shape \(2, 3, 4\)"):
        Spec(layers.InputSpec(axes={-3: 1}))(x3)
    with pytest.raises(ValueError, match=r"received input with shape \(7,\) "):      # a 1-tuple keeps its comma
        Spec(layers.InputSpec(axes={0: 1}))(np.ones(7, np.float32))
    Spec(layers.InputSpec(axes={-1: 4, 2: 4, 5: 9, -4: 9}))(x3)          # axes outside the shape are not checked
    assert Spec(layers.InputSpec(axes={1: 3}))(keras.Input((None, 4))).shape == (None, None, 4)   # None passes
    two = [layers.InputSpec(ndim=2), None]
    Spec(two)([np.ones((1, 2), np.float32), x3])                        # one spec per input, None = any
    with pytest.raises(ValueError, match=r'^Input 1 of layer "d" is incompatible with the layer: expected ndim=2'):
        Spec([None, layers.InputSpec(ndim=2)], name="d")([x3, x3])
    with pytest.raises(ValueError, match=r'^Input 0 of layer "e" is incompatible.*expected ndim=2, found ndim=1'):
        Spec([layers.InputSpec(ndim=2)], name="e")(np.ones(3, np.float32))
    spec = layers.InputSpec(ndim=2)
    assert (spec.ndim, spec.min_ndim, spec.axes) == (2, None, {})


def test_symbolic_call_records_a_node_and_infers_shapes_by_dry_run():
    calls = []

    class Tile(layers.Layer):
        """No compute_output_shape: the shape comes from two runs on zeros (unknown sizes 2, then 3)."""

        def call(self, x, training=None):
            calls.append((tuple(x.shape), training, x.dtype))
            return x.repeat(1, 2) if x.ndim == 2 else x

    tile = Tile()
    inp = keras.Input((4,))
    out = tile(inp, training=True)
    assert out.shape == (None, 8) and out.dtype == "float32"
    assert calls == [((2, 4), False, ember.float32), ((3, 4), False, ember.float32)]
    assert out._keras_history == (tile, 0, 0) and out.name == tile.name
    assert len(tile._inbound_nodes) == 1 and tile._last_output_shape == (None, 8)
    out2 = tile(keras.Input((None, 3)))
    assert out2.shape == (None, None, 3) and out2._keras_history == (tile, 1, 0)
    ints = Tile()(keras.Input((2,), dtype="int32"))
    assert ints.dtype == "int32" and ints.shape == (None, 4)

    class Split(layers.Layer):
        def call(self, x):
            return [x[:, :1], x[:, 1:] * 2]

    a, b = Split()(keras.Input((5,)))
    assert (a.shape, b.shape) == ((None, 1), (None, 4))
    assert a._keras_history[2] == 0 and b._keras_history[2] == 1
    model = keras.Model(inp, layers.Dense(1)(out))
    assert model(np.ones((3, 4), np.float32)).shape == (3, 1)


def test_symbolic_call_with_several_inputs_and_a_dict_output():
    class Pair(layers.Layer):
        def call(self, xs):
            a, b = xs
            return {"sum": a + b, "first": a[:, :1]}

    out = Pair()([keras.Input((3,)), keras.Input((3,))])
    assert out["sum"].shape == (None, 3) and out["first"].shape == (None, 1)

    class Both(layers.Layer):
        def call(self, xs):
            return xs[0] * xs[1]

    both = Both()
    y = both([keras.Input((2,)), keras.Input((2,), dtype="int32")])
    assert y.shape == (None, 2)
    node = both._inbound_nodes[0]
    assert len(node.output_tensors) == 1


def test_compute_output_shape_default_and_override():
    scale = Scale()
    scale.build((None, 5))
    assert scale.compute_output_shape((None, 5)) == (None, 5)
    assert scale.compute_output_shape((4, None, 5)) == (4, None, 5)

    class Fixed(layers.Layer):
        def call(self, x):
            raise AssertionError("not run: compute_output_shape decides")

        def compute_output_shape(self, input_shape):
            return (input_shape[0], 9)

    out = Fixed()(keras.Input((2,), dtype="int32"))
    assert out.shape == (None, 9) and out.dtype == "float32"


def test_structure_helpers():
    assert base._fmt_shape((3,)) == "(3,)" and base._fmt_shape((None, 2)) == "(None, 2)"
    assert base._fmt_shape(()) == "()"
    assert base._is_shape((None, 3)) and base._is_shape(()) and not base._is_shape([None, 3])
    assert not base._is_shape(((1,), (2,)))
    assert base._is_pair(((1, 2), "float32")) and not base._is_pair(((1, 2), 3)) and not base._is_pair((1, 2, "a"))
    assert not base._is_pair([(1,), "float32"])
    assert base._map(len, [(1, 2), [(3,), (4, 5, 6)]]) == [2, [1, 3]]
    assert base._map(len, {"a": (1, 2)}) == {"a": 2}
    assert base._map(len, ()) == ()
    assert base._map(str, ((1, 2), "x"), leaf=base._is_pair) == "((1, 2), 'x')"
    assert base._map2(lambda u, v: u[0] + v[0], [((1,), "a"), ((2,), "b")], [((3,), "c"), ((4,), "d")]) == \
        [(1, 3), (2, 4)]
    assert base._map2(lambda u, v: u + v, 1, 2) == 3
    assert base._zip_struct([(1,), [(2,), (3,)]], ["a", ["b", "c"]]) == [((1,), "a"), [((2,), "b"), ((3,), "c")]]
    assert base._zip_struct({"p": (1,)}, {"p": "a"}) == {"p": ((1,), "a")}
    assert base._map2(lambda u, v: u[0] + v[0], {"p": ((1,), "a")}, {"p": ((2,), "b")}) == {"p": (1, 2)}
    assert base.shape_of(ember.ones(2, 3)) == (2, 3)


def test_input_layer_and_input():
    x = keras.Input(shape=(28, 28))
    assert x.shape == (None, 28, 28) and x.dtype == "float32" and x.name == "input_layer"
    layer = x._keras_history[0]
    assert isinstance(layer, layers.InputLayer) and layer.built and x._keras_history == (layer, 0, 0)
    assert layer.get_config() == {"batch_shape": [None, 28, 28], "dtype": "float32", "name": "input_layer"}
    assert layer._last_output_shape == (None, 28, 28) and layer.output is x
    assert len(layer._inbound_nodes) == 1 and not layer.weights
    assert keras.Input(shape=5).shape == (None, 5)
    assert keras.Input(shape=(3,), batch_size=4, name="feats").shape == (4, 3)
    assert keras.Input(shape=(3,), name="feats2").name == "feats2"
    b = keras.Input(batch_shape=(2, None, 3), dtype="int64")
    assert b.shape == (2, None, 3) and b.dtype == "int64" and b.name == "input_layer_2"
    assert keras.Input(shape=(7,), batch_shape=(1, 2)).shape == (1, 2)   # batch_shape wins
    il = layers.InputLayer(shape=(2,))
    assert n(il(np.ones((1, 2)))).tolist() == [[1.0, 1.0]]
    assert layers.InputLayer(shape=(1,), name="in").name == "in"
    with pytest.raises(ValueError, match=r"^Input: give the shape of one sample, e.g. "
                                         r"keras.Input\(shape=\(28, 28\)\)$"):
        keras.Input()
    with pytest.raises(ValueError, match="give the shape of one sample"):
        layers.InputLayer(batch_size=3)


def test_build_wrapper_on_classes_made_at_run_time():
    class Late(layers.Layer):                                           # made now, not at import
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), name="w")

        def call(self, x):
            return x * self.w

    late = Late()
    late.build((None, 2))
    assert late.built
    late(np.ones((1, 2), np.float32))
    assert len(late.weights) == 1

    def build(self, input_shape):
        self.seen = input_shape
    wrapped = base._marking_built(build)
    assert wrapped is not build and wrapped._marks_built is True and wrapped.__name__ == "build"
    assert base._marking_built(wrapped) is wrapped                     # never wrapped twice

    class Plain(layers.Layer):                                          # Layer.build: nothing to make
        def call(self, x):
            return x

    plain = Plain()
    plain.build((None, 3))
    assert plain.built is True


def test_scalars_stay_scalars():
    # np.ascontiguousarray makes a 0-d array 1-D: a Python number became a (1,) tensor, a scalar Variable (1,)
    assert base.to_tensor(3).shape == () and base.to_tensor(2.5).shape == ()
    assert keras.Variable(0.5).shape == () and keras.Variable(np.array(2, np.int32)).shape == ()


def test_float64_tensors_reach_float32_weights():
    # the matmul of a float64 tensor with a float32 kernel failed; Keras casts the input to float32
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    dense = layers.Dense(2)
    y = dense(ember.tensor(x))
    assert y.dtype == ember.float32
    np.testing.assert_allclose(n(y), x.astype(np.float32) @ dense.kernel.numpy(), rtol=1e-5, atol=1e-6)
    assert layers.LSTM(2)(ember.tensor(x)).dtype == ember.float32
    assert layers.Conv2D(2, 1)(ember.tensor(x[..., None])).dtype == ember.float32


def test_symbolic_call_passes_extra_arguments_and_drops_training():
    phases = []

    class Rep(layers.Layer):
        def call(self, x, reps=1):
            phases.append(keras.backend.in_training())
            return x.repeat(1, reps)

    inp = keras.Input((3,))
    assert Rep()(inp, 2).shape == (None, 6)                              # positional
    assert Rep()(inp, reps=3).shape == (None, 9)                         # keyword
    assert Rep()(inp, training=True).shape == (None, 3)                  # `training` not passed to call
    with keras.backend.training_phase(True):
        Rep()(inp)
    assert phases == [False] * 8                                         # the dry runs are inference
    assert Rep().forward(np.ones((1, 2), np.float32), reps=2).shape == (1, 4)

    class Two(layers.Layer):
        def call(self, x):
            return [x, x]

        def compute_output_shape(self, input_shape):
            return [input_shape, (input_shape[0], 1)]

    a, b = Two()(inp)
    assert (a.shape, b.shape, a.dtype, b.dtype) == ((None, 3), (None, 1), "float32", "float32")


def test_input_layer_details():
    il = layers.InputLayer(shape=(2,), dtype="int32")
    assert il.dtype_policy.name == "int32" and il.dtype == "int32" and il.output.dtype == "int32"
    assert il.get_config()["dtype"] == "int32"
    assert il._inbound_nodes[0].output_tensors == [il.output] and il._inbound_nodes[0].input_tensors == []
    with pytest.raises(TypeError, match=r"^InputLayer: unrecognized keyword argument\(s\) \['bogus'\]"):
        layers.InputLayer(shape=(2,), bogus=1)


def test_frozen_weights_and_int_weights():
    class Ints(layers.Layer):
        def build(self, input_shape):
            self.ints = [self.add_weight(shape=(), dtype="int32") for _ in range(12)]

        def call(self, x):
            return x

    ints = Ints()
    ints.build((None, 1))
    assert [int(w.numpy()) for w in ints.ints] == [0] * 12            # zeros, not a rounded glorot draw
    frozen = Scale(trainable=False)
    frozen.build((None, 2))
    assert frozen.w.requires_grad is False


def test_input_spec_axis_just_past_the_end_is_not_checked():
    class Spec(layers.Layer):
        def build(self, input_shape):
            self.input_spec = layers.InputSpec(axes={3: 9, -4: 9})

        def call(self, x):
            return x

    assert Spec()(np.ones((2, 3, 4), np.float32)).shape == (2, 3, 4)
