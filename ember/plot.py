"""Training curves as a PNG: ``ember.plot.history(history_or_csv, path)``.

Needs matplotlib (the ``plot`` extra: ``pip install ember[plot]``), imported on the first call. The figure is
drawn on matplotlib's Agg canvas directly, without pyplot: no window opens and the user's own pyplot
backend is left alone.
"""
from __future__ import annotations

import csv
import math
import os
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

__all__ = ["history"]

PathLike = Union[str, "os.PathLike[str]"]


def history(history_or_csv: Any, path: PathLike, *, title: str | None = None, val_label: str = "validation",
            dpi: int = 100) -> str:
    """Save loss and metric curves, training and validation, to the PNG file ``path``; returns the path.

    ``history_or_csv`` is one of:
      - a Keras-style History (an object with a ``.history`` dict, as ``model.fit`` returns),
      - a dict ``{"loss": [...], "val_loss": [...], "accuracy": [...], ...}`` with one value per epoch,
      - the path of a CSV file in CSVLogger's format (``epoch,loss,accuracy,val_loss,val_accuracy``).

    Each quantity gets one panel: ``loss`` with ``val_loss``, ``accuracy`` with ``val_accuracy``, and so on.
    ``val_label`` names the ``val_`` curves in the legends (e.g. ``"test"`` when they were measured on a
    test set).

    Example:
        >>> import os, tempfile
        >>> out = ember.plot.history({"loss": [1.0, 0.5, 0.3], "val_loss": [1.1, 0.7, 0.6]},
        ...                          os.path.join(tempfile.mkdtemp(), "curves.png"))
        >>> out.endswith("curves.png")
        True
    """
    epochs, series = _read(history_or_csv)
    panels = _panels(series)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as e:
        raise ImportError("ember.plot.history needs matplotlib: pip install ember[plot] "
                          "(or pip install matplotlib)") from e

    fig = Figure(figsize=(5.0 * len(panels), 4.0), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (name, keys) in zip(axes, panels):
        for key, style in zip(keys, ("-o", "--s")):
            label = val_label if key.startswith("val_") else "training"
            ax.plot(epochs, series[key], style, markersize=3 if len(epochs) < 60 else 0, label=label)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
        if name in ("loss",) or name.endswith("loss"):
            finite = [v for k in keys for v in series[k] if math.isfinite(v)]
            if finite and min(finite) > 0 and max(finite) / min(finite) > 50:
                ax.set_yscale("log")   # a loss that falls by orders of magnitude
        ax.legend()
    if title:
        fig.suptitle(title)
    path = os.fspath(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _read(source: Any) -> Tuple[List[float], Dict[str, List[float]]]:
    """(epoch numbers from 1, {name: values}) from a History, a dict or a CSV path."""
    epochs: Sequence[float] | None = None
    if isinstance(source, (str, os.PathLike)):
        epochs, series = _read_csv(os.fspath(source))
    elif isinstance(source, Mapping):
        series = dict(source)
    elif isinstance(getattr(source, "history", None), Mapping):
        series = dict(source.history)
        if getattr(source, "epoch", None):
            epochs = [e + 1 for e in source.epoch]   # Keras counts epochs from 0
    else:
        raise TypeError(f"ember.plot.history: expected a History (an object with a .history dict), a dict of "
                        f"lists or a CSV path, got {type(source).__name__}")
    series = {str(k): _floats(k, v) for k, v in series.items() if str(k) != "epoch"}
    if not series or all(len(v) == 0 for v in series.values()):
        raise ValueError("ember.plot.history: the history is empty: nothing to plot")
    lengths = {k: len(v) for k, v in series.items()}
    n = max(lengths.values())
    if len(set(lengths.values())) != 1:
        raise ValueError(f"ember.plot.history: every quantity needs one value per epoch; lengths differ: {lengths}")
    if epochs is None or len(epochs) != n:
        epochs = list(range(1, n + 1))
    return list(epochs), series


def _floats(key: Any, values: Any) -> List[float]:
    if hasattr(values, "tolist"):   # an Ember tensor or a NumPy array
        values = values.tolist()
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError) as e:
        raise TypeError(f"ember.plot.history: '{key}' must be a list of numbers, got {values!r:.80}") from e


def _read_csv(path: str) -> Tuple[List[float] | None, Dict[str, List[float]]]:
    """CSVLogger's file: a header row, then one row per epoch (epoch counted from 0); empty cells are NaN."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.plot.history: no CSV file at {path}")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"ember.plot.history: {path} is empty")
    header, body = rows[0], [r for r in rows[1:] if r]
    series: Dict[str, List[float]] = {name: [] for name in header}
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(f"ember.plot.history: {path} line {line} has {len(row)} values for "
                             f"{len(header)} columns ({', '.join(header)})")
        for name, cell in zip(header, row):
            try:
                series[name].append(float(cell) if cell.strip() else float("nan"))
            except ValueError:
                raise ValueError(f"ember.plot.history: {path} line {line}: column '{name}' has {cell!r}, "
                                 f"not a number") from None
    epochs = [e + 1 for e in series.pop("epoch")] if "epoch" in series else None
    return epochs, series


def _panels(series: Dict[str, List[float]]) -> List[Tuple[str, List[str]]]:
    """[(panel name, [keys])]: 'loss' with 'val_loss', ...; losses first, in the history's order."""
    panels: List[Tuple[str, List[str]]] = []
    for key in series:
        base = key[4:] if key.startswith("val_") else key
        if any(name == base for name, _ in panels):
            continue
        keys = [k for k in (base, "val_" + base) if k in series]
        panels.append((base, keys))
    panels.sort(key=lambda p: 0 if p[0].endswith("loss") else 1)   # stable: loss first, then the rest
    return panels
