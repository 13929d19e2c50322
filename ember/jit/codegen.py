"""Code generation for the CPU: a graph becomes one Python function over NumPy arrays.

    def run(L):
        v0, v1, v2 = L
        v3 = f0(v0, v1, v2)          # Linear  train.py:12
        v4 = f1(v3)                  # Relu    train.py:12
        del v3
        if not c0(v9): raise GuardFailure(0)
        return [v4], [v7], []

Each `fN` is the primitive's own `forward`, bound to a node instance carrying its attributes (or a
fused kernel from `kernels.py`), so a replay does exactly the eager arithmetic with no Tensor objects,
no dispatcher and no autograd bookkeeping. The first run is interpreted and checked against the IR
(shape and dtype of every value), which also finds the nodes whose raw forward output needs the
dispatcher's dtype rule; the generated function applies it only there.
"""
from __future__ import annotations

import numpy as np

from .. import _debug
from ..backends import array_module, host

__all__ = ["Runner", "GuardFailure", "CompileError", "schedule"]


class GuardFailure(Exception):
    """A guard failed as a replay started (before any in-place write): a value guard (`index`: the
    check's index), or a state tensor's shape (`reason` says which)."""

    def __init__(self, index, reason=None):
        super().__init__(index)
        self.index, self.reason = index, reason


class CompileError(RuntimeError):
    pass


def _fix(o, dt):
    """The dispatcher's output rule (Primitive.apply): NumPy scalars become 0-d arrays, a float
    output takes the first input's float dtype."""
    if o.__class__ is not np.ndarray:
        o = host.asarray(o)   # a NumPy scalar from a 0-d result
    if dt is not None and o.dtype != dt and o.dtype.kind in "fV" and dt.kind in "fV":
        o = o.astype(dt)
    return o


def node_fn(node):
    """The callable that runs one node on arrays."""
    if node.fused is not None:
        from .kernels import build, build_numba, numba_wanted
        return (numba_wanted(node) and build_numba(node)) or build(node)
    inst = node.prim.__new__(node.prim)
    inst.__dict__.update(node.attrs)
    kernel = node.prim.cpu_kernel   # a compiled CPU kernel eager mode would run (backends/cpu_kernels.py)
    if kernel is not None:
        return lambda *arrays: kernel(inst, *arrays)
    return inst.forward


def _check_fn(kind, expected):
    if kind == "item":
        return lambda a: a.reshape(()).item() == expected
    if kind == "tolist":
        return lambda a: a.tolist() == expected
    exp = host.asarray(expected)
    return lambda a: a.shape == exp.shape and bool(array_module(a).array_equal(a, exp))


def _read_fn(kind):
    if kind == "item":
        return lambda a: a.reshape(()).item()
    if kind == "tolist":
        return lambda a: a.tolist()
    return lambda a: a


def schedule(graph):
    """The order to run nodes and checks in: ('node', Node) / ('check', index) items. A check runs
    right after its value exists; when an in-place write would come first, the check and the nodes
    it needs are moved before the writes (if that keeps every read's value). Returns (order, safe):
    safe is False when some check cannot run before a write (the compiler then keeps eager mode)."""
    nodes = graph.nodes
    pos = {id(n): i for i, n in enumerate(nodes)}
    first_effect = next((i for i, n in enumerate(nodes) if n.mutates), len(nodes))
    checks_at = {}      # node index after which the check runs (-1: at the start)
    need = set()        # node indices every check needs
    for ci, (v, _, _, _) in enumerate(graph.checks):
        if v.node is None:
            checks_at.setdefault(-1, []).append(ci)
            continue
        stack = [v.node]
        while stack:
            n = stack.pop()
            i = pos[id(n)]
            if i in need:
                continue
            need.add(i)
            stack.extend(x.node for x in n.inputs if x.node is not None)
        checks_at.setdefault(pos[id(v.node)], []).append(ci)
    last_needed = max(need) if need else -1
    order = [("check", ci) for ci in checks_at.get(-1, ())]
    if last_needed < first_effect:     # every check already runs before the first write
        for i, n in enumerate(nodes):
            order.append(("node", n))
            order.extend(("check", ci) for ci in checks_at.get(i, ()))
        return order, True
    # move the needed nodes (and the checks) before the rest
    written = set()
    for i, n in enumerate(nodes):
        if i in need:
            if n.mutates or any(x.storage in written for x in n.inputs):
                return None, False
        if n.mutates:
            written.update(n.inputs[j].storage for j in n.mutates)
    for i in sorted(need):
        order.append(("node", nodes[i]))
        order.extend(("check", ci) for ci in checks_at.get(i, ()))
    order.extend(("node", n) for i, n in enumerate(nodes) if i not in need)
    return order, True


class Runner:
    """Runs a graph on a list of leaf arrays (in graph.leaves order); returns (outputs, escapes,
    read outputs) as lists of arrays / Python values."""

    def __init__(self, graph):
        self.graph = graph
        self.read_outputs = graph.reads
        order, safe = schedule(graph)
        if not safe:
            raise CompileError("a value read (.item(), bool(t), ...) depends on an in-place write made "
                               "earlier in the same call")
        self.order = order
        self.fns = {id(n): node_fn(n) for n in graph.nodes}
        self.checks = [_check_fn(kind, exp) for _, kind, exp, _ in graph.checks]
        self.reads = [_read_fn(kind) for _, kind in self.read_outputs]
        self.fix = {}       # id(node) -> first input's dtype where the raw output needs _fix
        self._run = None
        self.source = None

    def __call__(self, leaves):
        if self._run is None:
            out = self._interpret(leaves)
            self._generate()
            return out
        return self._run(leaves)

    # --- the first run: interpreted and checked -------------------------------------------------
    def _interpret(self, leaves):
        g = self.graph
        env = {v.id: a for v, a in zip(g.leaves, leaves)}
        for kind, item in self.order:
            if kind == "check":
                if not self.checks[item](env[g.checks[item][0].id]):
                    raise GuardFailure(item)
                continue
            n = item
            ins = [env[v.id] for v in n.inputs]
            out = self.fns[id(n)](*ins)
            outs = out if len(n.outputs) > 1 else (out,)
            dt = ins[0].dtype if ins and not isinstance(n.prim, str) and n.prim.keeps_dtype else None
            for o, v in zip(outs, n.outputs):
                f = _fix(o, dt)
                if f is not o:
                    self.fix[id(n)] = dt
                if f.shape != v.shape or f.dtype.name != v.dtype:
                    raise CompileError(f"{n.name} (at {n.where}): the trace recorded {v.type_str}, the replay "
                                       f"gave {f.dtype.name}{list(f.shape)}")
                env[v.id] = f
        return ([env[v.id] for v in g.outputs], [env[v.id] for v in g.escapes],
                [r(env[v.id]) for r, (v, _) in zip(self.reads, self.read_outputs)])

    # --- the generated function --------------------------------------------------------------------
    def _generate(self):
        g = self.graph
        glob = {"GuardFailure": GuardFailure, "_fix": _fix}
        lines = ["def run(L):"]
        if g.leaves:
            lines.append("    " + ", ".join(f"v{v.id}" for v in g.leaves) + (", = L" if len(g.leaves) == 1 else " = L"))
        free = g.plan.get("free", False)   # passes.memplan: drop each array after its last use
        keep = {v.id for v in g.outputs} | {v.id for v in g.escapes} | {v.id for v, _ in self.read_outputs}
        last = {}
        for i, (kind, item) in enumerate(self.order):
            vals = [g.checks[item][0]] if kind == "check" else item.inputs
            for v in vals:
                last[v.id] = i
        for i, (kind, item) in enumerate(self.order):
            if kind == "check":
                glob[f"c{item}"] = self.checks[item]
                lines.append(f"    if not c{item}(v{g.checks[item][0].id}): raise GuardFailure({item})")
            else:
                n = item
                fname = f"f{i}"
                glob[fname] = self.fns[id(n)]
                call = f"{fname}({', '.join(f'v{v.id}' for v in n.inputs)})"
                lhs = ", ".join(f"v{o.id}" for o in n.outputs)
                where = f"  # {n.name} {n.where or ''}"
                if id(n) in self.fix:
                    dt = self.fix[id(n)]
                    glob[f"d{i}"] = dt
                    if len(n.outputs) == 1:
                        lines.append(f"    {lhs} = _fix({call}, d{i}){where}")
                    else:
                        lines.append(f"    {lhs} = [_fix(o, d{i}) for o in {call}]{where}")
                else:
                    lines.append(f"    {lhs} = {call}{where}")
            dead = [v for v, j in last.items() if j == i and v not in keep] if free else ()
            if dead:
                lines.append("    del " + ", ".join(f"v{d}" for d in sorted(dead)))
        for k, r in enumerate(self.reads):
            glob[f"r{k}"] = r
        outs = ", ".join(f"v{v.id}" for v in g.outputs)
        escs = ", ".join(f"v{v.id}" for v in g.escapes)
        reads = ", ".join(f"r{k}(v{v.id})" for k, (v, _) in enumerate(self.read_outputs))
        lines.append(f"    return [{outs}], [{escs}], [{reads}]")
        self.source = "\n".join(lines) + "\n"
        code = compile(self.source, "<ember.compile>", "exec")
        exec(code, glob)   # our own generated source: no user text reaches it
        self._run = glob["run"]
        if _debug.LEVEL >= 3:
            import sys
            sys.stderr.write(self.source)
