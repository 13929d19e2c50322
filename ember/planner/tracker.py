"""The planner's recorder: a dispatch mode that follows memory and work through a run on `meta`.

Every primitive call passes through `Tracker.__ember_dispatch__`. For each array a call makes it decides
whether the backend would allocate new memory (most primitives) or hand back a view or the same memory
(`Reshape` where NumPy can make a view, followed through each array's strides, `Permute`, `Expand`, a basic `Index`, `BitCast`, the in-place `Assign`
and `AdamStep`), and frees that memory when the last array using it dies (a `weakref.finalize` on each
array: CPython frees arrays the moment the last reference goes, on meta as on the CPU, so the graph's
saved tensors, `.grad`s and optimizer state are followed exactly as autograd keeps them). Inside a call
the backend also needs scratch memory (im2col columns, a softmax's shifted copy): `WORKSPACE` says how
much, from the CPU kernels in `ember/ops/`. `peak` is the largest live total seen, scratch included.

It also counts multiply-adds and FLOPs per call, charged to the innermost module running (the planner
keeps `stack` up to date with forward hooks).
"""
from __future__ import annotations

import math
import threading
import weakref

from ..autograd.dispatch import DispatchMode
from ..backends.meta import MetaArray
from ..ops import attention as A
from ..ops import layers as L
from ..ops import primitives as P
from ..ops.inplace import Assign
from ..ops.optim_prims import AdamStep
from ..backends import cpu_kernels
from ..ops.random_prims import Random

__all__ = ["Tracker", "macs_of", "WORKSPACE"]


class _Storage:
    """One allocation: its size and how many live arrays use it."""
    __slots__ = ("nbytes", "refs")

    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.refs = 0


def _basic_key(key) -> bool:
    return all(k is not P.SLOT and not isinstance(k, list) for k in key)


def c_strides(shape) -> tuple:
    """Strides, in elements, of a new C-ordered array."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def reshape_strides(shape, strides, new_shape):
    """The strides of `reshape` as a view, or None where NumPy must copy (its _attempt_nocopy_reshape)."""
    if strides is None:
        return None
    if math.prod(shape) == 0:
        return c_strides(new_shape)
    old = [(n, st) for n, st in zip(shape, strides) if n != 1]
    new_strides = [0] * len(new_shape)
    oi = ni = 0
    while ni < len(new_shape) and oi < len(old):
        oj, nj = oi + 1, ni + 1
        np_, op = new_shape[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):   # the old dims merged here must be laid out as one
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        new_strides[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            new_strides[nk - 1] = new_strides[nk] * new_shape[nk]
        ni, oi = nj, oj
    last = new_strides[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(new_shape)):
        new_strides[nk] = last
    return tuple(new_strides)


def index_strides(shape, strides, key, out_ndim):
    """The strides of a basic index (ints, slices, None, Ellipsis) of an array, or None if unsure."""
    if strides is None:
        return None
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out, dim = [], 0
    for k in key:
        if k is Ellipsis:
            for _ in range(len(shape) - real):
                out.append(strides[dim])
                dim += 1
        elif k is None:
            out.append(0)
        elif isinstance(k, slice):
            out.append(strides[dim] * (k.step or 1))
            dim += 1
        else:
            dim += 1
    out += strides[dim:]
    return tuple(out) if len(out) == out_ndim else None


def _layout(prim, attrs, ins, in_strides, out):
    """(shares input 0's memory, the output's strides or None if unknown) for a primitive whose output
    NumPy makes as a view of (or writes into) its first input; None for a new allocation."""
    x = ins[0]
    if prim is P.Reshape:
        st = reshape_strides(x.shape, in_strides, out.shape)
        return (True, st) if st is not None else None      # NumPy copies when no view can do it
    if prim is P.Permute:
        return True, None if in_strides is None else tuple(in_strides[d] for d in attrs["dims"])
    if prim is P.Expand:
        if attrs.get("fill") and x.ndim == 0:
            return None
        if in_strides is None:
            return True, None
        lead = out.ndim - x.ndim
        return True, (0,) * lead + tuple(0 if n == 1 and m != 1 else st
                                         for n, m, st in zip(x.shape, out.shape[lead:], in_strides))
    if prim is P.Index:
        if not _basic_key(attrs["key"]):
            return None
        return True, index_strides(x.shape, in_strides, attrs["key"], out.ndim)
    if prim is P.BitCast:   # another element size: the last dim is contiguous, the others keep their bytes
        if out.shape == x.shape or in_strides is None:
            return True, in_strides
        steps = [st * x.itemsize for st in in_strides[:-1]]
        if any(b % out.itemsize for b in steps):
            return True, None
        return True, tuple(b // out.itemsize for b in steps) + (1,)
    if prim is Assign or prim is AdamStep:
        return True, in_strides
    return None


def _channels_last(strides) -> bool:
    """Whether strides of x (N, C, *S) put its channels innermost (as a conv lays out its output)."""
    return strides is not None and all(strides[1] < st for st in strides[2:])


def _new_strides(prim, attrs, ins, in_strides, out):
    """Strides of a newly allocated output: C order, except Conv's, which is the transposed view
    (N, O, *out) of its channels-last result (N, *out, O): one GEMM per group writes (N * out, G, O/G).
    A depthwise conv sums products of channels-last views of x instead, which NumPy lays out like x when
    there is one output per group and no padded copy: C order then, unless x is channels-last."""
    if prim is L.Conv:   # (N, O, *out): at least one spatial dim
        x, w = ins[:2]
        groups, padding = attrs["groups"], attrs.get("padding")
        if (w.shape[1] == 1 and groups > 1 and w.shape[0] == groups and not L._has_pad(padding)
                and not _channels_last(in_strides)):
            return c_strides(out.shape)
        o, sp = out.shape[1], out.shape[2:]
        inner = c_strides(tuple(sp) + (o,))   # strides of (*out, O)
        return (math.prod(sp) * o, 1) + inner[:-1]
    return c_strides(out.shape)


# ---------------------------------------------------------------- work per call
def _conv_macs(out_shape, x_channels, groups, kernel):
    return math.prod(out_shape) * (x_channels // groups) * math.prod(kernel)


def macs_of(prim, attrs, in_arrays, out_arrays) -> int:
    """Multiply-adds of one call: convolutions (and their two gradients), Linear, MatMul, Einsum, attention."""
    if prim is L.Conv:
        x, w = in_arrays[:2]
        return _conv_macs(out_arrays[0].shape, x.shape[1], attrs["groups"], w.shape[2:])
    if prim is L.ConvInputGrad:
        g, w = in_arrays[:2]
        return _conv_macs(g.shape, attrs["x_shape"][1], attrs["groups"], w.shape[2:])
    if prim is L.ConvWeightGrad:
        x, g = in_arrays[:2]
        return _conv_macs(g.shape, x.shape[1], attrs["groups"], attrs["w_shape"][2:])
    if prim is L.Linear:
        x, w = in_arrays[:2]
        return math.prod(x.shape[:-1]) * w.shape[0] * w.shape[1]
    if prim is P.MatMul:
        return math.prod(out_arrays[0].shape) * in_arrays[0].shape[-1]
    if prim is A.Attention:   # q k^T and p v
        q, k, v = in_arrays[:3]
        return math.prod(q.shape[:-1]) * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    if prim is A.AttentionGrad or prim is A.AttentionGradPacked:   # p^T g, g v^T, ds k, ds^T q
        q, k, v = in_arrays[:3]
        return 2 * math.prod(q.shape[:-1]) * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    if prim is P.Einsum:
        sizes: dict[str, int] = {}
        for sub, a in zip(attrs["eq"].split("->")[0].split(","), in_arrays):
            sizes.update(zip(sub.strip(), a.shape))
        return math.prod(sizes.values())
    return 0


_NO_FLOPS = (P.Reshape, P.Permute, P.Expand, P.Index, P.BitCast, P.Cat, P.Pad, P.Gather, P.Clone, P.Cast,
             P.ToDevice, P.Flip, P.Roll, L.Embedding, L.MaxPoolIndex)
_REDUCTIONS = (P.Sum, P.Amax, P.Prod, P.Cumsum, P.Cumprod, P.AnyAll, P.ArgReduce)


def flops_of(prim, attrs, in_arrays, out_arrays, macs) -> int:
    """FLOPs of one call: 2 per multiply-add, one per element a reduction reads, one per element an
    elementwise op writes; data movement (reshape, index, pad, copy, cast) none."""
    if macs:
        return 2 * macs
    if prim in _NO_FLOPS or (prim is Assign and attrs.get("op") is None):
        return 0
    if prim in _REDUCTIONS:
        return in_arrays[0].size if in_arrays else 0
    return sum(o.size for o in out_arrays)


# ---------------------------------------------------------------- scratch memory per call
def _conv_cols(x_shape, channels, out_spatial, kernel, itemsize):
    """Bytes of im2col's columns: (N * L, C * K)."""
    return x_shape[0] * math.prod(out_spatial) * channels * math.prod(kernel) * itemsize


def _ws_conv(attrs, ins, out):
    x, w = ins[:2]
    groups = attrs["groups"]
    if w.shape[1] == 1 and groups > 1:   # depthwise: no columns; the running sum (the output) and two products
        return min(math.prod(w.shape[2:]) - 1, 2) * out.nbytes
    cols = _conv_cols(x.shape, x.shape[1], out.shape[2:], w.shape[2:], x.itemsize)
    return cols + (out.nbytes // groups if groups != 1 else 0)   # groups: one group's GEMM result at a time


def _ws_conv_input_grad(attrs, ins, out):
    g, w = ins[:2]
    cols = _conv_cols(attrs["x_shape"], attrs["x_shape"][1], g.shape[2:], w.shape[2:], g.itemsize)
    return max(g.nbytes + cols - out.nbytes, cols)   # g's rows and the columns, then columns and dx


def _ws_conv_weight_grad(attrs, ins, out):
    x, g = ins[:2]
    return _conv_cols(x.shape, x.shape[1], g.shape[2:], attrs["w_shape"][2:], x.itemsize) + g.nbytes


def _ws_maxpool_index(attrs, ins, out):
    x = ins[0]
    window = out.size * math.prod(attrs["kernel"]) * x.itemsize   # (N, C, *out, K) copied
    return max(window + out.nbytes, 5 * out.nbytes)   # window copy + argmax; offsets, positions (int64)


def _times_input(k):
    return lambda attrs, ins, out: k * ins[0].nbytes


def _ws_random(attrs, ins, out):
    return out.nbytes   # Philox's counters and words, about one output's worth


# scratch bytes beyond inputs and output at the busiest moment inside the CPU kernel (ember/ops/layers.py)
WORKSPACE = {
    L.Conv: _ws_conv,
    L.ConvInputGrad: _ws_conv_input_grad,
    L.ConvWeightGrad: _ws_conv_weight_grad,
    L.MaxPoolIndex: _ws_maxpool_index,
    L.Softmax: _times_input(1),          # x - max
    L.LogSoftmax: _times_input(1),       # the shifted x, then exp of it
    L.SoftmaxGrad: _times_input(1),      # y * sum(g * y)
    L.Normalize: _times_input(1),        # centred x, its square
    L.LayerNorm: _times_input(2),        # centred x, its square, the scaled copy
    L.LayerNormGrad: _times_input(3),    # centred x, h, gx, a product
    A.AttentionGrad: lambda attrs, ins, out: 2 * ins[3].nbytes,   # ds and ds * p, each of p's size
    A.AttentionGradPacked: lambda attrs, ins, out: 2 * ins[3].nbytes,
    AdamStep: _times_input(4),           # g - m, g^2, sqrt(v), then m * step_size before g^2 goes
    Random: _ws_random,
}


class Tracker(DispatchMode):
    """Live bytes, peak bytes, multiply-adds and FLOPs of the primitive calls made while it is open.

    `stack` holds the module paths running (the planner's forward hooks push and pop them); `failed`
    is (primitive, module path, exception) of the last call that raised.
    """

    def __init__(self):
        super().__init__()
        self._storage: dict[int, tuple] = {}   # id(array) -> (storage, strides in elements or None)
        self.live = 0
        self.peak = 0
        self.stack: list[str] = []
        self.macs: dict[str, int] = {}
        self.flops: dict[str, int] = {}
        self.failed = None
        self._depth = 0          # > 0 while a primitive runs: its outputs are placed by __ember_dispatch__
        self._saved_init = None

    def __enter__(self):
        # Arrays made outside primitives (zeros for optimizer state, empty(), a cached mask) are live
        # from the moment they exist: follow every MetaArray made while the tracker is open.
        init = self._saved_init = MetaArray.__init__
        tracker, thread = self, threading.get_ident()

        def __init__(arr, shape, dtype):
            init(arr, shape, dtype)
            if tracker._depth == 0 and threading.get_ident() == thread:   # this thread's arrays only
                tracker.track(arr)
        MetaArray.__init__ = __init__
        return super().__enter__()

    def __exit__(self, *exc):
        MetaArray.__init__ = self._saved_init
        return super().__exit__(*exc)

    # --- memory ------------------------------------------------------------------------------
    def track(self, array, storage: _Storage | None = None, strides=()) -> _Storage:
        """Count `array` as live until it dies; `storage`: the allocation it shares (a view)."""
        key = id(array)
        known = self._storage.get(key)
        if known is not None:
            return known[0]
        if storage is None:
            storage = _Storage(array.nbytes)
        if storage.refs == 0:
            self.live += storage.nbytes
            if self.live > self.peak:
                self.peak = self.live
        storage.refs += 1
        if strides == ():   # not given: a new C-ordered array
            strides = c_strides(array.shape)
        self._storage[key] = (storage, strides)
        weakref.finalize(array, self._release, key, storage)
        return storage

    def _release(self, key, storage):
        self._storage.pop(key, None)
        storage.refs -= 1
        if storage.refs == 0:
            self.live -= storage.nbytes

    def shares(self, a, b) -> bool:
        """Whether arrays a and b use one allocation (a view, or an in-place result)."""
        sa, sb = self._storage.get(id(a)), self._storage.get(id(b))
        return sa is not None and sb is not None and sa[0] is sb[0]

    # --- the mode ----------------------------------------------------------------------------
    def __ember_dispatch__(self, prim, inputs, attrs):
        in_arrays = [t._data for t in inputs]
        for a in in_arrays:
            self.track(a)          # an array made before the tracker opened: live from here on
        self._depth += 1
        try:
            out = prim.apply(*inputs, **attrs)
        except Exception as e:
            self.failed = (prim, self.stack[-1] if self.stack else "", e)
            raise
        finally:
            self._depth -= 1
        outs = out if isinstance(out, tuple) else (out,)
        out_arrays = [t._data for t in outs]
        first = out_arrays[0]
        if in_arrays and id(first) not in self._storage:
            base, strides = self._storage[id(in_arrays[0])]
            view = _layout(prim, attrs, in_arrays, strides, first)
            if view is not None:
                self.track(first, base, view[1])
            else:
                self.track(first, None, _new_strides(prim, attrs, in_arrays, strides, first))
        for a in out_arrays:
            self.track(a)
        ws = WORKSPACE.get(prim)
        if ws is not None and cpu_kernels.will_run(prim, in_arrays, attrs):
            # a compiled kernel (backends/cpu_kernels.py): its own scratch, or none (one loop into the output)
            ws = getattr(prim.cpu_kernel, "scratch", None)
        if ws is not None:
            extra = ws(attrs, in_arrays, first)
            if self.live + extra > self.peak:
                self.peak = self.live + extra
        macs = macs_of(prim, attrs, in_arrays, out_arrays)
        where = self.stack[-1] if self.stack else ""
        if macs:
            self.macs[where] = self.macs.get(where, 0) + macs
        flops = flops_of(prim, attrs, in_arrays, out_arrays, macs)
        if flops:
            self.flops[where] = self.flops.get(where, 0) + flops
        return out
