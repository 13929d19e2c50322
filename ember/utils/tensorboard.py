"""TensorBoard logging: ``SummaryWriter`` with the names and behaviour of ``torch.utils.tensorboard``.

The event files are written by tensorboardX (the ``tensorboard`` extra: ``pip install ember[tensorboard]``),
imported on the first ``SummaryWriter(...)``, never by ``import ember``. Values may be Ember tensors, NumPy
arrays or Python numbers; tensors are copied to host memory through the public API
(``detach().cpu().numpy()``). See docs/monitoring.md.

Example:
    >>> import tempfile
    >>> from ember.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter(tempfile.mkdtemp()) as w:
    ...     for step in range(3):
    ...         w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)

then ``tensorboard --logdir DIR`` shows the curve.
"""
from __future__ import annotations

import io
import os
import socket
import sys
import wave
from datetime import datetime
from typing import Any, Dict, Optional

import numpy as np

import ember
from ember._errors import op_error
from ember.backends import host

__all__ = ["SummaryWriter"]

_INSTALL = "pip install ember[tensorboard]"


def _import_tensorboardx():
    """tensorboardX, imported without letting it import torch.

    tensorboardX's writer module runs ``try: import torch`` at import time, only for type annotations.
    Ember never imports torch (seconds of start-up and a large library it does not use), so while
    tensorboardX loads, ``import torch`` fails as if torch were not installed; afterwards the block is
    lifted, so the user's own ``import torch`` still works.
    """
    if sys.modules.get("tensorboardX") is not None:
        return sys.modules["tensorboardX"]
    blocked = "torch" not in sys.modules
    if blocked:
        sys.modules["torch"] = None  # type: ignore[assignment]  # makes `import torch` raise ImportError
    try:
        import tensorboardX
    except ImportError as e:
        raise ImportError(f"SummaryWriter needs tensorboardX to write TensorBoard event files: {_INSTALL} "
                          f"(or pip install tensorboardX); to view them, pip install tensorboard") from e
    finally:
        if blocked and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tensorboardX


def _error(what: str, exc_type: type, message: str) -> Exception:
    return op_error(f"SummaryWriter.{what}", message, exc_type)


def _to_numpy(value: Any, what: str) -> np.ndarray:
    """An Ember tensor, array, list or number as a NumPy array TensorBoard can store (bfloat16 -> float32)."""
    if isinstance(value, ember.Tensor):
        array = value.detach().cpu().numpy()
    else:
        try:
            array = host.asarray(value)   # a user's array, list or number: host data
        except Exception as e:  # noqa: BLE001  (anything NumPy cannot read)
            raise _error(what, TypeError, f"expected an ember.Tensor, a NumPy array or a number, "
                            f"got {type(value).__name__}") from e
    if array.dtype.kind not in "biuf" or array.dtype.name == "bfloat16":
        try:
            array = array.astype(np.float32)
        except (TypeError, ValueError) as e:
            raise _error(what, TypeError, f"cannot log values of dtype {array.dtype}") from e
    return array


def _to_float(value: Any, what: str) -> float:
    array = _to_numpy(value, what)
    if array.size != 1:
        raise _error(what, ValueError, f"a scalar needs one value, got shape {tuple(array.shape)}; "
                         f"log a histogram with add_histogram, or reduce it first (e.g. .mean())")
    return float(array.reshape(()))


def default_log_dir(comment: str = "") -> str:
    """``runs/<Mon DD_HH-MM-SS>_<host><comment>``, the directory torch's SummaryWriter picks."""
    current_time = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", current_time + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Writes TensorBoard event files to ``log_dir``, as ``torch.utils.tensorboard.SummaryWriter`` does.

    Args:
        log_dir: the directory of this run; by default ``runs/<date>_<host><comment>``.
        comment: a suffix of the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: after a crash, events with a step >= purge_step are hidden (TensorBoard's rule).
        max_queue: events kept in memory before they are written.
        flush_secs: how often (seconds) pending events are written to disk.
        filename_suffix: appended to the event file's name.

    Use it as a context manager (``with SummaryWriter() as w:``) or call ``close()``.
    """

    def __init__(self, log_dir: Optional[str] = None, comment: str = "", purge_step: Optional[int] = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        tbx = _import_tensorboardx()
        if not log_dir:
            log_dir = default_log_dir(comment)
        self.log_dir = os.fspath(log_dir)
        self._writer = tbx.SummaryWriter(logdir=self.log_dir, purge_step=purge_step, max_queue=max_queue,
                                         flush_secs=flush_secs, filename_suffix=filename_suffix)
        self._tbx = tbx
        self._max_queue, self._flush_secs, self._filename_suffix = max_queue, flush_secs, filename_suffix
        self._sub_writers: Dict[str, Any] = {}  # add_scalars' runs, by directory
        self._closed = False

    def get_logdir(self) -> str:
        return self.log_dir

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise _error(what, RuntimeError, f"the writer of {self.log_dir} is closed")

    # -- scalars ---------------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a float, or a one-element tensor) under ``tag`` at ``global_step``.

        ``new_style`` and ``double_precision`` are accepted for torch compatibility; the value is stored
        the classic way (a float32 ``simple_value``), which every TensorBoard reads.
        """
        self._check_open("add_scalar")
        self._writer.add_scalar(tag, _to_float(scalar_value, "add_scalar"), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Dict[str, Any], global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Log several curves in one chart: each key becomes the run ``<log_dir>/<main_tag>_<key>``."""
        self._check_open("add_scalars")
        if not isinstance(tag_scalar_dict, dict):
            raise _error('add_scalars', TypeError, f"tag_scalar_dict must be a dict name -> number, "
                            f"got {type(tag_scalar_dict).__name__}")
        values = {k: _to_float(v, "add_scalars") for k, v in tag_scalar_dict.items()}
        # torch's layout (tensorboardX's differs: <log_dir>/<main_tag>/<key>): one run per key, named
        # <main_tag>_<key>, whose curve has the tag main_tag, so that TensorBoard draws them in one chart
        for key, value in values.items():
            run_dir = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + key)
            if run_dir not in self._sub_writers:
                self._sub_writers[run_dir] = self._tbx.FileWriter(run_dir, self._max_queue, self._flush_secs,
                                                                  self._filename_suffix)
            summary = self._tbx.summary.scalar(main_tag, value)
            self._sub_writers[run_dir].add_summary(summary, global_step, walltime)

    # -- distributions, images, text -------------------------------------------------------------
    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: str = "tensorflow",
                      walltime: Optional[float] = None, max_bins: Optional[int] = None) -> None:
        """Log the distribution of ``values`` (e.g. a layer's weights); ``bins`` as in ``np.histogram``
        or ``'tensorflow'`` (TensorBoard's exponential buckets)."""
        self._check_open("add_histogram")
        array = _to_numpy(values, "add_histogram").astype(np.float64).reshape(-1)
        if array.size == 0:
            raise _error('add_histogram', ValueError, f"'{tag}' has no values")
        self._writer.add_histogram(tag, array, global_step, bins, walltime, max_bins)

    def add_image(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                  walltime: Optional[float] = None, dataformats: str = "CHW") -> None:
        """Log one image. ``dataformats``: ``'CHW'`` (default), ``'HWC'``, ``'HW'``...; float values in
        [0, 1] are scaled to 0..255, uint8 values are kept."""
        self._check_open("add_image")
        array = _to_numpy(img_tensor, "add_image")
        _check_dataformats("add_image", array, dataformats)
        self._writer.add_image(tag, array, global_step, walltime, dataformats=dataformats)

    def add_images(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid; ``dataformats`` ``'NCHW'`` (default), ``'NHWC'``..."""
        self._check_open("add_images")
        array = _to_numpy(img_tensor, "add_images")
        _check_dataformats("add_images", array, dataformats)
        self._writer.add_images(tag, array, global_step, walltime, dataformats=dataformats)

    def add_figure(self, tag: str, figure, global_step: Optional[int] = None, close: bool = True,
                   walltime: Optional[float] = None) -> None:
        """Log a matplotlib figure (or a list of them) as an image."""
        self._check_open("add_figure")
        self._writer.add_figure(tag, figure, global_step, close, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """Log a string (TensorBoard renders Markdown)."""
        self._check_open("add_text")
        if not isinstance(text_string, str):
            raise _error('add_text', TypeError, f"text_string must be a str, got {type(text_string).__name__}")
        self._writer.add_text(tag, text_string, global_step, walltime)

    def add_hparams(self, hparam_dict: Dict[str, Any], metric_dict: Dict[str, Any],
                    hparam_domain_discrete: Optional[Dict[str, list]] = None, run_name: Optional[str] = None,
                    global_step: Optional[int] = None) -> None:
        """Log one trial's hyperparameters and its final metrics (TensorBoard's HPARAMS tab).

        As in torch, the trial is written to a sub-run ``<log_dir>/<run_name>`` (by default the current
        time), and each metric is also logged there as a scalar.
        """
        self._check_open("add_hparams")
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise _error('add_hparams', TypeError, "hparam_dict and metric_dict must be dicts")
        hparams = {}
        for k, v in hparam_dict.items():
            if isinstance(v, ember.Tensor):
                v = _to_float(v, "add_hparams")
            if v is not None and not isinstance(v, (bool, int, float, str)):
                raise _error('add_hparams', TypeError, f"hyperparameter '{k}' must be a bool, int, float "
                                f"or str, got {type(v).__name__}")
            hparams[k] = v
        metrics = {k: _to_float(v, "add_hparams") for k, v in metric_dict.items()}
        if hparam_domain_discrete is not None:
            # tensorboardX has no argument for it: check it as torch does, then let TensorBoard infer it
            for k, values in hparam_domain_discrete.items():
                if k not in hparams or not isinstance(values, list):
                    raise _error('add_hparams', ValueError, f"hparam_domain_discrete['{k}'] must be a list "
                                     f"of the values of a key of hparam_dict")
        self._writer.add_hparams(hparams, metrics, name=run_name, global_step=global_step)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: Optional[int] = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: Optional[float] = None) -> None:
        """Log a precision-recall curve: ``labels`` 0/1 (ground truth), ``predictions`` probabilities in [0, 1]."""
        self._check_open("add_pr_curve")
        labels = _to_numpy(labels, "add_pr_curve").reshape(-1)
        predictions = _to_numpy(predictions, "add_pr_curve").reshape(-1)
        if labels.shape != predictions.shape:
            raise _error("add_pr_curve", ValueError, f"labels and predictions need one value each per example, "
                         f"got {labels.size} labels and {predictions.size} predictions")
        if predictions.size and (predictions.min() < 0 or predictions.max() > 1):
            raise _error("add_pr_curve", ValueError, f"predictions must be probabilities in [0, 1], got values "
                         f"from {predictions.min():g} to {predictions.max():g}")
        if weights is not None:
            weights = _to_numpy(weights, "add_pr_curve").reshape(-1)
        self._writer.add_pr_curve(tag, labels, predictions, global_step, num_thresholds, weights, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Optional[int] = None, sample_rate: int = 44100,
                  walltime: Optional[float] = None) -> None:
        """Log a sound: a 1-d tensor (or (1, L)) of samples in [-1, 1] at ``sample_rate`` Hz."""
        self._check_open("add_audio")
        array = _to_numpy(snd_tensor, "add_audio").astype(np.float32)
        if array.ndim == 2 and array.shape[0] == 1:
            array = array[0]
        if array.ndim != 1:
            raise _error("add_audio", ValueError, f"a sound is one channel of samples, shape (L,) or (1, L), "
                         f"got shape {tuple(array.shape)}")
        # a 16-bit WAV written with the standard library, as torch does (tensorboardX would need soundfile)
        pcm = (host.clip(array, -1.0, 1.0) * 32767).astype("<i2")
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(int(sample_rate))
            wav.writeframes(pcm.tobytes())
        summary_pb2 = self._tbx.proto.summary_pb2
        audio = summary_pb2.Summary.Audio(sample_rate=float(sample_rate), num_channels=1, length_frames=len(pcm),
                                          encoded_audio_string=buffer.getvalue(), content_type="audio/wav")
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, audio=audio)])
        self._writer._get_file_writer().add_summary(summary, global_step, walltime)

    def add_embedding(self, mat: Any, metadata: Optional[list] = None, label_img: Any = None,
                      global_step: Optional[int] = None, tag: str = "default",
                      metadata_header: Optional[list] = None) -> None:
        """Log points for TensorBoard's PROJECTOR: ``mat`` (N, D), with one ``metadata`` label per row."""
        self._check_open("add_embedding")
        array = _to_numpy(mat, "add_embedding")
        if array.ndim != 2:
            raise _error("add_embedding", ValueError, f"mat must be (N, D), one row per point, got shape "
                         f"{tuple(array.shape)}")
        if metadata is not None and len(metadata) != array.shape[0]:
            raise _error("add_embedding", ValueError, f"{len(metadata)} metadata labels for {array.shape[0]} points")
        if label_img is not None:
            label_img = _to_numpy(label_img, "add_embedding")
        self._writer.add_embedding(array, metadata, label_img, global_step, tag, metadata_header)

    def add_custom_scalars(self, layout: Dict[str, Dict[str, list]]) -> None:
        """Arrange charts in TensorBoard's CUSTOM SCALARS tab:
        ``{category: {chart title: ["Multiline", [tag regexes]] or ["Margin", [value, lower, upper]]}}``."""
        self._check_open("add_custom_scalars")
        for category, charts in layout.items():
            for title, chart in charts.items():
                if not (isinstance(chart, (list, tuple)) and len(chart) == 2 and chart[0] in ("Multiline", "Margin")):
                    raise _error("add_custom_scalars", ValueError, f"chart '{category}/{title}' must be "
                                 f"['Multiline', [tags]] or ['Margin', [value, lower, upper]], got {chart!r}")
        self._writer.add_custom_scalars(layout)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """The graph of `model` run on `input_to_model` (a tensor or a tuple of them), traced with
        `ember.jit.trace` under no_grad: one node per primitive call, named by op, with its output shapes;
        parameters and buffers appear under their module paths (TensorBoard's GRAPHS tab groups them).
        The model runs once, in its current mode."""
        if input_to_model is None:
            raise op_error("SummaryWriter.add_graph", "input_to_model is required: the graph is traced by "
                                                      "running the model once on it", ValueError)
        from ember import jit
        args = input_to_model if isinstance(input_to_model, tuple) else (input_to_model,)
        with ember.no_grad():
            traced = jit.trace(model, args, passes=[])   # unoptimised: the primitives as they ran
        graph_def = _graph_def(traced.graph)
        if verbose:
            print(traced.graph)
        from tensorboardX.proto import event_pb2
        self._writer._get_file_writer().add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()))

    # -- life cycle ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write pending events to disk now."""
        if not self._closed:
            for file_writer in [self._writer._get_file_writer(), *self._sub_writers.values()]:
                _drain(file_writer.event_writer)

    def close(self) -> None:
        """Flush and close the event files; calling it again does nothing."""
        if not self._closed:
            self._writer.close()
            for w in self._sub_writers.values():
                w.close()
            self._closed = True

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SummaryWriter(log_dir={self.log_dir!r}{', closed' if self._closed else ''})"


def _drain(event_writer) -> None:
    """Write every queued event to disk, as torch's flush does.

    tensorboardX's own ``flush()`` only flushes the file: events still in its queue, waiting for its
    writer thread, stay in memory. Stopping the thread (it writes everything queued before the stop
    signal), flushing, and starting a new thread on the same queue and file drains it.
    """
    worker_class = type(event_writer._worker)
    event_writer._worker.stop()
    event_writer._ev_writer.flush()
    event_writer._worker = worker_class(event_writer._event_queue, event_writer._ev_writer,
                                        event_writer._flush_secs)
    event_writer._worker.start()


def _check_dataformats(what: str, array: np.ndarray, dataformats: str) -> None:
    letters = dataformats.upper()
    if len(set(letters)) != len(letters) or not set(letters) <= set("NCHW") or not {"H", "W"} <= set(letters):
        raise _error(what, ValueError, f"dataformats must be letters of NCHW including H and W, "
                         f"such as 'CHW', 'HWC' or 'NCHW', got {dataformats!r}")
    if array.ndim != len(letters):
        raise _error(what, ValueError, f"dataformats {dataformats!r} needs a {len(letters)}-d image, "
                         f"got shape {tuple(array.shape)}")
    if "C" in letters and array.shape[letters.index("C")] not in (1, 3, 4):
        raise _error(what, ValueError, f"images have 1, 3 or 4 channels, got "
                         f"{array.shape[letters.index('C')]} on axis {letters.index('C')} of shape "
                         f"{tuple(array.shape)} with dataformats {dataformats!r}")


def _graph_def(graph):
    """A TensorBoard GraphDef of an ember.jit IR graph: a node per leaf (input, parameter, constant) and per
    primitive call, edges from the values they read, `_output_shapes` for the shapes TensorBoard shows."""
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.node_def_pb2 import NodeDef
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboardX.proto.versions_pb2 import VersionDef

    def shapes(values):
        return AttrValue(list=AttrValue.ListValue(shape=[
            TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in v.shape]) for v in values]))

    names, nodes = {}, []
    for v in graph.leaves:
        if v.kind == "input":
            name, op = f"input/{v.src or v.id}".replace("[", "_").replace("]", ""), "Input"
        elif v.kind == "state" and v.src:
            name, op = v.src.replace(".", "/"), "Parameter"
        else:
            name, op = f"constant/{v.id}", "Const"
        names[v.id] = name
        nodes.append(NodeDef(name=name, op=op, attr={"_output_shapes": shapes([v]),
                                                     "dtype": AttrValue(s=v.dtype.encode())}))
    for i, n in enumerate(graph.nodes):
        name = f"{n.name}_{i}"
        for k, out in enumerate(n.outputs):
            names[out.id] = name if k == 0 else f"{name}:{k}"
        attrs = {"_output_shapes": shapes(n.outputs)}
        if n.attrs:
            attrs["attributes"] = AttrValue(s=", ".join(f"{k}={v!r}" for k, v in sorted(n.attrs.items())).encode())
        if n.where:
            attrs["source"] = AttrValue(s=str(n.where).encode())
        nodes.append(NodeDef(name=name, op=n.name, input=[names[v.id] for v in n.inputs if v.id in names],
                             attr=attrs))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
