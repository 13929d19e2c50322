"""Reverse-mode differentiation over the recorded graph.

The walk is iterative (Kahn's algorithm on dependency counts), so a 100,000-op chain works:
a node runs once every consumer of its outputs has sent its gradient.
"""
from __future__ import annotations

import threading

from . import anomaly, dispatch, function
from .. import _debug
from .grad_mode import set_enabled
from . import profile_hooks as _profile_hooks
from .profile_hooks import OPEN as _PROFILING


def _fresh(g):
    """A new detached tensor safe to store as `.grad`: its own writeable memory. Always a copy: the
    gradient reaching a leaf may be shared with another leaf (Add passes one array to both inputs), be
    the caller's `gradient=` tensor, a hook's or a custom backward's return value, or a broadcast view;
    `.grad` is later changed in place (accumulation, clip_grad_norm_, zero_), which must not reach those.
    A `Clone` primitive call, so dispatch modes see it (grad mode is off here: nothing is recorded)."""
    return _clone().apply(g)


_CLONE = None


def _clone():
    """The Clone primitive, imported on first use (ember.ops imports this module)."""
    global _CLONE
    if _CLONE is None:
        from ..ops.primitives import Clone
        _CLONE = Clone
    return _CLONE


def _call_hooks(hooks, g):
    for h in hooks:
        r = h(g)
        if r is not None:
            g = r
    return g


def run_backward(roots, grad_roots, retain_graph=False, create_graph=False, inputs=None,
                 accumulate=True):
    """Propagate `grad_roots` from `roots` back through the graph.

    With `inputs` given, returns their gradients (autograd.grad) and, unless `accumulate`,
    leaves every `.grad` untouched. Otherwise accumulates into the leaves' `.grad`.
    """
    if dispatch.mode_open():
        for mode in dispatch.current_modes():
            mode.backward_started()
    capture = None
    if inputs is not None:
        capture = {}
        for t in inputs:
            capture[id(t)] = None
    leaf_grads = {}   # id(leaf) -> [leaf, summed grad, edges still to deliver]
    walk = _profile_hooks.marked_backward(_walk) if _PROFILING else _walk   # a profile marks its calls
    prev = set_enabled(create_graph)
    try:
        walk(roots, grad_roots, retain_graph, create_graph, capture, leaf_grads, accumulate)
    finally:
        set_enabled(prev)
    if capture is not None:
        return [capture[id(t)] for t in inputs]
    return None


def _walk(roots, grad_roots, retain_graph, create_graph, capture, leaf_grads, accumulate):
    # 1. count, for each reachable node and each leaf, how many edges lead into it
    deps = {}
    buffers = {}
    stack = []
    for t, g in zip(roots, grad_roots):
        node = t._node
        if node is None:       # the root is itself a leaf
            _count_leaf(t, leaf_grads)
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.n_out
            if node not in deps:
                deps[node] = 0
                stack.append(node)
        i = t._out_idx
        buf[i] = g if buf[i] is None else buf[i] + g
    while stack:   # deps doubles as the visited set
        node = stack.pop()
        for e in node.parents:
            if e is None:
                continue
            p, i = e
            if i < 0:
                _count_leaf(p, leaf_grads)
                continue
            if p in deps:
                deps[p] += 1
            else:
                deps[p] = 1
                stack.append(p)
    done = (capture, accumulate, create_graph)
    for t, g in zip(roots, grad_roots):
        if t._node is None:
            _send_leaf(t, g, leaf_grads, done)
    # with `inputs`, only the nodes through which a gradient reaches one of them run (as torch)
    needed = _leading_to(deps, capture) if capture is not None else None
    # 2. run nodes whose consumers are all done; a leaf is finished when its last edge has delivered
    ready = [n for n in buffers if deps[n] == 0]
    while ready:
        node = ready.pop()
        grads = buffers.pop(node)
        if grads[0] is None and (node.n_out == 1 or all(g is None for g in grads)):
            # every consumer returned None for it (a custom backward may): nothing flows on, but the
            # nodes below still wait on this one, so it passes None to each input
            if not retain_graph:
                node.release()
            in_grads = (None,) * len(node.parents)
        else:
            in_grads = _run_node(node, grads, capture, needed, retain_graph)
        for e, g in zip(node.parents, in_grads):   # send each input its gradient (None counts as done)
            if e is None:
                continue
            p, i = e
            if i < 0:
                _send_leaf(p, g, leaf_grads, done)
                continue
            buf = buffers.get(p)
            if buf is None:
                buf = buffers[p] = [None] * p.n_out
            if g is not None:
                buf[i] = g if buf[i] is None else buf[i] + g
            deps[p] -= 1
            if deps[p] == 0:
                ready.append(p)


def _count_leaf(leaf, leaf_grads):
    entry = leaf_grads.get(id(leaf))
    if entry is None:
        leaf_grads[id(leaf)] = [leaf, None, 1]
    else:
        entry[2] += 1


def _send_leaf(leaf, g, leaf_grads, done):
    """One edge into `leaf` delivers `g` (None: nothing flows on it); after its last edge, the leaf's
    gradient is final: its hooks run, it is captured or accumulated into `.grad`, and then its
    post-accumulate-grad hooks run (data-parallel all-reduce starts there, while backward goes on)."""
    entry = leaf_grads[id(leaf)]
    if g is not None:
        entry[1] = g if entry[1] is None else entry[1] + g
    entry[2] -= 1
    if entry[2] or entry[1] is None:
        return
    capture, accumulate, create_graph = done
    g = entry[1]
    if leaf._hooks:
        g = _call_hooks(leaf._hooks, g)
    if capture is not None and id(leaf) in capture:
        capture[id(leaf)] = g
    if accumulate and (capture is None or id(leaf) in capture):
        _accumulate(leaf, g, create_graph)
        if leaf._post_acc_hooks:
            for h in list(leaf._post_acc_hooks):
                r = h(leaf)
                if r is None or r is leaf:
                    continue
                from .._tensor import Tensor
                if not isinstance(r, Tensor):   # any Tensor: the leaf may be a Parameter
                    raise TypeError(f"backward: expected Tensor, but post accumulate grad hook returned "
                                    f"{type(r).__name__!r}")
                raise RuntimeError("backward: Tensor post accumulate grad hooks should return None "
                                   "(as torch's; a hook may change `param.grad` in place)")


def _leading_to(deps, capture):
    """The nodes of the graph (deps' keys) from which some input in `capture` is reached: a captured
    leaf among its inputs, or an input node that is itself such a node or owns a captured output."""
    left = dict(deps)
    order = []
    stack = [n for n, d in left.items() if d == 0]
    while stack:   # a topological order, consumers before their inputs
        node = stack.pop()
        order.append(node)
        for e in node.parents:
            if e is not None and e[1] >= 0:
                left[e[0]] -= 1
                if left[e[0]] == 0:
                    stack.append(e[0])
    needed = set()
    for node in reversed(order):   # inputs before their consumers
        for e in node.parents:
            if e is None:
                continue
            p, i = e
            if i < 0:
                if id(p) in capture:
                    needed.add(node)
                    break
            elif p in needed or any(id(t) in capture for t in getattr(p, "_captured", {}).values()):
                needed.add(node)
                break
    return needed


def _run_node(node, grads, capture, needed, retain_graph):
    """The gradients a node sends to its inputs: its backward's, or Nones when nothing below it is asked
    for (autograd.grad with `inputs`: the node is not run and its saved values are kept)."""
    if node._hooks or node._retained or capture is not None:
        grads = _node_outputs(node, grads, capture)
    if needed is not None and node not in needed:
        return (None,) * len(node.parents)
    if node._freed:
        from .function import _FREED
        raise RuntimeError(_FREED)
    if node.n_out > 1:
        grads = _materialize(node, grads)
    if _debug.LEVEL >= 2:
        _debug.backward(node)
    if _PROFILING:   # ember.profiler is open: the node runs inside a scope named after it
        in_grads = _profile_hooks.run_node(node, grads)
    elif anomaly.ENABLED:
        in_grads = anomaly.checked_backward(node, grads)
    else:
        in_grads = node.backward(*grads)
    if node._post_hooks:   # nn.Module.register_backward_hook: (grads of the inputs, of the outputs)
        in_grads = _call_post_hooks(node, in_grads, grads)
    if not retain_graph:
        node.release()
    return in_grads


def _call_post_hooks(node, in_grads, grads):
    """torch's grad_fn.register_hook: `hook(grad_inputs, grad_outputs)` may return new grad_inputs (None
    for an input that needs no gradient)."""
    in_grads = tuple(g if e is not None else None for g, e in zip(in_grads, node.parents))
    for hook in list(node._post_hooks):
        out = hook(in_grads, tuple(grads))
        if out is not None:
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(in_grads):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has returned an incorrect "
                                   f"number of values (got {len(out)}, but expected {len(in_grads)})")
            in_grads = out
    return in_grads


# Backwards in two threads may meet at a shared leaf (Hogwild, a shared embedding): as torch does, one
# accumulation into `.grad` at a time, so neither thread's gradient is lost.
_ACCUMULATE = threading.Lock()


def _accumulate(leaf, g, create_graph):
    with _ACCUMULATE:
        if leaf.grad is None:
            leaf.grad = _fresh(g)   # also with create_graph: a recorded Clone (torch: CopyBackwards)
        elif create_graph:
            leaf.grad = leaf.grad + g
        else:   # Assign(op='add') into .grad's memory (function.add_into: seen by dispatch modes)
            grad = leaf.grad
            function.add_into(grad, g)
            grad._bump_version()


def _node_outputs(node, grads, capture):
    """Hooks, retain_grad and captured non-leaf inputs, for the gradients of a node's outputs."""
    grads = list(grads)
    for i in range(node.n_out):
        if grads[i] is None:
            continue
        if node._hooks and i in node._hooks:
            grads[i] = _call_hooks(node._hooks[i], grads[i])
        if node._retained and i in node._retained:
            t = node._retained[i]()
            if t is not None:
                g = grads[i].detach()
                t.grad = _fresh(g) if t.grad is None else t.grad + g
        if capture is not None:
            owner = getattr(node, "_captured", None)
            if owner and i in owner and id(owner[i]) in capture:
                capture[id(owner[i])] = grads[i]
    return grads


def _materialize(node, grads):
    if any(g is None for g in grads) and getattr(node, "_materialize", True):
        meta = getattr(node, "_out_meta", None)
        if meta is not None:
            from .. import zeros
            return [g if g is not None else zeros(*meta[i][0], dtype=meta[i][1], device=node._device)
                    for i, g in enumerate(grads)]
    return grads
