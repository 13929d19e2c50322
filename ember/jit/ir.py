"""The compiler's IR: a straight-line graph of primitive calls over typed values.

    %0 : float32[64, 784] = input[0]
    %1 : float32[100, 784] = state  # 0.weight
    %4 : float32[64, 100] = Linear(%0, %1, %2)  # train.py:12
    %5 : float32[64, 100] = Relu(%4)  # train.py:12

A `Value` has a shape, a dtype (by name) and a device (by name); a `Node` is one primitive (the class),
its attributes, its input and output values and the user's source line. Nothing here touches array
data: whoever runs a graph (codegen for NumPy, later CuPy or the planner) maps nodes to kernels.
"""
from __future__ import annotations

__all__ = ["Value", "Node", "Graph", "LEAF_KINDS"]

LEAF_KINDS = ("input", "state", "rng", "const")


class Value:
    """One SSA value. `kind` is 'node' for a computed value or one of LEAF_KINDS for a leaf; `src`
    says where a leaf comes from (an argument path, a state name, an RNG draw); `storage` names the
    memory it lives in (values that are views of one array share it; an in-place write makes a new
    version of the same storage)."""
    __slots__ = ("id", "shape", "dtype", "device", "kind", "src", "storage", "node")

    def __init__(self, id, shape, dtype, device="cpu", kind="node", src=None, storage=None):
        self.id = id
        self.shape = tuple(shape)
        self.dtype = dtype            # a dtype name: 'float32'
        self.device = device          # a device name: 'cpu'
        self.kind = kind
        self.src = src
        self.storage = storage if storage is not None else id
        self.node = None              # the producing Node (computed values)

    @property
    def type_str(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        return f"%{self.id}"


class Node:
    """One primitive call. `mutates` are the indices of the inputs it writes in place (Assign: (0,),
    AdamStep: p, m, v, step); `fused` holds the sub-graph of a fused node (see passes.fuse)."""
    __slots__ = ("prim", "attrs", "inputs", "outputs", "mutates", "where", "fused")

    def __init__(self, prim, attrs, inputs, outputs, mutates=(), where=None, fused=None):
        self.prim = prim
        self.attrs = dict(attrs)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.mutates = tuple(mutates)
        self.where = where
        self.fused = fused

    @property
    def name(self) -> str:
        return self.prim if isinstance(self.prim, str) else self.prim.__name__

    @property
    def pure(self) -> bool:
        return not self.mutates and self.name not in IMPURE

    def __repr__(self):
        return f"<Node {self.name} {self.inputs} -> {self.outputs}>"


# Primitives whose result is not a function of their inputs' values alone, or that read a device.
IMPURE = {"Random", "ToDevice"}


def _fmt_attr(v) -> str:
    if isinstance(v, slice):
        return f"{'' if v.start is None else v.start}:{'' if v.stop is None else v.stop}" + \
            ("" if v.step is None else f":{v.step}")
    if isinstance(v, tuple):
        inner = ", ".join(_fmt_attr(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    if v is Ellipsis:
        return "..."
    if hasattr(v, "name") and type(v).__name__.endswith("DType") or type(v).__name__ == "dtype":
        return str(getattr(v, "name", v))
    return repr(v)


def _fmt_node(n, lines):
    lhs = ", ".join(f"%{o.id} : {o.type_str}" for o in n.outputs)
    args = ", ".join(f"%{v.id}" for v in n.inputs)
    attrs = "".join(f", {k}={_fmt_attr(v)}" for k, v in sorted(n.attrs.items()))
    mut = f"  ! writes {', '.join('%' + str(n.inputs[i].id) for i in n.mutates)}" if n.mutates else ""
    where = f"  # {n.where}" if lines and n.where else ""
    return f"{lhs} = {n.name}({args}{attrs}){mut}{where}"


class Graph:
    """Leaves, then nodes in execution order, then outputs. `escapes` are (value, index) pairs the
    runner writes back into live tensors; `checks` are value guards (value, kind, expected, where)."""

    def __init__(self):
        self.values: list[Value] = []
        self.leaves: list[Value] = []
        self.nodes: list[Node] = []
        self.outputs: list[Value] = []
        self.escapes: list[Value] = []
        self.checks: list = []       # (Value, kind, expected python value, where)
        self.reads: list = []        # (Value, kind): values read (.item(), .tolist()) and returned as such
        self.consts: dict = {}       # value id -> array of a const leaf (opaque here: the backend's array)
        self.plan: dict = {}         # the memory plan's decisions (passes.memplan)
        self.fresh: set = set()      # const leaves the graph writes in place: each run starts from a copy

    def new_value(self, shape, dtype, device="cpu", kind="node", src=None, storage=None) -> Value:
        v = Value(len(self.values), shape, dtype, device, kind, src, storage)
        self.values.append(v)
        if kind != "node":
            self.leaves.append(v)
        return v

    def add_node(self, prim, attrs, inputs, outputs, mutates=(), where=None) -> Node:
        n = Node(prim, attrs, inputs, outputs, mutates, where)
        for o in outputs:
            o.node = n
        self.nodes.append(n)
        return n

    def uses(self) -> dict:
        """value id -> number of uses (by nodes, outputs, escapes and checks)."""
        count: dict[int, int] = {}
        for n in self.nodes:
            for v in n.inputs:
                count[v.id] = count.get(v.id, 0) + 1
        for v in self.roots():
            count[v.id] = count.get(v.id, 0) + 1
        return count

    def roots(self) -> list:
        """The values a run must produce: outputs, escapes, checked and returned reads."""
        return list(self.outputs) + list(self.escapes) + [c[0] for c in self.checks] + [r[0] for r in self.reads]

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.name] = out.get(n.name, 0) + 1
        return out

    def __len__(self):
        return len(self.nodes)

    # --- printing -------------------------------------------------------------------------------
    def format(self, lines: bool = True) -> str:
        """The readable listing (`print(graph)`); `lines=False` drops the source comments (golden files)."""
        out = []
        for v in self.leaves:
            src = "" if v.src is None else f"  # {v.src}"
            out.append(f"%{v.id} : {v.type_str} = {v.kind}{src}")
        for n in self.nodes:
            out.append(_fmt_node(n, lines))
            for sub in n.fused or ():
                out.append("    | " + _fmt_node(sub, False))
        for v, kind, expected, where in self.checks:
            out.append(f"check {kind}(%{v.id}) == {expected!r:.60}" + (f"  # {where}" if lines and where else ""))
        if self.escapes:
            out.append("escape " + ", ".join(f"%{v.id}" for v in self.escapes))
        out.append("return " + ", ".join([f"%{v.id}" for v in self.outputs] +
                                         [f"{kind}(%{v.id})" for v, kind in self.reads]))
        return "\n".join(out)

    def __str__(self):
        return self.format()
