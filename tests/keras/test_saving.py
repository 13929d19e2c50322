"""model.save / models.load_model and get_weights / set_weights: round trips, optimizer state, the file
format (safetensors with JSON, never pickle) and atomic writes."""
import json
import os

import numpy as np
import pytest

import ember
from ember import keras
from ember.keras import layers, models


def data(n=32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 6)).astype(np.float32), rng.integers(0, 3, n)


def trained_sequential():
    m = models.Sequential([layers.Dense(8, activation="relu", input_shape=(6,)), layers.BatchNormalization(),
                           layers.Dropout(0.2), layers.Dense(3, activation="softmax")])
    m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(*data(), epochs=2, verbose=0)
    return m


def test_sequential_round_trip_predictions_config_and_compile(tmp_path):
    m = trained_sequential()
    path = str(tmp_path / "model.keras")
    m.save(path)
    loaded = models.load_model(path)
    x, y = data()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), m.predict(x, verbose=0))
    assert [type(la).__name__ for la in loaded.layers] == ["Dense", "BatchNormalization", "Dropout", "Dense"]
    assert [la.name for la in loaded.layers] == [la.name for la in m.layers]
    assert loaded.layers[2].rate == 0.2 and loaded.layers[-1].activation is m.layers[-1].activation
    assert loaded.compiled and isinstance(loaded.optimizer, keras.optimizers.Adam)
    assert loaded.optimizer.learning_rate == 0.01
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(m.evaluate(x, y, verbose=0))


def test_optimizer_state_is_restored_so_training_continues_identically(tmp_path):
    m = trained_sequential()
    path = str(tmp_path / "model.keras")
    m.save(path)
    loaded = models.load_model(path)
    x, y = data()
    for model in (m, loaded):
        ember.manual_seed(1)                       # the same dropout masks for both
        model.fit(x, y, epochs=1, batch_size=32, shuffle=False, verbose=0)
    for a, b in zip(m.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert loaded.optimizer.iterations == m.optimizer.iterations


def test_functional_multi_input_round_trip_with_shared_layer(tmp_path):
    a, b = keras.Input(shape=(4,), name="a"), keras.Input(shape=(4,), name="b")
    shared = layers.Dense(5, activation="tanh")
    merged = layers.Concatenate()([shared(a), shared(b)])
    out = layers.Dense(2, activation="softmax")(merged)
    m = keras.Model([a, b], out)
    m.compile("sgd", "sparse_categorical_crossentropy")
    path = str(tmp_path / "f.keras")
    m.save(path)
    loaded = models.load_model(path)
    xa, xb = np.random.rand(3, 4), np.random.rand(3, 4)
    np.testing.assert_array_equal(loaded.predict([xa, xb], verbose=0), m.predict([xa, xb], verbose=0))
    assert loaded.count_params() == m.count_params() == 5 * 4 + 5 + 10 * 2 + 2


def test_file_is_safetensors_with_json_and_loads_without_pickle(tmp_path, monkeypatch):
    m = trained_sequential()
    path = str(tmp_path / "model.keras")
    m.save(path)
    from safetensors.numpy import load_file
    from safetensors import safe_open
    tensors = load_file(path)                      # a plain safetensors reader can open it
    assert len(tensors) >= len(m.weights)
    with safe_open(path, "np") as f:
        meta = f.metadata()
    assert "pickle" not in meta["ember"] and "Sequential" in meta["ember"]
    import pickle
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle used"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle used"))
    models.load_model(path)


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    m = trained_sequential()
    path = tmp_path / "model.keras"
    m.save(str(path))
    before = path.read_bytes()
    from ember import serialization

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(serialization, "_write_chunks", boom)
    with pytest.raises(OSError, match="disk full"):
        m.save(str(path))
    assert path.read_bytes() == before                       # the old file is whole
    assert sorted(os.listdir(tmp_path)) == ["model.keras"]


def test_extensions_and_subclassed_models(tmp_path):
    m = trained_sequential()
    with pytest.raises(ValueError, match="Invalid filepath extension for saving"):
        m.save(str(tmp_path / "model.h5"))

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.fc = layers.Dense(2)

        def call(self, x):
            return self.fc(x)

    net = Net()
    net(np.zeros((1, 3)))
    with pytest.raises(NotImplementedError, match="subclassed model.*save_weights"):
        net.save(str(tmp_path / "net.keras"))
    net.save_weights(str(tmp_path / "net.weights.safetensors"))
    other = Net()
    other(np.zeros((1, 3)))
    other.load_weights(str(tmp_path / "net.weights.safetensors"))
    for a, b in zip(net.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_get_set_weights_order_and_to_json():
    m = trained_sequential()
    names = [w.path for w in m.weights]
    assert names == ["dense/kernel", "dense/bias", "batch_normalization/gamma", "batch_normalization/beta",
                     "batch_normalization/moving_mean", "batch_normalization/moving_variance",
                     "dense_1/kernel", "dense_1/bias"]
    ws = m.get_weights()
    fresh = models.clone_model(m)
    fresh.set_weights(ws)
    x, _ = data()
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), m.predict(x, verbose=0))
    assert json.loads(m.to_json())["class_name"] == "Sequential"


def test_a_function_metric_is_left_out_of_the_saved_compile_settings(tmp_path):
    """A metric given as a function is not saved (Keras would need custom_objects); the named ones are,
    and the model loads (it used to fail: the function was saved as a None metric)."""
    def top_prob(y_true, y_pred):
        return y_pred.amax(dim=-1)

    m = models.Sequential([layers.Dense(3, activation="softmax", input_shape=(6,))])
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy", top_prob])
    x, y = data()
    m.fit(x, y, verbose=0)
    path = tmp_path / "m.keras"
    m.save(path)
    loaded = models.load_model(path)
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == pytest.approx(
        {k: v for k, v in m.evaluate(x, y, verbose=0, return_dict=True).items() if k != "top_prob"})


def test_load_model_passes_custom_objects_and_compile(tmp_path):
    class Scale(layers.Layer):
        def call(self, x):
            return x * 2.0

    m = models.Sequential([layers.Dense(3, input_shape=(6,)), Scale()])
    m.compile("adam", "mse")
    path = tmp_path / "m.keras"
    m.save(path)
    with pytest.raises(Exception, match="Scale"):
        models.load_model(path)                                  # unknown class without custom_objects
    loaded = models.load_model(path, custom_objects={"Scale": Scale})
    x = data()[0]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)
    assert loaded.compiled and not models.load_model(path, custom_objects={"Scale": Scale}, compile=False).compiled


def test_save_weights_overwrites_unless_told_not_to(tmp_path):
    m = trained_sequential()
    path = tmp_path / "w.weights.safetensors"
    m.save_weights(path)
    m.save_weights(path)                                          # overwrite=True by default, as Keras
    with pytest.raises(FileExistsError, match="exists and overwrite=False"):
        m.save_weights(path, overwrite=False)


def test_save_passes_overwrite(tmp_path):
    m = trained_sequential()
    path = tmp_path / "m.keras"
    m.save(path)
    m.save(path)
    with pytest.raises(FileExistsError, match="exists and overwrite=False"):
        m.save(path, overwrite=False)


# --- files that are not what load_model expects: clear errors, nothing run ------------------------------
def small_model():
    m = models.Sequential([layers.Dense(3, activation="relu", input_shape=(4,)), layers.Dense(2)])
    m.compile("adam", "mse")
    return m


def edit_saved(path, edit):
    """Rewrite the architecture JSON inside a saved model file (as someone editing the file would)."""
    from ember import serialization
    obj = serialization.load(str(path))
    config = json.loads(obj["model"])
    edit(config)
    obj["model"] = json.dumps(config)
    serialization.save(obj, str(path))


def test_truncated_empty_and_foreign_files_are_refused(tmp_path):
    path = tmp_path / "m.keras"
    small_model().save(path)
    data = path.read_bytes()
    from ember.serialization import CheckpointError
    (tmp_path / "half.keras").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"half\.keras is not a safetensors file or is truncated"):
        models.load_model(tmp_path / "half.keras")
    (tmp_path / "empty.keras").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"empty\.keras is not a safetensors file or is truncated: it has 0 "):
        models.load_model(tmp_path / "empty.keras")
    ember.save({"a": ember.ones(2)}, str(tmp_path / "other.keras"))
    for what, call in [("load_model", lambda: models.load_model(tmp_path / "other.keras")),
                       ("load_weights", lambda: small_model().load_weights(tmp_path / "other.keras"))]:
        with pytest.raises(ValueError, match=rf"^{what}: .*other\.keras is not a model file written by ember\.keras "
                                             r"\(model\.save / model\.save_weights\)$"):
            call()
    ember.save([1, 2], str(tmp_path / "list.keras"))
    with pytest.raises(ValueError, match="is not a model file written by ember.keras"):
        models.load_model(tmp_path / "list.keras")


def test_load_model_on_a_weights_file_says_so(tmp_path):
    """It used to fail with KeyError: 'model'."""
    path = tmp_path / "w.weights.safetensors"
    small_model().save_weights(path)
    with pytest.raises(ValueError, match=r"^load_model: .*w\.weights\.safetensors holds only weights "
                                         r"\(model\.save_weights\): build the model in code and call "
                                         r"model\.load_weights\(path\)$"):
        models.load_model(path)


@pytest.mark.parametrize("name", ["os.system", "Input", "InputSpec", "Functionalx"])
def test_an_edited_class_name_is_an_unknown_layer(tmp_path, name):
    path = tmp_path / "m.keras"
    small_model().save(path)
    edit_saved(path, lambda c: c["config"]["layers"][1].__setitem__("class_name", name))
    with pytest.raises(ValueError, match=rf"^Unknown layer: '{name}'\. Please ensure you are using a "
                                         rf"`keras\.utils\.custom_object_scope` equivalent: pass "
                                         rf"custom_objects={{'{name}': {name}}} to load_model$"):
        models.load_model(path)


def test_edited_top_level_class_and_activation(tmp_path):
    path = tmp_path / "m.keras"
    small_model().save(path)
    edit_saved(path, lambda c: c["config"]["layers"][0]["config"].__setitem__("activation", "__import__"))
    with pytest.raises(ValueError, match=r"^Could not interpret activation function identifier: '__import__'"):
        models.load_model(path)
    small_model().save(path)
    edit_saved(path, lambda c: c.__setitem__("class_name", "Net"))
    with pytest.raises(ValueError, match=r"^cannot rebuild a Net from its config: subclassed models are rebuilt in "
                                         r"code \(pass custom_objects={'Net': Net} if it defines from_config\)$"):
        models.load_model(path)


def test_weights_count_and_shape_mismatch(tmp_path):
    path = tmp_path / "w.weights.safetensors"
    small_model().save_weights(path)
    one = models.Sequential([layers.Dense(3, input_shape=(4,))], name="one")
    with pytest.raises(ValueError, match=r"^.*w\.weights\.safetensors holds 4 weights but the model 'one' has 2: it "
                                         r"was saved from a different architecture$"):
        one.load_weights(path)
    wide = models.Sequential([layers.Dense(3, input_shape=(5,)), layers.Dense(2)])
    with pytest.raises(ValueError, match=r"weight shape \(5, 3\) is not compatible with provided weight shape "
                                         r"\(4, 3\)"):
        wide.load_weights(path)
    from ember import serialization
    obj = serialization.load(str(path))
    m = small_model()
    m.save_weights(path)
    obj = serialization.load(str(path))
    assert obj["format"] == "ember.keras/1" and obj["paths"] == [w.path for w in m.weights]
    assert [p.split("/")[1] for p in obj["paths"]] == ["kernel", "bias", "kernel", "bias"]
    assert [tuple(w.shape) for w in obj["weights"]] == [(4, 3), (3,), (3, 2), (2,)]


def test_save_model_arguments(tmp_path):
    m = small_model()
    m.save(tmp_path / "m.safetensors")                           # the other extension saving takes
    assert models.load_model(tmp_path / "m.safetensors").count_params() == m.count_params()
    with pytest.raises(ValueError, match=r"^Invalid filepath extension for saving: '.*m\.h5'\. Please add a "
                                         r"`\.keras` extension \(the file is a safetensors file with the architecture "
                                         r"as JSON\) or `\.safetensors`; for weights only use "
                                         r"model\.save_weights\(path\)$"):
        m.save(str(tmp_path / "m.h5"))
    with pytest.raises(FileExistsError, match=r"^.*m\.safetensors exists and overwrite=False$"):
        m.save(tmp_path / "m.safetensors", overwrite=False)
    assert not (tmp_path / "n.keras").exists()
    keras.saving.save_model(m, tmp_path / "n.keras", overwrite=False)    # a new file: fine
    assert (tmp_path / "n.keras").exists()


def test_compile_settings_round_trip_with_objects_dicts_and_no_optimizer_state(tmp_path):
    a = keras.Input(shape=(4,), name="a")
    h = layers.Dense(5, activation="relu")(a)
    p = layers.Dense(3, activation="softmax", name="p")(h)
    q = layers.Dense(1, name="q")(h)
    m = keras.Model(a, [p, q])
    m.compile(keras.optimizers.RMSprop(0.003), loss={"p": "sparse_categorical_crossentropy",
                                                      "q": keras.losses.Huber(delta=2.0)},
              loss_weights={"p": 1.0, "q": 0.5}, metrics={"p": ["accuracy"]}, weighted_metrics={"q": ["mae"]})
    path = tmp_path / "m.keras"
    m.save(path)                                                 # compiled, never trained: no optimizer state
    from ember import serialization
    obj = serialization.load(str(path))
    assert obj["optimizer_state"] is None and obj["optimizer_iterations"] == 0
    saved = json.loads(obj["compile"])
    assert saved["loss"] == {"p": "sparse_categorical_crossentropy",
                             "q": {"class_name": "huber", "config": keras.losses.Huber(delta=2.0).get_config()}}
    assert saved["loss_weights"] == {"p": 1.0, "q": 0.5} and saved["metrics"] == {"p": ["accuracy"]}
    assert saved["weighted_metrics"] == {"q": ["mae"]}
    assert saved["optimizer"]["config"]["learning_rate"] == pytest.approx(0.003)
    loaded = models.load_model(path)
    assert isinstance(loaded.optimizer, keras.optimizers.RMSprop) and not loaded.optimizer.built
    assert loaded.optimizer.learning_rate == pytest.approx(0.003)
    huber = loaded._compile_config["loss"]["q"]
    assert isinstance(huber, keras.losses.Huber) and huber.get_config() == keras.losses.Huber(delta=2.0).get_config()
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    y = [np.arange(8) % 3, np.ones((8, 1), np.float32)]
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == pytest.approx(
        m.evaluate(x, y, verbose=0, return_dict=True))


def test_a_model_with_a_dict_of_outputs_saves_and_loads(tmp_path):
    """`save` used to fail: "'dict' object has no attribute '_keras_history'"."""
    a = keras.Input(shape=(4,), name="a")
    h = layers.Dense(5, activation="relu")(a)
    m = keras.Model(a, {"p": layers.Dense(3, name="p")(h), "q": layers.Dense(1, name="q")(h)})
    m.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras")
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    want, got = m(x), loaded(x)
    assert isinstance(got, dict) and sorted(got) == ["p", "q"]
    for k in want:
        np.testing.assert_array_equal(got[k].detach().numpy(), want[k].detach().numpy())
    np.testing.assert_array_equal(loaded.predict(x, verbose=0)["q"], m.predict(x, verbose=0)["q"])


def test_a_list_of_losses_and_an_uncompiled_model(tmp_path):
    a = keras.Input(shape=(2,))
    m = keras.Model(a, [layers.Dense(1)(a), layers.Dense(1)(a)])
    m.compile("sgd", loss=["mse", keras.losses.MeanAbsoluteError()])
    m.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras")
    assert loaded._compile_config["loss"][0] == "mse"
    assert isinstance(loaded._compile_config["loss"][1], keras.losses.MeanAbsoluteError)
    bare = models.Sequential([layers.Dense(2, input_shape=(3,))])
    bare.save(tmp_path / "bare.keras")
    from ember import serialization
    obj = serialization.load(str(tmp_path / "bare.keras"))
    assert json.loads(obj["compile"]) is None and obj["optimizer_state"] is None
    assert obj["optimizer_iterations"] == 0
    back = models.load_model(tmp_path / "bare.keras")
    assert not back.compiled and back.optimizer is None


def test_a_custom_loss_saves_the_model_without_its_compile_settings(tmp_path):
    def my_loss(y_true, y_pred):
        return ((y_true - y_pred) ** 2).mean()

    m = small_model()
    m.compile("adam", loss=my_loss)
    m.fit(np.ones((4, 4), np.float32), np.ones((4, 2), np.float32), verbose=0)
    m.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras")
    assert not loaded.compiled
    np.testing.assert_array_equal(loaded.get_weights()[0], m.get_weights()[0])


def test_nested_and_unbuilt_models_and_node_indices(tmp_path):
    inner = models.Sequential([layers.Dense(3, activation="tanh")], name="inner")
    a, b = keras.Input(shape=(3,), name="a"), keras.Input(shape=(3,), name="b")
    shared = layers.Dense(3, name="shared")
    only_second = shared(shared(b))                            # the shared layer's nodes 0 and 1 use b
    first = shared(a)                                          # node 2 uses a
    out = layers.Add()([inner(first), only_second])
    m = keras.Model([a, b], out)
    m.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras")
    xa, xb = np.random.rand(2, 3).astype(np.float32), np.random.rand(2, 3).astype(np.float32)
    np.testing.assert_allclose(loaded.predict([xa, xb], verbose=0), m.predict([xa, xb], verbose=0), rtol=1e-6)
    assert type(loaded.get_layer("inner")) is models.Sequential
    # a Sequential given its input shape later is rebuilt from its saved batch_input_shape
    seq = models.Sequential([layers.Dense(2)])
    seq.build((None, 5))
    seq.save(tmp_path / "s.keras")
    back = models.load_model(tmp_path / "s.keras")
    assert back.built and back.layers[0].kernel.shape == (5, 2)


def test_layer_from_config_and_model_from_config_directly():
    from ember.keras import saving
    d = layers.Dense(2, name="d")
    back = saving.layer_from_config({"class_name": "Dense", "config": d.get_config()}, saving._layer_classes())
    assert type(back) is layers.Dense and back.name == "d" and back.units == 2
    table = saving._layer_classes({"Mine": layers.Dense})
    assert table["Mine"] is layers.Dense and table["Model"] is models.Functional
    assert table["Sequential"] is models.Sequential and table["InputLayer"] is layers.InputLayer
    assert "Input" not in table and "InputSpec" not in table and "Dense" in table
    seq = models.Sequential([layers.Dense(2, input_shape=(3,))], name="s", trainable=False)
    again = saving.model_from_config({"class_name": "Sequential", "config": seq.get_config()})
    assert again.name == "s" and again.trainable is False and again.built


def test_a_dict_of_outputs_is_called_predicted_fitted_by_name():
    """A dict-output model returned only its first output (a tensor) from a call and `predict`, and `fit`
    failed with IndexError; Keras returns the dict, and its losses go by output name."""
    a = keras.Input(shape=(4,))
    h = layers.Dense(5)(a)
    m = keras.Model(a, {"q": layers.Dense(1, name="q")(h), "p": layers.Dense(3, name="p")(h)})
    x = np.random.default_rng(1).random((5, 4)).astype(np.float32)
    out = m.predict(x, batch_size=2, verbose=0)
    assert list(out) == ["q", "p"] and out["q"].shape == (5, 1) and out["p"].shape == (5, 3)
    m.compile("adam", {"p": "mse", "q": "mae"})
    y = {"p": np.ones((5, 3), np.float32), "q": np.ones((5, 1), np.float32)}
    m.fit(x, y, verbose=0)
    logs = m.evaluate(x, y, verbose=0, return_dict=True)
    o = m.predict(x, verbose=0)
    assert logs["p_loss"] == pytest.approx(((o["p"] - 1) ** 2).mean(), rel=1e-5)
    assert logs["q_loss"] == pytest.approx(np.abs(o["q"] - 1).mean(), rel=1e-5)


def test_files_saved_before_node_indices_were_written_still_load(tmp_path):
    a, b = keras.Input(shape=(4,), name="a"), keras.Input(shape=(4,), name="b")
    shared = layers.Dense(5, activation="tanh")
    out = layers.Concatenate()([shared(a), shared(b)])
    m = keras.Model([a, b], out)
    path = tmp_path / "f.keras"
    m.save(path)

    def drop_indices(config):
        assert [n["index"] for n in config["config"]["nodes"]] == [0, 1, 0]
        for n in config["config"]["nodes"]:
            del n["index"]
    edit_saved(path, drop_indices)
    loaded = models.load_model(path)
    xa, xb = np.random.rand(3, 4), np.random.rand(3, 4)
    np.testing.assert_array_equal(loaded.predict([xa, xb], verbose=0), m.predict([xa, xb], verbose=0))


# --- survivors of the mutation run (docs/testing.md, "keras: saving, summary, ...") ------------------------
def test_old_files_map_node_indices_from_references_when_a_layer_has_calls_elsewhere(tmp_path):
    """Files written before nodes saved their index: the k-th replayed call of a layer gets the k-th node
    index that references name. Here each layer's node 0 belongs to another graph."""
    d1, d2 = layers.Dense(3, name="d1"), layers.Dense(2, name="d2")
    d1(keras.Input((4,)))
    d2(keras.Input((6,)))
    a = keras.Input((4,), name="a")
    h = d1(a)                                                   # d1's node 1, referenced inside a list
    out = d2(layers.Concatenate()([h, h]))                      # d2's node 1, referenced by the outputs only
    m = keras.Model(a, out)
    path = tmp_path / "m.keras"
    m.save(path)

    def drop_indices(config):
        assert [n["index"] for n in config["config"]["nodes"]] == [1, 0, 1]
        for n in config["config"]["nodes"]:
            del n["index"]
    edit_saved(path, drop_indices)
    loaded = models.load_model(path)
    x = np.random.default_rng(0).random((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), m.predict(x, verbose=0))
    from ember.keras.saving import _saved_node_index
    cfg = json.loads(m.to_json())["config"]
    assert [_saved_node_index(cfg, "d1", 0), _saved_node_index(cfg, "d2", 0), _saved_node_index(cfg, "d2", 1)] == \
        [1, 1, 1]


def test_trainable_flags_input_dtypes_and_multi_output_layers_round_trip(tmp_path):
    tokens = keras.Input(shape=(5,), dtype="int64", name="tokens")
    seq, h, c = layers.LSTM(4, return_sequences=True, return_state=True)(layers.Embedding(10, 3)(tokens))
    out = layers.Dense(1)(layers.Concatenate()([h, c]))
    m = keras.Model(tokens, [out, seq])
    m.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras")
    assert loaded.inputs[0].dtype == "int64" and loaded.trainable is True and len(loaded.trainable_weights) == 6
    x = np.random.default_rng(0).integers(0, 10, (2, 5))
    for a, b in zip(loaded.predict(x, verbose=0), m.predict(x, verbose=0)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    frozen = keras.Model(tokens, out, trainable=False)
    frozen.save(tmp_path / "f.keras")
    assert models.load_model(tmp_path / "f.keras").trainable is False


def test_nested_functional_and_custom_layers_in_a_nested_model(tmp_path):
    class Scale(layers.Layer):
        def call(self, x):
            return x * 2.0

    x = keras.Input((3,))
    inner = keras.Model(x, layers.Dense(2)(x), name="inner_f")
    outer = models.Sequential([layers.Dense(3, input_shape=(4,)), inner,
                               models.Sequential([Scale()], name="inner_s")])
    outer.save(tmp_path / "m.keras")
    loaded = models.load_model(tmp_path / "m.keras", custom_objects={"Scale": Scale})
    assert type(loaded.layers[1]) is models.Functional and type(loaded.layers[2].layers[0]) is Scale
    v = np.random.default_rng(0).random((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(v, verbose=0), outer.predict(v, verbose=0))


def test_model_is_read_as_functional_at_the_top_and_nested():
    from ember.keras import saving
    x = keras.Input((3,), name="x")
    f = keras.Model(x, layers.Dense(2, name="d")(x), name="f")
    cfg = f.get_config()
    top = saving.model_from_config({"class_name": "Model", "config": cfg})
    assert type(top) is models.Functional and top.name == "f"
    nested = saving.layer_from_config({"class_name": "Model", "config": cfg}, saving._layer_classes())
    assert type(nested) is models.Functional and [la.name for la in nested.layers] == ["x", "d"]


def test_the_saving_functions_defaults(tmp_path):
    from ember.keras import saving
    m = small_model()
    path = tmp_path / "m.keras"
    saving.save_model(m, path)
    saving.save_model(m, path)                                   # overwrite=True by default
    assert saving.load_model(path).compiled                       # compile=True by default
    saving.save_weights(m, tmp_path / "w.weights.safetensors")
    saving.save_weights(m, tmp_path / "w.weights.safetensors")
    # an optimizer built by hand (no step yet) keeps its 0 iterations
    m.optimizer.build(m.trainable_weights)
    m.save(path)
    again = models.load_model(path)
    assert again.optimizer.built and again.optimizer.iterations == 0


def test_load_model_names_the_file_when_the_weights_do_not_match(tmp_path):
    path = tmp_path / "m.keras"
    small_model().save(path)
    edit_saved(path, lambda c: c["config"]["layers"][1]["config"].__setitem__("use_bias", False))
    with pytest.raises(ValueError, match=r"^.*m\.keras holds 4 weights but the model 'sequential.*' has 3: it was "
                                         r"saved from a different architecture$"):
        models.load_model(path)
