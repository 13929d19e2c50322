"""The profiler's events, their averages by name, and the summary table (torch's column names)."""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "Interval"]


class Interval:
    """An event's start and end, in microseconds since the profile started."""
    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class FunctionEvent:
    """One timed call: a primitive (`Linear`), a module (`nn.Module: Linear`), a backward node
    (`autograd::engine::evaluate_function: LinearBackward`) or a `record_function` scope.

    Times are in microseconds, as torch's. `self_cpu_time_total` is the total less the children's
    totals (a module's self time is what its forward did outside any primitive call).
    `cpu_memory_usage` counts the bytes of the outputs that the event and its children made (only
    with `profile_memory=True`; frees are not seen, so it is never negative, unlike torch's).
    """
    __slots__ = ("id", "name", "category", "thread", "start_ns", "end_ns", "cpu_parent", "cpu_children",
                 "input_shapes", "stack", "is_backward", "self_cpu_memory_usage")

    def __init__(self, id, name, category, thread, start_ns, parent, input_shapes, stack, is_backward):
        self.id = id
        self.name = name
        self.category = category          # 'cpu_op', 'python_function' (module) or 'user_annotation'
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = start_ns            # set when the call returns
        self.cpu_parent = parent
        self.cpu_children: list = []
        self.input_shapes = input_shapes  # [[3, 4], [8, 4], [8]] with record_shapes, else []
        self.stack = stack                # ['train.py(12): step'] with with_stack, else []
        self.is_backward = is_backward    # it ran inside a backward node of the autograd engine
        self.self_cpu_memory_usage = 0

    key = property(lambda self: self.name)
    count = property(lambda self: 1)
    is_user_annotation = property(lambda self: self.category == "user_annotation")

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_ns / 1000, self.end_ns / 1000)

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1000

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - sum(c.end_ns - c.start_ns for c in self.cpu_children)) / 1000

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (a name, or a name and input shapes) added up."""

    def __init__(self, key: str, input_shapes=""):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.is_backward = False
        self.stack: list = []
        self.cpu_parent = None    # the first event's parent (for table(top_level_events_only=True))

    def add(self, evt) -> "FunctionEventAvg":
        if self.count == 0:
            self.cpu_parent = getattr(evt, "cpu_parent", None)
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        self.is_backward = self.is_backward or evt.is_backward
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        """The average time of one call, in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
              "self_cpu_memory_usage")


class EventList(list):
    """A list of events (or of their averages) that prints as torch's summary table."""

    def __init__(self, events=(), profile_memory: bool = False):
        super().__init__(events)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False) -> "EventList":
        """The events added up by name (and by input shapes when `group_by_input_shape`), in order of
        first appearance."""
        stats: OrderedDict = OrderedDict()
        for evt in self:
            shapes = str(evt.input_shapes) if group_by_input_shape else ""
            key = (evt.name if isinstance(evt, FunctionEvent) else evt.key, shapes)
            avg = stats.get(key)
            if avg is None:
                avg = stats[key] = FunctionEventAvg(key[0], evt.input_shapes if group_by_input_shape else "")
            avg.add(evt)
        return EventList(stats.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for evt in self:
            total.add(evt)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """torch's summary table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
        [CPU Mem, Self CPU Mem,] # of Calls[, Input Shapes], rows sorted by `sort_by` (descending),
        at most `row_limit` of them. Percentages are of the sum of all self times."""
        return _build_table(self, sort_by, row_limit, max_name_column_width, max_shapes_column_width,
                            header, top_level_events_only, self._profile_memory)

    def __str__(self):
        return self.table()


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _build_table(events, sort_by, row_limit, max_name_width, max_shapes_width, header, top_level_only,
                 profile_memory) -> str:
    if not events:
        return ""
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"EventList.table: sort_by={sort_by!r} is not one of {', '.join(_SORT_KEYS)} "
                             f"(device times are not measured separately: see docs/profiling.md)")
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{:>" + str(w) + "}  " for w in widths)
    sep = "".join("-" * w + "  " for w in widths)
    total = sum(e.self_cpu_time_total for e in events)

    lines = []
    if header is not None:
        lines += ["=" * (sum(widths) + 2 * (len(widths) - 1)), header]
    lines += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= name_width - 3:
            name = name[:name_width - 3] + "..."
        row = [name, _format_share(e.self_cpu_time_total, total), _format_time(e.self_cpu_time_total),
               _format_share(e.cpu_time_total, total), _format_time(e.cpu_time_total),
               _format_time(e.cpu_time)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(str(e.count))
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        lines.append(row_format.format(*row))
    lines += [sep, f"Self CPU time total: {_format_time(total)}"]
    return "\n".join(lines) + "\n"
