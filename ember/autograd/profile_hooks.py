"""Where `ember.profiler` plugs into `nn.Module.__call__` and the backward engine.

Both check `OPEN` (one entry per profile open in any thread) and take their slow path only while it is
non-empty, so with no profile open the cost is one global list check. The profile itself is per
thread, as dispatch modes are: `current()` is the one open in this thread, or None.
"""
from __future__ import annotations

import threading

OPEN: list = []
_local = threading.local()


def current():
    """The profile open in this thread (recording or not), or None."""
    return _local.__dict__.get("profile")


def set_current(profile) -> None:
    _local.profile = profile


def module_call(module, args, kwargs):
    """`module(*args, **kwargs)` inside a scope named after the module (nn.Module's slow path)."""
    p = current()
    if p is None or not p._recording:
        return module._call_with_hooks(args, kwargs)
    with p._scope("nn.Module: " + type(module).__name__, "python_function"):
        return module._call_with_hooks(args, kwargs)


def marked_backward(walk):
    """The engine's walk, with every event that starts during it marked as backward (the sums of
    gradients and the `.grad` accumulation run outside any node's scope)."""
    def marked(*args):
        p = current()
        if p is None:
            return walk(*args)
        p._backward_depth += 1
        try:
            return walk(*args)
        finally:
            p._backward_depth -= 1
    return marked


def run_node(node, grads):
    """A graph node's backward inside a scope named as torch's (the engine's slow path)."""
    from . import anomaly
    p = current()
    if p is None or not p._recording:
        return anomaly.checked_backward(node, grads) if anomaly.ENABLED else node.backward(*grads)
    with p._scope(f"autograd::engine::evaluate_function: {node.name}Backward", "cpu_op", backward=True):
        return anomaly.checked_backward(node, grads) if anomaly.ENABLED else node.backward(*grads)
