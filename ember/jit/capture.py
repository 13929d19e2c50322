"""Capture: run a function once, eagerly, under a `Tracer` dispatch mode, and build the IR from what
the dispatcher saw (see docs/design-compiler.md).

The tracer names values by the identity of their backend arrays (as `PrimitiveLog`). An array used
before any primitive made it is a leaf; after the run each leaf is classified: an argument's array
(`input`), a generator's `[seed, offset]` draw state (`rng`), an array still held by a live tensor
(`state`: parameters, buffers, optimizer state, the lr tensor, `.grad`), or a constant.
"""
from __future__ import annotations

import gc
import inspect
import itertools
import threading
import types
import weakref
from typing import Any

import numpy as np

from .. import _tensor as _tensor_mod
from .. import random as _random
from .._errors import user_frame
from .._tensor import Tensor
from ..autograd.dispatch import DispatchMode
from .entropy import RNG_TYPES, Watch
from .ir import Graph, Value

__all__ = ["Tracer", "Capture", "capture", "discover", "flatten", "mutated_inputs", "Spec"]


def mutated_inputs(name: str, n_inputs: int, attrs: dict) -> tuple:
    """Indices of the inputs a primitive writes in place (the 'in place' column of docs/primitives.md)."""
    if name == "Assign":
        return (0,)
    if name == "AdamStep":   # p, g, m, v, [vmax], step, lr
        return (0, 2, 3) + ((4,) if attrs.get("amsgrad") else ()) + (n_inputs - 2,)
    return ()


# --- pytrees of arguments and results ---------------------------------------------------------------
class Spec:
    """The structure of a (nested) argument or result: kind 'tensor', 'tuple', 'list', 'dict' or
    'py' (a Python value kept as is); `items` the children (dict: (key, spec) pairs)."""
    __slots__ = ("kind", "items", "value")

    def __init__(self, kind, items=(), value=None):
        self.kind, self.items, self.value = kind, items, value


def flatten(obj, path: str, leaves: list) -> Spec:
    """Append (path, tensor) for every tensor in `obj` to `leaves`; return the structure."""
    if isinstance(obj, Tensor):
        leaves.append((path, obj))
        return Spec("tensor", value=len(leaves) - 1)
    if isinstance(obj, (tuple, list)) and type(obj) in (tuple, list):
        return Spec(type(obj).__name__, [flatten(x, f"{path}[{i}]", leaves) for i, x in enumerate(obj)])
    if type(obj) is dict:
        return Spec("dict", [(k, flatten(v, f"{path}[{k!r}]", leaves)) for k, v in obj.items()])
    return Spec("py", value=obj)


def scalars(spec: Spec, path: str, out: list):
    """(path, value) of the Python values in an argument structure (they are guarded by value)."""
    if spec.kind == "py":
        out.append((path, spec.value))
    elif spec.kind in ("tuple", "list"):
        for i, s in enumerate(spec.items):
            scalars(s, f"{path}[{i}]", out)
    elif spec.kind == "dict":
        for k, s in spec.items:
            scalars(s, f"{path}[{k!r}]", out)


# --- discovery of the modules and optimizers a function touches ---------------------------------
def discover(fn, args=(), kwargs=None, values=None, rngs=None):
    """The nn.Modules, optimizers and loose leaf tensors that require grad (whose `.grad` backward may
    set) reachable from `fn` (itself, its bound `self`, its closure, the globals its code names, one
    level of attributes of those objects) and from the arguments. With a list `values`, also the
    Python values the trace may have baked in as constants: `(label, read)` pairs, `read()` giving the
    value now (see `python_value`), for the globals and closure cells the functions read and the
    attributes of plain objects (a `cfg`, `self`) whose names their code uses. The compiler guards them.
    With a list `rngs`, also the random generators found, as (generator, label) (entropy.py)."""
    from ..nn import Module
    from ..optim import Optimizer
    mods, opts, loose, seen = [], [], [], set()
    named = set()   # every name the visited functions' code uses (globals and attributes alike)

    def note(label, read):
        if values is not None and python_value(read()) is not None:
            values.append((label, read))

    def visit(obj, depth, label):
        if id(obj) in seen or obj is None or isinstance(obj, (int, float, str, bytes, bool)):
            return
        seen.add(id(obj))
        if isinstance(obj, Tensor):
            if obj.requires_grad and obj._node is None:
                loose.append(obj)
            return
        if isinstance(obj, Module):
            mods.append(obj)
            return
        if isinstance(obj, Optimizer):
            opts.append(obj)
            return
        if isinstance(obj, RNG_TYPES):
            if rngs is not None:
                rngs.append((obj, label))
            return
        if isinstance(obj, (types.ModuleType, type)):
            return
        if isinstance(obj, (list, tuple)) and len(obj) <= 64:
            for i, x in enumerate(obj):
                visit(x, depth, f"{label}[{i}]")
        elif isinstance(obj, dict) and len(obj) <= 64:
            for k, x in obj.items():
                visit(x, depth, f"{label}[{k!r}]")
        elif isinstance(obj, types.MethodType):
            visit(obj.__func__, depth, obj.__func__.__name__)   # first: its names pick self's attributes
            visit(obj.__self__, depth, "self")
        elif isinstance(obj, types.FunctionType):
            if depth > 3:
                return
            names = _code_names(obj.__code__)
            named.update(names)
            for var, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
                try:
                    visit(cell.cell_contents, depth + 1, var)
                except ValueError:   # an empty cell
                    continue
                note(f"{var} (closure of {obj.__name__})", lambda cell=cell: _cell(cell))
            g = obj.__globals__
            for name in names:
                if name in g:
                    visit(g[name], depth + 1, name)
                    note(f"global {name}", lambda g=g, name=name: g.get(name, _MISSING))
            for d in (obj.__defaults__ or ()):
                visit(d, depth + 1, f"{obj.__name__} default")
        elif hasattr(obj, "__dict__") and depth <= 2 and (not callable(obj) or hasattr(type(obj), "__call__")):
            for k, x in list(vars(obj).items()):
                visit(x, depth + 1, f"{label}.{k}")
                if k in named:   # an attribute the code reads by name: cfg.scale, self._temp
                    note(f"{label}.{k}", lambda obj=obj, k=k: getattr(obj, k, _MISSING))

    classes = set()

    def forwards():
        """The forward code of the modules found (and their submodules): what it reads from its globals
        and closures is as much the trace's as what `fn` reads (`x * SCALE` inside `forward`)."""
        for m in list(mods):
            for sm in m.modules():
                fwd = getattr(type(sm), "forward", None)
                if isinstance(fwd, types.FunctionType) and type(sm) not in classes:
                    classes.add(type(sm))
                    visit(fwd, 1, f"{type(sm).__name__}.forward")

    visit(fn, 0, getattr(fn, "__name__", type(fn).__name__))
    forwards()
    n_loose = len(loose)
    for i, a in enumerate(args):
        visit(a, 1, f"args[{i}]")
    for k, a in (kwargs or {}).items():
        visit(a, 1, k)
    del loose[n_loose:]   # an argument tensor is an input, new at each call: not a slot to hold on to
    forwards()            # of modules passed as arguments
    # a module that is a submodule of another discovered module is reached through it
    subs = set()
    for m in mods:
        for _, sm in m.named_modules():
            if sm is not m:
                subs.add(id(sm))
    mods = [m for m in mods if id(m) not in subs]
    return mods, opts, loose


_MISSING = object()
_SCALARS = (bool, int, float, complex, str, type(None))


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def python_value(v):
    """What a guard keeps of a Python value a traced function may have baked into its graph: a number,
    string, bool or None, a list or tuple of up to 64 of them (as a tuple), a dict of up to 64 of them
    under such keys (a config: `CFG["scale"]`), a NumPy array (up to 64 elements by value, a larger one
    by identity: rebinding `cfg.mask` retraces); None for anything else (tensors, modules and functions
    are guarded otherwise)."""
    if type(v) in _SCALARS:
        return (type(v).__name__, _nan(v))
    if type(v) in (list, tuple) and len(v) <= 64 and all(type(x) in _SCALARS for x in v):
        return (type(v).__name__, tuple(_nan(x) for x in v))
    if type(v) is dict and len(v) <= 64 and all(type(k) in _SCALARS and type(x) in _SCALARS
                                                 for k, x in v.items()):
        return ("dict", tuple((k, _nan(x)) for k, x in v.items()))
    if type(v) is np.ndarray:   # small: by value (a copy made by ember.tensor is a constant); large: which one
        if v.size <= 64:
            return ("ndarray", (v.dtype.str, v.shape, tuple(_nan(x) for x in v.ravel().tolist())))
        return ("ndarray", Same(v))
    return None


class Same:
    """A guard value equal only to one for the same object (kept alive, so its id is not reused)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)

    def __repr__(self):
        o = self.obj
        return f"<{type(o).__name__} {getattr(o, 'shape', '')} at {id(o):#x}>"


def _nan(x):
    return "nan" if x != x else x   # NaN != NaN: kept as a NaN, a guard would never hold


def module_values(named) -> tuple:
    """(name, value) of the Python values held as attributes by modules (`named`: a module's
    `named_modules()`): Dropout's `p`, a `_temperature` set on the model. Guarded like parameters."""
    out = []
    for sub, sm in named:
        for k, v in sm.__dict__.items():
            t = type(v)   # the type first: most attributes are dicts, tensors and modules
            if (t in _SCALARS or t is tuple or t is list) and k != "training":
                pv = python_value(v)
                if pv is not None:
                    out.append((f"{sub}.{k}" if sub else k, pv))
    return tuple(out)


def _code_names(code, depth=0) -> dict:
    """The global names a function's code (and the code nested in it) reads, in the order the bytecode
    first uses them: a dict as an ordered set, so that modules and optimizers found through globals are
    numbered (m0, m1, opt0, ...) alike in every process, whatever PYTHONHASHSEED is."""
    names = dict.fromkeys(code.co_names)
    if depth < 3:
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                names.update(_code_names(c, depth + 1))
    return names


def state_names(mods, opts) -> dict:
    """id(array) -> (tensor, name) for every state tensor of the discovered modules and optimizers:
    parameters, buffers, their .grad, optimizer state and lr tensors."""
    out: dict[int, tuple[Tensor, str]] = {}
    pname: dict[int, str] = {}
    for i, m in enumerate(mods):
        prefix = f"m{i}." if len(mods) > 1 else ""
        for n, p in m.named_parameters():
            pname[id(p)] = prefix + n
            out.setdefault(id(p._data), (p, prefix + n))
            if p.grad is not None:
                out.setdefault(id(p.grad._data), (p.grad, prefix + n + ".grad"))
        for n, b in m.named_buffers():
            if b is not None:
                out.setdefault(id(b._data), (b, prefix + n))
    for j, opt in enumerate(opts):
        o = f"opt{j}" if len(opts) > 1 else "opt"
        for gi, group in enumerate(opt.param_groups):
            for p in group["params"]:
                n = pname.get(id(p), f"{o}.param{len(pname)}")
                pname.setdefault(id(p), n)
                out.setdefault(id(p._data), (p, n))
                if p.grad is not None:
                    out.setdefault(id(p.grad._data), (p.grad, n + ".grad"))
                for k, v in opt.state.get(p, {}).items():
                    if isinstance(v, Tensor):
                        out.setdefault(id(v._data), (v, f"{o}.state[{n}].{k}"))
        for (gid, dev), entry in opt._lr.items():
            group_index = next((i for i, g in enumerate(opt.param_groups) if id(g) == gid), "?")
            out.setdefault(id(entry[2]._data), (entry[2], f"{o}.lr[{group_index}]"))
    return out


def sync_lr(opts):
    """Write each group's current rate into its lr tensor now (eagerly), so that no `fill_` of a
    Python float is captured and a scheduler's change between calls reaches the compiled step."""
    for opt in opts:
        for group in opt.param_groups:
            devs = []
            for p in group["params"]:
                if p.device not in devs:
                    devs.append(p.device)
            for d in devs:
                opt.lr_tensor(group, d)


# --- the tracer ---------------------------------------------------------------------------------------
def _root(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


_EPOCHS = itertools.count(1)


# Primitives whose output shape comes from their inputs' values (x[mask] is Index with a bool mask):
# a replay would keep the traced shape, so a call that records one runs eagerly (compiler.py)
DATA_SHAPED = {"Nonzero", "Unique"}


class Tracer(DispatchMode):
    """Records each primitive call into `graph` while it runs the call eagerly."""

    def __init__(self, graph: Graph):
        self.g = graph
        self.env: dict[int, Value] = {}          # id(array) -> latest Value
        self.keep: list[object] = []         # every array seen, kept alive so an id is never reused
        self.storage: dict[int, int] = {}      # id(root array) -> storage number
        self.carriers: dict[int, list[weakref.ref[Tensor]]] = {}     # leaf value id -> [weakref to a tensor that carried it]
        self.leaf_arrays: dict[int, Any] = {}  # leaf value id -> array
        self.produced: list[tuple[weakref.ref[Tensor], Value]] = []     # (weakref to an output tensor, Value)
        self.reads: list[tuple[Value, str, object, str]] = []        # (Value, kind, value object, where)
        self.draws: dict[int, tuple[_random.Generator, int]] = {}        # id(state array) -> (generator, offset)
        self.gen_start: dict[_random.Generator, int] = {}    # generator -> offset at its first draw
        self.leaves_of: dict[int, list[int]] = {}    # storage -> leaf value ids in it
        self.initial: dict[int, Any] = {}      # leaf value id -> copy made before the first in-place write into it
        self.thread = threading.get_ident()
        self.epoch = next(_EPOCHS)   # stamped on the tensors made while the call runs (Tensor._born)
        self.ran_backward = False
        self.data_shaped: list[str] = []  # "Index at f.py:3": outputs whose shape the input values decide

    def backward_started(self):
        self.ran_backward = True

    def __ember_dispatch__(self, prim, inputs, attrs):
        ins = [self.value_of(t) for t in inputs]
        where = user_frame()
        mut = mutated_inputs(prim.__name__, len(inputs), attrs)
        for i in mut:   # the first write into a leaf's memory: keep its value from before (see capture)
            for vid in self.leaves_of.get(ins[i].storage, ()):
                if vid not in self.initial:
                    self.initial[vid] = self.leaf_arrays[vid].copy()
        out = prim.apply(*inputs, **attrs)
        if prim.__name__ in DATA_SHAPED or (prim.__name__ == "Index" and
                                            any(t._data.dtype == np.bool_ for t in inputs[1:])):
            self.data_shaped.append(f"{prim.__name__.lower()} at {where}")
        outs = out if isinstance(out, tuple) else (out,)
        vals = []
        for t in outs:
            a = t._data
            self.keep.append(a)
            v = self.g.new_value(a.shape, a.dtype.name, t._device.type, storage=self._storage_of(a))
            self.env[id(a)] = v
            self.produced.append((weakref.ref(t), v))
            vals.append(v)
        self.g.add_node(prim, attrs, ins, vals, mut, where)
        return out

    def _storage_of(self, a):
        r = _root(a)
        k = id(r)
        if k not in self.storage:
            self.keep.append(r)
            self.storage[k] = len(self.storage)
        return self.storage[k]

    def value_of(self, t):
        a = t._data
        v = self.env.get(id(a))
        if v is None:
            self.keep.append(a)
            v = self.g.new_value(a.shape, a.dtype.name, t._device.type, kind="const",
                                 storage=self._storage_of(a))
            self.env[id(a)] = v
            self.leaf_arrays[v.id] = a
            self.carriers[v.id] = []
            self.leaves_of.setdefault(v.storage, []).append(v.id)
        if v.id in self.carriers:
            self.carriers[v.id].append(weakref.ref(t))
        return v

    # hooks -----------------------------------------------------------------------------------------
    def on_read(self, t, kind, value):
        if threading.get_ident() != self.thread or self.closed:
            return
        v = self.value_of(t)
        if kind == "numpy":
            value = value.copy()
        self.reads.append((v, kind, value, user_frame()))

    def on_draw(self, gen, t, offset):
        if threading.get_ident() != self.thread or self.closed:
            return
        self.gen_start.setdefault(gen, offset)
        self.draws[id(t._data)] = (gen, offset)
        self.keep.append(t._data)

    closed = False

    def __enter__(self):
        _tensor_mod.READ_HOOKS.append(self.on_read)
        _random.DRAW_HOOKS.append(self.on_draw)
        self._outer_epoch, _tensor_mod.TRACE_EPOCH = _tensor_mod.TRACE_EPOCH, self.epoch
        return super().__enter__()

    def __exit__(self, *exc):
        self.closed = True
        _tensor_mod.TRACE_EPOCH = self._outer_epoch
        _tensor_mod.READ_HOOKS.remove(self.on_read)
        _random.DRAW_HOOKS.remove(self.on_draw)
        return super().__exit__(*exc)


class GradOf:
    """The `.grad` slot of a parameter, as a replay sees it: calling it gives the parameter's gradient
    tensor *now* (or None), not the tensor object the trace saw; `write(array)` stores a computed
    gradient there, into the tensor already in the slot or a new one, as backward does. A compiled
    call that only runs backward, or only the optimizer step with `zero_grad(set_to_none=True)`, must
    find and leave the gradients where eager code would."""
    __slots__ = ("param", "name")

    def __init__(self, param, name):
        self.param, self.name = weakref.ref(param), name

    def __call__(self):
        p = self.param()
        return None if p is None else p.grad

    def write(self, a):
        p = self.param()
        if p is None:
            return
        if p.grad is None:
            p.grad = Tensor._make(a, p._device)
        else:
            p.grad._data = a

    def clear(self):
        p = self.param()
        if p is not None:
            p.grad = None


def params_of(mods, opts, loose=()) -> list:
    """(parameter, name) for every parameter of the discovered modules and optimizers and every loose
    leaf tensor that requires grad, once each."""
    out, seen = [], set()
    for i, m in enumerate(mods):
        prefix = f"m{i}." if len(mods) > 1 else ""
        for n, p in m.named_parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out.append((p, prefix + n))
    for j, opt in enumerate(opts):
        for group in opt.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((p, f"opt{j if len(opts) > 1 else ''}.param{len(out)}"))
    for t in loose:
        if id(t) not in seen:
            seen.add(id(t))
            out.append((t, f"tensor{len(out)}"))
    return out


class Capture:
    """The result of one capture: the graph and how a replay binds it to the world.

    - `leaf_src[value id]`: for each leaf: ('input', arg index) | ('state', getter, array) |
      ('rng', generator, delta) | ('const', array); the getter is a weakref to the state tensor, or a
      `GradOf` for a parameter's gradient (whatever tensor holds it at replay time)
    - `escape_refs[i]`: weakref to the tensor graph.escapes[i] is written back into, or the `GradOf`
      slot it is stored in
    - `cleared_grads`: the `GradOf` slots the call emptied (`zero_grad(set_to_none=True)`)
    - `out_spec`: the result's structure; its tensor leaves are graph.outputs, its 'read' leaves
      graph.reads (value, kind)
    - `gen_total`: generator -> offsets the call advanced it by
    """

    def __init__(self):
        self.graph = Graph()
        self.leaf_src = {}
        self.escape_refs = []
        self.cleared_grads = []
        self.arg_grads = []     # arguments whose .grad the call set or changed (replays cannot: eager)
        self.out_spec = None
        self.gen_total = {}
        self.result = None
        self.args_leaves = []
        self.arg_spec = None
        self.out_devices = []
        self.graphless = False   # eagerly its outputs had an autograd graph, and no backward ran
        self.entropy = []        # generators drawn from outside ember's random primitives (entropy.py)
        self.data_shaped = []    # outputs whose shape depends on values ("index at f.py:3"; Tracer)


def capture(fn, args, kwargs, mods, opts, namer=None, loose=(), rngs=()) -> Capture:
    """Run fn(*args, **kwargs) eagerly under a Tracer; build the graph and its bindings. `rngs`: the
    random generators the function reads ((generator, label) from discover), watched with the global ones
    (entropy.py)."""
    namer = namer or _arg_name
    cap = Capture()
    g = cap.graph
    arg_leaves: list[tuple[str, Tensor]] = []
    cap.arg_spec = flatten((tuple(args), dict(kwargs)), "", arg_leaves)
    tracer = Tracer(g)
    # argument arrays become input leaves first, in argument order
    input_index = {}
    for i, (path, t) in enumerate(arg_leaves):
        a = t._data
        if id(a) in tracer.env:
            continue
        v = tracer.value_of(t)
        v.kind, v.src = "input", namer(path)
        input_index[v.id] = i
    sync_lr(opts)
    params = params_of(mods, opts, loose)
    grads_before = [(p, n, p.grad) for p, n in params]
    # the state tensors' arrays as the call starts (kept alive: no id reuse), for a leaf whose tensor the
    # call rebinds (`p.data = ...`): still that tensor's state, read from it at each replay
    loose_names = {id(t): n for t, n in params if any(t is x for x in loose)}
    before = {i: (t, n, t._data) for i, (t, n) in state_names(mods, opts).items()}
    for t in loose:
        before.setdefault(id(t._data), (t, loose_names[id(t)], t._data))
    grad_leaf = {id(g._data): (p, n) for p, n, g in grads_before if g is not None}
    with tracer, Watch(rngs) as watch:
        result = fn(*args, **kwargs)
    cap.result = result
    cap.entropy = watch.found
    cap.data_shaped = tracer.data_shaped
    cap.arg_grads = [namer(path) + ".grad" for path, t in arg_leaves
                     if t.requires_grad and t._node is None and t.grad is not None]
    gc.collect(1)   # so that only tensors something really holds count as state or escapes (young
                    # generations: a full collection costs ~0.8 s with torch loaded, and a missed cycle
                    # only makes an extra write-back)
    names = state_names(mods, opts)
    for t in loose:
        names.setdefault(id(t._data), (t, loose_names[id(t)]))

    out_leaves: list[tuple[str, Tensor]] = []
    cap.out_spec = flatten(result, "", out_leaves)
    for _, t in out_leaves:   # a result no primitive made (a parameter returned as it is) is a leaf too
        tracer.value_of(t)

    # classify leaves
    made_here = []   # tensors the call made that hold a leaf and outlive it
    for v in g.leaves:
        if v.kind == "input":
            cap.leaf_src[v.id] = (("input", input_index[v.id]))
            continue
        a = tracer.leaf_arrays[v.id]
        if id(a) in tracer.draws:
            gen, off = tracer.draws[id(a)]
            v.kind, v.src = "rng", f"rng {off - tracer.gen_start[gen]:+d}"
            cap.leaf_src[v.id] = (("rng", gen, off - tracer.gen_start[gen]))
            continue
        if id(a) in grad_leaf:    # a gradient there before the call: read from the slot at replay
            p, n = grad_leaf[id(a)]
            v.kind, v.src = "state", n + ".grad"
            cap.leaf_src[v.id] = ("state", GradOf(p, n), a)
            continue
        owner = names.get(id(a))
        if owner is None or owner[0]._data is not a:
            owner = before.get(id(a))   # rebound by the call: the tensor's array at the start
        if owner is not None:
            v.kind, v.src = "state", owner[1]
            cap.leaf_src[v.id] = (("state", weakref.ref(owner[0]), a))
            continue
        carried = [r() for r in tracer.carriers.get(v.id, ())]
        alive = [t for t in carried if t is not None and t._data is a]
        if alive and all(t._born == tracer.epoch for t in alive):
            made_here += alive   # made by the call (`out = ember.zeros(n)`): each call makes its own
            alive = []
        if alive:
            v.kind, v.src = "state", "tensor"
            cap.leaf_src[v.id] = (("state", weakref.ref(alive[0]), a))
        else:
            v.kind = "const"
            g.consts[v.id] = tracer.initial.get(v.id, a)
            if v.id in tracer.initial:   # made fresh by each eager call, then written: a run starts from a copy
                g.fresh.add(v.id)
                v.src = "fresh copy"
            cap.leaf_src[v.id] = ("const",)
    for gen, start in tracer.gen_start.items():
        cap.gen_total[gen] = gen._offset - start

    # results: tensors become outputs, read values returned as they are become read outputs
    read_ids = {id(r[2]): i for i, r in enumerate(tracer.reads) if r[1] != "numpy"}
    returned_reads: set[int] = set()
    _mark_reads(cap.out_spec, read_ids, returned_reads, tracer.reads, cap)
    for path, t in out_leaves:
        g.outputs.append(tracer.value_of(t))
    cap.out_devices = [t._device for _, t in out_leaves]
    out_ids = {id(t) for _, t in out_leaves}

    # escapes: live tensors holding a computed value that the caller can still reach; a parameter's
    # gradient is written back into its slot, and a slot the call emptied is emptied again
    seen = set(out_ids)
    leaf_ids = {id(a) for a in tracer.leaf_arrays.values()}
    for p, n, before in grads_before:
        g_after = p.grad
        if g_after is None:
            if before is not None:
                cap.cleared_grads.append(GradOf(p, n))
            continue
        v = tracer.env.get(id(g_after._data))
        if v is None or v.kind != "node" or id(g_after._data) in leaf_ids or g_after._node is not None:
            continue
        seen.add(id(g_after))
        g.escapes.append(v)
        cap.escape_refs.append(GradOf(p, n))
    cands: list[tuple[Tensor | None, Value | None]] = [(r(), v) for r, v in tracer.produced]
    cands += [(t, None) for t, _ in names.values()]
    cands += [(t, None) for t in made_here]
    for c, _v in cands:
        if c is None or id(c) in seen or c._node is not None or \
                (id(c._data) in leaf_ids and c._born != tracer.epoch):
            continue   # gone, returned, part of an autograd graph, or state written in place
        seen.add(id(c))
        v = tracer.env.get(id(c._data))
        if v is None or v.kind != "node":
            continue
        g.escapes.append(v)
        cap.escape_refs.append(weakref.ref(c))

    # outputs that would require grad eagerly, from a call that ran no backward: the caller may want one
    cap.graphless = any(t.requires_grad for _, t in out_leaves) and not tracer.ran_backward

    # value reads are guards (except those only returned)
    for i, (v, kind, value, where) in enumerate(tracer.reads):
        if i in returned_reads:
            continue
        g.checks.append((v, kind, value, where))
    return cap


def _mark_reads(spec, read_ids, used, reads, cap):
    if spec.kind == "py":
        i = read_ids.get(id(spec.value))
        fresh = isinstance(spec.value, (float, list)) or (type(spec.value) is int and not -5 <= spec.value <= 256)
        if i is not None and fresh:   # small ints and bools are shared objects: identity says nothing
            used.add(i)
            v, kind, _, _ = reads[i]
            cap.graph.reads.append((v, kind))
            spec.kind, spec.value = "read", len(cap.graph.reads) - 1
    elif spec.kind in ("tuple", "list"):
        for s in spec.items:
            _mark_reads(s, read_ids, used, reads, cap)
    elif spec.kind == "dict":
        for _, s in spec.items:
            _mark_reads(s, read_ids, used, reads, cap)


def _arg_name(path: str) -> str:
    # path '[0][1]' -> 'args[1]'; '[1]['x']' -> "x"
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]["):
        rest = path[4:]
        key, _, tail = rest.partition("]")
        return key.strip("'\"") + tail
    return path


def signature_names(fn, n_args):
    """Parameter names of fn for its first n_args positional arguments (for guard messages)."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"args[{i}]" for i in range(n_args)]
