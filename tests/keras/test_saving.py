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
