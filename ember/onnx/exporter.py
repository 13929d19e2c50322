"""`ember.onnx.export`: capture a forward pass, translate each primitive (ops.TABLE), write the file.

Data flow: `capture(model, args)` (capture.py) -> `_Builder` walks the calls and emits ONNX nodes via the
table in ops.py -> `onnx.checker.check_model` -> a temporary file beside `f`, renamed over it at the end.
With `dynamic_axes`, the model is captured a second time with each dynamic axis grown (its data
repeated); what differs between the two captures (a reshape's target, a slice's end, a constant's
shape) is rewritten as a function of the graph inputs' runtime shapes.
"""
from __future__ import annotations

import math
import os
import tempfile
from typing import NamedTuple

import numpy as np

from .capture import capture
from .ops import TABLE, Unsupported

__all__ = ["export", "UnsupportedOperatorError"]

MIN_OPSET = 11
# grow the k-th dynamic axis by the k-th prime in the second capture: two axes then never have sizes in
# the same ratio, so each size that changed is told apart as one axis (times a constant) or a product
_DELTAS = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)


# attributes whose change with a dynamic axis the converters handle (they read the second capture)
_SIZED_ATTRS = {"Reshape": ("shape",), "Expand": ("shape",), "Index": ("key",)}


class DynDim(NamedTuple):
    """A dynamic input axis: its size in the first capture and in the second (grown) one."""
    input: str
    axis: int
    size: int
    grown: int
    symbol: str


class UnsupportedOperatorError(RuntimeError):
    """Some primitives of the captured forward have no ONNX translation (all listed in the message;
    `.problems` holds one line each). Nothing was written."""

    def __init__(self, message, problems):
        super().__init__(message)
        self.problems = problems


class _NeedOpset(Exception):
    def __init__(self, opset, what):
        super().__init__(f"needs opset_version >= {opset} ({what})")


def _import_onnx():
    try:
        import onnx
        import onnx.helper
        import onnx.numpy_helper
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the 'onnx' package: pip install ember[onnx]") from e
    return onnx


def host_array(data, dtype):
    from ..backends import host
    return host.array(list(data), dtype)


def _is_arange(a) -> bool:
    from ..backends import host
    return bool((a == host.arange(0, len(a), 1, a.dtype, False)).all())


def _triangle(a):
    """(value, k, upper) when the 2-D array `a` is `value` on and above (upper) or below the k-th
    diagonal and 0 elsewhere (k in -1, 0, 1), else None."""
    from ..backends import host
    if a.ndim != 2 or 0 in a.shape:
        return None
    rows = host.arange(0, a.shape[0], 1, np.int64, False).reshape(-1, 1)
    cols = host.arange(0, a.shape[1], 1, np.int64, False).reshape(1, -1)
    for upper in (1, 0):
        for k in (1, 0, -1):
            inside = (cols - rows >= k) if upper else (cols - rows <= k)
            if not inside.any():
                continue
            value = a[inside][0]
            if (a[inside] == value).all() and (a[~inside] == 0).all():
                return value.item(), k, upper
    return None


def _to_host(a):
    from ..backends import backend_of
    return backend_of(a).to_host(a)


# ------------------------------------------------------------------ argument checks
def _check_args(args):
    """args as a tuple, and its tensors in order: an argument may be a (nested) tuple or list of tensors, as
    an LSTM's (h0, c0), each tensor one graph input (torch.onnx.export flattens them the same way)."""
    from .._tensor import Tensor
    if isinstance(args, Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"ember.onnx.export: args must be a Tensor or a tuple of Tensors (the model is called "
                        f"as model(*args)), got {type(args).__name__}")

    def leaves(a, path):
        if isinstance(a, Tensor):
            return [a]
        if isinstance(a, (tuple, list)):
            return [t for i, x in enumerate(a) for t in leaves(x, f"{path}[{i}]")]
        raise TypeError(f"ember.onnx.export: {path} is {type(a).__name__} ({a!r:.60}); every argument "
                        f"must be an ember.Tensor or a (nested) tuple of them (graph inputs are tensors; bind "
                        f"other arguments in the model, e.g. with functools.partial or a wrapper Module)")
    return tuple(args), [t for i, a in enumerate(args) for t in leaves(a, f"args[{i}]")]


def _rebuild(args, tensors):
    """args with its tensors replaced, in order, by `tensors` (the grown inputs of the second capture)."""
    from .._tensor import Tensor
    it = iter(tensors)

    def swap(a):
        if isinstance(a, Tensor):
            return next(it)
        return type(a)(swap(x) for x in a)
    return tuple(swap(a) for a in args)


def _check_path(f):
    if hasattr(f, "write"):
        return
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ember.onnx.export: f must be a path or a binary file object, got {type(f).__name__}")
    path = os.path.abspath(os.fspath(f))
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        raise FileNotFoundError(f"ember.onnx.export: cannot write {os.fspath(f)!r}: directory {d!r} does not "
                                f"exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"ember.onnx.export: {os.fspath(f)!r} is a directory; give a file path")


def _names(given, n, default, what):
    given = list(given or [])
    if len(given) > n:
        raise ValueError(f"ember.onnx.export: {len(given)} {what}_names {given} for {n} {what}s")
    for name in given:
        if not isinstance(name, str) or not name:
            raise TypeError(f"ember.onnx.export: {what}_names must be non-empty strings, got {name!r}")
    names = given + [f"{default}_{i}" for i in range(len(given), n)]
    if len(set(names)) != len(names):
        raise ValueError(f"ember.onnx.export: {what} names must be unique, got {names}")
    return names


def _dynamic_axes(dynamic_axes, input_names, output_names=None):
    """torch's format ({name: [axis, ...]} or {name: {axis: symbol}}) -> {name: {axis: symbol}}.
    Names are checked against the outputs once those are known (output_names not None)."""
    if dynamic_axes is not None and not isinstance(dynamic_axes, dict):
        raise TypeError(f"ember.onnx.export: dynamic_axes must be a dict {{name: axes}}, got "
                        f"{type(dynamic_axes).__name__}")
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if output_names is not None and name not in input_names and name not in output_names:
            raise ValueError(f"ember.onnx.export: dynamic_axes names {name!r}, which is neither an input "
                             f"({input_names}) nor an output ({output_names})")
        if isinstance(axes, dict):
            spec = {int(a): str(s) for a, s in axes.items()}
        elif isinstance(axes, (list, tuple)):
            spec = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        else:
            raise TypeError(f"ember.onnx.export: dynamic_axes[{name!r}] must be a list of axes or a dict "
                            f"{{axis: name}}, got {type(axes).__name__}")
        out[name] = spec
    return out


def _grow(args, input_names, dyn):
    """The args of the second capture: every dynamic axis longer (its data repeated), and the table of
    dynamic dims: (input name, axis, size, grown size, symbol)."""
    from ..ops.creation import arange
    from ..ops.shape import index_select
    deltas, dims, grown = {}, [], []
    for a, name in zip(args, input_names):
        for axis, sym in sorted(dyn.get(name, {}).items()):
            if not -a.ndim <= axis < a.ndim:
                raise ValueError(f"ember.onnx.export: dynamic_axes[{name!r}] names axis {axis} but input "
                                 f"{name!r} has shape {tuple(a.shape)}")
        for axis, sym in sorted(dyn.get(name, {}).items()):
            axis %= a.ndim
            n = a.shape[axis]
            if n == 0:
                raise ValueError(f"ember.onnx.export: dynamic axis {axis} of input {name!r} has size 0; export "
                                 f"with an example of size >= 1")
            delta = deltas.setdefault(sym, _DELTAS[len(deltas) % len(_DELTAS)])
            dims.append(DynDim(name, axis, n, n + delta, sym))
            a = index_select(a, axis, arange(n + delta, device=a.device) % n)
        grown.append(a)
    for d in dims:
        for e in dims:
            if d.symbol == e.symbol and d.size != e.size:
                raise ValueError(f"ember.onnx.export: dynamic axis {d.symbol!r} has size {d.size} in input "
                                 f"{d.input!r} but {e.size} in input {e.input!r}")
    return tuple(grown), dims


def _same_program(g1, g2):
    """The second capture must run the same primitives on the same values (else a Python loop or branch
    depends on a dynamic size, and one graph cannot stand for both)."""
    for i, (a, b) in enumerate(zip(g1.calls, g2.calls)):
        if a.prim is not b.prim or a.inputs != b.inputs or a.outputs != b.outputs:
            raise ValueError(f"ember.onnx.export: the model runs different operations when a dynamic axis "
                             f"changes size (call {i}: {a.name} at {a.where}, then {b.name} at {b.where}); "
                             f"a Python loop or branch depends on it (an unrolled RNN over a dynamic "
                             f"sequence length does), so that axis cannot be dynamic")
    if len(g1.calls) != len(g2.calls) or len(g1.outputs) != len(g2.outputs):
        raise ValueError(f"ember.onnx.export: the model runs {len(g1.calls)} operations at the example size and "
                         f"{len(g2.calls)} when a dynamic axis changes size; a Python loop depends on it, so "
                         f"that axis cannot be dynamic")


# ------------------------------------------------------------------ the graph builder
class _Builder:
    """Emits ONNX nodes for the captured calls. The methods the converters of ops.py use: x, dtype,
    shape, shape2, out_dtype, attr2, node, const, scalar, need, reduce, unsqueeze, slice, int_vector."""

    def __init__(self, onnx, g1, g2, opset, input_names, output_names, param_names, dims):
        self.onnx, self.h = onnx, onnx.helper
        self.g1, self.g2 = g1, g2 if g2 is not None else g1
        self.opset = opset
        self.nodes, self.inits = [], []
        self.names = {}                  # value id -> ONNX name
        self.taken = set(input_names) | set(output_names) | set(param_names.values())
        self.param_names = param_names   # id(array) -> module name
        self.params_used = {}            # ONNX name -> array
        self.dims = dims
        self.call = self.call2 = None
        self._scalars = {}
        self._dim_tensors = {}
        for v, name in zip(g1.inputs, input_names):
            self.names.setdefault(v, name)

    # --- names, values
    def fresh(self, hint):
        i = len(self.taken)
        name = f"{hint}_{i}"
        while name in self.taken:
            i += 1
            name = f"{hint}_{i}"
        self.taken.add(name)
        return name

    def dtype(self, v):
        return np.dtype(self.g1.dtypes[v])

    def shape(self, v):
        return self.g1.shapes[v]

    def shape2(self, v):
        return self.g2.shapes[v]

    def out_dtype(self, c):
        return self.dtype(c.outputs[0])

    def attr2(self, c, key):
        return self.call2.attrs.get(key)

    def x(self, c, i, dtype=None, copy=False):
        """The ONNX name of call c's input i, cast to `dtype` when given (a Cast node, or a converted
        constant); with copy, a new name even when no cast is needed."""
        v = c.inputs[i]
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = self._leaf(v)
        if dtype is None or np.dtype(dtype) == self.dtype(v):
            return self.node("Identity", [name]) if copy else name
        return self.node("Cast", [name], to=self.h.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def param_shape(self, t):
        return tuple(t.shape)

    def squeeze(self, x, axes):
        from ..backends import host
        if self.opset >= 13:
            return self.node("Squeeze", [x, self.const(host.array(list(axes), np.int64))])
        return self.node("Squeeze", [x], axes=list(axes))

    def param(self, t):
        """The initializer name of a parameter or buffer tensor (its state_dict name)."""
        name = self.param_names[id(t._data)]
        self.params_used[name] = t._data
        return name

    def _leaf(self, v):
        a = self.g1.leaves[v]
        pname = self.param_names.get(id(a))
        if pname is not None:
            self.params_used[pname] = a
            return pname
        host = _to_host(a)
        if self.shape(v) == self.shape2(v):
            other = _to_host(self.g2.leaves[v]) if self.g2 is not self.g1 else host
            if (other == host).all() or (host != host).any():    # (NaNs: read as equal)
                return self.const(host, "const")
            return self._sized_constant(v, host, other)
        # a constant made in forward whose shape follows a dynamic axis: an RNN's zero state (one value
        # repeated) or positions (arange(T))
        flat = host.reshape(-1)
        if flat.size and (flat == flat[0]).all():
            shape = self.int_vector(list(zip(self.shape(v), self.shape2(v))))
            return self.node("Expand", [self.const(flat[:1].reshape(()), "const"), shape])
        other = _to_host(self.g2.leaves[v])
        if host.ndim == 1 and _is_arange(host) and _is_arange(other):
            n = self.node("Reshape", [self.int_vector([(len(host), len(other))]),
                                      self.const(host_array([], np.int64))])
            to = self.h.np_dtype_to_tensor_dtype(host.dtype)
            return self.node("Range", [self.scalar(0, host.dtype), self.node("Cast", [n], to=to),
                                       self.scalar(1, host.dtype)])
        tri = _triangle(host)
        if tri is not None and tri == _triangle(other):
            # a causal mask made for this length (generate_square_subsequent_mask(T), tril(ones(T, T)))
            self.need(14, "Trilu, for a triangular constant whose size follows a dynamic axis")
            value, k, upper = tri
            shape = self.int_vector(list(zip(self.shape(v), self.shape2(v))))
            full = self.node("Expand", [self.scalar(value, host.dtype), shape])
            return self.node("Trilu", [full, self.const(host_array([k], np.int64).reshape(()))], upper=upper)
        raise Unsupported(f"a constant tensor of shape {self.shape(v)} made inside forward whose shape and "
                          f"values follow a dynamic axis")

    def _sized_constant(self, v, a, b):
        """A scalar the forward computed from a dynamic size (a mean's count N, or 1/N): rebuilt from
        the inputs' shapes. Anything else that changed with the size cannot be exported."""
        if a.size == 1:
            x, y = a.item(), b.item()
            for inverse in (False, True):
                p, q = (1 / x, 1 / y) if inverse and x and y else (x, y)
                if float(p).is_integer() and float(q).is_integer() and p > 0 and q > 0:
                    r = self._resolve(int(p), int(q))
                    if r is not None:
                        n = self.int_vector([(int(p), int(q))])
                        n = self.node("Reshape", [n, self.const(host_array([], np.int64))])
                        n = self.node("Cast", [n], to=self.h.np_dtype_to_tensor_dtype(a.dtype))
                        if inverse:
                            n = self.node("Div", [self.scalar(1, a.dtype), n])
                        return self.node("Reshape", [n, self.const(host_array(a.shape, np.int64))])
        raise Unsupported(f"a constant of shape {a.shape} made inside forward whose values follow a dynamic "
                          f"axis ({a.reshape(-1)[:3]} at the example size, {b.reshape(-1)[:3]} at another)")

    # --- emitting
    def node(self, op, inputs, n_out=1, **attrs):
        outs = [self.fresh(op) for _ in range(n_out)]
        n = self.h.make_node(op, list(inputs), outs, name=self.fresh("node_" + op), **attrs)
        if self.call is not None:
            scope = f" in {self.call.scope}" if self.call.scope else ""
            n.doc_string = f"{self.call.name} at {self.call.where}{scope}"
        self.nodes.append(n)
        return outs[0] if n_out == 1 else outs

    def const(self, array, hint="const"):
        from onnx import numpy_helper
        from ..backends import host
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(host.array(array), name))
        return name

    def scalar(self, value, dtype):
        key = (value, np.dtype(dtype).str)
        if key not in self._scalars:
            from ..backends import host
            self._scalars[key] = self.const(host.array(value, np.dtype(dtype)), "scalar")
        return self._scalars[key]

    def need(self, opset, what):
        if self.opset < opset:
            raise _NeedOpset(opset, what)

    def reduce(self, op, x, axes, keepdims, input_axes_from):
        from ..backends import host
        if axes is None:
            return self.node(op, [x], keepdims=keepdims)
        if self.opset >= input_axes_from:
            return self.node(op, [x, self.const(host.array(list(axes), np.int64))], keepdims=keepdims)
        return self.node(op, [x], axes=list(axes), keepdims=keepdims)

    def unsqueeze(self, x, axes):
        from ..backends import host
        if self.opset >= 13:
            return self.node("Unsqueeze", [x, self.const(host.array(list(axes), np.int64))])
        return self.node("Unsqueeze", [x], axes=list(axes))

    def slice(self, x, starts, ends, axes, steps):
        from ..backends import host
        return self.node("Slice", [x, self.int_vector(starts), self.int_vector(ends),
                                   self.const(host.array(list(axes), np.int64)),
                                   self.const(host.array(list(steps), np.int64))])

    # --- sizes that follow the dynamic axes
    def _resolve(self, v1, v2):
        """(factor, [dims]) with v = factor * product of the dims' sizes in both captures, or None."""
        syms = {}
        for d in self.dims:
            syms.setdefault(d.symbol, d)
        ds = list(syms.values())
        combos = [[d] for d in ds] + [[d, e] for i, d in enumerate(ds) for e in ds[i:]]
        for combo in combos:
            p1 = math.prod(d.size for d in combo)
            p2 = math.prod(d.grown for d in combo)
            if v1 % p1 == 0 and v2 % p2 == 0 and v1 // p1 == v2 // p2:
                return v1 // p1, combo
        return None

    def symbol(self, v1, v2):
        r = self._resolve(v1, v2)
        if r is None:
            return None
        k, combo = r
        return "*".join(([str(k)] if k != 1 else []) + [d.symbol for d in combo])

    def _dim_tensor(self, d):
        """A 1-element int64 tensor: the runtime size of dynamic dim d."""
        from ..backends import host
        key = (d.input, d.axis)
        if key not in self._dim_tensors:
            call, self.call = self.call, None
            shape = self.node("Shape", [d.input])
            self._dim_tensors[key] = self.node("Gather", [shape, self.const(host.array([d.axis], np.int64))],
                                               axis=0)
            self.call = call
        return self._dim_tensors[key]

    def int_vector(self, pairs, allow_infer=False):
        """A 1-D int64 tensor of the values (v1 in the first capture, v2 in the second): a constant
        where they agree, else computed from the inputs' shapes (or -1, once, with allow_infer)."""
        from ..backends import host
        if all(a == b for a, b in pairs):
            return self.const(host.array([a for a, _ in pairs], np.int64))
        pieces, run, inferred = [], [], False
        for a, b in pairs:
            if a == b:
                run.append(a)
                continue
            r = self._resolve(a, b)
            if r is None:
                if not allow_infer or inferred:
                    raise Unsupported(f"a size that follows a dynamic axis ({a} at the example size, {b} at "
                                      f"another) and is not a multiple of one or two dynamic axes")
                inferred = True
                run.append(-1)
                continue
            if run:
                pieces.append(self.const(host.array(run, np.int64)))
                run = []
            k, combo = r
            t = self._dim_tensor(combo[0])
            for d in combo[1:]:
                t = self.node("Mul", [t, self._dim_tensor(d)])
            if k != 1:
                t = self.node("Mul", [t, self.const(host.array([k], np.int64))])
            pieces.append(t)
        if run:
            pieces.append(self.const(host.array(run, np.int64)))
        return pieces[0] if len(pieces) == 1 else self.node("Concat", pieces, axis=0)

    # --- the walk
    def _signature(self, c):
        """'Cumprod((2, 3) float32)': the primitive and its operands."""
        return f"{c.name}(" + ", ".join(f"{self.shape(v)} {self.dtype(v).name}" for v in c.inputs) + ")"

    def _live_calls(self):
        """Indices of the calls an output depends on, in order: a call whose result only fed a Python
        check (an index bounds test read by `.item()`) is not part of the model's data flow."""
        live, keep = set(self.g1.outputs), []
        for i in range(len(self.g1.calls) - 1, -1, -1):
            c = self.g1.calls[i]
            if any(o in live for o in c.outputs):
                keep.append(i)
                live.update(c.inputs)
        return keep[::-1]

    def convert(self):
        problems = {}
        for c in self.g1.skipped:
            key = (self._signature(c), c.where, c.scope, "an in-place write into a parameter or buffer of the "
                   "model (export leaves the model unchanged, so the write was not run)")
            problems[key] = problems.get(key, 0) + 1
        for i in self._live_calls():
            c = self.g1.calls[i]
            self.call, self.call2 = c, self.g2.calls[i]
            fn = TABLE.get(c.name)
            try:
                if fn is None:
                    raise Unsupported("no ONNX translation for this primitive")
                for k, a in c.attrs.items():
                    b = self.call2.attrs.get(k)
                    if a != b and k not in _SIZED_ATTRS.get(c.name, ()):
                        raise Unsupported(f"its attribute {k}={a!r} follows a dynamic axis ({b!r} at another "
                                          f"size)")
                outs = fn(self, c)
            except (Unsupported, _NeedOpset) as e:
                msg = str(e) if isinstance(e, Unsupported) else f"{e}, got opset_version={self.opset}"
                key = (self._signature(c), c.where, c.scope, msg)
                problems[key] = problems.get(key, 0) + 1
                outs = [self.fresh("unconverted") for _ in c.outputs]
            for v, name in zip(c.outputs, outs):
                self.names[v] = name
        self.call = None
        return [f"{name} at {where}" + (f" in module {scope}" if scope else "") + f": {msg}"
                + (f" (x{n})" if n > 1 else "") for (name, where, scope, msg), n in problems.items()]


def _module_state(model):
    """id(array) -> module name of each parameter and buffer (the first name of a shared one)."""
    names = {}
    if hasattr(model, "named_parameters"):
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if p is not None:
                names.setdefault(id(p._data), name)
    return names


def export(model, args, f, input_names=None, output_names=None, dynamic_axes=None, opset_version=17):
    """Export `model(*args)`'s forward pass to the ONNX file `f` (torch.onnx.export's names and meaning).

    The model runs once (twice with `dynamic_axes`) in eval mode under no_grad, every primitive it calls
    is recorded and translated; parameters and buffers become initializers named as in `state_dict()`.
    An argument may be a (nested) tuple of tensors (an LSTM's `(h0, c0)`): each tensor is one graph input.
    `input_names`/`output_names` name the graph's (flattened) inputs and outputs (default `input_0`,
    `output_0`, ...); `dynamic_axes` = {name: [axis, ...]} or {name: {axis: "symbol"}} marks symbolic
    dims. Unsupported primitives are all listed in one `UnsupportedOperatorError`, and then no file is
    written (the file is written to a temporary name beside `f` and renamed when complete).

    >>> import ember, ember.onnx
    >>> model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    >>> ember.onnx.export(model, ember.randn(3, 4), "mlp.onnx", input_names=["x"],
    ...                   output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    """
    args, inputs = _check_args(args)
    _check_path(f)
    if isinstance(opset_version, bool) or not isinstance(opset_version, int):
        raise TypeError(f"ember.onnx.export: opset_version must be an int, got {opset_version!r}")
    onnx = _import_onnx()
    max_opset = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset_version <= max_opset:
        raise ValueError(f"ember.onnx.export: opset_version {opset_version} is not supported: Ember exports "
                         f"opsets {MIN_OPSET} to {max_opset} (onnx {onnx.__version__})")
    in_names = _names(input_names, len(inputs), "input", "input")
    dyn = _dynamic_axes(dynamic_axes, in_names)

    # eval mode for the capture, as torch's default TrainingMode.EVAL: dropout off, BatchNorm reads its
    # running statistics (and does not update them); each module's flag is restored afterwards
    modules = list(model.modules()) if hasattr(model, "modules") else []
    was_training = [m.training for m in modules]
    param_names = _module_state(model)
    try:
        for m in modules:
            m.training = False
        from ..nn.rnn import LSTM
        g1 = capture(model, args, set(param_names), opaque=(LSTM,))
        g2, dims = None, []
        if any(n in in_names for n in dyn):
            grown, dims = _grow(inputs, in_names, dyn)
            try:
                g2 = capture(model, _rebuild(args, grown), set(param_names), opaque=(LSTM,))
            except Exception as e:
                sizes = ", ".join(f"{d.input} axis {d.axis}: {d.size} -> {d.grown}" for d in dims)
                raise ValueError(f"ember.onnx.export: to find what depends on the dynamic axes the model runs "
                                 f"a second time with them longer ({sizes}), and it failed: {e}") from e
            _same_program(g1, g2)
    finally:
        for m, t in zip(modules, was_training):
            m.training = t

    out_names = _names(output_names, len(g1.outputs), "output", "output")
    _dynamic_axes(dynamic_axes, in_names, out_names)      # now that the outputs are known
    clash = (set(in_names) | set(out_names)) & set(param_names.values())
    if clash:
        raise ValueError(f"ember.onnx.export: input/output names {sorted(clash)} are also parameter names")
    b = _Builder(onnx, g1, g2, opset_version, in_names, out_names, param_names, dims)
    problems = b.convert()
    if problems:
        where = f" to {os.fspath(f)!r}" if not hasattr(f, "write") else ""
        raise UnsupportedOperatorError(
            f"ember.onnx.export: {len(problems)} operation(s) cannot be exported to ONNX at opset "
            f"{opset_version}; nothing was written{where}:\n  " + "\n  ".join(problems), problems)
    proto = _finish(onnx, b, g1, in_names, out_names, dyn, opset_version)
    onnx.checker.check_model(proto)
    _write(proto.SerializeToString(), f)


def _finish(onnx, b, g1, in_names, out_names, dyn, opset):
    h = onnx.helper
    # graph outputs: rename the producing node's output where it is free to take the name, else Identity
    rename = {}
    produced = {o for n in b.nodes for o in n.output}
    for v, name in zip(g1.outputs, out_names):
        if v not in b.names:        # an output no call made: a parameter or a constant returned as is
            b.names[v] = b._leaf(v)
        cur = b.names[v]
        if cur in produced and cur not in rename:
            rename[cur] = name
        else:
            b.node("Identity", [cur] if cur not in rename else [rename[cur]])
            b.nodes[-1].output[0] = name
    for n in b.nodes:
        for i, s in enumerate(n.input):
            if s in rename:
                n.input[i] = rename[s]
        for i, s in enumerate(n.output):
            if s in rename:
                n.output[i] = rename[s]

    def info(name, v, shape2, spec):
        dims = []
        for i, (a, c) in enumerate(zip(b.shape(v), shape2)):
            if i in spec:
                dims.append(spec[i])
            elif a != c:
                dims.append(b.symbol(a, c) or f"{name}_dim_{i}")
            else:
                dims.append(a)
        return h.make_tensor_value_info(name, h.np_dtype_to_tensor_dtype(b.dtype(v)), dims)

    inputs = [info(name, v, b.shape(v), dyn.get(name, {})) for v, name in zip(g1.inputs, in_names)]
    outputs = [info(name, v, b.shape2(v), dyn.get(name, {})) for v, name in zip(g1.outputs, out_names)]
    from onnx import numpy_helper
    from ..backends import host
    inits = [numpy_helper.from_array(host.array(_to_host(a)), name) for name, a in b.params_used.items()]
    graph = h.make_graph(b.nodes, "ember", inputs, outputs, initializer=inits + b.inits)
    opset_id = h.make_opsetid("", opset)
    model = h.make_model(graph, opset_imports=[opset_id], producer_name="ember")
    model.ir_version = h.find_min_ir_version_for([opset_id])
    return model


def _write(data: bytes, f):
    """All or nothing: a temporary file in the target's directory, renamed over it once complete."""
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.path.abspath(os.fspath(f))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
