"""Graph passes: each a function `graph -> graph` that edits the graph in place and returns it.

| pass | what |
|---|---|
| `dce` | drop pure nodes whose outputs nobody uses (in-place writes and random draws stay) |
| `fold` | run pure nodes whose inputs are all constants now; their outputs become constants (unless written in place later) |
| `cse` | one node for identical pure calls on identical inputs (the table resets at each in-place write; outputs written in place later are kept apart) |
| `simplify` | x*1, x/1, x+0, x-0, Reshape/Expand to the same shape, identity Permute, Cast to the same dtype, Neg(Neg x), Clone of a fresh array nothing else reads |
| `concat` | a sum of `IndexAddInto` pieces that tile their output along one axis (the backward of `split`/`chunk`) becomes one `Cat` |
| `pack_attention` | the Cat of AttentionGrad's q/k/v gradients reshaped back to a fused projection's columns becomes one `AttentionGradPacked` that writes them there |
| `pool_relu` | ReLU's gradient mask after MaxPoolGrad moves before it, onto the pooled gradient (the same values, 4x fewer elements at 2x2) |
| `fuse` | chains of elementwise nodes (and a Linear/Conv/MatMul head with its bias and activation) into one `Fused` node that runs in one buffer |
| `fuse_updates` | an update's in-place writes (`p -= lr * p.grad`, `g.zero_()`, gradient accumulation) and the arithmetic between them, tensors of one shape, into one `Fused` node that writes them in place |
| `memplan` | frees every array after its last use (codegen emits `del`) |

`run_passes(graph, names)` runs a pipeline (None: DEFAULT); with EMBER_DEBUG=2 it prints the graph after
each pass. Passes that need array values (`fold`, and `simplify` for its constants) read them from
`graph.consts` and run nodes through `codegen.node_fn`, the CPU executor.
"""
from __future__ import annotations

import sys

from .. import _debug
from .ir import Node

__all__ = ["dce", "fold", "cse", "simplify", "concat", "pack_attention", "pool_relu", "fuse", "fuse_updates", "memplan", "run_passes", "DEFAULT", "PASSES",
           "ELEMENTWISE", "FUSE_HEADS"]


def _written_storages(graph) -> set:
    out = set()
    for n in graph.nodes:
        for i in n.mutates:
            out.add(n.inputs[i].storage)
        for sub in n.fused or ():
            for i in sub.mutates:
                out.add(sub.inputs[i].storage)
    return out


def replace_uses(graph, mapping: dict):
    """Make every use of value `a` a use of `mapping[a.id]` (node inputs, outputs, escapes, checks)."""
    def r(v):
        while v.id in mapping:
            v = mapping[v.id]
        return v
    for n in graph.nodes:
        n.inputs = [r(v) for v in n.inputs]
        for sub in n.fused or ():
            sub.inputs = [r(v) for v in sub.inputs]
    graph.outputs = [r(v) for v in graph.outputs]
    graph.escapes = [r(v) for v in graph.escapes]
    graph.checks = [(r(c[0]),) + tuple(c[1:]) for c in graph.checks]
    graph.reads = [(r(v), k) for v, k in graph.reads]


def dce(graph):
    """Dead-code elimination: drop pure nodes none of whose outputs is used (walking backwards, so a
    chain dies at once). In-place writes and random draws stay; unused leaves go."""
    live = {v.id for v in graph.roots()}
    keep = []
    for n in reversed(graph.nodes):
        if n.pure and not any(o.id in live for o in n.outputs):
            continue
        keep.append(n)
        live.update(v.id for v in n.inputs)
    graph.nodes = keep[::-1]
    graph.leaves = [v for v in graph.leaves if v.id in live or v.kind == "input"]
    for k in [k for k in graph.consts if k not in live]:
        del graph.consts[k]
    return graph


def fold(graph, max_bytes: int = 1 << 20):
    """Constant folding: a pure node whose inputs are all constants (never written in place) runs now;
    its outputs become constants. Outputs larger than `max_bytes` that are bigger than their inputs
    (an Expand of a scalar) are left to run, so folding never bloats the graph."""
    from .codegen import node_fn, _fix
    written = _written_storages(graph)
    keep = []
    for n in graph.nodes:
        ins = n.inputs
        # an output written in place later is not folded: the constant would carry one run's writes into the next
        if n.pure and n.fused is None and ins and all(v.kind == "const" and v.storage not in written for v in ins) \
                and all(o.storage not in written for o in n.outputs):
            arrays = [graph.consts[v.id] for v in ins]
            nbytes_in = sum(a.nbytes for a in arrays)
            out_bytes = sum(_nbytes(o) for o in n.outputs)
            if not (out_bytes > max_bytes and out_bytes > nbytes_in):
                out = node_fn(n)(*arrays)
                outs = out if len(n.outputs) > 1 else (out,)
                dt = arrays[0].dtype if n.prim.keeps_dtype else None
                for o, v in zip(outs, n.outputs):
                    v.kind, v.node, v.src = "const", None, f"folded {n.name}"
                    graph.consts[v.id] = _fix(o, dt)
                    graph.leaves.append(v)
                continue
        keep.append(n)
    graph.nodes = keep
    return graph


_ITEMSIZE = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2,
             "bool": 1, "uint8": 1, "int8": 1, "complex64": 8, "complex128": 16}


def _nbytes(v):
    n = _ITEMSIZE.get(v.dtype, 8)
    for d in v.shape:
        n *= d
    return n


def _attrs_key(attrs):
    from ..autograd.dispatch import attrs_key
    try:
        return attrs_key(attrs)
    except TypeError:
        return None


def cse(graph):
    """Common-subexpression elimination over pure nodes; an in-place write starts a new table (a value
    read before and after it is not the same)."""
    written = _written_storages(graph)
    table, mapping, keep = {}, {}, []
    for n in graph.nodes:
        if n.mutates or (n.fused and any(s.mutates for s in n.fused)):
            table = {}
            keep.append(n)
            continue
        ak = _attrs_key(n.attrs)
        if not n.pure or n.fused is not None or ak is None or any(o.storage in written for o in n.outputs):
            # (an output written in place later is not interchangeable with an equal one: the write shows)
            keep.append(n)
            continue
        ins = [mapping.get(v.id, v) for v in n.inputs]
        key = (n.name, ak, tuple(v.id for v in ins))
        prev = table.get(key)
        if prev is not None:
            for o, p in zip(n.outputs, prev.outputs):
                mapping[o.id] = p
            continue
        table[key] = n
        keep.append(n)
    graph.nodes = keep
    replace_uses(graph, mapping)
    return graph


def _const_value(graph, v):
    """The single value of a constant whose elements are all equal (a scalar), else None."""
    if v.kind != "const":
        return None
    a = graph.consts.get(v.id)
    if a is None or a.size == 0 or a.size > 64:
        return None
    first = a.reshape(-1)[0]
    if not (a == first).all():
        return None
    return first.item()


def simplify(graph):
    """Algebraic simplification: each rule replaces a node's output by one of its inputs when that
    changes neither the value, the shape nor the dtype (and no in-place write could tell them apart)."""
    written = _written_storages(graph)
    roots = {v.id for v in graph.outputs} | {v.id for v in graph.escapes}
    uses = graph.uses()
    sharing = {}
    for v in graph.values:
        sharing[v.storage] = sharing.get(v.storage, 0) + 1
    mapping, keep = {}, []
    for n in graph.nodes:
        n.inputs = [mapping.get(v.id, v) for v in n.inputs]
        if n.name == "Clone" and _fresh_and_private(n.inputs[0], uses, sharing, written) \
                and n.outputs[0].storage not in written:
            mapping[n.outputs[0].id] = n.inputs[0]   # the copy of an array nobody else sees is the array
            continue
        src = _simplify_one(graph, n) if len(n.outputs) == 1 and n.fused is None else None
        if src is not None:
            out = n.outputs[0]
            if (src.shape == out.shape and src.dtype == out.dtype and out.id not in roots
                    and out.storage not in written and src.storage not in written):
                mapping[out.id] = src
                continue
        keep.append(n)
    graph.nodes = keep
    replace_uses(graph, mapping)
    return graph


def _fresh_and_private(v, uses, sharing, written) -> bool:
    """Whether `v` is a computed array in memory of its own (no other value is a view or a version of
    it; not a leaf), read by exactly one node and never written in place: copying it gives nothing the
    original would not."""
    return (v.kind == "node" and sharing.get(v.storage) == 1 and uses.get(v.id, 0) == 1
            and v.storage not in written)


def _simplify_one(graph, n):
    name, ins = n.name, n.inputs
    if name in ("Mul", "Div", "Add", "Sub"):
        unit = 1 if name in ("Mul", "Div") else 0
        if _const_value(graph, ins[1]) == unit:
            return ins[0]
        if name in ("Mul", "Add") and _const_value(graph, ins[0]) == unit:
            return ins[1]
    elif name in ("Reshape", "Expand"):
        if tuple(n.attrs.get("shape", ())) == ins[0].shape:
            return ins[0]
    elif name == "Permute":
        if tuple(n.attrs["dims"]) == tuple(range(len(ins[0].shape))):
            return ins[0]
    elif name == "Cast":
        if str(getattr(n.attrs["dtype"], "name", n.attrs["dtype"])) == ins[0].dtype:
            return ins[0]
    elif name == "Neg":
        p = ins[0].node
        if p is not None and p.name == "Neg":
            return p.inputs[0]
    return None


def concat(graph):
    """The backward of `split`: each piece's gradient is scattered into zeros of the whole shape
    (`IndexAddInto` at a slice) and the pieces are summed. When the summed slices tile the whole along
    one axis, that is a concatenation: one `Cat` of the pieces replaces the zeros, the scatters and the
    additions (dce then drops them). Only pieces read by nothing else, with no in-place write of their
    sources before the sum, are taken."""
    from ..ops.primitives import Cat
    uses = graph.uses()
    roots = {v.id for v in graph.roots()}
    pos = {id(n): i for i, n in enumerate(graph.nodes)}
    taken = set()

    def pieces(v, shape):
        """[(axis, start, stop, source, node)] for a sum of slice scatters into `shape`, else None."""
        n = v.node
        if n is None or n.fused is not None or uses.get(v.id, 0) != 1 or v.id in roots or v.shape != shape:
            return None
        if n.name == "IndexAddInto" and len(n.inputs) == 1:
            piece = _slice_piece(n.attrs["key"], shape)
            if piece is None or n.inputs[0].shape != piece[3] or n.inputs[0].dtype != v.dtype:
                return None
            return [piece[:3] + (n.inputs[0], n)]
        if n.name == "Add" and len(n.inputs) == 2:
            a, b = pieces(n.inputs[0], shape), pieces(n.inputs[1], shape)
            if a and b and a[0][0] == b[0][0]:
                return a + b + [(None, None, None, None, n)]
        return None

    for n in reversed(graph.nodes):
        if n.name != "Add" or id(n) in taken or len(n.outputs) != 1:
            continue
        out = n.outputs[0]
        ps = [p for p in (pieces(v, out.shape) for v in n.inputs) if p]
        if len(ps) != 2 or ps[0][0][0] != ps[1][0][0]:
            continue
        found = ps[0] + ps[1]
        slices = sorted((p for p in found if p[0] is not None), key=lambda p: p[1])
        axis = slices[0][0]
        if slices[0][1] != 0 or slices[-1][2] != out.shape[axis] or \
                any(a[2] != b[1] for a, b in zip(slices, slices[1:])):
            continue
        first = min(pos[id(p[4])] for p in found)
        if _writes_between(graph, [Node("Cat", {}, [p[3] for p in slices], [])], first, pos[id(n)]):
            continue
        cat = Node(Cat, {"axis": axis}, [p[3] for p in slices], [out], (), n.where)
        out.node = cat
        graph.nodes[pos[id(n)]] = cat
        taken.update(id(p[4]) for p in found)
    return dce(graph)


def pack_attention(graph):
    """A GPT splits one (B, L, 3C) projection into q, k and v heads; the backward of that split (after
    `concat`) is a Cat of AttentionGrad's three gradients, each transposed back and reshaped to
    (B, L, C). That Cat, its views and the AttentionGrad become one AttentionGradPacked, whose kernel
    writes the gradients straight into their columns (no copy). Taken only where every value between
    them is read by nothing else and no in-place write of the attention's inputs comes between."""
    from ..ops.attention import AttentionGradPacked
    uses = graph.uses()
    pos = {id(n): i for i, n in enumerate(graph.nodes)}

    def grad_of(v):
        """(AttentionGrad node, output index) when v = reshape(permute(grad, (0, 2, 1, 3)), (B, L, H*E))."""
        r = v.node
        if r is None or r.name != "Reshape" or r.fused is not None or uses.get(v.id) != 1:
            return None
        t = r.inputs[0]
        pm = t.node
        if pm is None or pm.name != "Permute" or tuple(pm.attrs["dims"]) != (0, 2, 1, 3) or uses.get(t.id) != 1:
            return None
        src = pm.inputs[0]
        a = src.node
        if a is None or a.name != "AttentionGrad" or uses.get(src.id) != 1 or len(t.shape) != 4 or \
                v.shape != (t.shape[0], t.shape[1], t.shape[2] * t.shape[3]):
            return None
        return a, a.outputs.index(src)

    for i, n in enumerate(graph.nodes):
        if n.name != "Cat" or n.fused is not None or len(n.inputs) != 3 or len(n.outputs[0].shape) != 3 or \
                n.attrs["axis"] % 3 != 2:
            continue
        found = [grad_of(v) for v in n.inputs]
        if any(f is None for f in found) or len({id(f[0]) for f in found}) != 1 or [f[1] for f in found] != [0, 1, 2]:
            continue
        a = found[0][0]
        if _writes_between(graph, [a], pos[id(a)], i):
            continue
        packed = Node(AttentionGradPacked, a.attrs, a.inputs, n.outputs, (), n.where)
        n.outputs[0].node = packed
        graph.nodes[i] = packed
    return dce(graph)


def pool_relu(graph):
    """ReLU's gradient after max pooling's: Where(relu_out <= 0, 0, MaxPoolGrad(relu_out, pool_out, g)).
    MaxPoolGrad sends each window's gradient to a position holding the window's maximum, so the ReLU
    mask there reads pool_out: the same values come from MaxPoolGrad(relu_out, pool_out,
    Where(pool_out <= 0, 0, g)), whose Compare and Where run on the pooled shape (4x fewer elements for
    2x2 pooling) and no full-size mask pass follows the gradient (NaN: neither mask takes it, both pass
    g on). W4 (bench/RESULTS.md, session 16): 0.26 ms of its compiled step."""
    uses = graph.uses()
    roots = {v.id for v in graph.roots()}
    pos = {id(n): i for i, n in enumerate(graph.nodes)}
    moves = []
    for w in graph.nodes:
        if w.name != "Where" or w.fused is not None or len(w.inputs) != 3:
            continue
        mask, zero, m = w.inputs
        c, mp = mask.node, m.node
        if c is None or mp is None or c.name != "Compare" or c.attrs.get("op") != "le" or mp.name != "MaxPoolGrad":
            continue
        if c.inputs[0] is not mp.inputs[0] or _const_value(graph, c.inputs[1]) != 0 or _const_value(graph, zero) != 0:
            continue
        if uses.get(mask.id) != 1 or uses.get(m.id) != 1 or mask.id in roots or m.id in roots or zero.shape != ():
            continue
        x, y, g = mp.inputs
        if g.dtype != m.dtype or _writes_between(graph, [mp, c, w], pos[id(mp)], pos[id(w)]):
            continue
        out = w.outputs[0]
        small_mask = graph.new_value(y.shape, "bool", y.device)
        small_g = graph.new_value(g.shape, g.dtype, g.device)
        c.inputs, c.outputs = [y, c.inputs[1]], [small_mask]
        w.inputs, w.outputs = [small_mask, zero, g], [small_g]
        mp.inputs, mp.outputs = [x, y, small_g], [out]
        small_mask.node, small_g.node, out.node = c, w, mp
        moves.append((mp, c, w))
    for mp, c, w in moves:   # the Compare and Where now feed the MaxPoolGrad: they run just before it
        graph.nodes.remove(c)
        graph.nodes.remove(w)
        i = graph.nodes.index(mp)
        graph.nodes[i:i] = [c, w]
    return graph


def _slice_piece(key, shape):
    """(axis, start, stop, piece shape) when `key` takes a step-1 slice along one axis of `shape` and
    everything along the others, else None."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(shape) or not all(isinstance(k, slice) for k in key):
        return None
    cut = [i for i, k in enumerate(key) if k != slice(None)]
    if len(cut) != 1:
        return None
    axis = cut[0]
    start, stop, step = key[axis].indices(shape[axis])
    if step != 1 or stop <= start:
        return None
    return axis, start, stop, shape[:axis] + (stop - start,) + shape[axis + 1:]


# Elementwise primitives a fused kernel can run (output of the inputs' broadcast shape).
ELEMENTWISE = {"Neg", "Exp", "Log", "Log1p", "Expm1", "Sin", "Cos", "Tanh", "Sigmoid", "Sqrt", "Abs", "Erf",
               "Relu", "Clamp", "Cast", "Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Where", "Compare",
               "Gelu", "GeluGrad"}
FUSE_HEADS = {"Linear", "Conv", "MatMul"}   # a fresh output an elementwise chain can continue in place


def fuse(graph):
    """Elementwise fusion. A chain is a head (an elementwise node, or a Linear/Conv/MatMul) followed by
    elementwise nodes, each consuming the previous one's output (its only use) with that output's
    shape; a chain of two or more becomes one `Fused` node at the last member's place. A member is
    not moved past an in-place write of anything it reads."""
    uses = graph.uses()
    roots = {v.id for v in graph.roots()}
    pos = {id(n): i for i, n in enumerate(graph.nodes)}
    group_of = {}     # id(node) -> list of member nodes
    groups = []
    for n in graph.nodes:
        if n.name not in ELEMENTWISE or len(n.outputs) != 1 or n.fused is not None:
            continue
        joined = False
        for v in n.inputs:
            p = v.node
            if p is None or id(p) not in group_of or uses.get(v.id, 0) != 1 or v.id in roots:
                continue
            g = group_of[id(p)]
            if g[-1] is not p or p.outputs[0].shape != n.outputs[0].shape:
                continue
            if _writes_between(graph, g, pos[id(g[0])], pos[id(n)]):
                continue
            g.append(n)
            group_of[id(n)] = g
            joined = True
            break
        if not joined:
            p = n.inputs[0].node if n.inputs else None
            v = n.inputs[0] if n.inputs else None
            if (p is not None and p.name in FUSE_HEADS and id(p) not in group_of and uses.get(v.id, 0) == 1
                    and v.id not in roots and p.outputs[0].shape == n.outputs[0].shape
                    and not _writes_between(graph, [p], pos[id(p)], pos[id(n)])):
                g = [p, n]
                group_of[id(p)] = g
            else:
                g = [n]
            group_of[id(n)] = g
            groups.append(g)
    fused_at = {}
    members = set()
    for g in groups:
        if len(g) < 2:
            continue
        inner = {o.id for m in g for o in m.outputs}
        ext = []
        for m in g:
            for v in m.inputs:
                if v.id not in inner and all(v is not e for e in ext):
                    ext.append(v)
        out = g[-1].outputs
        node = Node("Fused", {"ops": "+".join(m.name for m in g)}, ext, out, (), g[-1].where, fused=list(g))
        for o in out:
            o.node = node
        fused_at[id(g[-1])] = node
        members.update(id(m) for m in g)
    nodes = []
    for n in graph.nodes:
        if id(n) in fused_at:
            nodes.append(fused_at[id(n)])
        elif id(n) not in members:
            nodes.append(n)
    graph.nodes = nodes
    return graph


UPDATE_OPS = {"Add", "Sub", "Mul", "Div", "Neg"}   # the arithmetic an update region takes beside Assigns


def _update_member(n):
    """(shape, dtype) when `n` can join an update region: a whole-tensor Assign (store or `op=`) of a
    float tensor from one of its shape or a single value, or float arithmetic of that kind."""
    if n.fused is not None or len(n.outputs) != 1:
        return None
    out = n.outputs[0]
    if out.dtype not in ("float32", "float64"):
        return None
    if n.name == "Assign":
        a = n.attrs
        if a.get("key") is not None or a.get("op") not in (None, "add", "sub", "mul", "div") or n.mutates != (0,) \
                or len(n.inputs) != (1 if a.get("value") is not None else 2):
            return None
    elif n.name not in UPDATE_OPS or not n.pure:
        return None
    if any(v.dtype != out.dtype or v.shape not in (out.shape, ()) for v in n.inputs) or out.shape == ():
        return None
    return out.shape, out.dtype


def fuse_updates(graph):
    """Update fusion: the in-place writes of an update (`p -= lr * p.grad`, `g.zero_()`, `.grad` accumulation,
    all tensors of one shape) and the arithmetic between them become one `Fused` node that writes its
    tensors in place, at the last member's place, so a kernel can make them one pass over memory
    (kernels.py). A region is connected by its values; it is kept only if nothing between its first and
    last member uses its values or touches the storages it writes, nothing there writes what it reads,
    and only its Assigns' results (the written tensors themselves) are used after it."""
    pos = {id(n): i for i, n in enumerate(graph.nodes)}
    group_of: dict = {}
    groups = []
    for n in graph.nodes:
        kind = _update_member(n)
        if kind is None:
            continue
        joined = []
        for v in n.inputs:
            g = group_of.get(id(v.node)) if v.node is not None else None
            if g is not None and g["kind"] == kind and all(g is not j for j in joined):
                joined.append(g)
        if joined:
            g = joined[0]
            for other in joined[1:]:                  # n connects two regions: one region
                g["members"].extend(other["members"])
                for m in other["members"]:
                    group_of[id(m)] = g
                other["members"] = []
            g["members"].append(n)
        else:
            g = {"kind": kind, "members": [n]}
            groups.append(g)
        group_of[id(n)] = g
    uses: dict = {}
    for n in graph.nodes:
        for v in n.inputs:
            uses.setdefault(v.id, []).append(n)
    roots = {v.id for v in graph.roots()}
    replace, drop = {}, set()
    for g in groups:
        members = sorted(g["members"], key=lambda m: pos[id(m)])
        while members and members[-1].name != "Assign":   # arithmetic on the written tensors after the last
            members.pop()                                   # write: not part of the update
        if len(members) < 2:
            continue
        ids = {id(m) for m in members}
        inner = {o.id for m in members for o in m.outputs}
        written = {m.inputs[0].storage for m in members if m.name == "Assign"}
        read = {v.storage for m in members for v in m.inputs if v.id not in inner}
        outs, ok = [], True
        for m in members:
            o = m.outputs[0]
            outside = o.id in roots or any(id(u) not in ids for u in uses.get(o.id, ()))
            if outside and m.name != "Assign":
                ok = False
            elif outside:
                outs.append(o)
        first, last = pos[id(members[0])], pos[id(members[-1])]
        for n in graph.nodes[first + 1:last]:
            if not ok:
                break
            if id(n) in ids:
                continue
            touched = {v.storage for v in n.inputs} | {o.storage for o in n.outputs}
            wrote = {n.inputs[i].storage for i in n.mutates} | \
                {s.inputs[i].storage for s in n.fused or () for i in s.mutates}
            ok = not (any(v.id in inner for v in n.inputs) or touched & written or wrote & read)
        ext = []
        for m in members:
            for v in m.inputs:
                if v.id not in inner and all(v is not e for e in ext):
                    ext.append(v)
        if not ok or any(sum(e.storage == s for e in ext) != 1 for s in written):
            continue
        outs = outs or [members[-1].outputs[0]]
        mut = tuple(i for i, e in enumerate(ext) if e.storage in written)
        node = Node("Fused", {"ops": "+".join(m.name for m in members)}, ext, outs, mut, members[-1].where,
                    fused=members)
        for o in outs:
            o.node = node
        replace[id(members[-1])] = node
        drop.update(ids)
    graph.nodes = [replace.get(id(n), n) for n in graph.nodes if id(n) not in drop or id(n) in replace]
    return graph


def _writes_between(graph, group, start, end) -> bool:
    """Whether a node strictly between positions start and end writes a storage the group reads."""
    read = {v.storage for m in group for v in m.inputs}
    for n in graph.nodes[start + 1:end]:
        if any(n.inputs[i].storage in read for i in n.mutates):
            return True
    return False


def memplan(graph):
    """The memory plan: every array is dropped right after its last use (codegen emits the `del`s),
    fused chains run in one buffer (kernels.py), parameters and optimizer state are updated in place
    by their in-place nodes. Records `graph.plan`."""
    graph.plan = {"free": True}
    return graph


PASSES = {"dce": dce, "fold": fold, "cse": cse, "simplify": simplify, "concat": concat,
          "pack_attention": pack_attention, "pool_relu": pool_relu, "fuse": fuse, "fuse_updates": fuse_updates,
          "memplan": memplan}
DEFAULT = ["dce", "fold", "simplify", "cse", "concat", "pack_attention", "pool_relu", "dce", "fuse", "fuse_updates",
           "memplan"]


def run_passes(graph, names=None):
    names = DEFAULT if names is None else names
    for name in names:
        if isinstance(name, str) and name not in PASSES:
            raise ValueError(f"ember.compile: unknown pass {name!r}; passes: {', '.join(PASSES)}")
        fn = PASSES[name] if isinstance(name, str) else name
        fn(graph)
        if _debug.LEVEL >= 2:
            sys.stderr.write(f"ember: graph after {getattr(fn, '__name__', name)}:\n{graph}\n")
    return graph
