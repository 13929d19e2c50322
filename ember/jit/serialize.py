"""Save a traced graph with its state, and load it where the model's code is absent.

One safetensors file: the tensors are the graph's state and constant leaves (`leaf<id>`), and the
metadata entry `ember.jit` is the graph as JSON (format name, version, leaves, nodes by primitive name
with tagged attributes, outputs, value guards), with `ember.jit.sha256` over the JSON and every
tensor's bytes. Written atomically (a temporary file, then `os.replace`). Nothing is pickled and
nothing in a file is executed: primitives are looked up by name among Ember's own, attributes are
decoded from a few tagged JSON forms and checked against each primitive's declared `attrs`.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile

import numpy as np

from .._tensor import Tensor
from .ir import Graph, Node

__all__ = ["save", "load", "LoadedGraph", "GraphFileError", "FORMAT", "VERSION"]

FORMAT = "ember.jit"
VERSION = 1


class GraphFileError(ValueError):
    """A file `ember.jit.load` refuses: not a graph file, truncated, edited, or of another version."""


# --- attributes as tagged JSON ------------------------------------------------------------------------
def _enc(v, where):
    from ..ops.primitives import SLOT
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, tuple):
        return {"tuple": [_enc(x, where) for x in v]}
    if isinstance(v, list):
        return {"list": [_enc(x, where) for x in v]}
    if isinstance(v, slice):
        return {"slice": [_enc(v.start, where), _enc(v.stop, where), _enc(v.step, where)]}
    if v is Ellipsis:
        return {"ellipsis": True}
    if v is SLOT:
        return {"slot": True}
    if isinstance(v, np.dtype) or type(v).__name__ == "dtype" and hasattr(v, "np"):
        return {"dtype": np.dtype(getattr(v, "np", v)).name}
    if type(v).__name__ == "device":
        return {"device": str(v)}
    if isinstance(v, np.generic):
        return _enc(v.item(), where)
    raise TypeError(f"ember.jit.save: cannot store the attribute value {v!r:.60} of {where}")


def _dec(v, where):
    from ..ops.primitives import SLOT
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, dict) and len(v) == 1:
        (tag, x), = v.items()
        if tag == "tuple" and isinstance(x, list):
            return tuple(_dec(e, where) for e in x)
        if tag == "list" and isinstance(x, list):
            return [_dec(e, where) for e in x]
        if tag == "slice" and isinstance(x, list) and len(x) == 3:
            return slice(*(_dec(e, where) for e in x))
        if tag == "ellipsis" and x is True:
            return Ellipsis
        if tag == "slot" and x is True:
            return SLOT
        if tag == "float" and x in ("inf", "-inf", "nan"):
            return float(x)
        if tag == "dtype" and isinstance(x, str):
            return _np_dtype(x, where)
        if tag == "device" and isinstance(x, str):
            from .._device import device
            return device(x)
    raise GraphFileError(f"ember.jit.load: {where}: an attribute value of unknown form {v!r:.80}")


def _np_dtype(name, where):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        raise GraphFileError(f"ember.jit.load: {where}: unknown dtype {name!r}") from None


def _primitives() -> dict:
    """Ember's primitives by name (the only code a loaded graph can run)."""
    from ..autograd.function import Primitive
    import importlib
    for mod in ("primitives", "elementwise", "layers", "attention", "linalg", "random_prims", "inplace",
                "optim_prims"):
        importlib.import_module("ember.ops." + mod)   # every primitive class exists before the walk
    out, stack = {}, [Primitive]
    while stack:
        c = stack.pop()
        for s in c.__subclasses__():
            if s.__module__.startswith("ember.ops."):
                out[s.__name__] = s
            stack.append(s)
    return out


# --- save ---------------------------------------------------------------------------------------------------
def _node_json(n):
    where = f"node {n.name} (at {n.where})"
    d = {"prim": n.name, "attrs": {k: _enc(v, where) for k, v in n.attrs.items()},
         "inputs": [v.id for v in n.inputs],
         "outputs": [[o.id, list(o.shape), o.dtype] for o in n.outputs],
         "mutates": list(n.mutates), "where": n.where}
    if n.fused is not None:
        d["fused"] = [_node_json(m) for m in n.fused]
    return d


def _spec_json(spec):
    k = spec.kind
    if k in ("tensor", "read"):
        return {k: spec.value}
    if k in ("tuple", "list"):
        return {k: [_spec_json(s) for s in spec.items]}
    if k == "dict":
        if not all(isinstance(key, str) for key, _ in spec.items):
            raise TypeError("ember.jit.save: a returned dict must have string keys")
        return {"dict": [[key, _spec_json(s)] for key, s in spec.items]}
    return {"py": _enc(spec.value, "the returned value")}


def _contig(a):
    return a if a.flags.c_contiguous else a.copy(order="C")   # (ascontiguousarray makes 0-d arrays 1-d)


def _digest(text: str, tensors: dict) -> str:
    h = hashlib.sha256(text.encode())
    for name in sorted(tensors):
        a = _contig(tensors[name])
        h.update(name.encode())
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save(entry, path) -> None:
    """Write a compiled entry (its graph, state and constants) to `path` atomically."""
    from safetensors.numpy import save_file
    g, cap = entry.graph, entry.cap
    tensors, leaves = {}, []
    for v in g.leaves:
        d = {"id": v.id, "shape": list(v.shape), "dtype": v.dtype, "kind": v.kind, "src": v.src}
        if v.kind == "input":
            d["index"] = cap.leaf_src[v.id][1]
        elif v.kind == "rng":
            gen = cap.leaf_src[v.id][1]
            from .. import random as _random
            if gen is not _random.default_generator:
                raise TypeError("ember.jit.save: the graph draws from a user Generator; only the default "
                                "generator can be saved")
            d["delta"] = cap.leaf_src[v.id][2]
        else:
            if v.kind == "const":
                a = g.consts[v.id]
            else:
                t = cap.leaf_src[v.id][1]()
                a = cap.leaf_src[v.id][2] if t is None else t._data
            tensors[f"leaf{v.id}"] = _contig(a)
            d["fresh"] = v.id in g.fresh
        leaves.append(d)
    from .. import random as _random
    doc = {"format": FORMAT, "version": VERSION, "leaves": leaves,
           "nodes": [_node_json(n) for n in g.nodes],
           "outputs": [v.id for v in g.outputs], "reads": [[v.id, k] for v, k in g.reads],
           "checks": [[v.id, kind, _enc(exp if kind != "numpy" else exp.tolist(), "a value guard"), where]
                      for v, kind, exp, where in g.checks],
           "out_spec": _spec_json(cap.out_spec),
           "rng_total": cap.gen_total.get(_random.default_generator, 0),
           "plan": {"free": bool(g.plan.get("free"))}}
    text = json.dumps(doc, separators=(",", ":"))
    meta = {FORMAT: text, FORMAT + ".sha256": _digest(text, tensors)}
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ember-jit-", dir=d)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --- load ---------------------------------------------------------------------------------------------------
def load(path) -> "LoadedGraph":
    """Read a file written by `save`: a callable over the graph's inputs (see LoadedGraph)."""
    from safetensors import safe_open
    path = os.fspath(path)
    name = os.path.basename(path)
    try:
        with safe_open(path, framework="numpy") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except FileNotFoundError:
        raise
    except Exception as e:   # safetensors' own error for a truncated or corrupt file
        raise GraphFileError(f"ember.jit.load: {name} is not a readable graph file (truncated or corrupt): "
                             f"{e}") from None
    text = meta.get(FORMAT)
    if text is None:
        raise GraphFileError(f"ember.jit.load: {name} is a safetensors file but not a saved graph (no "
                             f"'{FORMAT}' metadata); weights load with ember.load")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise GraphFileError(f"ember.jit.load: {name}: the graph JSON is corrupt: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphFileError(f"ember.jit.load: {name}: not an {FORMAT} graph")
    if doc.get("version") != VERSION:
        raise GraphFileError(f"ember.jit.load: {name} has format version {doc.get('version')!r}; this Ember "
                             f"reads version {VERSION}. Save it again with this Ember")
    if meta.get(FORMAT + ".sha256") != _digest(text, tensors):
        raise GraphFileError(f"ember.jit.load: {name}: checksum mismatch: the file was modified after it was "
                             f"saved (or damaged)")
    try:
        return LoadedGraph(_build_graph(doc, tensors, name), doc)
    except GraphFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise GraphFileError(f"ember.jit.load: {name}: malformed graph: {type(e).__name__}: {e}") from None


def _build_graph(doc, tensors, name):
    from ..autograd.dispatch import check_attrs
    prims = _primitives()
    g = Graph()
    values = {}

    def new_value(vid, shape, dtype, kind="node", src=None):
        if not isinstance(vid, int) or vid in values:
            raise GraphFileError(f"ember.jit.load: {name}: value %{vid} defined twice or badly")
        v = g.new_value(shape, dtype, "cpu", kind, src)
        v.id = vid
        values[vid] = v
        return v

    for d in doc["leaves"]:
        v = new_value(d["id"], tuple(d["shape"]), d["dtype"], d["kind"], d.get("src"))
        if d["kind"] in ("state", "const"):
            a = tensors[f"leaf{v.id}"]
            if tuple(a.shape) != v.shape or a.dtype.name != v.dtype:
                raise GraphFileError(f"ember.jit.load: {name}: tensor leaf{v.id} is {a.dtype.name}{list(a.shape)}, "
                                     f"the graph says {v.type_str}")
            g.consts[v.id] = a.copy() if not a.flags.writeable else a
            if d.get("fresh"):
                g.fresh.add(v.id)
        elif d["kind"] not in ("input", "rng"):
            raise GraphFileError(f"ember.jit.load: {name}: unknown leaf kind {d['kind']!r}")

    def node(d, top):
        pname = d["prim"]
        where = f"node {pname} (saved from {d.get('where')})"
        if pname == "Fused":
            members = [node(m, False) for m in d["fused"]]
            prim = "Fused"
        else:
            prim = prims.get(pname)
            if prim is None:
                raise GraphFileError(f"ember.jit.load: {name}: unknown primitive {pname!r} ({where})")
            members = None
        attrs = {k: _dec(v, where) for k, v in d["attrs"].items()}
        if prim != "Fused":
            try:
                check_attrs(prim, attrs)
            except TypeError as e:
                raise GraphFileError(f"ember.jit.load: {name}: {e} ({where})") from None
        try:
            ins = [values[i] for i in d["inputs"]]
        except KeyError as e:
            raise GraphFileError(f"ember.jit.load: {name}: {where} uses %{e.args[0]} before it is defined") from None
        outs = []
        for oid, shape, dtype in d["outputs"]:
            if members is not None and oid in values:     # a fused node's output: made by its last member
                outs.append(values[oid])
            else:
                outs.append(new_value(oid, tuple(shape), dtype))
        n = Node(prim, attrs, ins, outs, tuple(d["mutates"]), d.get("where"), members)
        for o in outs:
            o.node = n
        return n

    for d in doc["nodes"]:
        n = node(d, True)
        g.nodes.append(n)
    g.outputs = [values[i] for i in doc["outputs"]]
    g.reads = [(values[i], k) for i, k in doc["reads"]]
    g.checks = [(values[i], kind, _dec(exp, "a value guard"), where) for i, kind, exp, where in doc["checks"]]
    g.plan = {"free": bool(doc.get("plan", {}).get("free"))}
    return g


class LoadedGraph:
    """A graph loaded by `ember.jit.load`: call it with the traced function's tensor arguments, in order.
    Its state (parameters, buffers, optimizer state) lives in `state` ({name: Tensor}) and is updated in
    place by a saved training step. Random draws come from Ember's default generator."""

    def __init__(self, graph, doc):
        from .codegen import Runner
        self.graph = graph
        self._doc = doc
        self._inputs = sorted((v for v in graph.leaves if v.kind == "input"), key=lambda v: v.id)
        self._index = {d["id"]: d.get("index") for d in doc["leaves"]}
        self._delta = {d["id"]: d.get("delta") for d in doc["leaves"] if d["kind"] == "rng"}
        self._spec = doc["out_spec"]
        self._total = doc.get("rng_total", 0)
        self.state = {(v.src or f"leaf{v.id}"): Tensor._make(graph.consts[v.id], _cpu())
                      for v in graph.leaves if v.kind == "state"}
        self._runner = Runner(graph)

    def __call__(self, *args):
        from .. import random as _random
        from .codegen import GuardFailure
        tensors = [a for a in args if isinstance(a, Tensor)]
        gen = _random.default_generator
        off = gen._offset
        arrays = []
        for v in self.graph.leaves:
            if v.kind == "input":
                i = self._index[v.id]
                if i >= len(tensors):
                    raise TypeError(f"ember.jit.load: the graph takes at least {i + 1} tensor arguments, got "
                                    f"{len(tensors)}")
                a = tensors[i]._data
                if tuple(a.shape) != v.shape or a.dtype.name != v.dtype:
                    raise ValueError(f"ember.jit.load: argument {i} ({v.src}) must be {v.type_str} as traced, got "
                                     f"{a.dtype.name}{list(a.shape)}")
            elif v.kind == "rng":
                from ..backends import host
                a = host.uint64_words(gen._seed, (off + self._delta[v.id]) & ((1 << 64) - 1)).view("int64")
            else:
                a = self.graph.consts[v.id]
                if v.id in self.graph.fresh:
                    a = a.copy()
            arrays.append(a)
        try:
            outs, _, reads = self._runner(arrays)
        except GuardFailure as gf:
            v, kind, exp, where = self.graph.checks[gf.index]
            raise RuntimeError(f"ember.jit.load: the saved graph depended on a value read by {kind}() at {where} "
                               f"being {exp!r:.60}; this input gives another value, and a loaded graph cannot "
                               f"retrace without the code") from None
        if self._total:
            gen._offset = (off + self._total) & ((1 << 64) - 1)
            gen._host = None
        return _build_json(self._spec, outs, reads)

    def __repr__(self):
        return f"<ember.jit.LoadedGraph: {len(self.graph)} nodes, {len(self._inputs)} inputs>"


def _cpu():
    from .._device import device
    return device("cpu")


def _build_json(spec, outs, reads):
    (k, v), = spec.items()
    if k == "tensor":
        return Tensor._make(outs[v], _cpu())
    if k == "read":
        return reads[v]
    if k == "py":
        return _dec(v, "the returned value")
    if k in ("tuple", "list"):
        items = [_build_json(s, outs, reads) for s in v]
        return tuple(items) if k == "tuple" else items
    if k == "dict":
        return {key: _build_json(s, outs, reads) for key, s in v}
    raise GraphFileError(f"ember.jit.load: unknown result form {k!r}")
