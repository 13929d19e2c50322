"""`ember.compile`: trace on the first call per guard key, replay the generated code afterwards.

See docs/design-compiler.md. A `CompiledFunction` keeps a bounded cache of entries; each entry is
one capture (graph + bindings + runner) valid for one guard key and one set of value checks.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .._errors import user_frame, _is_internal
from .._tensor import Tensor
from .._dtype import get_default_dtype
from ..autograd.grad_mode import is_grad_enabled
from ..backends import host as _host
from .. import amp as _amp
from . import capture as _cap
from .codegen import Runner, GuardFailure, CompileError

__all__ = ["compile", "trace", "CompiledFunction", "GuardError", "CacheInfo"]

_U64 = (1 << 64) - 1
LEARNING = "dynamic dims: a trace at a second size learns which sizes follow the batch"


class GuardError(RuntimeError):
    """A compiled function's guard failed with strict=True."""


class CacheInfo(dict):
    """traces, hits, retraces, eager_calls, entries, reasons (one line per trace after the first)."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        if isinstance(v, (list, tuple)):
            return tuple(_hashable(x) for x in v)
        return ("<unhashable>", type(v).__name__, id(v))


def _warn(message):
    import sys
    f, level = sys._getframe(1), 2
    while f is not None and _is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


class Entry:
    __slots__ = ("key", "cap", "runner", "graph", "eager", "why_eager", "end_key", "sizes", "variants",
                 "template", "why_not_symbolic")

    def __init__(self, key, cap):
        self.key = key
        self.cap = cap
        self.graph = cap.graph
        self.runner = None
        self.eager = False
        self.why_eager = None
        self.end_key = None
        self.sizes = ()          # the sizes of the dynamic dims it was traced at
        self.variants = {}       # other sizes -> Entry re-specialised from this one (dynamic.py)
        self.template = None     # dynamic.Template learnt from this trace and one at another size
        self.why_not_symbolic = None


class CompiledFunction:
    """The callable `ember.compile` returns (see `compile`)."""

    def __init__(self, fn, *, dynamic=False, strict=False, passes=None, cache_size=8):
        if not callable(fn):
            raise TypeError(f"ember.compile: expected a function or an nn.Module, got {type(fn).__name__}")
        if not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"ember.compile: cache_size must be a positive int, got {cache_size!r}")
        self.fn = fn
        self.dynamic = dynamic
        self.strict = strict
        self.passes = passes
        self.cache_size = cache_size
        self.mods, self.opts, self.loose = [], [], []
        self.values = []          # (label, read): Python values the function reads (capture.discover)
        self.rngs = []            # (generator, label): the random generators it reads (discover, entropy.py)
        self._cache = {}          # key -> [Entry], most recent first
        self._entries = []        # every entry, in trace order
        self._last = None
        self._stats = {"traces": 0, "hits": 0, "retraces": 0, "eager_calls": 0}
        self._reasons = []
        self._full_warned = False
        self._graphless_warned = False
        self._argnames = None
        functools.update_wrapper(self, fn, updated=())
        if not hasattr(self, "__name__"):
            self.__name__ = type(fn).__name__

    # --- the guard key -----------------------------------------------------------------------------
    def _dyn_dims(self, name, ndim):
        """The dims of input `name` that are symbolic: dynamic=True: dim 0 of every tensor argument;
        a dict: {argument name: dim or dims}."""
        d = self.dynamic
        if d is True:
            return (0,) if ndim else ()
        if isinstance(d, dict):
            v = d.get(name.split("[")[0]) if name not in d else d[name]
            if v is None:
                return ()
            return tuple(x % ndim for x in ((v,) if isinstance(v, int) else v))
        return ()

    def _name(self, path):
        """'[0][1][2]' (args[1][2]) -> 'y[2]' with fn's parameter names."""
        if path.startswith("[0]["):
            i, _, rest = path[4:].partition("]")
            if self._argnames is None:
                self._argnames = _cap.signature_names(self.fn, 64)
            i = int(i)
            return (self._argnames[i] if i < len(self._argnames) else f"args[{i}]") + rest
        return _cap._arg_name(path)

    def _key(self, args, kwargs):
        leaves = []
        key, sizes = [], []
        if not args and not kwargs:       # a training step that takes no arguments: nothing to flatten
            key.append(("structure", _NO_ARGS))
            return self._state_key(key, leaves, sizes)
        spec = _cap.flatten((tuple(args), dict(kwargs)), "", leaves)
        for path, t in leaves:
            name, shape = self._name(path), tuple(t._data.shape)
            if self.dynamic:
                dims = self._dyn_dims(name, len(shape))
                if dims:
                    sizes.extend(shape[i] for i in dims)
                    shape = tuple("*" if i in dims else d for i, d in enumerate(shape))
            key.append((name, (shape, t._data.dtype.name, str(t._device), t.requires_grad)))
        sc = []
        _cap.scalars(spec, "", sc)
        for path, v in sc:
            key.append((self._name(path), (type(v).__name__, _hashable(v))))
        key.append(("structure", _structure(spec)))
        return self._state_key(key, leaves, sizes)

    def _state_key(self, key, leaves, sizes):
        """The guards on state outside the arguments: modules, optimizers, loose tensors, values read."""
        for i, m in enumerate(self.mods):
            n = f"m{i}" if len(self.mods) > 1 else type(m).__name__
            named = list(m.named_modules())
            # one walk over the modules for what parameters() and named_buffers() would give (each value
            # once, in module order) and the hooks: a guard key is computed on every call
            params, bufs, seen_p, seen_b, hooks = [], [], set(), set(), []
            for _, sm in named:
                d = sm.__dict__
                for v in d["_parameters"].values():
                    if v is not None and id(v) not in seen_p:
                        seen_p.add(id(v))
                        params.append(v)
                for v in d["_buffers"].values():
                    if v is not None and id(v) not in seen_b:
                        seen_b.add(id(v))
                        bufs.append(v)
                hooks.append((tuple(sm._forward_pre_hooks), tuple(sm._forward_hooks),
                              tuple(sm._backward_pre_hooks), tuple(sm._backward_hooks)))
            # a submodule swapped for another (Tanh for Sigmoid): no parameter changes, the trace does
            key.append((f"{n}.modules", tuple((sub, type(sm)) for sub, sm in named)))
            key.append((f"{n}.training", tuple(sm.training for _, sm in named)))
            key.append((f"{n}.parameters", tuple(id(p) for p in params) + tuple(id(b) for b in bufs)))
            key.append((f"{n}.grads", tuple(p.grad is None for p in params)))
            # a layer frozen (or unfrozen) between calls: the trace computed and applied its gradients
            key.append((f"{n}.requires_grad", tuple(p.requires_grad for p in params)))
            key.append((f"{n}.attributes", _cap.module_values(named)))
            # hooks added or removed between calls: a replay runs none of them, the trace ran those it saw
            key.append((f"{n}.hooks", tuple(hooks) +
                        tuple((len(p._hooks or ()), len(p._post_acc_hooks or ())) for p in params)))
        for j, opt in enumerate(self.opts):
            n = f"opt{j}" if len(self.opts) > 1 else type(opt).__name__
            key.append((f"{n}.hyper_parameters",
                        tuple(tuple(sorted((k, _hashable(v)) for k, v in g.items()
                                           if k not in ("params", "lr", "initial_lr")))
                              for g in opt.param_groups)))
            key.append((f"{n}.params", tuple(tuple(id(p) for p in g["params"]) for g in opt.param_groups)))
            key.append((f"{n}.state", tuple(p in opt.state for g in opt.param_groups for p in g["params"])))
            # the state tensors themselves: load_state_dict puts new ones in, which the trace never saw
            key.append((f"{n}.state_tensors", tuple(id(v) for g in opt.param_groups for p in g["params"]
                                                    for v in opt.state.get(p, {}).values()
                                                    if isinstance(v, Tensor))))
        if self.loose:
            key.append(("tensors.grads", tuple(t.grad is None for t in self.loose)))
            key.append(("tensors.requires_grad", tuple(t.requires_grad for t in self.loose)))
        for label, read in self.values:   # a global or closure value baked into the trace as a constant
            key.append((label, _cap.python_value(read())))
        key.append(("grad_enabled", is_grad_enabled()))
        key.append(("default_dtype", get_default_dtype().name))
        key.append(("autocast", _amp.state_key()))   # casts are traced: another autocast state is another graph
        return tuple(key), leaves, tuple(sizes)

    def _explain(self, old, new):
        """'x.shape: (64, 6) -> (32, 6)': the first guard of `old` that `new` breaks."""
        o, n = dict(old), dict(new)
        for name, v in new:
            if name not in o:
                return f"{name}: new ({v!r:.80})"
            if o[name] != v and name.endswith((".attributes", ".modules")):   # (name, value) records
                prefix = name[:name.rindex(".") + 1]
                show = _show_py if name.endswith(".attributes") else (lambda t: t.__name__)
                prev = dict(o[name])
                for k, x in v:
                    if k not in prev or prev[k] != x:
                        change = f"{show(prev[k])} -> {show(x)}" if k in prev else "new"
                        return f"{prefix}{k or '(itself)'}: {change}"
                return f"{name}: {_show(o[name])} -> {_show(v)}"
            if o[name] != v and name.endswith(".requires_grad") and len(o[name]) == len(v):
                names = self._param_names(name[:-len(".requires_grad")])
                i = next(i for i, (a, b) in enumerate(zip(o[name], v)) if a != b)
                return f"{names[i] if i < len(names) else f'parameter {i}'}.requires_grad: {o[name][i]} -> {v[i]}"
            if o[name] != v and name.endswith(".state_tensors"):
                return f"{name[:-len('_tensors')]}: its tensors were replaced (load_state_dict?)"
            if o[name] != v and name.endswith(".hooks"):
                return f"{name[:-len('.hooks')]}: a forward, pre-forward or gradient hook was added or removed"
            if o[name] != v and name in self._value_labels():
                return f"{name}: {_show_py(o[name])} -> {_show_py(v)}"
            if o[name] != v:
                return f"{name}: {_show(o[name])} -> {_show(v)}"
        for name in o:
            if name not in n:
                return f"{name}: gone"
        return "value guard"

    # --- calls ---------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        key, leaves, sizes = self._key(args, kwargs)
        reason = None
        for entry in self._cache.get(key, ()):
            if entry.eager:
                self._stats["eager_calls"] += 1
                return self.fn(*args, **kwargs)
            if sizes != entry.sizes:
                variant = self._variant(entry, sizes)
                if isinstance(variant, str):
                    if reason is None or reason == LEARNING:
                        reason = variant
                    continue
                entry = variant
            try:
                out = self._replay(entry, leaves)
            except GuardFailure as gf:
                if gf.reason is not None:
                    reason = gf.reason
                    continue
                v, kind, expected, where = entry.graph.checks[gf.index]
                reason = f"value of %{v.id} read by {kind}() at {where}: was {expected!r:.60}"
                continue
            self._stats["hits"] += 1
            self._last = entry
            return out
        expected_change = reason == LEARNING
        if reason is None and self._entries:
            last = self._entries[-1]
            expected_change = last.end_key == key and last.end_key != last.key
            reason = self._explain(last.key, key)
        if self._entries:
            where = user_frame()
            if expected_change and reason != LEARNING:
                reason = f"state initialised by the traced call ({reason})"
            elif self.strict:
                raise GuardError(f"ember.compile({self.__name__}): guard failed: {reason} (at {where}); "
                                 f"strict=True forbids retracing")
            if len(self._entries) >= self.cache_size:
                if not self._full_warned:
                    self._full_warned = True
                    _warn(f"ember.compile({self.__name__}): cache full ({self.cache_size} traces); running "
                          f"eagerly from now on for new guard keys. Last guard failed: {reason}")
                self._stats["eager_calls"] += 1
                return self.fn(*args, **kwargs)
            self._stats["retraces"] += 1
            self._reasons.append(reason)
            if not expected_change:
                _warn(f"ember.compile({self.__name__}): retracing (retrace {self._stats['retraces']}): guard "
                      f"failed: {reason}")
        return self._trace(args, kwargs)

    def _param_names(self, n):
        """The parameter names of key prefix `n` (a module's, as in _key; 'tensors': loose leaves)."""
        for i, m in enumerate(self.mods):
            if n == (f"m{i}" if len(self.mods) > 1 else type(m).__name__):
                return [f"{n}.{k}" for k, _ in m.named_parameters()]
        return [f"{n}[{i}]" for i in range(len(self.loose))]

    def _value_labels(self):
        return {label for label, _ in self.values}

    def _trace(self, args, kwargs):
        values, rngs = [], []
        mods, opts, loose = _cap.discover(self.fn, args, kwargs, values, rngs)
        self.rngs += [(r, label) for r, label in rngs if all(r is not x for x, _ in self.rngs)]
        labels = self._value_labels()
        self.values += [(label, read) for label, read in values if label not in labels]
        for t in loose:
            if all(t is not x for x in self.loose):
                self.loose.append(t)
        for m in mods:
            if all(m is not x for x in self.mods):
                self.mods.append(m)
        for o in opts:
            if all(o is not x for x in self.opts):
                self.opts.append(o)
        _cap.sync_lr(self.opts)
        key, _, sizes = self._key(args, kwargs)
        lrs = [[g["lr"] for g in o.param_groups] for o in self.opts]
        cap = _cap.capture(self.fn, args, kwargs, self.mods, self.opts, self._name, self.loose, self.rngs)
        self._stats["traces"] += 1
        entry = Entry(key, cap)
        entry.sizes = sizes
        entry.end_key = self._key(args, kwargs)[0]
        changed = [f"{type(o).__name__}.param_groups[{i}]['lr']" for o, before in zip(self.opts, lrs)
                   for i, (g, b) in enumerate(zip(o.param_groups, before)) if g["lr"] != b]
        labels = self._value_labels()
        changed += [name for (name, v0), (_, v1) in zip(key, entry.end_key)
                    if (name.endswith((".training", ".attributes")) or name in labels) and v0 != v1]
        side = {name for name in changed if name in labels}
        if side:   # a value the function itself changes (a counter) is no guard: it runs eagerly, once keyed
            self.values = [(label, read) for label, read in self.values if label not in side]
            key = tuple(item for item in key if item[0] not in side)
            entry.key = key
        changed += cap.arg_grads   # a gradient of an argument: each call's argument is another tensor
        if changed:
            msg = (f"ember.compile({self.__name__}): the function changed {', '.join(changed)} while it ran; "
                   f"Python side effects are not replayed by a compiled call, so this function runs eagerly. "
                   f"Step the scheduler (or call train()/eval()) outside the compiled function")
            self._run_eagerly(entry, msg + f" (at {user_frame()})" if self.strict else msg, "side effect")
        if cap.entropy and not entry.eager:
            self._run_eagerly(entry, f"ember.compile({self.__name__}): the function drew random numbers outside "
                                     f"ember's random primitives ({'; '.join(cap.entropy)}); a replay would reuse "
                                     f"this call's values, so this function runs eagerly. Draw with ember.rand, "
                                     f"randn or randint (replayed with fresh numbers), or pass the value in as an "
                                     f"argument", "random numbers drawn outside ember")
        if cap.data_shaped and not entry.eager:
            self._run_eagerly(entry, f"ember.compile({self.__name__}): the shape of a result depends on tensor "
                                     f"values ({'; '.join(cap.data_shaped[:3])}: a boolean mask, nonzero or unique); "
                                     f"a replay would keep this call's shape, so this function runs eagerly. Keep "
                                     f"shapes fixed (e.g. (x * mask).sum() or ember.where(mask, x, 0) instead of "
                                     f"x[mask])", "shapes that depend on values")
        devs = {v.device for v in cap.graph.values}
        if not entry.eager and devs - {"cpu"}:
            entry.eager, entry.why_eager = True, f"device {sorted(devs - {'cpu'})}"
            _warn(f"ember.compile({self.__name__}): compiled code runs on the CPU only for now; "
                  f"{entry.why_eager} runs eagerly")
        if not entry.eager:
            from .passes import run_passes
            run_passes(cap.graph, self.passes)
            try:
                entry.runner = Runner(cap.graph)
            except CompileError as e:
                if self.strict:
                    raise GuardError(f"ember.compile({self.__name__}): {e}") from None
                _warn(f"ember.compile({self.__name__}): {e}; this call signature runs eagerly")
                entry.eager, entry.why_eager = True, str(e)
        self._cache.setdefault(key, []).insert(0, entry)
        self._entries.append(entry)
        self._last = entry
        if self.dynamic and sizes:
            self._learn(entry)
        result, cap.result = cap.result, None   # the trace's arrays are not kept alive by the cache
        return result

    def _variant(self, entry, sizes):
        """The entry re-specialised for other sizes of the dynamic dims (dynamic.py), or the reason it
        cannot be: a str. The first other size retraces once, and the two traces make the template."""
        v = entry.variants.get(sizes)
        if v is not None:
            return v
        from .dynamic import specialize, NotSymbolic
        tpl = entry.template
        if tpl is None:
            return LEARNING if entry.why_not_symbolic is None else entry.why_not_symbolic
        try:
            if len(set(sizes)) != 1:
                raise NotSymbolic(f"the dynamic dims have different sizes {sizes}")
            cap = specialize(tpl, sizes[0])
            v = Entry(entry.key, cap)
            v.runner = Runner(cap.graph)
        except (NotSymbolic, CompileError) as e:
            return f"dynamic dims {entry.sizes} -> {sizes}: {e}"
        v.sizes = sizes
        if len(entry.variants) >= 4 * self.cache_size:
            entry.variants.clear()
        entry.variants[sizes] = v
        return v

    def _run_eagerly(self, entry, msg, why):
        """A signature whose trace cannot be replayed: eager from now on, with a warning (strict: raise)."""
        if self.strict:
            raise GuardError(msg)
        _warn(msg)
        entry.eager, entry.why_eager = True, why

    def _learn(self, entry):
        """After a trace at a new size of the dynamic dims: the template from it and an earlier trace of
        the same key at another size."""
        from .dynamic import unify, NotSymbolic
        for other in self._cache.get(entry.key, ()):
            if other is entry or other.eager or other.sizes == entry.sizes or entry.eager:
                continue
            try:
                entry.template = unify(entry.cap, entry.sizes, other.cap, other.sizes)
            except NotSymbolic as e:
                entry.why_not_symbolic = f"dynamic dims {other.sizes} and {entry.sizes}: {e}"
            return

    def _replay(self, entry, leaves):
        cap = entry.cap
        _cap.sync_lr(self.opts)
        offsets = {}
        for gen in cap.gen_total:
            offsets[gen] = gen._offset
        arrays = []
        leaf_src = cap.leaf_src
        consts = cap.graph.consts
        fresh = cap.graph.fresh
        for v in cap.graph.leaves:
            if v.kind == "const":
                arrays.append(consts[v.id].copy() if v.id in fresh else consts[v.id])
                continue
            src = leaf_src[v.id]
            kind = src[0]
            if kind == "input":
                a = leaves[src[1]][1]._data
            elif kind == "state":
                t = src[1]()
                a = src[2] if t is None else t._data
                if a.shape != v.shape:   # e.g. `p.data = ...` of another shape between calls
                    raise GuardFailure(-1, f"{v.src}: shape {v.shape} -> {a.shape}")
            elif kind == "rng":
                gen = src[1]
                a = _host.uint64_words(gen._seed, (offsets[gen] + src[2]) & _U64).view("int64")
            else:
                a = consts[v.id]
            arrays.append(a)
        outs, escs, reads = entry.runner(arrays)
        for gen, total in cap.gen_total.items():
            gen._offset = (offsets[gen] + total) & _U64
            gen._host = None
        for ref, a in zip(cap.escape_refs, escs):
            if isinstance(ref, _cap.GradOf):
                ref.write(a)
                continue
            t = ref()
            if t is not None:
                t._data = a
        for slot in cap.cleared_grads:
            slot.clear()
        if cap.graphless and not self._graphless_warned:
            self._graphless_warned = True
            _warn(f"ember.compile({self.__name__}): a compiled call's outputs carry no autograd graph (eagerly "
                  f"they would require grad), so .backward() on them fails; compile the whole step, "
                  f"forward, loss.backward() and the optimizer step, or call the model eagerly")
        return _build(cap.out_spec, outs, reads, cap.out_devices)

    # --- introspection -------------------------------------------------------------------------------
    @property
    def graph(self):
        """The graph of the most recently used trace (print it)."""
        if self._last is None:
            raise RuntimeError(f"ember.compile({self.__name__}): not traced yet; call it once first")
        return self._last.graph

    @property
    def code(self) -> str:
        """The generated Python source of the most recently used trace (after its first replay)."""
        r = self._last.runner if self._last else None
        return r.source if r is not None and r.source else ""

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self._stats, entries=len(self._entries), reasons=list(self._reasons),
                         eager_entries=[e.why_eager for e in self._entries if e.eager])

    def save(self, path) -> None:
        """Write the most recent trace (graph + state) to `path` (see ember.jit.load)."""
        from .serialize import save
        if self._last is None or self._last.eager:
            raise RuntimeError(f"ember.compile({self.__name__}).save: no compiled trace to save")
        save(self._last, path)


def _show(v):
    if isinstance(v, tuple) and len(v) == 4 and isinstance(v[0], tuple):   # a tensor's guard
        return f"shape {v[0]} {v[1]} {v[2]}" + (" requires_grad" if v[3] else "")
    if isinstance(v, tuple) and len(v) > 8:
        return f"<{len(v)} entries>"
    return f"{v!r:.80}"


def _show_py(pv):
    """A guarded Python value (capture.python_value) as the user wrote it."""
    if pv is None:
        return "unset"
    if pv[0] == "ndarray" and isinstance(pv[1], tuple):
        return f"array({list(pv[1][2])!r:.50}, dtype={np.dtype(pv[1][0]).name})"
    return f"{(dict(pv[1]) if pv[0] == 'dict' else pv[1])!r:.60}"


def _structure(spec):
    if spec.kind in ("tuple", "list"):
        return (spec.kind,) + tuple(_structure(s) for s in spec.items)
    if spec.kind == "dict":
        return ("dict",) + tuple((k, _structure(s)) for k, s in spec.items)
    return spec.kind


def _build(spec, outs, reads, devices):
    k = spec.kind
    if k == "tensor":
        return Tensor._make(outs[spec.value], devices[spec.value])
    if k == "read":
        return reads[spec.value]
    if k == "py":
        return spec.value
    if k in ("tuple", "list"):
        items = [_build(s, outs, reads, devices) for s in spec.items]
        return tuple(items) if k == "tuple" else items
    return {key: _build(s, outs, reads, devices) for key, s in spec.items}


def compile(fn=None, *, dynamic=False, strict=False, passes=None, cache_size=8):
    """Compile a function or module: trace it on the first call per guard key, replay afterwards.

    Also a bare decorator. A whole training step can be compiled (forward, backward, optimizer
    step, zero_grad); step the LR scheduler outside. A broken guard retraces with a warning (at most
    `cache_size` traces), or raises `GuardError` with strict=True.

    >>> import ember, ember.nn as nn
    >>> model = nn.Linear(3, 2)
    >>> f = ember.compile(model)
    >>> y = f(ember.ones(4, 3)); y = f(ember.ones(4, 3))   # traced, then replayed
    >>> f.cache_info()["hits"]
    1
    """
    if dynamic not in (False, None) and not isinstance(dynamic, dict) and dynamic is not True:
        raise TypeError(f"ember.compile: dynamic must be a bool or a dict {{argument: dim}}, got {dynamic!r}")
    if fn is None:
        return lambda f: CompiledFunction(f, dynamic=dynamic, strict=strict, passes=passes,
                                          cache_size=cache_size)
    return CompiledFunction(fn, dynamic=dynamic, strict=strict, passes=passes, cache_size=cache_size)


def trace(fn, example_inputs, *, passes=None):
    """Trace `fn` (a function or module) on `example_inputs` (a tensor or a tuple of arguments) and
    return the compiled callable; a call whose inputs break a guard raises GuardError (no retracing).

    >>> import ember, ember.nn as nn
    >>> traced = ember.jit.trace(nn.Linear(3, 2), ember.ones(4, 3))
    >>> print(traced.graph)   # doctest: +ELLIPSIS
    %0 : float32[4, 3] = input  # args[0]
    ...
    """
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    f = CompiledFunction(fn, strict=True, passes=passes)
    f(*example_inputs)
    return f


_NO_ARGS = _structure(_cap.flatten(((), {}), "", []))
