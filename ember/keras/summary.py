"""`model.summary()`: Keras 3's table, drawn with the same box characters and column widths.

Keras renders its table with `rich`: columns at `positions` of `line_length` (88 characters and
[0.45, 0.80, 1.0] for a chain of layers; 108 and [0.3, 0.56, 0.74, 1.0] with a "Connected to" column
for a functional graph), each cell padded by one space on each side, and when the columns are wider than
the line, rich takes the excess off them in turn (`_fit`). Long cells wrap at spaces.
"""
from __future__ import annotations

import math
import shutil

__all__ = ["print_summary", "summary_text", "readable_memory_size"]


def readable_memory_size(nbytes: float) -> str:
    for unit in ["B", "KB", "MB", "GB", "TB"]:
        if nbytes / 1024 < 1:
            return f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.2f} PB"


def _fit(widths, max_width):
    """rich's ratio_reduce: take `excess` off the columns in turn, in proportion (all weigh 1)."""
    excess = sum(widths) - max_width
    if excess <= 0:
        return widths
    out, remaining, n = [], excess, len(widths)
    for w in widths:
        take = min(w, round(remaining / n))   # Python's round, as rich (halves to even)
        out.append(w - take)
        remaining -= take
        n -= 1
    return out


def _wrap(text: str, width: int) -> list:
    """Greedy wrap at spaces, as rich wraps a cell (overflow "ellipsis"): a word longer than the width is cut
    to width - 1 characters and "…", on a line of its own; a column with no room shows nothing."""
    if width <= 0:
        return [""]
    lines, line = [], ""
    for word in text.split(" "):
        if len(word) > width:
            word = word[:width - 1] + "…"
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    lines.append(line)
    return lines


def _table(header, rows, widths, align) -> list:
    inner = [w - 2 for w in widths]        # the cell text, between one space of padding on each side

    def cells_line(cells, left, sep, right):
        parts = []
        for text, w, a in zip(cells, inner, align):
            parts.append(" " + (text.rjust(w) if a == "right" else text.ljust(w)) + " ")
        return left + sep.join(parts) + right

    def rule(left, fill, sep, right):
        return left + sep.join(fill * w for w in widths) + right

    out = [rule("┏", "━", "┳", "┓")]
    wrapped = [_wrap(h, w) for h, w in zip(header, inner)]      # rich wraps a narrow header too, at the bottom
    height = max(len(w) for w in wrapped)
    for k in range(height):
        out.append(cells_line([w[k - height + len(w)] if k >= height - len(w) else "" for w in wrapped],
                              "┃", "┃", "┃"))
    out.append(rule("┡", "━", "╇", "┩"))
    for i, row in enumerate(rows):
        wrapped = [_wrap(str(c), w) for c, w in zip(row, inner)]
        height = max(len(w) for w in wrapped)
        for k in range(height):
            out.append(cells_line([w[k] if k < len(w) else "" for w in wrapped], "│", "│", "│"))
        if i < len(rows) - 1:
            out.append(rule("├", "─", "┼", "┤"))
    out.append(rule("└", "─", "┴", "┘"))
    return out


def _shape_text(shape) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, list) or (isinstance(shape, tuple) and shape and isinstance(shape[0], tuple)):
        return "[" + ", ".join(_shape_text(s) for s in shape) + "]"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def summary_text(model, line_length=None, positions=None) -> str:
    from .layers.base import InputLayer
    from .models import Functional
    functional = isinstance(model, Functional) and not model._sequential_like()
    layers = model._summary_layers()
    if functional:
        default_length, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        align = ["left", "left", "right", "left"]
    else:
        default_length, positions = 88, positions or [0.45, 0.80, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #"]
        align = ["left", "left", "right"]
    line_length = line_length or min(default_length, shutil.get_terminal_size().columns - 4)
    widths, current = [], 0
    for p in positions:
        w = int(p * line_length) - current
        if w < 4:
            raise ValueError("Insufficient console width to print summary.")
        widths.append(w)
        current += w
    widths = _fit([w + 2 for w in widths], line_length - (len(widths) + 1))

    rows = []
    for layer in layers:
        if not layer.built:
            params = "0 (unbuilt)"
        else:
            params = f"{layer.count_params():,}"
        row = [f"{layer.name} ({type(layer).__name__})", _shape_text(layer._last_output_shape), params]
        if functional:
            row.append(model._connections(layer) if not isinstance(layer, InputLayer) else "-")
        rows.append(row)

    trainable = model.trainable_weights
    frozen = model.non_trainable_weights
    n_train = sum(math.prod(w.shape) for w in trainable)
    n_frozen = sum(math.prod(w.shape) for w in frozen)
    b_train = sum(math.prod(w.shape) * w.dtype.itemsize for w in trainable)
    b_frozen = sum(math.prod(w.shape) * w.dtype.itemsize for w in frozen)
    opt = getattr(model, "optimizer", None)
    opt_shapes = opt.variables if opt is not None and opt.built else None
    n_opt = sum(math.prod(s) for s in opt_shapes) if opt_shapes is not None else 0
    b_opt = 4 * n_opt + 4 if opt_shapes is not None else 0   # iterations is an int64, the rest float32

    lines = [f'Model: "{model.name}"'] + _table(header, rows, widths, align)
    lines.append(f" Total params: {n_train + n_frozen + n_opt:,} ({readable_memory_size(b_train + b_frozen + b_opt)})")
    lines.append(f" Trainable params: {n_train:,} ({readable_memory_size(b_train)})")
    lines.append(f" Non-trainable params: {n_frozen:,} ({readable_memory_size(b_frozen)})")
    if opt_shapes is not None:
        lines.append(f" Optimizer params: {n_opt:,} ({readable_memory_size(b_opt)})")
    return "\n".join(lines) + "\n"


def print_summary(model, line_length=None, positions=None, print_fn=None) -> None:
    text = summary_text(model, line_length, positions)
    if print_fn is None:
        print(text, end="")
    else:
        print_fn(text)
