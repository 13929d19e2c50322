"""Symbolic dimensions (`ember.compile(fn, dynamic=...)`): after two traces at two sizes of the dynamic
dims, every later size is made from them without running the Python function again.

Two traces of one program at batch sizes B0 and B1 have the same nodes; where an int (in an attribute,
a value's shape or a constant's shape) differs, it must be one multiple of the batch in both (a = k*B0,
a' = k*B1: `Reshape(B*T, C)`, `Random(shape=(B, T, C))`, `ConvInputGrad(x_shape=(B, ...))`). That is the
template (`unify`). A constant's value that differs must be an element count, k*B + c with c in -1, 0, 1
(a mean's divisor `B * T`, an unbiased variance's `B - 1`), or its reciprocal (a mean's gradient).
`specialize` fills the template in for a new B, recomputes dropout's counter offsets from the
new draw sizes and checks every node with its `infer`. Anything else (different nodes, a non-linear size,
a constant of dynamic size that is not a fill, several independent dynamic sizes) raises `NotSymbolic`
and the compiler retraces for that size instead, naming the reason: never a wrong shape.
"""
from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np

from ..backends import array_module, host

__all__ = ["unify", "specialize", "NotSymbolic", "Template"]


class NotSymbolic(Exception):
    pass


class Lin:
    """An int that is `k` times the batch size."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def at(self, b):
        v = self.k * b
        if v.denominator != 1:
            raise NotSymbolic(f"a size {self.k} x batch is not an integer at batch {b}")
        return int(v)


class Count:
    """A constant's value that is an element count of the batch, n = k*B + c (c in -1, 0, 1: the `B` or
    `B * T` a mean divides by, an unbiased variance's `B - 1`), or with `recip` its reciprocal 1/n (a
    mean's gradient, folded into a constant). Not a `Lin`: it lives in `Template.consts` only."""
    __slots__ = ("k", "c", "recip")

    def __init__(self, k, c, recip):
        self.k, self.c, self.recip = k, c, recip

    def value(self, b, dtype):
        n = self.k * b + self.c
        if n.denominator != 1:
            raise NotSymbolic(f"a count {self.k} x batch {self.c:+d} is not an integer at batch {b}")
        n = dtype.type(int(n))
        return dtype.type(1) / n if self.recip else n   # 1/n rounded once in dtype, as eager divides


def _counted(x, dtype):
    """(n, recip) when the scalar x is the integer n, or exactly dtype's 1/n, else None."""
    x = float(x)
    if x.is_integer():
        return int(x), False
    if x != 0 and abs(1 / x) < 2 ** 31:
        n = round(1 / x)
        if n != 0 and dtype.type(1) / dtype.type(n) == dtype.type(x):
            return n, True
    return None


def _count(a, b, B0, B1):
    """Count when the all-equal constants `a` (at batch B0) and `b` (at B1) are one count of the batch
    (or its reciprocal) at both sizes, else None."""
    if a.size == 0 or b.size == 0 or a.dtype != b.dtype or a.dtype.kind not in "fiu":
        return None
    x, y = a.reshape(-1)[0], b.reshape(-1)[0]
    if not ((a == x).all() and (b == y).all()):
        return None
    cx, cy = _counted(x, a.dtype), _counted(y, a.dtype)
    if cx is None or cy is None or cx[1] != cy[1]:
        return None
    for c in (0, -1, 1):
        k = Fraction(cx[0] - c, B0)
        if k != 0 and k * B1 + c == cy[0]:
            return Count(k, c, cx[1])
    return None


def _batch(sizes):
    if not sizes or len(set(sizes)) != 1:
        raise NotSymbolic(f"the dynamic dims have different sizes {sizes}; one batch size is supported")
    return sizes[0]


def _uni(a, b, B0, B1, where):
    """The template of two attribute/shape values: equal parts stay, differing ints become Lin."""
    if type(a) is not type(b):
        raise NotSymbolic(f"{where}: {a!r:.40} vs {b!r:.40}")
    if isinstance(a, bool) or not isinstance(a, (int, tuple, list, slice)):
        if a != b:
            raise NotSymbolic(f"{where}: {a!r:.40} vs {b!r:.40}")
        return a
    if isinstance(a, int):
        if a == b:
            return a
        k = Fraction(a, B0)
        if k * B1 != b:
            raise NotSymbolic(f"{where}: {a} at batch {B0} and {b} at batch {B1} are not one multiple of it")
        return Lin(k)
    if isinstance(a, slice):
        return slice(*(_uni(x, y, B0, B1, where) for x, y in ((a.start, b.start), (a.stop, b.stop),
                                                              (a.step, b.step))))
    if len(a) != len(b):
        raise NotSymbolic(f"{where}: {a!r:.40} vs {b!r:.40}")
    return type(a)(_uni(x, y, B0, B1, where) for x, y in zip(a, b))


def _fill(t, b):
    if isinstance(t, Lin):
        return t.at(b)
    if isinstance(t, tuple):
        return tuple(_fill(x, b) for x in t)
    if isinstance(t, list):
        return [_fill(x, b) for x in t]
    if isinstance(t, slice):
        return slice(_fill(t.start, b), _fill(t.stop, b), _fill(t.step, b))
    return t


def _has_lin(t):
    if isinstance(t, Lin):
        return True
    if isinstance(t, (tuple, list)):
        return any(_has_lin(x) for x in t)
    if isinstance(t, slice):
        return any(_has_lin(x) for x in (t.start, t.stop, t.step))
    return False


class Template:
    def __init__(self, cap, B0, shapes, attrs, consts):
        self.cap, self.B0 = cap, B0
        self.shapes = shapes      # value id -> shape template
        self.attrs = attrs        # id(node) -> attrs template (only nodes with a Lin)
        self.consts = consts      # value id -> fill value (consts of dynamic shape), or a Count


def _nodes(g):
    for n in g.nodes:
        yield n
        yield from n.fused or ()


def unify(capA, sizesA, capB, sizesB) -> Template:
    """The template of two captures of one program at two batch sizes."""
    A, B = capA.graph, capB.graph
    B0, B1 = _batch(sizesA), _batch(sizesB)
    if B0 == B1:
        raise NotSymbolic("both traces have the same batch size")
    la, lb = [v.id for v in A.values], [v.id for v in B.values]
    if len(A.leaves) != len(B.leaves) or len(A.nodes) != len(B.nodes) or len(la) != len(lb):
        raise NotSymbolic("the two traces differ in their nodes (a Python branch on the batch size?)")
    vmap = {}     # B's value id -> A's value id
    shapes = {}

    def pair(va, vb, where):
        if va.dtype != vb.dtype or va.kind != vb.kind:
            raise NotSymbolic(f"{where}: %{va.id} {va.type_str} vs {vb.type_str}")
        vmap[vb.id] = va.id
        shapes[va.id] = _uni(va.shape, vb.shape, B0, B1, f"{where}: the shape of %{va.id}")

    consts = {}
    for va, vb in zip(A.leaves, B.leaves):
        pair(va, vb, f"leaf {va.src or va.kind}")
        if va.kind == "state" and va.shape != vb.shape:
            raise NotSymbolic(f"the state tensor {va.src} has a dynamic size")
        if va.kind == "const" and va.shape != vb.shape:
            a, b = A.consts[va.id].reshape(-1), B.consts[vb.id].reshape(-1)
            fill = array_module(a).full_like
            if a.size and _equal(a, fill(a, a[0])) and _equal(b, fill(b, a[0])):
                consts[va.id] = a[0]
            else:
                consts[va.id] = _count(a, b, B0, B1)
                if consts[va.id] is None:
                    raise NotSymbolic(f"the constant %{va.id} has a dynamic size and is not a fill")
        elif va.kind == "const" and not _equal(A.consts[va.id], B.consts[vb.id]):
            count = _count(A.consts[va.id], B.consts[vb.id], B0, B1)
            if count is None:
                raise NotSymbolic(f"the constant %{va.id} {va.type_str} differs between the traces")
            consts[va.id] = count
    attrs = {}
    for na, nb in zip(_nodes(A), _nodes(B)):
        where = f"{na.name} (at {na.where})"
        if na.name != nb.name or [vmap.get(v.id) for v in nb.inputs] != [v.id for v in na.inputs] \
                or len(na.outputs) != len(nb.outputs):
            raise NotSymbolic(f"the two traces differ at {where}")
        t = {k: _uni(v, nb.attrs.get(k), B0, B1, where) for k, v in na.attrs.items()}
        if set(na.attrs) != set(nb.attrs):
            raise NotSymbolic(f"the two traces differ in the attributes of {where}")
        if any(_has_lin(x) for x in t.values()):
            attrs[id(na)] = t
        for oa, ob in zip(na.outputs, nb.outputs):
            if ob.id not in vmap:
                pair(oa, ob, where)
    for name, xs, ys in (("outputs", A.outputs, B.outputs), ("escapes", A.escapes, B.escapes)):
        if [v.id for v in xs] != [vmap.get(v.id) for v in ys]:
            raise NotSymbolic(f"the two traces differ in their {name}")
    if [(c[0].id, c[1], c[2]) for c in A.checks] != [(vmap.get(c[0].id), c[1], c[2]) for c in B.checks]:
        raise NotSymbolic("the two traces read different tensor values")
    return Template(capA, B0, shapes, attrs, consts)


def specialize(tpl: Template, b: int):
    """A capture for batch size `b` made from the template (graph, constants, dropout offsets)."""
    from ..backends.meta import MetaArray
    from ..ops import random_prims
    cap = tpl.cap
    g0 = cap.graph
    g = copy.copy(g0)
    vals = {}
    for v in g0.values:
        w = copy.copy(v)
        w.shape = _fill(tpl.shapes.get(v.id, v.shape), b)
        vals[v.id] = w
    g.values = [vals[v.id] for v in g0.values]
    g.leaves = [vals[v.id] for v in g0.leaves]
    g.consts = dict(g0.consts)
    for vid, fill in tpl.consts.items():
        dt = g0.consts[vid].dtype
        g.consts[vid] = host.full(vals[vid].shape, fill.value(b, dt) if isinstance(fill, Count) else fill, dt)

    def node(n):
        n2 = copy.copy(n)
        n2.attrs = {k: _fill(v, b) for k, v in tpl.attrs[id(n)].items()} if id(n) in tpl.attrs else n.attrs
        n2.inputs = [vals[v.id] for v in n.inputs]
        n2.outputs = [vals[v.id] for v in n.outputs]
        if n.fused is not None:
            n2.fused = [node(m) for m in n.fused]
        else:
            inst = n.prim.__new__(n.prim)
            inst.__dict__.update(n2.attrs)
            spec = inst.infer(*[MetaArray(v.shape, _np(v.dtype)) for v in n2.inputs])
            for o, (shape, _) in zip(n2.outputs, spec if n.prim.multi_output else (spec,)):
                if tuple(shape) != o.shape:
                    raise NotSymbolic(f"{n.name} (at {n.where}): infer gives {list(shape)} at batch {b}, the "
                                      f"template {list(o.shape)}")
        for o in n2.outputs:
            o.node = n2
        return n2

    g.nodes = [node(n) for n in g0.nodes]
    g.outputs = [vals[v.id] for v in g0.outputs]
    g.escapes = [vals[v.id] for v in g0.escapes]
    g.checks = [(vals[c[0].id],) + tuple(c[1:]) for c in g0.checks]
    g.reads = [(vals[v.id], k) for v, k in g0.reads]

    c = copy.copy(cap)
    c.graph = g
    c.leaf_src = dict(cap.leaf_src)
    draws = [(n, n2) for n, n2 in zip(_nodes(g0), _nodes(g)) if n.name == "Random"]
    if draws:
        if any(n.inputs[0].kind != "rng" for n, _ in draws):
            raise NotSymbolic("a random draw's state is not a generator's")
        gens = {cap.leaf_src[n.inputs[0].id][1] for n, _ in draws}
        if len(gens) != 1:
            raise NotSymbolic("random draws from several generators")
        gen = gens.pop()
        old_cum = new_cum = 0
        for n, n2 in sorted(draws, key=lambda p: cap.leaf_src[p[0].inputs[0].id][2]):
            if cap.leaf_src[n.inputs[0].id][2] != old_cum:
                raise NotSymbolic("the random draws' counter offsets are not consecutive")
            c.leaf_src[n.inputs[0].id] = ("rng", gen, new_cum)
            old_cum += _blocks(random_prims, n.attrs)
            new_cum += _blocks(random_prims, n2.attrs)
        if cap.gen_total.get(gen) != old_cum:
            raise NotSymbolic("the generator advanced outside the graph's draws")
        c.gen_total = dict(cap.gen_total)
        c.gen_total[gen] = new_cum
    return c


def _equal(a, b):
    """Same shape, dtype and values, NaN equal to NaN (a loss's NaN for an empty mean is one constant)."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(array_module(a).array_equal(a, b, equal_nan=True))


def _blocks(rp, attrs):
    n = 1
    for d in attrs["shape"]:
        n *= d
    return rp.blocks(attrs["dist"], attrs["dtype"], n, attrs.get("words", 1), attrs.get("span", 0),
                     attrs.get("bits", 32))


def _np(name):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(name)
