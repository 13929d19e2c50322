"""keras.callbacks: the order of calls, and each callback's behaviour."""
import csv
import math
import os

import numpy as np
import pytest

from ember import keras
from ember.keras import callbacks, layers, models


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.standard_normal((n, 3)).astype(np.float32) + y[:, None] * 2.0
    return x, y


def model(lr=0.01):
    m = models.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)), layers.Dense(2, activation="softmax")])
    m.compile(keras.optimizers.Adam(lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")
            return lambda *args: calls.append((name,) + tuple(a for a in args if isinstance(a, int)))
        return object.__getattribute__(self, name)


def test_order_of_calls_in_fit_and_evaluate_and_predict():
    x, y = data(20)
    m = model()
    rec = Recorder()
    m.fit(x, y, batch_size=10, epochs=2, verbose=0, validation_data=(x[:5], y[:5]), callbacks=[rec])
    epoch = ["on_epoch_begin", ("on_train_batch_begin", 0), ("on_train_batch_end", 0), ("on_train_batch_begin", 1),
             ("on_train_batch_end", 1), "on_test_begin", ("on_test_batch_begin", 0), ("on_test_batch_end", 0),
             "on_test_end", "on_epoch_end"]

    def norm(c):
        return c[0] if len(c) == 1 else c
    got = [norm(c) for c in rec.calls]
    want = ["on_train_begin"] + [e if isinstance(e, tuple) else e for e in epoch] + epoch + ["on_train_end"]
    want = [w for w in want]
    # on_epoch_begin / on_epoch_end carry the epoch number
    got = [g if not (isinstance(g, tuple) and g[0] in ("on_epoch_begin", "on_epoch_end")) else g[0] for g in got]
    assert got == want
    rec.calls.clear()
    m.evaluate(x, y, batch_size=20, verbose=0, callbacks=[rec])
    assert [norm(c) for c in rec.calls] == ["on_test_begin", ("on_test_batch_begin", 0), ("on_test_batch_end", 0),
                                            "on_test_end"]
    rec.calls.clear()
    m.predict(x, batch_size=20, verbose=0, callbacks=[rec])
    assert [norm(c) for c in rec.calls] == ["on_predict_begin", ("on_predict_batch_begin", 0),
                                            ("on_predict_batch_end", 0), "on_predict_end"]


def test_batch_logs_are_running_means_and_epoch_logs_have_val():
    x, y = data(30)
    seen = {"batch": [], "epoch": []}
    cb = callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen["batch"].append(dict(logs)),
                                  on_epoch_end=lambda e, logs: seen["epoch"].append(dict(logs)))
    m = model()
    h = m.fit(x, y, batch_size=10, epochs=1, verbose=0, validation_split=0.5, callbacks=[cb])
    assert [sorted(b) for b in seen["batch"]] == [["accuracy", "loss"]] * 2
    assert sorted(seen["epoch"][0]) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert seen["epoch"][0]["loss"] == seen["batch"][-1]["loss"] == h.history["loss"][0]


def test_model_checkpoint_best_only(tmp_path):
    x, y = data()
    path = str(tmp_path / "best.keras")
    m = model()
    losses = iter([0.5, 0.4, 0.45, 0.3, 0.6])
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update(val_loss=next(losses)))
    saved = []
    ckpt = callbacks.ModelCheckpoint(path, monitor="val_loss", save_best_only=True)
    orig = m.save
    m.save = lambda p, **k: (saved.append(p), orig(p, **k))
    epochs_saved = []
    spy = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: epochs_saved.append((e, len(saved))))
    m.fit(x, y, epochs=5, verbose=0, callbacks=[fake, ckpt, spy])
    # saved at the epochs whose val_loss improved: 0 (0.5), 1 (0.4), 3 (0.3)
    assert [n for _, n in epochs_saved] == [1, 2, 2, 3, 3]
    assert ckpt.best == 0.3 and os.path.exists(path)
    loaded = models.load_model(path)
    assert loaded.count_params() == m.count_params()


def test_model_checkpoint_weights_every_epoch_with_formatted_names(tmp_path):
    x, y = data()
    m = model()
    pattern = str(tmp_path / "w-{epoch:02d}-{loss:.2f}.weights.safetensors")
    h = m.fit(x, y, epochs=3, verbose=0, callbacks=[callbacks.ModelCheckpoint(pattern, save_weights_only=True)])
    names = sorted(os.listdir(tmp_path))
    assert names == [f"w-{e + 1:02d}-{loss:.2f}.weights.safetensors" for e, loss in enumerate(h.history["loss"])]
    fresh = model()
    fresh.load_weights(str(tmp_path / names[-1]))
    for a, b in zip(fresh.get_weights(), m.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_early_stopping_patience_and_restore_best_weights():
    x, y = data()
    m = model()
    values = iter([1.0, 0.5, 0.6, 0.7, 0.55, 0.4])
    snapshots = []
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: (logs.update(val_loss=next(values)),
                                                                  snapshots.append(m.get_weights())))
    stop = callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    h = m.fit(x, y, epochs=6, verbose=0, callbacks=[fake, stop])
    assert h.epoch == [0, 1, 2, 3]                # epochs 2 and 3 did not improve on 0.5: stop after 3
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1
    for a, b in zip(m.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(a, b)       # the weights of the end of epoch 1 are back


def test_early_stopping_min_delta_and_max_mode():
    x, y = data()
    m = model()
    acc = iter([0.5, 0.505, 0.509, 0.6])
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update(val_accuracy=next(acc)))
    stop = callbacks.EarlyStopping(monitor="val_accuracy", min_delta=0.01, patience=2)
    h = m.fit(x, y, epochs=4, verbose=0, callbacks=[fake, stop])
    assert h.epoch == [0, 1, 2] and stop.best == 0.5   # +0.005 and +0.009 are below min_delta


def test_learning_rate_scheduler_and_history_records_lr():
    x, y = data()
    m = model(lr=0.1)
    sched = callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch > 0 else lr)
    h = m.fit(x, y, epochs=3, verbose=0, callbacks=[sched])
    assert h.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.025])
    assert m.optimizer._impl.param_groups[0]["lr"] == pytest.approx(0.025)   # reaches the update rule
    one_arg = callbacks.LearningRateScheduler(lambda epoch: 0.001 * (epoch + 1))
    m.fit(x, y, epochs=2, verbose=0, callbacks=[one_arg])
    assert m.optimizer.learning_rate == pytest.approx(0.002)


def test_reduce_lr_on_plateau():
    x, y = data()
    m = model(lr=0.1)
    values = iter([1.0] * 6)
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update(val_loss=next(values)))
    plateau = callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=0.03)
    h = m.fit(x, y, epochs=6, verbose=0, callbacks=[fake, plateau])
    # logged before that epoch's decision, as Keras does; reduced after epochs 2 and 4, the second time
    # to min_lr (0.05 * 0.5 = 0.025 < 0.03)
    assert h.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.03])
    with pytest.raises(ValueError, match="factor >= 1.0"):
        callbacks.ReduceLROnPlateau(factor=2)


def test_csv_logger(tmp_path):
    x, y = data()
    path = tmp_path / "log.csv"
    m = model()
    h = m.fit(x, y, epochs=2, verbose=0, validation_split=0.25, callbacks=[callbacks.CSVLogger(str(path))])
    rows = list(csv.reader(open(path)))
    assert rows[0] == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    assert [int(r[0]) for r in rows[1:]] == [0, 1]
    assert float(rows[2][2]) == pytest.approx(h.history["loss"][1])
    m.fit(x, y, epochs=1, verbose=0, validation_split=0.25, callbacks=[callbacks.CSVLogger(str(path), append=True)])
    rows = list(csv.reader(open(path)))
    assert len(rows) == 4 and rows[3][0] == "0"           # appended, no second header


def test_terminate_on_nan(capsys):
    x, y = data()
    m = model()
    x_bad = x.copy()
    x_bad[15] = np.nan
    h = m.fit(x_bad, y, batch_size=10, epochs=3, shuffle=False, verbose=0, callbacks=[callbacks.TerminateOnNaN()])
    assert h.epoch == [0] and math.isnan(h.history["loss"][0])
    assert "Batch 1: Invalid loss, terminating training" in capsys.readouterr().out


def test_lambda_callback_rejects_unknown_hooks_and_fit_rejects_non_callbacks():
    with pytest.raises(TypeError, match="unknown hook 'on_epoch_ends'"):
        callbacks.LambdaCallback(on_epoch_ends=print)
    x, y = data()
    with pytest.raises(TypeError, match="callbacks must be keras.callbacks.Callback instances, got builtin_function_or_method"):
        model().fit(x, y, verbose=0, callbacks=[print])


def test_tensorboard_callback_writes_keras_tags(tmp_path):
    pytest.importorskip("ember.utils.tensorboard", reason="the TensorBoard writer is built in another branch")
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    x, y = data()
    m = model()
    h = m.fit(x, y, epochs=3, verbose=0, validation_split=0.25,
              callbacks=[callbacks.TensorBoard(log_dir=str(tmp_path))])
    train = event_accumulator.EventAccumulator(str(tmp_path / "train"))
    train.Reload()
    val = event_accumulator.EventAccumulator(str(tmp_path / "validation"))
    val.Reload()
    assert [e.value for e in train.Scalars("epoch_loss")] == pytest.approx(h.history["loss"], rel=1e-6)
    assert [e.value for e in val.Scalars("epoch_loss")] == pytest.approx(h.history["val_loss"], rel=1e-6)
    assert [e.step for e in val.Scalars("epoch_accuracy")] == [0, 1, 2]
    assert [e.value for e in train.Scalars("epoch_learning_rate")] == pytest.approx([0.01] * 3)
