"""keras.callbacks: the order of calls, and each callback's behaviour."""
import csv
import math
import os
import sys
import warnings

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


# --- the callbacks in detail, as Keras documents them (keras/src/callbacks/*.py) -------------------------
def fit_with(values, *cbs, key="val_loss", lr=0.01):
    """Fit for len(values) epochs; a callback ahead of `cbs` writes values[epoch] into the epoch's logs
    under `key` (as if validation had measured it)."""
    x, y = data()
    m = model(lr)
    seq = iter(values)
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update({key: next(seq)}))
    h = m.fit(x, y, epochs=len(values), verbose=0, callbacks=[fake, *cbs])
    return m, h


def test_callback_defaults_are_keras(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a default mode that is not a mode would warn
        es = callbacks.EarlyStopping()
        rl = callbacks.ReduceLROnPlateau()
    assert (es.monitor, es.min_delta, es.patience, es.verbose, es.mode, es.baseline, es.restore_best_weights,
            es.start_from_epoch) == ("val_loss", 0, 0, 0, "auto", None, False, 0)
    assert (rl.monitor, rl.factor, rl.patience, rl.verbose, rl.mode, rl.min_delta, rl.cooldown, rl.min_lr) == \
        ("val_loss", 0.1, 10, 0, "auto", 1e-4, 0, 0.0)
    assert callbacks.LearningRateScheduler(lambda epoch: 0.1).verbose == 0
    log = callbacks.CSVLogger(tmp_path / "log.csv")
    assert (log.sep, log.append) == (",", False)


@pytest.mark.parametrize("kind", ["EarlyStopping", "ReduceLROnPlateau"])
def test_unknown_mode_warns_and_falls_back_to_auto(kind):
    text = {"EarlyStopping": "EarlyStopping mode typo is unknown, fallback to auto mode.",
            "ReduceLROnPlateau": "Learning rate reduction mode typo is unknown, fallback to auto mode."}[kind]
    args = {"EarlyStopping": {"patience": 0}, "ReduceLROnPlateau": {"patience": 1, "factor": 0.5}}[kind]
    with pytest.warns(UserWarning) as w:
        cb = getattr(callbacks, kind)(mode="typo", **args)
    assert [str(r.message) for r in w] == [text] and cb.mode == "auto"
    # auto for val_loss: lower is better
    if kind == "EarlyStopping":
        _, h = fit_with([1.0, 0.5, 0.7], cb)
        assert h.epoch == [0, 1, 2] and cb.best == 0.5 and cb.stopped_epoch == 2
    else:
        _, h = fit_with([1.0, 0.5, 0.7, 0.7], cb, lr=0.1)
        assert h.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.1, 0.05])


@pytest.mark.parametrize("monitor,mode,values,epochs,best", [
    ("val_loss", "auto", [1.0, 2.0, 0.5], [0, 1], 1.0),          # patience 0: the first bad epoch stops
    ("val_loss", "max", [1.0, 2.0, 1.5], [0, 1, 2], 2.0),        # max for a loss if asked
    ("val_accuracy", "min", [0.5, 0.4, 0.6], [0, 1, 2], 0.4),    # min for an accuracy if asked
    ("val_accuracy", "auto", [0.5, 0.6, 0.55], [0, 1, 2], 0.6),  # auto: higher is better for acc and auc
    ("val_auc", "auto", [0.5, 0.6, 0.55], [0, 1, 2], 0.6),
    ("loss", "auto", [float("nan"), 1.0, 2.0], [0, 1, 2], 1.0),  # never stops at epoch 0 (Keras: epoch > 0)
])
def test_early_stopping_direction_and_first_epochs(monitor, mode, values, epochs, best):
    stop = callbacks.EarlyStopping(monitor=monitor, mode=mode, patience=0)
    _, h = fit_with(values, stop, key=monitor)
    assert h.epoch == epochs and stop.best == best
    assert stop.stopped_epoch == epochs[-1]


@pytest.mark.parametrize("min_delta,values,epochs,best", [
    (0.1, [1.0, 0.95, 0.5], [0, 1], 1.0),          # 0.05 better is not better by more than min_delta
    (-0.1, [1.0, 0.95, 0.5], [0, 1], 1.0),         # Keras takes abs(min_delta)
    (0.1, [1.0, 0.85, 0.8], [0, 1, 2], 0.85),      # 0.15 better is
])
def test_early_stopping_min_delta_in_min_mode(min_delta, values, epochs, best):
    stop = callbacks.EarlyStopping(min_delta=min_delta, patience=1)
    _, h = fit_with(values, stop)
    assert h.epoch == epochs and stop.best == best


def test_early_stopping_baseline():
    # a better value that does not beat the baseline does not reset the wait (Keras)
    stop = callbacks.EarlyStopping(baseline=0.5, patience=2)
    _, h = fit_with([0.9, 0.95, 0.95, 0.95], stop)
    assert h.epoch == [0, 1] and stop.best == 0.9
    stop = callbacks.EarlyStopping(baseline=1.0, patience=2)        # beaten at once: the usual patience
    _, h = fit_with([0.9, 0.95, 0.95, 0.95], stop)
    assert h.epoch == [0, 1, 2]


def test_early_stopping_is_reset_by_each_fit_and_reports_with_verbose(capsys):
    stop = callbacks.EarlyStopping(patience=0, verbose=1, restore_best_weights=True)
    m, h = fit_with([1.0, 2.0, 3.0], stop)
    assert h.epoch == [0, 1] and (stop.stopped_epoch, stop.best_epoch) == (1, 0)
    assert capsys.readouterr().out == ("Epoch 2: early stopping\n"
                                       "Restoring model weights from the end of the best epoch: 1.\n")
    # a callback used in two fits: wait, stopped_epoch, best_epoch start again (best is kept, as in Keras)
    stop = callbacks.EarlyStopping(patience=3, verbose=1, baseline=0.0)
    fit_with([2.0, 1.0], stop)
    assert (stop.stopped_epoch, stop.best_epoch, stop.wait, stop.best) == (0, 1, 2, 1.0)
    fit_with([float("nan")] * 2, stop)
    assert (stop.stopped_epoch, stop.best_epoch, stop.wait, stop.best) == (0, 0, 2, 1.0)
    assert capsys.readouterr().out == ""          # did not stop, restores nothing: silent
    quiet = callbacks.EarlyStopping(patience=0, restore_best_weights=True)
    fit_with([1.0, 2.0], quiet)
    assert capsys.readouterr().out == ""


def test_monitor_missing_from_the_logs_warns_with_the_available_names():
    es = callbacks.EarlyStopping(monitor="val_los")
    with pytest.warns(UserWarning) as w:
        _, h = fit_with([1.0, 2.0], es, key="other")
    assert {str(r.message) for r in w} == {"Early stopping conditioned on metric `val_los` which is not available. "
                                           "Available metrics are: accuracy,loss,other"}
    assert h.epoch == [0, 1]
    rl = callbacks.ReduceLROnPlateau(monitor="val_los")
    with pytest.warns(UserWarning) as w:
        fit_with([1.0], rl, key="other")
    assert [str(r.message) for r in w] == ["Learning rate reduction is conditioned on metric `val_los` which is not "
                                           "available. Available metrics are: accuracy,loss,other,learning_rate."]
    with pytest.warns(UserWarning, match="Available metrics are: learning_rate."):
        rl.on_epoch_end(0)                         # logs=None, as Keras allows


def test_reduce_lr_on_plateau_factor_limit():
    for factor in (1.0, 1.5):
        with pytest.raises(ValueError) as e:
            callbacks.ReduceLROnPlateau(factor=factor)
        assert str(e.value) == f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}"
    assert callbacks.ReduceLROnPlateau(factor=0.99).factor == 0.99


@pytest.mark.parametrize("monitor,mode,values,min_delta,lrs", [
    # equal is not better (strict), in both directions
    ("val_loss", "min", [1.0, 1.0, 1.0], 0.0, [0.1, 0.1, 0.05]),
    ("val_loss", "max", [1.0, 1.0, 1.0], 0.0, [0.1, 0.1, 0.05]),
    # max for a loss if asked: rising is better; auto for an accuracy: the same
    ("val_loss", "max", [0.5, 0.6, 0.7], 0.0, [0.1, 0.1, 0.1]),
    ("val_accuracy", "auto", [0.5, 0.6, 0.7], 0.0, [0.1, 0.1, 0.1]),
    ("val_accuracy", "min", [0.5, 0.6, 0.7], 0.0, [0.1, 0.1, 0.05]),
    # min_delta: better by less than it is not better
    ("val_loss", "min", [1.0, 0.95, 0.9], 0.1, [0.1, 0.1, 0.05]),
    ("val_accuracy", "max", [1.0, 1.05, 1.1], 0.1, [0.1, 0.1, 0.05]),
    ("val_accuracy", "max", [1.0, 0.95, 0.9], 0.1, [0.1, 0.1, 0.05]),
    # NaN is never better: the wait starts at 0 and patience 2 reduces after the second epoch
    ("val_loss", "auto", [float("nan")] * 3, 0.0, [0.1, 0.1, 0.05]),
])
def test_reduce_lr_on_plateau_direction_and_min_delta(monitor, mode, values, min_delta, lrs):
    cb = callbacks.ReduceLROnPlateau(monitor=monitor, mode=mode, factor=0.5, patience=1 if values[0] == values[0]
                                     else 2, min_delta=min_delta)
    _, h = fit_with(values, cb, key=monitor, lr=0.1)
    assert h.history["learning_rate"] == pytest.approx(lrs)


@pytest.mark.parametrize("patience,cooldown,lrs", [
    # reduced after epoch 2; cooldown 2: epochs 3 and 4 do not count; epoch 5 is the second bad one
    (2, 2, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025]),
    # patience 1: reduced after epoch 1; epoch 2 cools down (the counter goes 2 -> 1, then 1 -> 0 at the start
    # of epoch 3, which counts again, as in Keras): reduced after 3, 5, 7
    (1, 2, [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.00625]),
])
def test_reduce_lr_on_plateau_cooldown(patience, cooldown, lrs):
    cb = callbacks.ReduceLROnPlateau(factor=0.5, patience=patience, cooldown=cooldown, min_delta=0.0)
    _, h = fit_with([1.0] * 9, cb, lr=0.1)
    assert h.history["learning_rate"] == pytest.approx(lrs)


def test_reduce_lr_on_plateau_stops_at_min_lr_and_reports(capsys):
    cb = callbacks.ReduceLROnPlateau(factor=0.5, patience=1, min_lr=0.05, verbose=1)
    _, h = fit_with([1.0] * 4, cb, lr=0.1)
    assert h.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.05, 0.05])
    # reported once: at min_lr nothing is reduced (or reported) any more
    assert capsys.readouterr().out == "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05.\n"
    fit_with([1.0] * 3, callbacks.ReduceLROnPlateau(factor=0.5, patience=1), lr=0.1)
    assert capsys.readouterr().out == ""


def test_learning_rate_scheduler_checks_the_value_and_reports(capsys):
    x, y = data()
    for bad in ("0.1", True, None):
        with pytest.raises(ValueError) as e:
            model().fit(x, y, verbose=0, callbacks=[callbacks.LearningRateScheduler(lambda epoch, lr, v=bad: v)])
        assert str(e.value) == f'The output of the "schedule" function should be a float. Got: {bad!r}'
    m = model()
    m.fit(x, y, epochs=2, verbose=0, callbacks=[callbacks.LearningRateScheduler(lambda epoch: 0.5 ** epoch)])
    assert capsys.readouterr().out == ""
    m.fit(x, y, epochs=2, verbose=0, callbacks=[callbacks.LearningRateScheduler(lambda epoch: 0.5 ** epoch,
                                                                                verbose=1)])
    assert capsys.readouterr().out == ("\nEpoch 1: LearningRateScheduler setting learning rate to 1.0.\n"
                                       "\nEpoch 2: LearningRateScheduler setting learning rate to 0.5.\n")


def test_csv_logger_separator_overwrite_missing_values_and_close(tmp_path):
    path = tmp_path / "log.csv"
    x, y = data()
    m = model()
    log = callbacks.CSVLogger(path, separator=";")
    files = []
    extra = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update(extra=1.5) if e == 0 else None)
    spy = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: files.append(log._file))
    m.fit(x, y, epochs=2, verbose=0, callbacks=[extra, log, spy])
    rows = [line.split(";") for line in path.read_text().splitlines()]
    assert rows[0] == ["epoch", "accuracy", "extra", "loss"]
    assert rows[1][2] == "1.5" and rows[2][2] == "NA"          # a key that went missing: NA, as Keras
    assert files[0].closed
    log.on_train_end()                                          # twice is fine
    m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.CSVLogger(path)])   # append=False: overwritten
    rows = list(csv.reader(open(path)))
    assert rows[0] == ["epoch", "accuracy", "loss"] and len(rows) == 2
    path.write_text("")                                         # append to an empty file: with the header
    m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.CSVLogger(path, append=True)])
    assert [r[0] for r in csv.reader(open(path))] == ["epoch", "0"]
    path.write_text("\n")                                       # a first line: no header (Keras reads one line)
    m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.CSVLogger(path, append=True)])
    assert [r[:1] for r in csv.reader(open(path))] == [[], ["0"]]


def test_progress_text_formats():
    f = callbacks._fmt
    assert [f(0.5), f(0.001), f(0.0005), f(-0.0005), f(0), f(0.0), f(np.float32(0.25)), f(3)] == \
        ["0.5000", "0.0010", "5.0000e-04", "-5.0000e-04", "0.0000", "0.0000", "0.2500", "3.0000"]
    assert [f(True), f("x"), f(None)] == ["True", "x", "None"]
    assert callbacks._logs_text({"loss": 0.5, "acc": 1}) == "loss: 0.5000 - acc: 1.0000"
    d = callbacks._duration
    assert [d(1.0), d(1.5), d(2.6), d(0.9), d(0.9994), d(0.0)] == ["1s", "2s", "3s", "900ms", "999ms", "0ms"]
    p = callbacks._per_step
    assert [p(2.0, 2), p(1.0, 1), p(1.0, 0), p(3.0, 2), p(0.9, 1), p(0.001, 1), p(0.0009, 1), p(4e-6, 2)] == \
        ["1s/step", "1s/step", "1s/step", "2s/step", "900ms/step", "1ms/step", "900us/step", "2us/step"]
    assert p(6.349995500000002e-05, 1) == "63us/step"


def test_progbar_logger_lines(monkeypatch, capsys):
    clock = iter([10.0, 12.0, 20.0, 20.25])
    monkeypatch.setattr(callbacks, "time", type("T", (), {"monotonic": staticmethod(lambda: next(clock))}))
    # (the lambda reads `clock` when called: reassigning it below feeds the next epoch)
    bar = callbacks.ProgbarLogger()
    bar.set_params({"verbose": 2, "epochs": 3, "steps": 4})
    bar.on_train_begin()
    bar.on_epoch_begin(0)
    bar.on_epoch_end(0, {"loss": 0.5})
    assert capsys.readouterr().out == "Epoch 1/3\n4/4 - 2s - 500ms/step - loss: 0.5000\n"
    bar.set_params({"verbose": 2, "epochs": 3, "steps": None})   # no len(): the batches seen
    bar.on_train_begin()
    bar.on_epoch_begin(1)
    bar.on_epoch_end(1, {})
    assert capsys.readouterr().out == "Epoch 2/3\n0/0 - 250ms - 250ms/step - \n"
    clock = iter([0.0, 3.0])
    bar.on_epoch_begin(2)
    for b in range(3):
        bar.on_train_batch_end(b, {"loss": 0.5})
    bar.on_epoch_end(2, {"loss": 0.5})
    assert capsys.readouterr().out == "Epoch 3/3\n3/3 - 3s - 1s/step - loss: 0.5000\n"
    monkeypatch.undo()
    bar = callbacks.ProgbarLogger()                 # no params: verbose 1 (a bar), one epoch
    bar.on_train_begin()
    bar.on_epoch_begin(0)
    bar.on_train_batch_end(0, {"loss": 0.5})
    bar.on_epoch_end(0, {"loss": 0.5})
    out = capsys.readouterr().out
    assert out.startswith("Epoch 1/1\n") and "1/?" in out and "loss: 0.5000" in out


def test_model_checkpoint_defaults_and_arguments(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ck = callbacks.ModelCheckpoint(tmp_path / "m.keras")
    assert (ck.filepath, ck.monitor, ck.verbose, ck.save_best_only, ck.save_weights_only, ck.mode, ck.save_freq,
            ck.best) == (str(tmp_path / "m.keras"), "val_loss", 0, False, False, "auto", "epoch", None)
    with pytest.warns(UserWarning) as w:
        ck = callbacks.ModelCheckpoint(tmp_path / "m.keras", mode="typo")
    assert [str(r.message) for r in w] == ["ModelCheckpoint mode 'typo' is unknown, fallback to auto mode."]
    assert ck.mode == "auto"
    for bad in ("batch", 1.5, None):
        with pytest.raises(ValueError) as e:
            callbacks.ModelCheckpoint(tmp_path / "m.keras", save_freq=bad)
        assert str(e.value) == f"Unrecognized save_freq: {bad!r}. Expected save_freq are 'epoch' or integer values"


def _saved_epochs(m, ck, values, key):
    saved = []
    m.save = lambda path, **kw: saved.append(path)
    seq = iter(values)
    fake = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update({key: next(seq)}))
    spy = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: saved.append(e))
    x, y = data()
    m.fit(x, y, epochs=len(values), verbose=0, callbacks=[fake, ck, spy])
    # an epoch number follows each epoch; a path before it means that epoch saved
    return [e for i, e in enumerate(saved) if isinstance(e, int) and i > 0 and not isinstance(saved[i - 1], int)]


@pytest.mark.parametrize("monitor,mode,threshold,values,epochs", [
    ("val_loss", "auto", None, [1.0, 2.0, 0.5], [0, 2]),
    ("val_loss", "min", None, [1.0, 1.0, 0.5], [0, 2]),        # equal is not better
    ("val_loss", "max", None, [1.0, 2.0, 1.5], [0, 1]),
    ("val_accuracy", "min", None, [0.5, 0.4, 0.6], [0, 1]),
    ("val_accuracy", "auto", None, [0.5, 0.6, 0.55], [0, 1]),
    ("val_auc", "auto", None, [0.5, 0.6, 0.55], [0, 1]),
    ("val_loss", "auto", 0.8, [1.0, 0.9, 0.7], [2]),           # initial_value_threshold: the best to beat
    ("val_accuracy", "auto", 0.8, [0.5, 0.9, 0.85], [1]),
])
def test_model_checkpoint_best_only_direction_and_threshold(tmp_path, monitor, mode, threshold, values, epochs):
    ck = callbacks.ModelCheckpoint(tmp_path / "m.keras", monitor=monitor, mode=mode, save_best_only=True,
                                   initial_value_threshold=threshold)
    assert _saved_epochs(model(), ck, values, monitor) == epochs


def test_model_checkpoint_messages_missing_monitor_and_bad_pattern(tmp_path, capsys):
    path = str(tmp_path / "sub" / "m.keras")                    # the directory is made
    ck = callbacks.ModelCheckpoint(path, save_best_only=True, verbose=1)
    _saved_epochs(model(), ck, [0.5, 0.7, 0.25], "val_loss")
    assert capsys.readouterr().out == (f"\nEpoch 1: val_loss improved from inf to 0.50000, saving model to {path}\n"
                                       f"\nEpoch 2: val_loss did not improve from 0.50000\n"
                                       f"\nEpoch 3: val_loss improved from 0.50000 to 0.25000, saving model to "
                                       f"{path}\n")
    m = model()
    x, y = data()
    m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.ModelCheckpoint(path, verbose=1)])
    assert capsys.readouterr().out == f"\nEpoch 1: saving model to {path}\n" and os.path.exists(path)
    _saved_epochs(model(), callbacks.ModelCheckpoint(path, save_best_only=True), [0.5, 0.7], "val_loss")
    m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.ModelCheckpoint(path)])
    assert capsys.readouterr().out == ""                        # verbose=0: silent
    with pytest.warns(UserWarning) as w:
        m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.ModelCheckpoint(path, save_best_only=True)])
    assert [str(r.message) for r in w] == ["Can save best model only with val_loss available, skipping. Available: "
                                           "accuracy, loss"]
    pattern = str(tmp_path / "m-{val_x:.2f}.keras")
    with pytest.raises(KeyError) as e:
        m.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.ModelCheckpoint(pattern)])
    assert e.value.args[0] == (f'Failed to format this callback filepath: "{pattern}". Reason: \'val_x\' is not in '
                               f"the logs (accuracy, loss)")


def test_model_checkpoint_every_n_batches(tmp_path):
    """save_freq=3: after every third batch, counted across epochs (Keras), named by epoch and batch."""
    x, y = data(10)
    m = model()
    pattern = str(tmp_path / "w-{epoch}-{batch}-{loss:.1f}.weights.safetensors")
    names = []
    orig = m.save_weights
    m.save_weights = lambda path, **kw: (names.append(os.path.basename(path)), orig(path, **kw))
    logs = []
    rec = callbacks.LambdaCallback(on_train_batch_end=lambda b, lg: logs.append(lg["loss"]))
    m.fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False,
          callbacks=[rec, callbacks.ModelCheckpoint(pattern, save_weights_only=True, save_freq=3)])
    assert names == [f"w-1-3-{logs[2]:.1f}.weights.safetensors", f"w-2-1-{logs[5]:.1f}.weights.safetensors",
                     f"w-2-4-{logs[8]:.1f}.weights.safetensors"]
    assert sorted(os.listdir(tmp_path)) == sorted(names)


def test_callback_list_order():
    mine = callbacks.LambdaCallback()
    cbs = callbacks.CallbackList([mine], add_history=True, add_progbar=True, model="m", verbose=0, epochs=3)
    assert [type(c).__name__ for c in cbs] == ["ProgbarLogger", "LambdaCallback", "History"]
    assert cbs.history is cbs.callbacks[-1] and all(c.model == "m" for c in cbs)
    assert [c.params for c in cbs] == [{"verbose": 0, "epochs": 3}] * 3
    with pytest.raises(AttributeError, match="^on_epoch_ends$"):
        cbs.on_epoch_ends
    plain = callbacks.CallbackList([mine])                      # no History, no progress bar unless asked
    assert list(plain) == [mine]
    base = callbacks.Callback()
    assert base.model is None and base.params == {}


class _FakeBar:
    """Records what ProgbarLogger asks of tqdm."""
    made = []

    def __init__(self, **kwargs):
        self.kwargs, self.calls = kwargs, []
        _FakeBar.made.append(self)

    def set_postfix_str(self, text, refresh=True):
        self.calls.append(("postfix", text, refresh))

    def update(self, n=1):
        self.calls.append(("update", n))

    def close(self):
        self.calls.append(("close",))


def test_progbar_logger_drives_one_bar_per_epoch(monkeypatch, capsys):
    import tqdm.auto
    monkeypatch.setattr(tqdm.auto, "tqdm", _FakeBar)
    _FakeBar.made.clear()
    clock = iter([0.0, 10.0, 10.1, 10.5, 10.55, 10.6, 20.0, 20.1, 20.2])
    monkeypatch.setattr(callbacks, "time", type("T", (), {"monotonic": staticmethod(lambda: next(clock))}))
    bar = callbacks.ProgbarLogger()
    bar.set_params({"verbose": 1, "epochs": 2, "steps": 4})
    bar.on_train_begin()
    bar.on_epoch_begin(0)                                             # t = 0
    for b, t in enumerate([10.0, 10.1, 10.5, 10.55]):
        bar.on_train_batch_end(b, {"loss": float(b)})
    bar.on_epoch_end(0, {"loss": 3.0, "val_loss": 4.0})               # t = 10.6
    (first,) = _FakeBar.made
    assert first.kwargs == {"total": 4, "file": sys.stdout, "unit": "step", "dynamic_ncols": True, "leave": True,
                            "bar_format": "{n_fmt}/{total_fmt} {bar:20} {elapsed}<{remaining} {rate_fmt}{postfix}"}
    # the running logs shown at most every 0.2 s, and at the last step
    assert first.calls == [("postfix", "loss: 0.0000", False), ("update", 1), ("update", 1),
                           ("postfix", "loss: 2.0000", False), ("update", 1), ("postfix", "loss: 3.0000", False),
                           ("update", 1), ("postfix", "loss: 3.0000 - val_loss: 4.0000", False), ("close",)]
    bar.on_epoch_begin(1)                                             # t = 20.0
    bar.on_train_batch_end(0, None)                                   # t = 20.1: the first batch always shows
    bar.on_train_end()
    bar.on_train_end()
    second = _FakeBar.made[1]
    assert second.calls == [("postfix", "", False), ("update", 1), ("close",)]
    assert capsys.readouterr().out == "Epoch 1/2\nEpoch 2/2\n"


def _scalars(path, tag):
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(path))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def test_tensorboard_batch_scalars_and_learning_rate(tmp_path):
    pytest.importorskip("ember.utils.tensorboard", reason="the TensorBoard writer is built in another branch")
    pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    assert callbacks.TensorBoard().log_dir == "logs"
    x, y = data()
    batches = []
    rec = callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(dict(logs)))
    lr = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs.update(learning_rate=0.5))
    tb = callbacks.TensorBoard(log_dir=tmp_path / "every", update_freq="batch")
    model().fit(x, y, batch_size=10, epochs=2, verbose=0, callbacks=[rec, lr, tb])
    got = _scalars(tmp_path / "every" / "train", "batch_loss")
    assert got == [(i + 1, pytest.approx(b["loss"], rel=1e-6)) for i, b in enumerate(batches)] and len(got) == 8
    assert [s for s, _ in _scalars(tmp_path / "every" / "train", "batch_accuracy")] == list(range(1, 9))
    # a learning_rate already in the logs is the one written
    assert _scalars(tmp_path / "every" / "train", "epoch_learning_rate") == [(0, 0.5), (1, 0.5)]
    tb = callbacks.TensorBoard(log_dir=tmp_path / "third", update_freq=3)
    m = model()
    m.fit(x, y, batch_size=10, epochs=2, verbose=0, callbacks=[tb])
    assert [s for s, _ in _scalars(tmp_path / "third" / "train", "batch_loss")] == [3, 6]
    m.fit(x, y, batch_size=10, epochs=1, verbose=0, callbacks=[tb])      # the same callback again: works
    assert sorted(os.listdir(tmp_path / "every")) == ["train"]            # no validation data: no validation/
    tb = callbacks.TensorBoard(log_dir=tmp_path / "epochs")              # update_freq="epoch": no batch_ tags
    model().fit(x, y, batch_size=10, epochs=1, verbose=0, callbacks=[tb])
    assert _scalars(tmp_path / "epochs" / "train", "batch_loss") == []
    assert [s for s, _ in _scalars(tmp_path / "epochs" / "train", "epoch_loss")] == [0]


def test_tensorboard_without_its_writer(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ember.utils.tensorboard", None)
    x, y = data()
    with pytest.raises(ImportError) as e:
        model().fit(x, y, verbose=0, callbacks=[callbacks.TensorBoard(log_dir=tmp_path)])
    assert str(e.value).startswith("keras.callbacks.TensorBoard needs TensorBoard's event writer: pip install "
                                   "ember[tensorboard] (")


def test_lambda_callback_hooks():
    """Keras's LambdaCallback: on_train_begin/end take (logs), on_epoch_* and on_*_batch_* (index, logs); every
    hook gets its logs argument, None when there are none (before: a missing positional argument)."""
    calls = []
    cb = callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"), on_train_end=lambda logs: calls.append("train_end"),
        on_epoch_begin=lambda e, logs: calls.append(("epoch_begin", e)),
        on_train_batch_begin=lambda b, logs: calls.append(("batch_begin", b)),
        on_test_begin=lambda logs: calls.append("test_begin"), on_test_end=lambda logs: calls.append("test_end"),
        on_predict_begin=lambda logs: calls.append("predict_begin"),
        on_predict_end=lambda logs: calls.append("predict_end"))             # any other hook by keyword
    x, y = data(10)
    model().fit(x, y, batch_size=5, verbose=0, validation_data=(x, y), callbacks=[cb])
    assert calls == ["train_begin", ("epoch_begin", 0), ("batch_begin", 0), ("batch_begin", 1), "test_begin",
                     "test_end", "train_end"]
    calls.clear()
    model().predict(x, verbose=0, callbacks=[cb])
    assert calls == ["predict_begin", "predict_end"]
    with pytest.raises(TypeError) as e:
        callbacks.LambdaCallback(on_batch_end=print)
    assert str(e.value) == ("LambdaCallback: unknown hook 'on_batch_end'; known: on_train_begin, on_train_end, "
                            "on_epoch_begin, on_epoch_end, on_train_batch_begin, on_train_batch_end, on_test_begin, "
                            "on_test_end, on_test_batch_begin, on_test_batch_end, on_predict_begin, on_predict_end, "
                            "on_predict_batch_begin, on_predict_batch_end")


def test_mode_warnings_point_at_the_users_line(tmp_path):
    """(Deselected under mutmut, whose trampoline adds a frame: scripts/mutation.py.)"""
    with pytest.warns(UserWarning) as w:
        callbacks.EarlyStopping(mode="typo"); line = sys._getframe().f_lineno   # noqa: E702
    assert (w[0].filename, w[0].lineno) == (__file__, line)
    with pytest.warns(UserWarning) as w:
        callbacks.ModelCheckpoint(tmp_path, mode="x"); line = sys._getframe().f_lineno   # noqa: E702
    assert (w[0].filename, w[0].lineno) == (__file__, line)
