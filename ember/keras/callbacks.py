"""Keras's callbacks: objects whose `on_*` methods `fit`, `evaluate` and `predict` call at fixed points.

Order of calls in `fit`: on_train_begin; per epoch on_epoch_begin, then per batch on_train_batch_begin /
on_train_batch_end (logs: the running means of loss and metrics), then validation (on_test_begin,
on_test_batch_begin / _end, on_test_end), then on_epoch_end (logs: the epoch's loss and metrics and
their `val_` twins); finally on_train_end. The progress bar runs first and `History` last, so every other
callback's additions to the logs (a `learning_rate`) are recorded.
"""
from __future__ import annotations

import csv
import math
import operator
import os
import sys
import time
import warnings

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "ModelCheckpoint", "EarlyStopping",
           "LearningRateScheduler", "ReduceLROnPlateau", "CSVLogger", "TensorBoard", "TerminateOnNaN",
           "LambdaCallback"]


class Callback:
    """Base class: override the `on_*` methods you need; `self.model` and `self.params` are set by `fit`."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


_HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_train_batch_begin",
          "on_train_batch_end", "on_test_begin", "on_test_end", "on_test_batch_begin", "on_test_batch_end",
          "on_predict_begin", "on_predict_end", "on_predict_batch_begin", "on_predict_batch_end"]


class CallbackList:
    """Calls each hook on every callback in order: the progress bar first, the user's, `History` last."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be keras.callbacks.Callback instances, got {type(cb).__name__} "
                                f"({cb!r})")
        self.callbacks = callbacks
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        if add_history and not any(isinstance(c, History) for c in callbacks):
            self.callbacks.append(History())
        if model is not None:
            for cb in self.callbacks:
                cb.set_model(model)
        for cb in self.callbacks:
            cb.set_params(dict(params))

    def __iter__(self):
        return iter(self.callbacks)

    def __getattr__(self, name):
        if name not in _HOOKS:
            raise AttributeError(name)
        n_before_logs = 0 if name.endswith(("train_begin", "train_end", "test_begin", "test_end", "predict_begin",
                                            "predict_end")) else 1

        def call(*args):
            if len(args) == n_before_logs:
                args += (None,)                   # Keras passes every hook its logs, None when there are none
            for cb in self.callbacks:
                getattr(cb, name)(*args)
        return call

    @property
    def history(self):
        return next((c for c in self.callbacks if isinstance(c, History)), None)


class History(Callback):
    """Records the logs of every epoch: `history.history['loss']` is the list of epoch losses and
    `history.epoch` the epoch numbers; `fit` returns it."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def _fmt(v) -> str:
    if isinstance(v, (float, int, np.floating)) and not isinstance(v, bool):
        v = float(v)
        return f"{v:.4e}" if v != 0 and abs(v) < 1e-3 else f"{v:.4f}"
    return str(v)


def _logs_text(logs) -> str:
    return " - ".join(f"{k}: {_fmt(v)}" for k, v in logs.items())


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s"
    return f"{seconds * 1000:.0f}ms"


def _per_step(seconds: float, steps: int) -> str:
    per = seconds / max(steps, 1)
    if per >= 1:
        return f"{per:.0f}s/step"
    if per >= 1e-3:
        return f"{per * 1e3:.0f}ms/step"
    return f"{per * 1e6:.0f}us/step"


class ProgbarLogger(Callback):
    """Progress of `fit`: with verbose=1 a tqdm bar per epoch (steps done, elapsed time, ETA, the running
    loss and metrics); with verbose=2 one line per epoch."""

    def __init__(self):
        super().__init__()
        self._bar = None

    def on_train_begin(self, logs=None):
        self.verbose = self.params.get("verbose", 1)
        self.epochs = self.params.get("epochs", 1)
        self.steps = self.params.get("steps")

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.monotonic()
        self._seen = 0
        self._last_post = 0.0
        print(f"Epoch {epoch + 1}/{self.epochs}", file=sys.stdout, flush=True)
        if self.verbose == 1:
            from tqdm.auto import tqdm
            self._bar = tqdm(total=self.steps, file=sys.stdout, unit="step", dynamic_ncols=True, leave=True,
                             bar_format="{n_fmt}/{total_fmt} {bar:20} {elapsed}<{remaining} {rate_fmt}{postfix}")

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._last_post > 0.2 or (self.steps and batch + 1 == self.steps):
            self._bar.set_postfix_str(_logs_text(logs or {}), refresh=False)
            self._last_post = now
        self._bar.update(1)

    def on_epoch_end(self, epoch, logs=None):
        elapsed = time.monotonic() - self._start
        if self._bar is not None:
            self._bar.set_postfix_str(_logs_text(logs or {}), refresh=False)
            self._bar.close()
            self._bar = None
        elif self.verbose == 2:
            steps = self.steps or self._seen
            print(f"{steps}/{steps} - {_duration(elapsed)} - {_per_step(elapsed, steps)} - {_logs_text(logs or {})}",
                  file=sys.stdout, flush=True)

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class _MonitorCallback(Callback):
    """Shared by ModelCheckpoint: which way `monitor` improves (`mode` 'min', 'max' or 'auto')."""

    def __init__(self, monitor="val_loss", mode="auto", baseline=None):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode {mode!r} is unknown, fallback to auto mode.", stacklevel=3)
            mode = "auto"
        self.monitor, self.mode = monitor, mode
        self.best = baseline
        self.monitor_op = None

    def _set_monitor_op(self):
        if self.mode == "min":
            self.monitor_op = operator.lt
        elif self.mode == "max":
            self.monitor_op = operator.gt
        else:
            name = self.monitor.removeprefix("val_")
            self.monitor_op = operator.gt if ("acc" in name or "auc" in name) else operator.lt
        if self.best is None:
            self.best = math.inf if self.monitor_op is operator.lt else -math.inf

    def _is_improvement(self, current, reference):
        return bool(self.monitor_op(current, reference))


class ModelCheckpoint(_MonitorCallback):
    """Save the model (or only its weights) after every epoch, or only when `monitor` improved
    (`save_best_only=True`). `filepath` may hold `{epoch:02d}` and log names (`{val_loss:.2f}`)."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        self.filepath = os.fspath(filepath)
        self.verbose, self.save_best_only, self.save_weights_only = verbose, save_best_only, save_weights_only
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq!r}. Expected save_freq are 'epoch' or integer "
                             f"values")
        self.save_freq = save_freq
        self._batches = 0
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, int):
            self._batches += 1
            if self._batches >= self.save_freq:
                self._batches = 0
                self._save(self._epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _path(self, epoch, batch, logs):
        try:
            if batch is None:
                return self.filepath.format(epoch=epoch + 1, **(logs or {}))
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **(logs or {}))
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {e} is not in '
                           f"the logs ({', '.join(logs or {})})") from None

    def _save(self, epoch, batch, logs):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs or {}
        path = self._path(epoch, batch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, skipping. Available: "
                              f"{', '.join(logs)}", stacklevel=2)
                return
            if not self._is_improvement(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, "
                      f"saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)


class EarlyStopping(Callback):
    """Stop training when `monitor` has not improved by more than `min_delta` for `patience` epochs;
    `restore_best_weights=True` puts back the weights of the best epoch at the end."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.patience, self.verbose, self.baseline = monitor, patience, verbose, baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"EarlyStopping mode {mode} is unknown, fallback to auto mode.", stacklevel=2)
            mode = "auto"
        self.mode = mode
        self.monitor_op = None
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0

    def _set_monitor_op(self):
        name = self.monitor.removeprefix("val_")
        if self.mode == "min" or (self.mode == "auto" and not ("acc" in name or "auc" in name)):
            self.monitor_op, self.min_delta = operator.lt, -self.min_delta
        else:
            self.monitor_op = operator.gt
        self.best = math.inf if self.monitor_op is operator.lt else -math.inf

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0

    def _is_improvement(self, value, reference):
        return bool(self.monitor_op(value - self.min_delta, reference))

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs or {})}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights, self.best_epoch = self.model.get_weights(), epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


class LearningRateScheduler(Callback):
    """At the start of each epoch set the learning rate to `schedule(epoch, lr)` (or `schedule(epoch)`)."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        opt = self.model.optimizer
        try:
            lr = self.schedule(epoch, float(opt.learning_rate))
        except TypeError:   # the schedule takes the epoch only
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, int, np.floating, np.integer)) or isinstance(lr, bool):
            raise ValueError(f'The output of the "schedule" function should be a float. Got: {lr!r}')
        opt.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(lr)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` has not improved for `patience` epochs."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.mode, self.min_delta, self.cooldown, self.min_lr = mode, min_delta, cooldown, min_lr
        self._reset()

    def _reset(self):
        if self.mode not in ("auto", "min", "max"):
            warnings.warn(f"Learning rate reduction mode {self.mode} is unknown, fallback to auto mode.",
                          stacklevel=2)
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: a < b - self.min_delta
            self.best = math.inf
        else:
            self.monitor_op = lambda a, b: a > b + self.min_delta
            self.best = -math.inf
        self.cooldown_counter, self.wait = 0, 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = float(self.model.optimizer.learning_rate)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs)}.", stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(self.model.optimizer.learning_rate)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    self.model.optimizer.learning_rate = new
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """One CSV row per epoch: `epoch` and the logs (sorted by name), written and flushed at each epoch's end."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.keys, self._file, self._writer = None, None, None

    def on_train_begin(self, logs=None):
        has_header = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="", encoding="utf-8")
        self._append_header = not has_header
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys, delimiter=self.sep)
            if self._append_header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update({k: logs.get(k, "NA") for k in self.keys})
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None


class TensorBoard(Callback):
    """Scalars for TensorBoard, as Keras writes them: `log_dir/train` gets `epoch_loss`,
    `epoch_<metric>` (and `epoch_learning_rate`), `log_dir/validation` the validation values under the
    same tags, so TensorBoard draws both curves in one chart. `update_freq='batch'` or an integer also
    writes `batch_<name>` every that many batches. Needs `pip install ember[tensorboard]`.
    Then run: tensorboard --logdir LOG_DIR
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False, update_freq="epoch",
                 **kwargs):
        super().__init__()
        self.log_dir = os.fspath(log_dir)
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._writers = {}
        self._step = 0

    def _writer(self, name):
        if name not in self._writers:
            try:
                from ..utils.tensorboard import SummaryWriter
            except ImportError as e:
                raise ImportError(f"keras.callbacks.TensorBoard needs TensorBoard's event writer: "
                                  f"pip install ember[tensorboard] ({e})") from e
            self._writers[name] = SummaryWriter(os.path.join(self.log_dir, name))
        return self._writers[name]

    def on_train_begin(self, logs=None):
        self._writer("train")
        self._step = 0

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1
        if isinstance(self.update_freq, int) and self._step % self.update_freq == 0:
            w = self._writer("train")
            for k, v in (logs or {}).items():
                w.add_scalar(f"batch_{k}", float(v), self._step)

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        opt = getattr(self.model, "optimizer", None)
        if "learning_rate" not in logs and opt is not None:
            logs["learning_rate"] = float(opt.learning_rate)
        for k, v in logs.items():
            if isinstance(v, (float, int, np.floating)):
                which = "validation" if k.startswith("val_") else "train"
                self._writer(which).add_scalar(f"epoch_{k.removeprefix('val_')}", float(v), epoch)
        for w in self._writers.values():
            w.flush()

    def on_train_end(self, logs=None):
        for w in self._writers.values():
            w.close()
        self._writers = {}


class TerminateOnNaN(Callback):
    """Stop training at the first batch whose loss is NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: `LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch))`."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in given.items():
            if name not in _HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {name!r}; known: {', '.join(_HOOKS)}")
            if fn is not None:
                setattr(self, name, fn)
