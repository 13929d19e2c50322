"""Keras's models: `Sequential`, the functional `Model(inputs, outputs)`, and subclassed `Model`s, with
`compile`, `fit`, `evaluate`, `predict`, `summary`, `save` and `get_weights`/`set_weights`.

`fit` is the loop a PyTorch user writes by hand, once: for each batch, the forward pass in training
mode, the compiled loss (Keras's per-sample losses times the sample / class weights, summed and divided
by the batch size), `backward()`, one optimizer update; then the running means of the loss and metrics
go to the callbacks. Data may be NumPy arrays, Ember tensors (lists of them for several inputs or
outputs), or an Ember `DataLoader` yielding (x, y) or (x, y, sample_weight) batches.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .._errors import user_frame
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .. import random as _random
from ..backends import host
from . import callbacks as callbacks_module
from . import losses as losses_module
from . import metrics as metrics_module
from . import optimizers as optimizers_module
from .backend import KerasTensor, flatten, training_phase, unique_name, to_snake_case
from .layers.base import InputLayer, Layer, _fmt_shape, to_tensor

__all__ = ["Model", "Sequential", "Functional", "load_model", "clone_model"]


# --- data --------------------------------------------------------------------------------------------
def _is_loader(x) -> bool:
    from ..utils.data import DataLoader
    return isinstance(x, DataLoader)


def _as_arrays(x, what):
    """A structure of NumPy arrays from arrays, tensors, lists of them (several inputs) or a dict."""
    if x is None:
        return None
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, (np.ndarray, Tensor)) for v in x):
        return [_as_arrays(v, what) for v in x]
    if isinstance(x, dict):
        return {k: _as_arrays(v, what) for k, v in x.items()}
    try:
        return host.asarray(x)
    except Exception as e:   # noqa: BLE001
        raise TypeError(f"{what}: expected NumPy arrays, Ember tensors or an ember DataLoader, got "
                        f"{type(x).__name__}") from e


def _num_samples(arrays, what):
    flat = flatten(arrays) if not isinstance(arrays, dict) else list(arrays.values())
    sizes = {len(a) for a in flat}
    if len(sizes) != 1:
        raise ValueError(f"{what}: all arrays must have the same number of samples, got "
                         f"{[len(a) for a in flat]}")
    return sizes.pop()


def _take(arrays, idx):
    if arrays is None:
        return None
    if isinstance(arrays, list):
        return [_take(a, idx) for a in arrays]
    if isinstance(arrays, dict):
        return {k: _take(v, idx) for k, v in arrays.items()}
    return to_tensor(arrays[idx])


class _ArrayData:
    """Batches of (x, y, sample_weight) from in-memory arrays, shuffled each epoch if asked."""

    def __init__(self, x, y, sample_weight, batch_size, shuffle):
        self.x, self.y, self.sw = x, y, sample_weight
        self.n = _num_samples(x, "x")
        if y is not None:
            ny = _num_samples(y, "y")
            if ny != self.n:
                raise ValueError(f"Data cardinality is ambiguous: x has {self.n} samples but y has {ny} samples. "
                                 f"Make sure all arrays contain the same number of samples. (at {user_frame()})")
        self.batch_size, self.shuffle = batch_size, shuffle

    def __len__(self):
        return math.ceil(self.n / self.batch_size)

    def __iter__(self):
        order = _random.randperm(self.n).numpy() if self.shuffle else None
        for start in range(0, self.n, self.batch_size):
            idx = slice(start, start + self.batch_size) if order is None else order[start:start + self.batch_size]
            yield _take(self.x, idx), _take(self.y, idx), _take(self.sw, idx)


class _LoaderData:
    def __init__(self, loader):
        self.loader = loader

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            if isinstance(batch, (list, tuple)):
                if len(batch) == 2:
                    yield to_tensor(batch[0]), to_tensor(batch[1]), None
                elif len(batch) == 3:
                    yield to_tensor(batch[0]), to_tensor(batch[1]), to_tensor(batch[2])
                elif len(batch) == 1:
                    yield to_tensor(batch[0]), None, None
                else:
                    raise ValueError(f"a DataLoader batch must be (x, y) or (x, y, sample_weight), got "
                                     f"{len(batch)} items")
            else:
                yield to_tensor(batch), None, None


def _steps(data):
    try:
        return len(data)
    except TypeError:
        return None


# --- the model ---------------------------------------------------------------------------------------
class Model(Layer):
    """A Keras model. Three ways to make one:

    >>> from ember.keras import layers, models
    >>> seq = models.Sequential([layers.Flatten(input_shape=(28, 28)), layers.Dense(10, "softmax")])
    >>> inp = ember.keras.Input(shape=(4,)); out = layers.Dense(2)(inp)
    >>> fn = ember.keras.Model(inp, out)
    >>> class Net(ember.keras.Model):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = layers.Dense(2)
    ...     def call(self, x):
    ...         return self.fc(x)
    """

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            return object.__new__(Functional)
        return object.__new__(cls)

    def __init__(self, *args, name=None, trainable=True, **kwargs):
        if args or "inputs" in kwargs:
            raise TypeError("Model(inputs, outputs): inputs and outputs must be the KerasTensors of a functional "
                            "graph (keras.Input(...) and the layers called on it)")
        Layer.__init__(self, name=name or unique_name(to_snake_case(type(self).__name__)
                                                      if type(self) is not Model else "model"),
                       trainable=trainable, **kwargs)
        self.optimizer = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._compile_config = None

    # --- layers and weights --------------------------------------------------------------------------
    def _summary_layers(self):
        return self.layers

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: {[la.name for la in self.layers]}.")

    def build(self, input_shape):
        """Build a subclassed model by calling it once on zeros of `input_shape` (batch size may be None)."""
        from ..ops import creation as C
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        x = [C.zeros(*[1 if d is None else d for d in s]) for s in shapes]
        with no_grad(), training_phase(False):
            self.call(x if isinstance(input_shape, list) else x[0])
        self.built = True

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False):
        """Print Keras's table of layers: name (type), output shape, parameter count; then the totals."""
        from .summary import print_summary
        print_summary(self, line_length, positions, print_fn)

    # --- compile -------------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True):
        """Choose the optimizer, the loss and the metrics: strings ('adam', 'sparse_categorical_crossentropy',
        ['accuracy']) or objects. As in Keras, `metrics` ignore sample and class weights; `weighted_metrics`
        are weighted by them (named `weighted_<name>` when a metric of that name is also in `metrics`)."""
        self.optimizer = optimizers_module.get(optimizer)
        self._loss_spec, self._loss_weights, self._metrics_spec = loss, loss_weights, metrics
        self._weighted_metrics_spec = weighted_metrics
        if loss is None:
            raise ValueError("compile: give a loss, e.g. loss='sparse_categorical_crossentropy' (known losses: "
                             f"{', '.join(sorted(losses_module.ALL))})")
        # check the names now, so a typo fails at compile rather than in fit
        for spec in (flatten(loss) if not isinstance(loss, dict) else list(loss.values())):
            losses_module.get(spec)
        for spec in (metrics, weighted_metrics):
            specs = spec if not isinstance(spec, dict) else [m for v in spec.values() for m in flatten(v)]
            for m in flatten(specs or []):
                metrics_module.resolve(m, None)
        self._compiled_losses = None      # resolved per output on the first batch (names need the outputs)
        self._compiled_metrics = None
        self.compiled = True
        self._compile_config = {"optimizer": optimizer, "loss": loss, "metrics": metrics, "loss_weights": loss_weights,
                                "weighted_metrics": weighted_metrics}

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"You must call `compile()` before using the model in `{what}()`: e.g. "
                               f"model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', "
                               f"metrics=['accuracy']) (at {user_frame()})")

    def _output_names(self, n):
        if isinstance(self, Functional):
            return [kt._keras_history[0].name for kt in self.outputs]
        return [f"output_{i}" for i in range(n)] if n > 1 else ["output"]

    def _per_output(self, spec, names, what):
        n = len(names)
        if isinstance(spec, dict):
            unknown = set(spec) - set(names)
            if unknown:
                raise ValueError(f"compile({what}=...): unknown output name(s) {sorted(unknown)}; the model's "
                                 f"outputs are {names}")
            return [spec.get(name) for name in names]
        # a list of losses or loss weights has one entry per output (one output too, as in Keras); a list of
        # metrics is the same metrics for every output unless it holds one list per output
        if isinstance(spec, (list, tuple)) and spec and (
                not what.endswith("metrics") or n > 1 and all(isinstance(s, (list, tuple)) for s in spec)):
            if len(spec) != n:
                raise ValueError(f"compile({what}=...): the model has {n} outputs {names} but {len(spec)} "
                                 f"{what} were given")
            return list(spec)
        return [spec] * n

    def _setup_compiled(self, y_true, y_pred):
        ys, ps = flatten(y_true), flatten(y_pred)
        names = self._output_names(len(ps))
        losses = self._per_output(self._loss_spec, names, "loss")
        self._compiled_losses = [None if s is None else losses_module.get(s) for s in losses]
        weights = self._loss_weights
        self._compiled_weights = [1.0] * len(ps) if weights is None else \
            [1.0 if w is None else float(w) for w in self._per_output(weights, names, "loss_weights")]
        taken = set()
        self._compiled_metrics, self._compiled_weighted_metrics = [], []
        for spec_all, out, prefix in ((self._metrics_spec, self._compiled_metrics, ""),
                                      (getattr(self, "_weighted_metrics_spec", None), self._compiled_weighted_metrics,
                                       "weighted_")):
            what = "weighted_metrics" if prefix else "metrics"
            for i, specs in enumerate(self._per_output(spec_all or [], names, what)):
                objs = []
                for spec in flatten(specs or []):
                    m = metrics_module.resolve(spec, self._compiled_losses[i],
                                               tuple(ys[i].shape) if i < len(ys) else None, tuple(ps[i].shape))
                    output = f"{names[i]}_" if len(ps) > 1 else ""
                    name = output + m.name
                    if prefix and name in taken:      # Keras: a weighted twin of a metric gets "weighted_"
                        name = output + prefix + m.name
                    m.name = name
                    taken.add(name)
                    objs.append(m)
                out.append(objs)
        self._loss_tracker = metrics_module.Mean("loss")
        # Keras (CompileLoss): one `<output>_loss` tracker per output that has a loss, when there are several
        with_loss = [n for n, loss in zip(names, self._compiled_losses) if loss is not None]
        self._output_loss_trackers = [metrics_module.Mean(f"{n}_loss") for n in with_loss] if len(with_loss) > 1 \
            else []
        self._output_names_cache = names

    @property
    def metrics(self):
        if not getattr(self, "_compiled_metrics", None):
            return []
        return [self._loss_tracker] + self._output_loss_trackers + [m for ms in self._compiled_metrics for m in ms] + \
            [m for ms in self._compiled_weighted_metrics for m in ms]

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def _targets(self, y, n_out):
        if n_out == 1:
            if isinstance(y, (list, tuple)) and len(y) == 1:
                return [y[0]]
            return [y]
        if isinstance(y, dict):
            return [y[name] for name in self._output_names(n_out)]
        if not isinstance(y, (list, tuple)) or len(y) != n_out:
            raise ValueError(f"The model has {n_out} outputs {self._output_names(n_out)}, so y must be a list of "
                             f"{n_out} arrays (or a dict by output name), got {type(y).__name__} (at {user_frame()})")
        return list(y)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss of one batch (a scalar tensor), updating the per-output loss trackers."""
        preds = flatten(y_pred)
        targets = self._targets(y, len(preds))
        if self._compiled_losses is None:
            self._setup_compiled(targets, preds)
        total = None
        self._last_output_losses = []
        for i, (loss, yt, yp) in enumerate(zip(self._compiled_losses, targets, preds)):
            if loss is None:
                continue
            if yt is None:
                raise ValueError(f"fit: the loss needs targets y for output {self._output_names_cache[i]!r}, "
                                 f"got y=None (at {user_frame()})")
            value = loss(yt, yp, sample_weight) * self._compiled_weights[i]
            self._last_output_losses.append(value)
            total = value if total is None else total + value
        return total

    def _update_metrics(self, y, y_pred, sample_weight, loss, n):
        preds = flatten(y_pred)
        targets = self._targets(y, len(preds))
        self._loss_tracker.update_state([float(loss.item())], [float(n)])     # weighted by the batch size
        for tracker, value in zip(self._output_loss_trackers, self._last_output_losses):
            tracker.update_state([float(value.item())], [float(n)])
        for ms, yt, yp in zip(self._compiled_metrics, targets, preds):
            for m in ms:
                m.update_state(yt, yp)                # Keras: `metrics` are not weighted
        for ms, yt, yp in zip(self._compiled_weighted_metrics, targets, preds):
            for m in ms:
                m.update_state(yt, yp, sample_weight)

    def _logs(self):
        return {m.name: float(m.result()) for m in sorted(self.metrics, key=lambda m: m.name)}

    # --- one step ---------------------------------------------------------------------------------
    def train_step(self, x, y, sample_weight=None):
        with training_phase(True):
            y_pred = self(x, training=True)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_weights
        if variables:
            for v in variables:
                v.grad = None
            loss.backward()
            self.optimizer.apply([v.grad for v in variables], variables)
        else:                                     # Keras: a frozen model still reports its loss and metrics
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        with no_grad():
            self._update_metrics(y, y_pred, sample_weight, loss, _batch_len(x))
        return self._logs()

    def test_step(self, x, y, sample_weight=None):
        with no_grad(), training_phase(False):
            y_pred = self(x, training=False)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            self._update_metrics(y, y_pred, sample_weight, loss, _batch_len(x))
        return self._logs()

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        self._require_compiled("train_on_batch")
        if class_weight is not None and sample_weight is not None:
            raise ValueError("Arguments `sample_weight` and `class_weight` cannot be specified at the same time. "
                             f"Received: sample_weight={sample_weight}, class_weight={class_weight}")
        x, y = to_tensor(_as_arrays(x, "x")), to_tensor(_as_arrays(y, "y"))
        sw = self._sample_weights(y, None if sample_weight is None else to_tensor(host.asarray(sample_weight)),
                                  class_weight)
        self.reset_metrics()
        logs = self.train_step(x, y, sw)
        return logs if return_dict else self._flat(logs)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("test_on_batch")
        self.reset_metrics()
        logs = self.test_step(to_tensor(_as_arrays(x, "x")), to_tensor(_as_arrays(y, "y")),
                              None if sample_weight is None else to_tensor(host.asarray(sample_weight)))
        return logs if return_dict else self._flat(logs)

    def predict_on_batch(self, x):
        with no_grad(), training_phase(False):
            out = self(to_tensor(_as_arrays(x, "x")), training=False)
        return _to_numpy(out)

    def _flat(self, logs):
        values = [logs[m.name] for m in self.metrics]
        return values[0] if len(values) == 1 else values

    # --- data handling ----------------------------------------------------------------------------
    def _data(self, x, y, sample_weight, batch_size, shuffle, what):
        if _is_loader(x):
            if y is not None:
                raise ValueError(f"{what}: when x is a DataLoader its batches carry the targets: pass y=None "
                                 f"(at {user_frame()})")
            if batch_size is not None:
                raise ValueError(f"{what}: the DataLoader sets the batch size: pass batch_size=None "
                                 f"(at {user_frame()})")
            return _LoaderData(x)
        if x is None:
            raise ValueError(f"{what}: no input data x was given (at {user_frame()})")
        bs = 32 if batch_size is None else batch_size
        if not isinstance(bs, int) or bs <= 0:
            raise ValueError(f"{what}: batch_size must be a positive integer, got {batch_size!r}")
        return _ArrayData(_as_arrays(x, what), _as_arrays(y, what), _as_arrays(sample_weight, what), bs, shuffle)

    @staticmethod
    def _sample_weights(y, sample_weight, class_weight):
        if class_weight is None:
            return sample_weight
        if sample_weight is not None:   # Keras 3 refuses the pair (its data adapters), it does not combine them
            raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
        if isinstance(y, list):
            raise ValueError("`class_weight` is only supported for models with a single output.")
        labels = y
        if labels.ndim > 1 and labels.shape[-1] > 1:
            labels = labels.argmax(dim=-1)
        elif labels.ndim > 1:
            labels = labels.reshape(-1)
        labels = labels.cpu().numpy()
        labels = (labels.round() if labels.dtype.kind == "f" else labels).astype(np.int64)
        table = host.ones((max(max(class_weight) + 1, int(labels.max()) + 1 if labels.size else 1),), np.float32)
        for k, w in class_weight.items():
            table[int(k)] = float(w)
        return to_tensor(table[labels].astype(np.float32))

    # --- fit / evaluate / predict -------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1):
        """Train for `epochs` epochs; returns the `History` (per-epoch loss, metrics, val_ values).

        >>> model.fit(x_train, y_train, epochs=5, validation_split=0.1)   # doctest: +SKIP
        """
        self._require_compiled("fit")
        if class_weight is not None and sample_weight is not None:
            raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")
        verbose = 1 if verbose == "auto" else int(verbose)
        if validation_split and validation_data is None:
            if _is_loader(x):
                raise ValueError("`validation_split` is only supported for NumPy arrays and tensors, not for a "
                                 "DataLoader: pass validation_data=another DataLoader")
            if not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
            xa, ya, swa = _as_arrays(x, "fit"), _as_arrays(y, "fit"), _as_arrays(sample_weight, "fit")
            n = _num_samples(xa, "x")
            split = int(math.ceil(n * (1.0 - validation_split)))   # the last samples, before any shuffling
            if split == 0 or split == n:
                raise ValueError(f"validation_split={validation_split} leaves no training or no validation "
                                 f"samples out of {n}")
            cut = lambda a, s: None if a is None else _take_np(a, s)   # noqa: E731
            x, y, sample_weight = cut(xa, slice(0, split)), cut(ya, slice(0, split)), cut(swa, slice(0, split))
            validation_data = (cut(xa, slice(split, None)), cut(ya, slice(split, None))) + \
                ((cut(swa, slice(split, None)),) if swa is not None else ())
        data = self._data(x, y, sample_weight, batch_size, shuffle, "fit")
        val = None
        if validation_data is not None:
            if _is_loader(validation_data):
                val = _LoaderData(validation_data)
            else:
                if not isinstance(validation_data, (list, tuple)) or len(validation_data) not in (2, 3):
                    raise ValueError("validation_data must be (x_val, y_val), (x_val, y_val, sample_weight) or a "
                                     f"DataLoader, got {type(validation_data).__name__}")
                vx, vy = validation_data[0], validation_data[1]
                vsw = validation_data[2] if len(validation_data) == 3 else None
                val = self._data(vx, vy, vsw, validation_batch_size or batch_size, False, "fit(validation_data)")
        steps = steps_per_epoch or _steps(data)
        cbs = callbacks if isinstance(callbacks, callbacks_module.CallbackList) else callbacks_module.CallbackList(
            callbacks, add_history=True, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=epochs,
            steps=steps)
        self.stop_training = False
        self.reset_metrics()
        cbs.on_train_begin()
        logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            for step, (xb, yb, swb) in enumerate(data):
                if steps_per_epoch is not None and step >= steps_per_epoch:
                    break
                cbs.on_train_batch_begin(step)
                swb = self._sample_weights(yb, swb, class_weight)
                logs = self.train_step(xb, yb, swb)
                cbs.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            epoch_logs = dict(logs)
            if val is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._run_evaluate(val, cbs, validation_steps)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return cbs.history

    def _run_evaluate(self, data, cbs, steps=None):
        self.reset_metrics()
        cbs.on_test_begin()
        logs = {}
        for step, (xb, yb, swb) in enumerate(data):
            if steps is not None and step >= steps:
                break
            cbs.on_test_batch_begin(step)
            logs = self.test_step(xb, yb, swb)
            cbs.on_test_batch_end(step, logs)
        if not logs:
            raise ValueError("evaluate: the data has no samples")
        cbs.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False):
        """The loss (and metrics) on (x, y), in inference mode: a number, a list [loss, metric, ...] in
        the order of `metrics_names`, or a dict with return_dict=True."""
        self._require_compiled("evaluate")
        verbose = 1 if verbose == "auto" else int(verbose)
        data = self._data(x, y, sample_weight, batch_size, False, "evaluate")
        cbs = callbacks_module.CallbackList(callbacks, model=self, verbose=verbose, steps=_steps(data))
        bar = None
        if verbose:
            from tqdm.auto import tqdm
            import sys
            bar = tqdm(total=_steps(data), file=sys.stdout, unit="step",
                       bar_format="{n_fmt}/{total_fmt} {bar:20} {elapsed}<{remaining} {rate_fmt}{postfix}")
            cbs.callbacks.append(_BarTicker(bar))
        try:
            logs = self._run_evaluate(data, cbs, steps)
        finally:
            if bar is not None:
                bar.set_postfix_str(callbacks_module._logs_text(logs) if "logs" in locals() else "", refresh=False)
                bar.close()
        if return_dict:
            return logs
        return self._flat(logs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for x, batch by batch in inference mode, as NumPy arrays."""
        data = self._data(x, None, None, batch_size, False, "predict")
        cbs = callbacks_module.CallbackList(callbacks, model=self)
        cbs.on_predict_begin()
        outs = []
        for step, (xb, _, _) in enumerate(data):
            if steps is not None and step >= steps:
                break
            cbs.on_predict_batch_begin(step)
            with no_grad(), training_phase(False):
                out = self(xb, training=False)
            outs.append(_to_numpy(out))
            cbs.on_predict_batch_end(step, {"outputs": outs[-1]})
        cbs.on_predict_end()
        if not outs:
            raise ValueError("predict: the data has no samples")
        if isinstance(outs[0], list):
            return [_concat([o[i] for o in outs]) for i in range(len(outs[0]))]
        if isinstance(outs[0], dict):
            return {k: _concat([o[k] for o in outs]) for k in outs[0]}
        return _concat(outs)

    # --- saving -------------------------------------------------------------------------------------
    def save(self, filepath, overwrite=True, **kwargs):
        """Save the architecture (JSON), the weights, the compile settings and the optimizer state in one
        safetensors file (no pickle; written to a temporary file and renamed, so a crash never leaves half
        a file). `.keras` (Keras's usual name) or `.safetensors`. Load with `keras.models.load_model`."""
        from .saving import save_model
        save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        from .saving import save_weights
        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        from .saving import load_weights
        load_weights(self, filepath)

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} is a subclassed model: it has no config to save. Save "
                                  f"its weights with model.save_weights(path) and rebuild it in code, or define "
                                  f"get_config()/from_config()")

    def to_json(self) -> str:
        import json
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()})


class _BarTicker(callbacks_module.Callback):
    def __init__(self, bar):
        super().__init__()
        self.bar = bar

    def on_test_batch_end(self, batch, logs=None):
        self.bar.update(1)


def _take_np(a, s):
    if isinstance(a, list):
        return [_take_np(v, s) for v in a]
    if isinstance(a, dict):
        return {k: _take_np(v, s) for k, v in a.items()}
    return a[s]


def _batch_len(x):
    first = flatten(x)[0] if not isinstance(x, dict) else next(iter(x.values()))
    return first.shape[0]


def _to_numpy(out):
    if isinstance(out, (list, tuple)):
        return [_to_numpy(o) for o in out]
    if isinstance(out, dict):
        return {k: _to_numpy(v) for k, v in out.items()}
    return out.detach().cpu().numpy()


def _concat(arrays):
    """The batches' outputs end to end in one host array."""
    out = host.empty((sum(len(a) for a in arrays),) + arrays[0].shape[1:], arrays[0].dtype)
    start = 0
    for a in arrays:
        out[start:start + len(a)] = a
        start += len(a)
    return out


# --- functional ---------------------------------------------------------------------------------------
class Functional(Model):
    """`Model(inputs, outputs)`: the graph of layers between `keras.Input`s and the given outputs."""

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        Model.__init__(self, name=name or unique_name("functional"), trainable=trainable)
        self._inputs_struct, self._outputs_struct = inputs, outputs
        self.inputs, self.outputs = flatten(inputs), flatten(outputs)
        for what, group in (("inputs", self.inputs), ("outputs", self.outputs)):
            for t in group:
                if not isinstance(t, KerasTensor):
                    raise TypeError(f"Model({what}=...): expected KerasTensors (keras.Input(...) and the outputs of "
                                    f"layers called on them), got {type(t).__name__}")
        for t in self.inputs:
            if not isinstance(t._keras_history[0], InputLayer):
                raise ValueError(f"Model inputs must come from `keras.Input`; {t} is the output of layer "
                                 f"{t._keras_history[0].name!r}")
        nodes = self._topological_nodes()
        self._nodes = [n for n in nodes if not isinstance(n.layer, InputLayer)]
        # Keras's order (model.layers, summary, weights): by depth, the longest path to an output first,
        # ties in the order the walk from the outputs found them (Keras's map_graph); a layer called
        # several times sits at its deepest call
        index = {id(n): i for i, n in enumerate(nodes)}
        depth = {id(n): 0 for n in nodes}
        for n in reversed(nodes):                 # consumers before their inputs
            for t in n.input_tensors:
                layer, node_index, _ = t._keras_history
                p = layer._inbound_nodes[node_index]
                if id(p) in depth:
                    depth[id(p)] = max(depth[id(p)], depth[id(n)] + 1)
        layer_depth, first = {}, {}
        for n in nodes:
            key = id(n.layer)
            layer_depth[key] = max(layer_depth.get(key, 0), depth[id(n)])
            first.setdefault(key, (index[id(n)], n.layer))
        ranked = sorted(first.values(), key=lambda e: (-layer_depth[id(e[1])], e[0]))
        order = [t._keras_history[0] for t in self.inputs if id(t._keras_history[0]) not in first]
        order += [layer for _, layer in ranked]
        self._layers_order = order
        for layer in order:
            self._modules[layer.name] = layer
        self.built = True
        self._last_output_shape = [t.shape for t in self.outputs] if len(self.outputs) > 1 else self.outputs[0].shape
        if not trainable:
            self.trainable = False                # freezes every layer, as setting it later does

    def _topological_nodes(self):
        input_ids = {id(t) for t in self.inputs}
        done, order, visiting = set(), [], set()
        stack = [(t, False) for t in reversed(self.outputs)]
        while stack:                              # iterative DFS, post-order: a node after its inputs
            t, expanded = stack.pop()
            layer, node_index, _ = t._keras_history
            node = layer._inbound_nodes[node_index]
            if id(node) in done:
                continue
            if expanded:
                done.add(id(node))
                visiting.discard(id(node))
                order.append(node)
                continue
            if isinstance(layer, InputLayer):
                if id(t) not in input_ids:
                    raise ValueError(f"Graph disconnected: cannot find the value of input {layer.name!r}: it is not "
                                     f"among the model's inputs {[i.name for i in self.inputs]}")
                done.add(id(node))
                order.append(node)
                continue
            visiting.add(id(node))
            stack.append((t, True))
            for inp in reversed(node.input_tensors):
                stack.append((inp, False))
        return order

    @property
    def layers(self):
        return list(self._layers_order)

    def _sublayers(self):
        return [la for la in self._layers_order if not isinstance(la, InputLayer)]

    def _summary_layers(self):
        return self._layers_order

    def _sequential_like(self) -> bool:
        uses = {}
        for node in self._nodes:
            if len(node.input_tensors) > 1:
                return False
            uses[id(node.layer)] = uses.get(id(node.layer), 0) + 1
        consumers = {}
        for node in self._nodes:
            key = id(node.input_tensors[0])
            consumers[key] = consumers.get(key, 0) + 1
        return len(self.inputs) == 1 and len(self.outputs) == 1 and all(v == 1 for v in uses.values()) \
            and all(v == 1 for v in consumers.values())

    def _connections(self, layer) -> str:
        mine = {id(n) for n in self._nodes}
        parts = []
        for node in layer._inbound_nodes:
            if id(node) not in mine:
                continue
            for kt in node.input_tensors:
                src, node_index, tensor_index = kt._keras_history
                parts.append(f"{src.name}[{node_index}][{tensor_index}]")
        return ", ".join(parts) or "-"

    def _check_input(self, shapes):
        if isinstance(shapes, dict):              # Keras: a dict of inputs by their Input's name
            names = [t._keras_history[0].name for t in self.inputs]
            missing = [n for n in names if n not in shapes]
            if missing:
                raise ValueError(f'Layer "{self.name}" expects inputs named {names}, but the dict given has no '
                                 f"{missing} (its keys: {sorted(shapes)}) (at {user_frame()})")
            shapes = [shapes[n] for n in names]
        given = shapes if isinstance(shapes, list) else [shapes]
        if len(given) != len(self.inputs):
            raise ValueError(f'Layer "{self.name}" expects {len(self.inputs)} input(s), but it received '
                             f"{len(given)} input tensors (at {user_frame()})")
        for i, (kt, shape) in enumerate(zip(self.inputs, given)):
            ok = len(shape) == len(kt.shape) and all(a is None or a == b for a, b in zip(kt.shape, shape))
            if not ok:
                raise ValueError(f'Input {i} of layer "{self.name}" is incompatible with the layer: expected '
                                 f"shape={_fmt_shape(kt.shape)}, found shape={_fmt_shape(shape)} (at {user_frame()})")

    def _maybe_build(self, shapes):
        pass

    def call(self, inputs, training=None):
        given = list(inputs) if isinstance(inputs, (list, tuple)) else \
            [inputs[t._keras_history[0].name] for t in self.inputs] if isinstance(inputs, dict) else [inputs]
        values = {id(t): v for t, v in zip(self.inputs, given)}
        for node in self._nodes:
            args = _replace(node.call_inputs, values)
            out = node.layer(args)
            for kt, v in zip(node.output_tensors, flatten(out)):
                values[id(kt)] = v
        outs = [values[id(t)] for t in self.outputs]
        if isinstance(self._outputs_struct, dict):   # a dict of outputs gives a dict, as Keras
            return {k: values[id(t)] for k, t in self._outputs_struct.items()}
        if isinstance(self._outputs_struct, (list, tuple)):
            return outs
        return outs[0]

    def get_config(self):
        nodes = []
        for node in self._nodes:
            # the call's node index, which the references to its outputs name (a shared layer's calls are
            # not replayed in the order they were made)
            nodes.append({"layer": node.layer.name, "index": node.layer._inbound_nodes.index(node),
                          "inputs": _history_refs(node.call_inputs)})
        return {"name": self.name, "trainable": self.trainable,
                "layers": [{"class_name": type(la).__name__, "config": la.get_config()} for la in self._layers_order],
                "nodes": nodes,
                "input_layers": _history_refs(self._inputs_struct),
                "output_layers": _history_refs(self._outputs_struct)}


def _replace(struct, values):
    if isinstance(struct, (list, tuple)):
        return type(struct)(_replace(s, values) for s in struct)
    return values[id(struct)]


def _history_refs(struct):
    if isinstance(struct, (list, tuple)):
        return [_history_refs(s) for s in struct]
    if isinstance(struct, dict):   # a dict of outputs (or of a layer's inputs), by name
        return {k: _history_refs(v) for k, v in struct.items()}
    layer, node_index, tensor_index = struct._keras_history
    return {"ref": [layer.name, node_index, tensor_index]}


# --- sequential ---------------------------------------------------------------------------------------
class Sequential(Model):
    """A stack of layers, each feeding the next.

    >>> from ember.keras import layers, models
    >>> model = models.Sequential([layers.Flatten(input_shape=(28, 28)), layers.Dense(100, activation="relu"),
    ...                            layers.Dense(10, activation="softmax")])
    >>> model.count_params()
    79510
    """

    def __init__(self, layers=None, trainable=True, name=None):
        Model.__init__(self, name=name or unique_name("sequential"), trainable=trainable)
        self._stack = []
        self._input_layer = None
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._rebuild()
        if not trainable:
            self.trainable = False                # freezes every layer, as setting it later does

    def add(self, layer, rebuild=True):
        """Append a layer (or start the model with `keras.Input(shape=...)`)."""
        if isinstance(layer, KerasTensor):
            origin = layer._keras_history[0]
            if not isinstance(origin, InputLayer):
                raise ValueError("Only keras.Input tensors can be added to a Sequential model; got the output of "
                                 f"layer {origin.name!r}")
            layer = origin
        if isinstance(layer, InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError("Sequential: an Input can only be the first entry")
            self._input_layer = layer
            return
        if not isinstance(layer, Layer):
            raise ValueError(f"Only instances of `keras.Layer` can be added to a Sequential model. Received: "
                             f"{layer!r} (of type {type(layer).__name__})")
        if any(la.name == layer.name for la in self._stack):
            raise ValueError(f"All layers added to a Sequential model should have unique names. Name {layer.name!r} "
                             f"is already the name of a layer in this model.")
        self._stack.append(layer)
        self._modules[layer.name] = layer
        self.built = False
        if rebuild:
            self._rebuild()

    def pop(self):
        layer = self._stack.pop()
        del self._modules[layer.name]
        self.built = False
        self._rebuild()
        return layer

    @property
    def layers(self):
        return list(self._stack)

    def _sublayers(self):
        return list(self._stack)

    @property
    def input_shape(self):
        if self._input_layer is not None:
            return self._input_layer.batch_shape
        if self._stack and self._stack[0]._batch_input_shape is not None:
            return self._stack[0]._batch_input_shape
        return None

    def _rebuild(self):
        shape = self.input_shape
        if shape is not None and self._stack:
            self.build(shape)

    def build(self, input_shape=None):
        input_shape = tuple(input_shape if input_shape is not None else self.input_shape)
        input_shape = (None,) + tuple(input_shape[1:])
        x = KerasTensor(input_shape, "float32", name="input")
        x._keras_history = (None, 0, 0)
        for layer in self._stack:
            x = layer(x)
        self._built_input_shape = input_shape
        self._last_output_shape = x.shape
        self.built = True

    def _maybe_build(self, shapes):
        if not self.built:
            if isinstance(shapes, list):
                raise ValueError(f"Sequential model {self.name!r} takes one input, got {len(shapes)}")
            self.build(shapes)

    def _check_input(self, shape):
        want = getattr(self, "_built_input_shape", None)
        if want is None or isinstance(shape, list):
            return
        if len(shape) != len(want) or any(a is not None and a != b for a, b in zip(want, shape)):
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                             f"shape={_fmt_shape(want)}, found shape={_fmt_shape(shape)} (at {user_frame()})")

    def call(self, inputs, training=None):
        x = inputs
        for layer in self._stack:
            x = layer(x)
        return x

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "layers": [{"class_name": type(la).__name__, "config": la.get_config()} for la in self._stack]}
        if getattr(self, "_built_input_shape", None) is not None:
            config["batch_input_shape"] = list(self._built_input_shape)
        return config


def load_model(filepath, custom_objects=None, compile=True):
    """Load a model saved with `model.save(path)`: architecture, weights, compile settings, optimizer state."""
    from .saving import load_model as _load
    return _load(filepath, custom_objects=custom_objects, compile=compile)


def clone_model(model):
    """A new model with the same architecture and freshly initialised weights."""
    from .saving import model_from_config
    return model_from_config({"class_name": type(model).__name__, "config": model.get_config()})
