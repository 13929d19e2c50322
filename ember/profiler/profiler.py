"""`ember.profiler.profile`: time every primitive call, module call and backward node of a region.

The profile is a dispatch mode (`ember.autograd.dispatch.DispatchMode`): every computation on tensor
data is a primitive call, so timing `prim.apply` inside `__ember_dispatch__` sees forward, backward,
optimizer and random-number work alike. Scopes group those calls: `nn.Module.__call__` and the
autograd engine's per-node step open one (through `ember.autograd.profile_hooks`, a single list check
when no profile is open), and so does the user's `record_function(name)`. See docs/profiling.md.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from contextlib import ContextDecorator
from enum import Enum
from typing import Callable, Iterable

from ..autograd import profile_hooks as _hooks
from ..autograd.dispatch import DispatchMode
from .._errors import _is_internal
from ._events import EventList, FunctionEvent

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    """What to profile. `CPU`: host time of each call. `CUDA`: on a CUDA device, synchronise before and
    after each primitive call, so its CPU time includes the device's work (slower; no separate device
    times are kept)."""
    CPU = 0
    CUDA = 1

    @classmethod
    def _parse(cls, activities) -> set:
        """The set of activities asked for (None: CPU only), checked."""
        if activities is None:
            return {cls.CPU}
        activities = set(activities)
        bad = [a for a in activities if not isinstance(a, cls)]
        if bad:
            raise ValueError(f"profile: activities must be ProfilerActivity values (CPU, CUDA), got {bad!r}")
        return activities


class ProfilerAction(Enum):
    """What a `schedule` asks for at a step: nothing, warm-up (treated as nothing), record, or record
    and hand the trace to `on_trace_ready` at the end of the step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3

    @property
    def records(self) -> bool:
        """Whether a step with this action is recorded."""
        return self is ProfilerAction.RECORD or self is ProfilerAction.RECORD_AND_SAVE


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0) -> Callable:
    """torch's profiler schedule: skip `skip_first` steps, then cycles of `wait` idle steps, `warmup`
    steps and `active` recorded steps (the last one RECORD_AND_SAVE), `repeat` times (0: forever).

    >>> s = schedule(wait=1, warmup=1, active=2)
    >>> [s(i).name for i in range(4)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']
    """
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"schedule: {name} must be a non-negative integer, got {v!r}")
    if active < 1:
        raise ValueError(f"schedule: active must be at least 1, got {active}")
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        k = step % cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None) -> Callable:
    """An `on_trace_ready` that writes each trace to `dir_name/<worker>.<ms>.pt.trace.json`."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{os.uname().nodename}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{worker}.{int(time.time() * 1000)}.pt.trace.json"))
    return handler


class profile(DispatchMode):
    """Profile the primitive calls, module calls and backward nodes run in this thread, as
    `torch.profiler.profile`.

    >>> import ember
    >>> from ember.profiler import profile, record_function
    >>> model = ember.nn.Linear(4, 2)
    >>> with profile(record_shapes=True) as prof:
    ...     with record_function("step"):
    ...         model(ember.randn(3, 4)).sum().backward()
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))  # doctest: +SKIP
    >>> prof.export_chrome_trace("trace.json")  # doctest: +SKIP

    `record_shapes` keeps each call's input shapes (`key_averages(group_by_input_shape=True)` shows
    them); `profile_memory` the bytes of the outputs each call made; `with_stack` the user's source
    lines. With `schedule`, recording follows `prof.step()` and `on_trace_ready(prof)` is called at
    the end of each active cycle (and at exit, while recording, with or without a schedule).
    Only the opening thread is profiled (dispatch modes are per thread).
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False):
        activities = ProfilerActivity._parse(activities)
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile: schedule must be a callable step -> ProfilerAction, got {schedule!r}")
        self.activities = activities
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.schedule = schedule if schedule is not None else _always_record
        self._record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self._sync = ProfilerActivity.CUDA in activities
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._recording = False
        self._events: list[FunctionEvent] = []
        self._stack: list[FunctionEvent] = []   # the open scopes, innermost last
        self._step_event = None
        self._backward_depth = 0                 # > 0 while the autograd engine runs a backward
        self._t0 = 0
        self._tid = 0
        self._open = False

    # --- opening and closing ----------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        if _hooks.current() is not None:
            raise RuntimeError("profile: a profile is already open in this thread (profiles do not nest)")
        DispatchMode.__enter__(self)
        _hooks.set_current(self)
        _hooks.OPEN.append(None)
        self._open = True
        self._tid = threading.get_native_id()
        self._t0 = time.perf_counter_ns()
        self.step_num = 0
        self._backward_depth = 0
        self.current_action = self.schedule(0)
        if self.current_action.records:
            self._start_trace()

    def stop(self) -> None:
        if not self._open:
            return
        try:
            if self.current_action.records:
                self._stop_trace()
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
        finally:
            self._open = False
            _hooks.OPEN.pop()
            _hooks.set_current(None)
            DispatchMode.__exit__(self)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides whether the next one is recorded."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev.records:
            if prev is ProfilerAction.RECORD_AND_SAVE or not self.current_action.records:
                self._stop_trace()
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
                if self.current_action.records:
                    self._start_trace()
            else:
                self._open_step_event()
        elif self.current_action.records:
            self._start_trace()

    def _start_trace(self) -> None:
        self._events = []
        self._stack = []
        self._recording = True
        self._open_step_event()

    def _stop_trace(self) -> None:
        self._recording = False
        now = time.perf_counter_ns() - self._t0
        for ev in self._stack:     # scopes still open (the step's, or the profile left inside a scope)
            ev.end_ns = now
        self._stack = []
        self._step_event = None

    def _open_step_event(self) -> None:
        if self._step_event is not None:
            self._end(self._step_event)
            self._step_event = None
        if self._record_steps:
            self._step_event = self._begin(f"ProfilerStep#{self.step_num}", "user_annotation", [])

    # --- recording ---------------------------------------------------------------------------------
    def _begin(self, name, category, shapes, backward=False) -> FunctionEvent:
        parent = self._stack[-1] if self._stack else None
        ev = FunctionEvent(len(self._events), name, category, self._tid, 0, parent, shapes,
                           _user_stack() if self.with_stack else [],
                           backward or self._backward_depth > 0 or (parent is not None and parent.is_backward))
        if parent is not None:
            parent.cpu_children.append(ev)
        self._events.append(ev)
        self._stack.append(ev)
        ev.start_ns = ev.end_ns = time.perf_counter_ns() - self._t0
        return ev

    def _end(self, ev) -> None:
        ev.end_ns = time.perf_counter_ns() - self._t0
        stack = self._stack
        if stack and stack[-1] is ev:
            stack.pop()
        elif ev in stack:          # a scope closed out of order: close the ones opened inside it too
            for inner in stack[stack.index(ev) + 1:]:
                inner.end_ns = ev.end_ns
            del stack[stack.index(ev):]

    def _scope(self, name, category, backward=False) -> "_Scope":
        return _Scope(self, name, category, backward)

    def __ember_dispatch__(self, prim, inputs, attrs):
        if not self._recording:
            return prim.apply(*inputs, **attrs)
        shapes = [list(t._data.shape) for t in inputs] if self.record_shapes else []
        sync = self._sync and _on_cuda(inputs)
        if sync:
            _synchronize()
        ev = self._begin(prim.__name__, "cpu_op", shapes)
        try:
            out = prim.apply(*inputs, **attrs)
            if sync:
                _synchronize()
        finally:
            self._end(ev)
        if self.profile_memory:
            ev.self_cpu_memory_usage = _new_bytes(inputs, out)
        return out

    # --- results -------------------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded event (of the last active cycle, with a schedule), in order of start."""
        return EventList(self._events, profile_memory=self.profile_memory)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events added up by name (and input shapes when `group_by_input_shape`; needs
        `record_shapes=True`); `.table(sort_by=..., row_limit=...)` prints them as torch does."""
        return self.events().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace-event JSON (open it in Perfetto or chrome://tracing).
        The file is written whole or not at all (a temporary file renamed into place)."""
        pid = os.getpid()
        trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": self._tid, "args": {"name": "python"}},
                 {"ph": "M", "name": "thread_name", "pid": pid, "tid": self._tid,
                  "args": {"name": f"thread {self._tid} (python)"}}]
        for ev in self._events:
            args = {"External id": ev.id}
            if ev.input_shapes:
                args["Input Dims"] = ev.input_shapes
            if ev.stack:
                args["Call stack"] = ";".join(ev.stack)
            if ev.is_backward:
                args["backward"] = True
            if self.profile_memory:
                args["Self Mem (bytes)"] = ev.self_cpu_memory_usage
            trace.append({"ph": "X", "cat": ev.category, "name": ev.name, "pid": pid, "tid": ev.thread,
                          "ts": ev.start_ns / 1000, "dur": (ev.end_ns - ev.start_ns) / 1000, "args": args})
        doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": trace}
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(prefix=".ember-trace-", suffix=".tmp", dir=os.path.dirname(path) or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class _Scope:
    __slots__ = ("prof", "name", "category", "backward", "ev")

    def __init__(self, prof, name, category, backward):
        self.prof, self.name, self.category, self.backward = prof, name, category, backward

    def __enter__(self):
        self.ev = self.prof._begin(self.name, self.category, [], self.backward)

    def __exit__(self, *exc):
        self.prof._end(self.ev)
        return False


class record_function(ContextDecorator):
    """A named scope in the profile (a context manager or a decorator), as torch's; it does nothing
    while no profile is recording in this thread.

    >>> with record_function("data"):
    ...     pass
    """

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a string, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._open: list = []   # (profile, event) per entry; a decorated function may recurse

    def __enter__(self):
        p = _hooks.current()
        if p is not None and p._recording:
            self._open.append((p, p._begin(self.name, "user_annotation", [])))
        else:
            self._open.append(None)
        return self

    def __exit__(self, *exc):
        entry = self._open.pop()
        if entry is not None:
            entry[0]._end(entry[1])
        return False


def _user_stack(limit: int = 16) -> list:
    """['train.py(12): step', ...]: the caller's frames outside the ember package, innermost first."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        path = f.f_code.co_filename
        if not _is_internal(path):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _on_cuda(inputs) -> bool:
    for t in inputs:
        if t._device.type == "cuda":
            return True
    return False


def _synchronize() -> None:
    from .. import backends
    backends.get("cuda").synchronize()


def _new_bytes(inputs, out) -> int:
    """Bytes of the CPU outputs that are new arrays (an in-place write returns its input's array)."""
    seen = {id(t._data) for t in inputs}
    n = 0
    for o in (out if isinstance(out, tuple) else (out,)):
        a = o._data
        if id(a) not in seen and o._device.type == "cpu":
            n += a.nbytes
    return n
