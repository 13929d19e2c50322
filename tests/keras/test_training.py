"""compile / fit / evaluate / predict end to end on small data, History, the data forms fit accepts,
class weights, validation, progress output, and the notes' model on Fashion-MNIST (slow)."""
import numpy as np
import pytest

import ember
from ember import keras
from ember.keras import layers, models
from ember.utils.data import DataLoader, TensorDataset


def blobs(n=200, seed=0):
    """Three well separated clusters in 4-D: a model that trains at all gets them right."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], np.float32)
    return (centers[y] + rng.standard_normal((n, 4)).astype(np.float32) * 0.5), y


def mlp():
    return models.Sequential([layers.Dense(16, activation="relu", input_shape=(4,)),
                              layers.Dense(3, activation="softmax")])


def test_fit_evaluate_predict_end_to_end():
    x, y = blobs()
    model = mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert isinstance(history, keras.callbacks.History) and model.history is history
    assert list(history.history) == ["accuracy", "loss"] and history.epoch == list(range(15))
    assert history.params == {"verbose": 0, "epochs": 15, "steps": 13}
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc > 0.95
    assert model.evaluate(x, y, verbose=0, return_dict=True) == {"accuracy": acc, "loss": loss}
    probs = model.predict(x, verbose=0)
    assert probs.shape == (200, 3) and isinstance(probs, np.ndarray)
    np.testing.assert_allclose(probs.sum(1), 1, rtol=1e-5)
    assert (probs.argmax(1) == y).mean() == pytest.approx(acc)


def test_history_loss_is_the_mean_over_batches_and_evaluate_matches_a_manual_loss():
    x, y = blobs(50)
    model = mlp()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="sparse_categorical_crossentropy")
    h = model.fit(x, y, batch_size=50, epochs=1, verbose=0, shuffle=False)   # lr 0: the weights stay
    p = model.predict(x, verbose=0)
    manual = -np.log(np.clip(p[np.arange(50), y], 1e-7, 1)).mean()
    assert h.history["loss"][0] == pytest.approx(manual, rel=1e-5)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(manual, rel=1e-5)   # loss only: a number


def test_validation_split_takes_the_last_samples_and_validation_data():
    x, y = blobs(100)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_test_batch_begin(self, batch, logs=None):
            seen.append(batch)

    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    h = model.fit(x, y, epochs=2, batch_size=10, validation_split=0.2, verbose=0, callbacks=[Record()])
    assert sorted(h.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert h.params["steps"] == 8 and seen == [0, 1] * 2          # 80 train, 20 validation samples
    val_loss, val_acc = model.evaluate(x[80:], y[80:], verbose=0, batch_size=10)
    assert h.history["val_loss"][-1] == pytest.approx(val_loss, rel=1e-5)
    h2 = model.fit(x[:80], y[:80], validation_data=(x[80:], y[80:]), epochs=1, verbose=0)
    assert "val_accuracy" in h2.history


def test_tensors_dataloader_and_multi_input_data():
    x, y = blobs(64)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    h = model.fit(ember.tensor(x), ember.tensor(y), epochs=1, verbose=0)
    assert len(h.history["loss"]) == 1
    loader = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=16, shuffle=True)
    h = model.fit(loader, epochs=2, verbose=0, validation_data=loader)
    assert h.params["steps"] == 4 and len(h.history["val_loss"]) == 2
    assert model.evaluate(loader, verbose=0, return_dict=True).keys() == {"accuracy", "loss"}
    assert model.predict(DataLoader(TensorDataset(ember.tensor(x)), batch_size=10), verbose=0).shape == (64, 3)


def _frozen_model(n):
    """n samples, an MLP that SGD(0.0) never changes, its predictions and each sample's cross-entropy."""
    x, y = blobs(n)
    model = mlp()
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    p = model.predict(x, verbose=0)
    return x, y, model, p, -np.log(np.clip(p[np.arange(n), y], 1e-7, 1))


def test_class_weight_scales_each_samples_loss():
    x, y, model, _, per_sample = _frozen_model(30)
    weights = {0: 1.0, 1: 5.0, 2: 0.5}
    h = model.fit(x, y, batch_size=30, class_weight=weights, verbose=0, shuffle=False)
    w = np.array([weights[c] for c in y])
    assert h.history["loss"][0] == pytest.approx((per_sample * w).sum() / 30, rel=1e-5)   # Keras: / batch size
    h = model.fit(x, y, batch_size=30, sample_weight=w, verbose=0, shuffle=False)
    assert h.history["loss"][0] == pytest.approx((per_sample * w).sum() / 30, rel=1e-5)


def test_initial_epoch_and_stop_training():
    x, y = blobs(40)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    h = model.fit(x, y, epochs=5, initial_epoch=3, verbose=0)
    assert h.epoch == [3, 4]


def test_training_flag_reaches_dropout_only_in_fit():
    calls = []

    class Probe(layers.Layer):
        def call(self, x, training=False):
            calls.append(training)
            return x

    model = models.Sequential([Probe(input_shape=(4,)), layers.Dense(3, activation="softmax")])
    calls.clear()
    x, y = blobs(8)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=8, verbose=0, validation_data=(x, y))
    model.predict(x, verbose=0)
    model(x)
    model(x, training=True)
    assert calls == [True, False, False, False, True]


def test_functional_multi_output_logs_and_loss_weights():
    a, b = keras.Input(shape=(4,)), keras.Input(shape=(2,))
    h = layers.Dense(8, activation="relu")(layers.Concatenate()([a, b]))
    cls = layers.Dense(3, activation="softmax", name="cls")(h)
    reg = layers.Dense(1, name="reg")(h)
    model = keras.Model(inputs=[a, b], outputs=[cls, reg])
    model.compile("adam", loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5}, metrics={"cls": ["accuracy"]})
    x, y = blobs(32)
    xb, yr = np.random.rand(32, 2), np.random.rand(32, 1)
    hist = model.fit([x, xb], {"cls": y, "reg": yr}, epochs=1, batch_size=32, verbose=0)
    assert sorted(hist.history) == ["cls_accuracy", "cls_loss", "loss", "reg_loss"]
    assert hist.history["loss"][0] == pytest.approx(hist.history["cls_loss"][0] + hist.history["reg_loss"][0],
                                                    rel=1e-5)   # the per-output losses are already weighted
    out = model.predict([x, xb], verbose=0)
    assert [o.shape for o in out] == [(32, 3), (32, 1)]


def test_subclassed_model_fits():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = layers.Dense(16, activation="relu")
            self.out = layers.Dense(3, activation="softmax")

        def call(self, x):
            return self.out(self.hidden(x))

    x, y = blobs()
    net = Net()
    net.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    net.fit(x, y, epochs=20, verbose=0)
    assert net.evaluate(x, y, verbose=0)[1] > 0.9
    assert net.name == "net" and [la.name for la in net.layers] == ["dense", "dense_1"]


def test_conv_model_channels_last_fits():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 64)
    x = rng.random((64, 8, 8, 1)).astype(np.float32) * 0.5
    x[y == 1, :4] += 0.5                                       # class 1: a bright top half
    model = models.Sequential([keras.Input(shape=(8, 8, 1)), layers.Conv2D(8, 3, padding="same", activation="relu"),
                               layers.MaxPooling2D(), layers.Flatten(), layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    h = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert h.history["accuracy"][-1] > 0.8


def test_verbose_1_progress_bar_and_verbose_2_lines(capsys):
    x, y = blobs(64)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=2, verbose=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert lines[1].startswith("2/2 - ") and "/step - accuracy: " in lines[1] and " - loss: " in lines[1]
    model.fit(x, y, epochs=1, verbose=1)
    out = capsys.readouterr().out
    assert "Epoch 1/1" in out and "2/2" in out and "loss: " in out and "<" in out   # elapsed<ETA


@pytest.mark.slow
@pytest.mark.timeout(1800)   # 9,375 training steps: about 100 s alone, several minutes on a shared machine
def test_notes_mlp_on_fashion_mnist_reaches_87_percent():
    """The notes' example as written (after `from ember.keras import layers, models`), full Fashion-MNIST,
    5 epochs. Measured: 87.6% test accuracy (seed 0), about 100 s on a loaded 2-core machine."""
    pytest.importorskip("ember.datasets")
    from ember.keras import datasets
    try:
        (x_train, y_train), (x_test, y_test) = datasets.fashion_mnist.load_data()
    except Exception as e:   # noqa: BLE001
        pytest.skip(f"Fashion-MNIST not installed: {e}")
    x_train, x_test = x_train / 255.0, x_test / 255.0
    model = models.Sequential([
        layers.Flatten(input_shape=(28, 28)),
        layers.Dense(100, activation='relu'),
        layers.Dense(10, activation='softmax')
    ])
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    assert model.count_params() == 79_510
    threads = ember.get_num_threads()
    ember.set_num_threads(1)     # small matmuls: one BLAS thread is fastest, and kind to a shared machine
    try:
        model.fit(x_train, y_train, epochs=5, verbose=0)
        test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)
    finally:
        ember.set_num_threads(threads)
    assert test_acc >= 0.87, f"test accuracy {test_acc:.4f} < 0.87"


def test_train_test_predict_on_batch():
    """Keras 3: each *_on_batch call resets the metrics first, so the values are those of this batch;
    a number for loss only, [loss, metrics...] in `metrics_names` order, or a dict with return_dict=True."""
    x, y = blobs(30)
    model = models.Sequential([layers.Dense(16, activation="relu", input_shape=(4,)), layers.Dropout(0.5),
                               layers.Dense(3, activation="softmax")])
    with pytest.raises(RuntimeError, match=r"before using the model in `train_on_batch\(\)`"):
        model.train_on_batch(x, y)
    with pytest.raises(RuntimeError, match=r"before using the model in `test_on_batch\(\)`"):
        model.test_on_batch(x, y)
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy", metrics=["accuracy"])
    p = model.predict_on_batch(x)                   # inference mode: no dropout, the same as predict
    assert isinstance(p, np.ndarray) and p.shape == (30, 3)
    np.testing.assert_array_equal(p, model.predict(x, verbose=0))
    per_sample = -np.log(np.clip(p[np.arange(30), y], 1e-7, 1))
    acc = np.mean(p.argmax(1) == y)
    loss, a = model.test_on_batch(x, y)
    assert loss == pytest.approx(per_sample.mean(), rel=1e-5) and a == pytest.approx(acc)
    loss, a = model.test_on_batch(x[:10], y[:10])   # this batch's values, not a running mean
    assert loss == pytest.approx(per_sample[:10].mean(), rel=1e-5)
    w = np.linspace(0.0, 2.0, 30)
    assert model.test_on_batch(x, y, sample_weight=w, return_dict=True) == pytest.approx(
        {"loss": (per_sample * w).sum() / 30, "accuracy": acc}, rel=1e-5)          # metrics: not weighted
    logs = model.train_on_batch(x[:10], y[:10], return_dict=True)   # dropout: the loss differs from p's
    assert sorted(logs) == ["accuracy", "loss"] and logs["loss"] != pytest.approx(per_sample[:10].mean())
    loss, _ = model.train_on_batch(x[:10], y[:10], sample_weight=np.zeros(10))
    assert loss == 0.0
    loss, _ = model.train_on_batch(x, y, class_weight={0: 0.0, 1: 0.0, 2: 0.0})
    assert loss == 0.0
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    assert model.test_on_batch(x, y) == pytest.approx(per_sample.mean(), rel=1e-5)   # loss only: a number
    assert isinstance(model.train_on_batch(x, y), float)


def test_get_layer_and_sequential_pop():
    model = mlp()
    assert model.get_layer("dense_1") is model.layers[1] and model.get_layer(index=0) is model.layers[0]
    with pytest.raises(ValueError) as e:
        model.get_layer("nope")
    assert str(e.value) == "No such layer: nope. Existing layers are: ['dense', 'dense_1']."
    last = model.pop()
    assert last.name == "dense_1" and [la.name for la in model.layers] == ["dense"]
    assert model.predict(np.zeros((2, 4)), verbose=0).shape == (2, 16)
    lazy = models.Sequential([layers.Dense(5), layers.Dense(2)])   # no input shape: built by its first call
    lazy(np.zeros((1, 3)))
    lazy.pop()
    assert lazy.built is False                      # Keras: unbuilt until called again
    lazy(np.zeros((1, 3)))
    lines = []
    lazy.summary(line_length=88, print_fn=lines.append)
    assert "(None, 5)" in lines[0]


def test_functional_config_and_json():
    import json
    x = keras.Input((4,))
    model = keras.Model(x, layers.Dense(2)(x), name="net")
    config = model.get_config()
    assert {"name", "trainable", "layers", "input_layers", "output_layers"} <= set(config)
    assert (config["name"], config["trainable"]) == ("net", True)
    assert json.loads(model.to_json()) == {"class_name": "Functional", "config": json.loads(json.dumps(config))}
    assert keras.models.clone_model(model).name == "net"


def test_evaluate_progress_bar_counts_batches(capsys):
    x, y = blobs(30)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    model.evaluate(x, y, batch_size=10)
    out = capsys.readouterr().out
    assert "3/3" in out and "loss: " in out


def test_sample_and_class_weights_weigh_the_loss_and_weighted_metrics_only(tmp_path):
    """Keras 3 (trainers/compile_utils.py): `metrics` are updated without the sample weights, `weighted_metrics`
    with them; a weighted metric whose name is taken gets the prefix `weighted_`. Ember used to weigh
    `metrics` and ignore `weighted_metrics`."""
    x, y = blobs(30)
    model = mlp()

    def top_prob(y_true, y_pred):
        return y_pred.amax(dim=-1)

    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy", top_prob])
    p = model.predict(x, verbose=0)
    per_sample = -np.log(np.clip(p[np.arange(30), y], 1e-7, 1))
    right = (p.argmax(1) == y).astype(float)
    w = np.linspace(0.0, 2.0, 30)
    assert 0 < right.mean() < 1 and (right * w).sum() / w.sum() != pytest.approx(right.mean())
    logs = model.evaluate(x, y, sample_weight=w, batch_size=30, verbose=0, return_dict=True)
    assert logs == pytest.approx({"loss": (per_sample * w).sum() / 30, "accuracy": right.mean(),
                                  "weighted_accuracy": (right * w).sum() / w.sum(),
                                  "top_prob": (p.max(1) * w).sum() / w.sum()}, rel=1e-5)
    assert model.metrics_names == ["loss", "accuracy", "weighted_accuracy", "top_prob"]
    assert model.evaluate(x, y, sample_weight=w, batch_size=30, verbose=0) == pytest.approx(
        [logs["loss"], logs["accuracy"], logs["weighted_accuracy"], logs["top_prob"]])
    weights = {0: 0.2, 1: 1.0, 2: 3.0}
    h = model.fit(x, y, batch_size=30, class_weight=weights, verbose=0, shuffle=False)
    cw = np.array([weights[c] for c in y])
    assert h.history["accuracy"][0] == pytest.approx(right.mean())
    assert h.history["weighted_accuracy"][0] == pytest.approx((right * cw).sum() / cw.sum())
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    del logs["top_prob"]                              # a function metric is not saved (Keras: custom_objects)
    assert loaded.evaluate(x, y, sample_weight=w, batch_size=30, verbose=0, return_dict=True) == pytest.approx(logs)


def test_multi_output_model_without_metrics_fits():
    """A model with two outputs compiled with no metrics (it used to fail: "0 metrics were given")."""
    a = keras.Input((4,))
    model = keras.Model(a, [layers.Dense(2, name="p")(a), layers.Dense(1, name="q")(a)])
    model.compile(keras.optimizers.SGD(0.0), loss=["mse", "mae"])
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    yp, yq = np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32)
    h = model.fit(x, [yp, yq], batch_size=3, verbose=0)         # batches of 3, 3, 2: weighted by their size
    p, q = model.predict(x, verbose=0)
    assert sorted(h.history) == ["loss", "p_loss", "q_loss"]
    assert h.history["p_loss"][0] == pytest.approx(((p - 1) ** 2).mean(), rel=1e-5)
    assert h.history["q_loss"][0] == pytest.approx(np.abs(q).mean(), rel=1e-5)
    assert model.metrics_names == ["loss", "p_loss", "q_loss"]


class _Probe(layers.Layer):
    """Records the first feature of each training batch it sees (the sample ids below)."""

    def __init__(self, seen, **kwargs):
        super().__init__(**kwargs)
        self.seen = seen

    def call(self, x, training=False):
        if training:
            self.seen.append([int(v) for v in x.numpy()[:, 0]])
        return x


def _probe_model(seen):
    model = models.Sequential([_Probe(seen, input_shape=(4,)), layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    return model


def test_batches_in_order_without_shuffle_and_a_new_permutation_each_epoch():
    x = np.zeros((10, 4), np.float32)
    x[:, 0] = np.arange(10)
    y = np.arange(10) % 3
    seen = []
    h = _probe_model(seen).fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] * 2 and h.params["steps"] == 3
    seen.clear()
    _probe_model(seen).fit(x, y, batch_size=4, epochs=2, verbose=0)      # shuffle=True is the default
    epochs = [sum(seen[:3], []), sum(seen[3:], [])]
    assert [len(b) for b in seen] == [4, 4, 2] * 2
    assert [sorted(e) for e in epochs] == [list(range(10))] * 2
    assert epochs[0] != list(range(10)) and epochs[0] != epochs[1]


def test_steps_validation_freq_and_batch_sizes():
    x = np.zeros((10, 4), np.float32)
    x[:, 0] = np.arange(10)
    y = np.arange(10) % 3
    seen, val = [], []
    model = _probe_model(seen)
    count = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: val.append(sorted(logs)))
    h = model.fit(x, y, batch_size=2, epochs=4, shuffle=False, steps_per_epoch=2, validation_data=(x, y),
                  validation_freq=2, validation_batch_size=5, verbose=0, callbacks=[count])
    assert seen == [[0, 1], [2, 3]] * 4 and h.params["steps"] == 2
    assert val == [["loss"], ["loss", "val_loss"]] * 2 and len(h.history["val_loss"]) == 2
    tests = []
    rec = keras.callbacks.LambdaCallback()
    rec.on_test_batch_begin = lambda batch, logs=None: tests.append(batch)
    model.fit(x, y, batch_size=2, validation_data=(x, y), validation_steps=1, verbose=0, callbacks=[rec])
    model.fit(x, y, batch_size=2, validation_data=(x, y), verbose=0, callbacks=[rec])   # val batch = batch_size
    assert tests == [0] + [0, 1, 2, 3, 4]
    assert model.evaluate(x, y, batch_size=2, steps=1, verbose=0) == pytest.approx(
        model.evaluate(x[:2], y[:2], verbose=0))
    assert model.predict(x, batch_size=3, steps=2, verbose=0).shape == (6, 3)


def test_stop_training_from_a_batch_callback_ends_fit():
    x, y = blobs(40)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    batches = []

    def on_batch(batch, logs):
        batches.append(batch)
        if batch == 1:
            model.stop_training = True

    h = model.fit(x, y, batch_size=10, epochs=3, verbose=0,
                  callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=on_batch)])
    assert batches == [0, 1] and h.epoch == [0]
    h = model.fit(x, y, batch_size=10, epochs=2, verbose=0)        # a new fit starts again
    assert h.epoch == [0, 1]


def test_dataloader_batches_with_sample_weights_and_inputs_only():
    x, y, model, p, per_sample = _frozen_model(12)
    w = np.linspace(0.0, 2.0, 12).astype(np.float32)
    loader = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y), ember.tensor(w)), batch_size=12)
    assert model.evaluate(loader, verbose=0) == pytest.approx((per_sample * w).sum() / 12, rel=1e-5)
    h = model.fit(loader, verbose=0)
    assert h.history["loss"][0] == pytest.approx((per_sample * w).sum() / 12, rel=1e-5)
    only_x = DataLoader(TensorDataset(ember.tensor(x)), batch_size=5)
    np.testing.assert_allclose(model.predict(only_x, verbose=0), p, rtol=1e-6)
    plain = DataLoader(ember.tensor(x), batch_size=5)           # batches that are tensors, not tuples
    np.testing.assert_allclose(model.predict(plain, verbose=0), p, rtol=1e-6)


def test_validation_split_of_several_inputs_and_outputs():
    a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
    h = layers.Dense(8, activation="relu")(layers.Concatenate()([a, b]))
    model = keras.Model([a, b], [layers.Dense(3, activation="softmax", name="cls")(h), layers.Dense(1, name="reg")(h)])
    model.compile(keras.optimizers.SGD(0.0), loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"})
    x, y = blobs(40)
    xb, yr = np.random.default_rng(1).random((40, 2)), np.random.default_rng(2).random((40, 1))
    hist = model.fit([x, xb], {"cls": y, "reg": yr}, validation_split=0.25, batch_size=10, verbose=0)
    val = model.evaluate([x[30:], xb[30:]], {"cls": y[30:], "reg": yr[30:]}, batch_size=10, verbose=0,
                         return_dict=True)
    assert hist.history["val_loss"][0] == pytest.approx(val["loss"], rel=1e-5)
    assert hist.history["val_reg_loss"][0] == pytest.approx(val["reg_loss"], rel=1e-5)
    assert hist.params["steps"] == 3                             # 30 training samples, batch 10
    # the inputs by name, as Keras takes them (this failed: "expects 2 input(s), but it received 1")
    np.testing.assert_allclose(model({"a": x[:5], "b": xb[:5]})[1].detach().numpy(),
                               model([x[:5], xb[:5]])[1].detach().numpy())
    by_name = model.predict({"b": xb, "a": x}, batch_size=7, verbose=0)
    np.testing.assert_allclose(by_name[0], model.predict([x, xb], verbose=0)[0], rtol=1e-6)
    h = model.fit({"a": x, "b": xb}, {"cls": y, "reg": yr}, batch_size=40, verbose=0)
    assert h.history["loss"][0] == pytest.approx(model.evaluate([x, xb], [y, yr], batch_size=40, verbose=0)[0],
                                                 rel=1e-5)
    with pytest.raises(ValueError, match=r"^Layer \"functional\" expects inputs named \['a', 'b'\], but the dict "
                                         r"given has no \['b'\] \(its keys: \['a', 'c'\]\) \(at "):
        model({"a": x, "c": xb})


def test_functional_input_shape_check():
    x = keras.Input((3,))
    model = keras.Model(x, layers.Dense(2)(x))
    for bad in (np.zeros((2, 4)), np.zeros((2, 3, 1))):
        with pytest.raises(ValueError) as e:
            model.predict(bad, verbose=0)
        assert str(e.value).startswith('Input 0 of layer "functional" is incompatible with the layer: expected '
                                       f"shape=(None, 3), found shape={bad.shape}")
    assert model.predict(np.zeros((5, 3)), verbose=0).shape == (5, 2)   # any batch size


def test_subclassed_model_build_and_config():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.norm = layers.BatchNormalization()
            self.fc = layers.Dense(2)

        def call(self, x):
            if isinstance(x, list):
                x = ember.cat(x, dim=-1)
            return self.fc(self.norm(x))

    net = Net()
    net.build((None, 5))                   # zeros of (1, 5) in inference mode: the moving statistics stay
    assert net.built is True and [tuple(w.shape) for w in net.fc.get_weights()] == [(5, 2), (2,)]
    mean, var = net.norm.moving_mean.numpy(), net.norm.moving_variance.numpy()
    np.testing.assert_array_equal(mean, np.zeros(5))
    np.testing.assert_array_equal(var, np.ones(5))
    two = Net()
    two.build([(None, 3), (None, 4)])      # several inputs: a list of shapes
    assert [tuple(w.shape) for w in two.fc.get_weights()] == [(7, 2), (2,)]
    with pytest.raises(NotImplementedError) as e:
        net.get_config()
    assert str(e.value).startswith("Net is a subclassed model: it has no config to save.")


def test_summary_positions():
    lines = []
    mlp().summary(line_length=60, positions=[0.5, 0.75, 1.0], print_fn=lines.append)
    header = lines[0].splitlines()[3]                             # "Output Shape" wraps: "Output" above
    assert header.index("┃ Shape") == 30 and len(header) == 60               # 0.5 of 60 (default: 0.45)


def _frozen_models():
    yield models.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))], trainable=False)
    inp = keras.Input((4,))
    yield keras.Model(inp, layers.Dense(3, activation="softmax")(inp), trainable=False)
    model = mlp()
    model.trainable = False
    yield model


def test_a_frozen_model_has_no_trainable_weights_and_still_fits(tmp_path):
    """Keras: `trainable=False` on a model freezes all of its layers (given at construction or set later),
    `fit` warns "The model does not have any trainable weights." and still reports the loss; the flag is
    saved. Before: the constructor flag froze nothing and fit failed in backward()."""
    x, y = blobs(16)
    for frozen in _frozen_models():
        assert frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == len(frozen.weights) > 0
        frozen.compile("adam", "sparse_categorical_crossentropy")
        before = frozen.get_weights()
        with pytest.warns(UserWarning, match="^The model does not have any trainable weights.$"):
            h = frozen.fit(x, y, batch_size=16, verbose=0)
        assert h.history["loss"][0] == pytest.approx(frozen.evaluate(x, y, verbose=0), rel=1e-5)
        for a, b in zip(before, frozen.get_weights()):
            np.testing.assert_array_equal(a, b)
        assert keras.models.clone_model(frozen).trainable is False
        frozen.save(tmp_path / "f.keras")
        assert keras.models.load_model(tmp_path / "f.keras").trainable_weights == []
    model = mlp()
    model.layers[0].trainable = False                 # one frozen layer: the other still trains
    assert model.trainable_weights == model.layers[1].weights


def test_predict_callbacks_see_the_model_and_each_batchs_outputs(capsys):
    x, y = blobs(10)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    seen = []

    class Outputs(keras.callbacks.Callback):
        def on_predict_batch_end(self, batch, logs=None):
            seen.append((batch, self.model is model, logs["outputs"].shape))

    out = model.predict(x, batch_size=4, verbose=0, callbacks=[Outputs()])
    assert seen == [(0, True, (4, 3)), (1, True, (4, 3)), (2, True, (2, 3))]
    assert out.dtype == np.float32                    # the model's dtype, as Keras returns it
    model.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""             # verbose=0: no bar


def test_functional_layer_order_by_depth():
    """Keras's order (model.layers, weights, summary): deepest first, a shared layer at its deepest call,
    ties in the order the walk from the outputs meets them."""
    x = keras.Input((4,), name="x")
    a, b, c = layers.Dense(2, name="a"), layers.Dense(4, name="b"), layers.Dense(2, name="c")
    model = keras.Model(x, [a(x), c(b(x))])
    assert [la.name for la in model.layers] == ["x", "b", "a", "c"]
    x = keras.Input((4,), name="x")
    s, d = layers.Dense(4, name="s"), layers.Dense(4, name="d")
    model = keras.Model(x, s(d(s(x))))
    assert [la.name for la in model.layers] == ["x", "s", "d"]


def test_functional_model_errors():
    x = keras.Input((4,))
    for bad, what in (((np.zeros(3), layers.Dense(2)(x)), "inputs"), ((x, np.zeros(3)), "outputs")):
        with pytest.raises(TypeError) as e:
            keras.Model(*bad)
        assert str(e.value) == (f"Model({what}=...): expected KerasTensors (keras.Input(...) and the outputs of "
                                "layers called on them), got ndarray")
    h = layers.Dense(3, name="hidden")(x)
    with pytest.raises(ValueError) as e:
        keras.Model(h, layers.Dense(2)(h))
    assert str(e.value).startswith("Model inputs must come from `keras.Input`; ")
    assert str(e.value).endswith(" is the output of layer 'hidden'")


def test_uncalled_functional_inside_a_subclassed_model_shows_its_output_shapes():
    def functional(n_out):
        inp = keras.Input((3,))
        outs = [layers.Dense(2)(inp) for _ in range(n_out)]
        return keras.Model(inp, outs if n_out > 1 else outs[0])

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.one, self.two = functional(1), functional(2)

        def call(self, x):
            return self.one(x)

    lines = []
    Net().summary(line_length=88, print_fn=lines.append)
    rows = [line for line in lines[0].splitlines() if "(Functional)" in line]
    assert "│ (None, 2) " in rows[0] and "│ [(None, 2), (None, 2)] " in rows[1]


def test_clone_keeps_name_and_the_shape_a_call_built():
    model = models.Sequential([layers.Dense(3), layers.Dense(2)], name="net")
    model(np.zeros((1, 5)))                           # built by a call: no input_shape given
    clone = keras.models.clone_model(model)
    assert clone.name == "net" and clone.count_params() == model.count_params() == 26
    assert model.get_config()["batch_input_shape"] == [None, 5]
    assert "batch_input_shape" not in models.Sequential([layers.Dense(3)]).get_config()


def test_class_weight_label_forms():
    """Keras (data_adapter_utils.class_weight_to_sample_weights): one-hot targets by their argmax, (N, 1)
    labels squeezed, float labels rounded; classes without a weight weigh 1."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0])
    cw = {0: 0.5, 1: 3.0, 7: 2.0}                    # a class the data does not have: fine
    w = np.where(labels == 1, 3.0, 0.5)

    def loss_with(loss, y, out, **kw):
        model = models.Sequential([layers.Dense(out, activation="softmax" if out > 1 else "sigmoid",
                                                input_shape=(4,))])
        model.compile(keras.optimizers.SGD(0.0), loss)
        p = model.predict(x, verbose=0)
        h = model.fit(x, y, batch_size=12, class_weight=cw, verbose=0, **kw)
        return p, h.history["loss"][0]

    p, got = loss_with("categorical_crossentropy", np.eye(2)[labels], 2)       # one-hot, two classes
    assert got == pytest.approx((-np.log(p[np.arange(12), labels]) * w).sum() / 12, rel=1e-5)
    p, got = loss_with("sparse_categorical_crossentropy", labels[:, None], 2)  # (N, 1) integer labels
    assert got == pytest.approx((-np.log(p[np.arange(12), labels]) * w).sum() / 12, rel=1e-5)
    soft = np.where(labels == 1, 0.8, 0.2)[:, None].astype(np.float32)        # soft labels: rounded
    p, got = loss_with("binary_crossentropy", soft, 1)
    p = np.clip(p[:, 0], 1e-7, 1 - 1e-7)
    bce = -(soft[:, 0] * np.log(p) + (1 - soft[:, 0]) * np.log(1 - p))
    assert got == pytest.approx((bce * w).sum() / 12, rel=1e-4)
    three = np.array([0, 1, 2] * 4)                  # class 2 has no weight: 1
    model = models.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    p = model.predict(x, verbose=0)
    h = model.fit(x, three, batch_size=12, class_weight={0: 2.0}, verbose=0)
    w3 = np.where(three == 0, 2.0, 1.0)
    assert h.history["loss"][0] == pytest.approx((-np.log(p[np.arange(12), three]) * w3).sum() / 12, rel=1e-5)


def test_evaluate_default_bar_callbacks_and_logs(capsys):
    x, y = blobs(30)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    seen = {}

    class Spy(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.setdefault("batches", []).append(sorted(logs))

        def on_test_end(self, logs=None):
            seen["end"] = (self.model is model, self.params, dict(logs))

    logs = model.evaluate(x, y, batch_size=10, callbacks=[Spy()], return_dict=True)     # verbose="auto": a bar
    out = capsys.readouterr().out
    assert "3/3" in out and "<" in out and "step/s" in out and f"loss: {logs['loss']:.4f}" in out
    assert seen == {"batches": [["accuracy", "loss"]] * 3, "end": (True, {"verbose": 1, "steps": 3}, logs)}
    with pytest.raises(ValueError, match="^evaluate: the data has no samples$"):
        model.evaluate(x[:0], y[:0])                 # with the bar too
    h = model.fit(x, y, epochs=1)                    # verbose="auto": the bar, not verbose=2's line
    out = capsys.readouterr().out
    assert "<" in out and "step/s" in out and h.params["verbose"] == 1


def test_fit_with_a_callback_list_and_what_on_train_end_gets():
    x, y = blobs(20)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    ends = []
    spy = keras.callbacks.LambdaCallback(on_train_end=lambda logs: ends.append(logs))
    cbs = keras.callbacks.CallbackList([spy], add_history=True, model=model, verbose=0, epochs=2)
    h = model.fit(x, y, epochs=2, verbose=0, validation_data=(x, y), callbacks=cbs)
    assert h is cbs.history and h.epoch == [0, 1]
    assert ends == [{k: v[-1] for k, v in h.history.items()}]        # the last epoch's logs, val_ included


def test_validation_sample_weights_and_split_sample_weights():
    x, y = blobs(20)
    model = mlp()
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    w = np.linspace(0.0, 2.0, 20)
    h = model.fit(x, y, batch_size=20, validation_data=(x, y, w), verbose=0)
    assert h.history["val_loss"][0] == pytest.approx(model.evaluate(x, y, sample_weight=w, verbose=0), rel=1e-5)
    h = model.fit(x, y, sample_weight=w, batch_size=10, validation_split=0.5, shuffle=False, verbose=0)
    assert h.history["val_loss"][0] == pytest.approx(
        model.evaluate(x[10:], y[10:], sample_weight=w[10:], verbose=0), rel=1e-5)
    assert h.history["loss"][0] == pytest.approx(
        model.evaluate(x[:10], y[:10], sample_weight=w[:10], verbose=0), rel=1e-5)
    h = model.fit(x[:10], y[:10], validation_split=0.95, verbose=0)   # ceil(10 * 0.05) = 1 training sample
    assert h.params["steps"] == 1


def test_array_conversion_errors_and_sequential_input_checks():
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    for kwargs in ({}, {"validation_split": 0.5}):
        with pytest.raises(TypeError) as e:
            model.fit([[1.0, 2.0], [3.0]], np.zeros(2), verbose=0, **kwargs)     # ragged: no array
        assert str(e.value) == "fit: expected NumPy arrays, Ember tensors or an ember DataLoader, got list"
    with pytest.raises(ValueError) as e:
        model.predict(np.zeros((4, 5)), verbose=0)
    assert str(e.value).startswith('Input 0 of layer "sequential" is incompatible with the layer: expected '
                                   "shape=(None, 4), found shape=(4, 5)")
    lazy = models.Sequential([layers.Dense(2)])
    with pytest.raises(ValueError, match="^Sequential model 'sequential_1' takes one input, got 2$"):
        lazy([np.zeros((1, 2)), np.zeros((1, 2))])


def _two_outputs():
    a = keras.Input((4,))
    return keras.Model(a, [layers.Dense(2, name="p")(a), layers.Dense(1, name="q")(a)])


def test_compile_defaults_and_loss_specs():
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    yp, yq = np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32)
    model = mlp()
    model.compile(loss="mse")
    assert type(model.optimizer).__name__ == "RMSprop"          # Keras's default optimizer
    with pytest.raises(ValueError) as e:
        model.compile("adam")
    assert str(e.value) == ("compile: give a loss, e.g. loss='sparse_categorical_crossentropy' (known losses: "
                            "binary_crossentropy, categorical_crossentropy, huber, huber_loss, mae, "
                            "mean_absolute_error, mean_squared_error, mse, sparse_categorical_crossentropy)")
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 'msee'"):
        _two_outputs().compile("sgd", loss={"p": "mse", "q": "msee"})          # a typo fails at compile
    with pytest.raises(ValueError, match="Could not interpret metric identifier: 'acc2'"):
        _two_outputs().compile("sgd", "mse", metrics={"p": ["acc2"]})
    # one output: a list of one loss (and of one weight) is that output's, as in Keras (it used to fail)
    one = models.Sequential([layers.Dense(2, input_shape=(4,))])
    one.compile(keras.optimizers.SGD(0.0), ["mse"], loss_weights=[2.0])
    h = one.fit(x, yp, batch_size=8, verbose=0)
    assert h.history["loss"][0] == pytest.approx(2 * ((one.predict(x, verbose=0) - 1) ** 2).mean(), rel=1e-5)
    # an output without a loss: no tracker of its own, and the other's is not misnamed (it was logged as p_loss)
    model = _two_outputs()
    model.compile(keras.optimizers.SGD(0.0), loss={"q": "mse"})
    h = model.fit(x, {"p": yp, "q": yq}, batch_size=8, verbose=0)
    assert sorted(h.history) == ["loss"]
    assert h.history["loss"][0] == pytest.approx((model.predict(x, verbose=0)[1] ** 2).mean(), rel=1e-5)
    # loss weights by name; a missing one is 1
    model = _two_outputs()
    model.compile(keras.optimizers.SGD(0.0), loss=["mse", "mse"], loss_weights={"p": 3.0})
    h = model.fit(x, [yp, yq], batch_size=8, verbose=0)
    p, q = model.predict(x, verbose=0)
    assert h.history["p_loss"][0] == pytest.approx(3 * ((p - 1) ** 2).mean(), rel=1e-5)
    assert h.history["q_loss"][0] == pytest.approx((q ** 2).mean(), rel=1e-5)


def test_per_output_spec_errors():
    x = np.zeros((4, 4), np.float32)
    y = [np.zeros((4, 2)), np.zeros((4, 1))]
    cases = [({"loss": ["mse"] * 3}, "compile(loss=...): the model has 2 outputs ['p', 'q'] but 3 loss were given"),
             ({"loss": {"p": "mse", "r": "mse"}},
              "compile(loss=...): unknown output name(s) ['r']; the model's outputs are ['p', 'q']"),
             ({"loss": "mse", "loss_weights": [1.0]},
              "compile(loss_weights=...): the model has 2 outputs ['p', 'q'] but 1 loss_weights were given"),
             ({"loss": "mse", "metrics": {"r": ["mae"]}},
              "compile(metrics=...): unknown output name(s) ['r']; the model's outputs are ['p', 'q']"),
             ({"loss": "mse", "metrics": [["mae"], ["mae"], ["mae"]]},
              "compile(metrics=...): the model has 2 outputs ['p', 'q'] but 3 metrics were given"),
             ({"loss": "mse", "weighted_metrics": {"r": ["mae"]}},
              "compile(weighted_metrics=...): unknown output name(s) ['r']; the model's outputs are ['p', 'q']")]
    for kwargs, message in cases:
        model = _two_outputs()
        model.compile("sgd", **kwargs)
        with pytest.raises(ValueError) as e:
            model.fit(x, y, verbose=0)
        assert str(e.value) == message
    model = _two_outputs()
    model.compile("sgd", "mse", metrics=[["mae"], ["mse"]])          # one list per output
    h = model.fit(x, y, verbose=0)
    assert sorted(h.history) == ["loss", "p_loss", "p_mae", "q_loss", "q_mse"]
    for bad_y, got in ((np.zeros((4, 2)), "Tensor"), ([np.zeros((4, 2))] * 3, "list")):
        with pytest.raises(ValueError) as e:
            model.fit(x, bad_y, verbose=0)
        assert str(e.value).startswith(f"The model has 2 outputs ['p', 'q'], so y must be a list of 2 arrays (or a "
                                       f"dict by output name), got {got} (at ")
    single = mlp()
    single.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"^fit: the loss needs targets y for output 'output', got y=None \(at "):
        single.fit(x, verbose=0)


def test_accuracy_follows_the_loss_and_the_shapes():
    """compile(metrics=['accuracy']): binary accuracy for binary_crossentropy even with several labels per
    sample; with a loss Keras cannot name, the target's shape decides (sparse for integer labels)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 4)).astype(np.float32)
    multi = (rng.random((20, 3)) > 0.5).astype(np.float32)
    model = models.Sequential([layers.Dense(3, activation="sigmoid", input_shape=(4,))])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    p = model.predict(x, verbose=0)
    assert model.evaluate(x, multi, verbose=0)[1] == pytest.approx(((p > 0.5) == multi).mean())
    labels = rng.integers(0, 3, 20)

    def my_loss(y_true, y_pred):
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)

    model = models.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    model.compile("sgd", my_loss, metrics=["accuracy"])
    p = model.predict(x, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[1] == pytest.approx((p.argmax(1) == labels).mean())


def test_single_output_targets_and_subclassed_output_names():
    x, y = blobs(12)
    model = mlp()
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    assert model.evaluate(x, [y], verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))   # [y] is y
    h = model.fit(x[:1], y[:1], batch_size=1, verbose=0)          # a batch of one sample
    assert h.history["loss"][0] == pytest.approx(model.evaluate(x[:1], y[:1], verbose=0), rel=1e-5)

    class Two(keras.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = layers.Dense(3, activation="softmax"), layers.Dense(1)

        def call(self, x):
            return [self.a(x), self.b(x)]

    two = Two()
    two.compile(keras.optimizers.SGD(0.0), loss={"output_0": "sparse_categorical_crossentropy", "output_1": "mse"})
    h = two.fit(x, [y, np.zeros(12)], verbose=0)
    assert sorted(h.history) == ["loss", "output_0_loss", "output_1_loss"]

    class One(keras.Model):
        def __init__(self):
            super().__init__()
            self.a = layers.Dense(3, activation="softmax")

        def call(self, x):
            return self.a(x)

    one = One()
    one.compile(keras.optimizers.SGD(0.0), loss={"output": "sparse_categorical_crossentropy"})
    assert sorted(one.fit(x, y, verbose=0).history) == ["loss"]


def test_sequential_add_rules():
    model = models.Sequential()
    model.add(keras.Input((4,)))
    model.add(layers.Dense(3))
    assert model.built and model.count_params() == 15
    model.add(layers.Dense(2))                        # rebuilt after each add
    assert model.count_params() == 23 and model.predict(np.zeros((1, 4)), verbose=0).shape == (1, 2)
    for bad, message in ((keras.Input((4,)), "Sequential: an Input can only be the first entry"),
                         (layers.Dense(1, name="dense"), "All layers added to a Sequential model should have unique "
                                                         "names. Name 'dense' is already the name of a layer in "
                                                         "this model.")):
        with pytest.raises(ValueError) as e:
            model.add(bad)
        assert str(e.value) == message
    first = models.Sequential([keras.Input((4,))])
    with pytest.raises(ValueError, match="^Sequential: an Input can only be the first entry$"):
        first.add(keras.Input((4,)))
    h = layers.Dense(2, name="h")(keras.Input((4,)))
    with pytest.raises(ValueError) as e:
        models.Sequential([h])
    assert str(e.value) == "Only keras.Input tensors can be added to a Sequential model; got the output of layer 'h'"
    with pytest.raises(ValueError) as e:
        models.Sequential([layers.Dense(2), 3])
    assert str(e.value) == ("Only instances of `keras.Layer` can be added to a Sequential model. Received: 3 (of "
                            "type int)")
    again = models.Sequential([layers.Dense(2, input_shape=(4,))])
    again.build()                                     # the input shape it was given
    assert again.built and again.count_params() == 10

    class Holder(keras.Model):                        # an uncalled Sequential inside: its output shape shows
        def __init__(self):
            super().__init__()
            self.inner = models.Sequential([layers.Dense(5, input_shape=(4,))])

        def call(self, x):
            return self.inner(x)

    lines = []
    Holder().summary(line_length=88, print_fn=lines.append)
    assert "(None, 5)" in next(line for line in lines[0].splitlines() if "(Sequential)" in line)


def test_model_constructor_rules():
    class Net(keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.fc = layers.Dense(2)

        def call(self, x):
            return self.fc(x)

    assert keras.Model().name == "model" and Net().name == "net" and Net(name="mine").name == "mine"
    frozen = Net(trainable=False)
    frozen(np.zeros((1, 3)))
    assert frozen.trainable is False and frozen.trainable_weights == []
    with pytest.raises(TypeError, match=r"^Net: unrecognized keyword argument\(s\) \['unit'\]"):
        Net(unit=3)
    class Passes(keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    for args, kwargs in (((1,), {}), ((), {"inputs": 1})):
        with pytest.raises(TypeError) as e:
            Passes(*args, **kwargs)
        assert str(e.value) == ("Model(inputs, outputs): inputs and outputs must be the KerasTensors of a functional "
                                "graph (keras.Input(...) and the layers called on it)")


def test_default_batch_size_and_sample_weights_per_batch():
    x, y = blobs(33)
    model = mlp()
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    assert model.fit(x, y, verbose=0).params["steps"] == 2              # Keras's default batch_size=32
    p = model.predict(x, verbose=0)
    per_sample = -np.log(np.clip(p[np.arange(33), y], 1e-7, 1))
    w = np.linspace(0.0, 2.0, 33)
    h = model.fit(x, y, sample_weight=w, batch_size=5, shuffle=False, verbose=0)
    batches = [(per_sample[i:i + 5] * w[i:i + 5]).sum() / len(w[i:i + 5]) for i in range(0, 33, 5)]
    sizes = [len(w[i:i + 5]) for i in range(0, 33, 5)]
    assert h.history["loss"][0] == pytest.approx(np.average(batches, weights=sizes), rel=1e-5)
    with pytest.raises(TypeError, match="^fit: expected NumPy arrays"):
        model.fit(x, [[0], [1, 2]], verbose=0)                         # ragged y
    with pytest.raises(TypeError, match="^fit: expected NumPy arrays"):
        model.fit(x, y, sample_weight=[[0.0], [1.0, 2.0]], verbose=0)
    two = _two_outputs()
    two.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"^y: all arrays must have the same number of samples, got \[4, 3\]$"):
        two.fit(np.zeros((4, 4)), [np.zeros((4, 2)), np.zeros((3, 1))], verbose=0)


def test_evaluate_bar_format(capsys):
    x, y = blobs(30)
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    model.evaluate(x, y, batch_size=10, verbose=1)
    out = capsys.readouterr().out
    assert "\r3/3 " in out and "%|" not in out and "step/s" in out     # Keras's "3/3 ━━━━" form, not tqdm's default


def test_more_spec_and_data_forms():
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    y2 = [np.zeros((6, 2), np.float32), np.zeros((6, 1), np.float32)]
    model = _two_outputs()
    model.compile("sgd", "mse", metrics=["mae"])                      # a flat list: every output's metrics
    assert sorted(model.fit(x, y2, verbose=0).history) == ["loss", "p_loss", "p_mae", "q_loss", "q_mae"]
    single = models.Sequential([layers.Dense(2, input_shape=(4,))])
    single.compile("sgd", ["mse", "mae"])
    with pytest.raises(ValueError, match=r"^compile\(loss=...\): the model has 1 outputs \['output'\] but 2 loss "
                                         r"were given$"):
        single.fit(x, y2[0], verbose=0)
    # the same messages name the argument they are about
    m = mlp()
    m.compile("sgd", "sparse_categorical_crossentropy")
    yl = np.zeros(6, int)
    ragged = [[0.0], [1.0, 2.0]]
    for call, what in ((lambda: m.train_on_batch(ragged, yl), "x"), (lambda: m.train_on_batch(x, ragged), "y"),
                       (lambda: m.test_on_batch(ragged, yl), "x"), (lambda: m.test_on_batch(x, ragged), "y"),
                       (lambda: m.predict_on_batch(ragged), "x"),
                       (lambda: m.fit(x, ragged, validation_split=0.5, verbose=0), "fit"),
                       (lambda: m.fit(x, yl, sample_weight=ragged, validation_split=0.5, verbose=0), "fit"),
                       (lambda: m.fit({"a": ragged}, yl, verbose=0), "fit")):
        with pytest.raises(TypeError, match=f"^{what}: expected NumPy arrays"):
            call()
    with pytest.raises(ValueError, match=r"^fit\(validation_data\): batch_size must be a positive integer, got -1$"):
        m.fit(x, yl, validation_data=(x, yl), validation_batch_size=-1, verbose=0)
    a, b = keras.Input((4,)), keras.Input((2,))
    two_in = keras.Model([a, b], layers.Dense(1)(layers.Concatenate()([a, b])))
    two_in.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"^x: all arrays must have the same number of samples, got \[6, 5\]$"):
        two_in.fit([x, np.zeros((5, 2))], np.zeros(6), validation_split=0.5, verbose=0)
    seen = []
    rec = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append("val_loss" in logs))
    m.fit(x, yl, epochs=3, validation_data=(x, yl), validation_freq=3, verbose=0, callbacks=[rec])
    assert seen == [False, False, True]
    assert len(list(m.parameters())) == 4             # the layers are submodules, as in PyTorch

    class Two(keras.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = layers.Dense(2), layers.Dense(1)

        def call(self, x):
            return [self.a(x), self.b(x)]

    two = Two()
    two.compile("sgd", "mse")
    h = two.fit(x, {"output_1": y2[1], "output_0": y2[0]}, verbose=0)   # targets by output name
    assert sorted(h.history) == ["loss", "output_0_loss", "output_1_loss"]
    with pytest.raises(ValueError, match=r"^The model has 2 outputs \['output_0', 'output_1'\], so y must be a list"):
        two.fit(x, y2[0], verbose=0)


def test_functional_graph_walk_details():
    calls = []

    class Count(layers.Layer):
        def call(self, x):
            calls.append(1)
            return x

    x = keras.Input((3,), name="x")
    c = Count(name="count")(x)
    model = keras.Model(x, layers.Add()([c, c]))          # one tensor used twice: its layer runs once
    calls.clear()
    model.predict(np.ones((2, 3)), verbose=0)
    assert len(calls) == 1
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    unused = keras.Model([a, b], layers.Dense(1, name="out")(a))   # an input nothing uses is still listed
    assert [la.name for la in unused.layers] == ["b", "a", "out"]
    assert len(list(unused.parameters())) == 2          # the layers are submodules, as in PyTorch
