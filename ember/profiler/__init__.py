"""ember.profiler: per-primitive, per-module and per-backward-node times, as `torch.profiler`.

    from ember.profiler import profile, record_function
    with profile(record_shapes=True) as prof:
        loss = model(x).sum(); loss.backward(); opt.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

See docs/profiling.md.
"""
from __future__ import annotations

from .profiler import (profile, record_function, ProfilerActivity, ProfilerAction, schedule,
                       tensorboard_trace_handler)
from ._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]
