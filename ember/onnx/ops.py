"""The table: Ember primitive -> ONNX node(s).

Each converter is `fn(b, call) -> [output name per call output]`; `b` is the graph builder of
export.py (`b.x(call, i)` is input i's ONNX name, `b.node(...)` adds a node, `b.const(array)` an
initializer, `b.need(opset, why)` checks the opset, `b.int_vector(pairs)` builds a 1-D int64 tensor whose
entries may follow a dynamic axis). A primitive missing from `TABLE` is reported by export as
unsupported, with every other one, in one error.
"""
from __future__ import annotations

import math

import numpy as np

from ..backends import host
from ..ops.primitives import SLOT

INT_MAX = 2 ** 63 - 1
INT_MIN = -(2 ** 63)


class Unsupported(Exception):
    """This call cannot be exported (the message says why)."""


# ------------------------------------------------------------------ elementwise
_UNARY = {name: name for name in ("Neg", "Exp", "Log", "Sin", "Cos", "Tan", "Tanh", "Sigmoid", "Sqrt", "Abs",
                                  "Erf", "Relu", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                                  "Atanh")}
_BINARY = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "Div", "Pow": "Pow", "Maximum": "Max"}


def _unary(op):
    def convert(b, c):
        return [b.node(op, [b.x(c, 0, b.out_dtype(c))])]
    return convert


def _binary(op):
    def convert(b, c):
        dt = b.out_dtype(c)
        return [b.node(op, [b.x(c, 0, dt), b.x(c, 1, dt)])]
    return convert


def _log1p(b, c):
    x = b.x(c, 0)
    return [b.node("Log", [b.node("Add", [x, b.scalar(1, b.out_dtype(c))])])]


def _expm1(b, c):
    x = b.x(c, 0)
    return [b.node("Sub", [b.node("Exp", [x]), b.scalar(1, b.out_dtype(c))])]


def _clamp(b, c):
    b.need(11, "Clip with min/max inputs")
    dt = b.out_dtype(c)
    lo = "" if c.attrs.get("lo") is None else b.scalar(c.attrs["lo"], dt)
    hi = "" if c.attrs.get("hi") is None else b.scalar(c.attrs["hi"], dt)
    return [b.node("Clip", [b.x(c, 0, dt), lo, hi])]


def _cast(b, c):
    return [b.x(c, 0, b.out_dtype(c), copy=True)]


def _identity(b, c):
    return [b.node("Identity", [b.x(c, 0)])]


def _where(b, c):
    dt = b.out_dtype(c)
    return [b.node("Where", [b.x(c, 0, np.dtype(bool)), b.x(c, 1, dt), b.x(c, 2, dt)])]


def _gelu(b, c):
    x = b.x(c, 0)
    if b.opset >= 20:
        return [b.node("Gelu", [x], approximate="none")]
    dt = b.out_dtype(c)
    # x * 0.5 * (1 + erf(x / sqrt(2))): the exact GELU Ember computes
    e = b.node("Erf", [b.node("Mul", [x, b.scalar(1 / math.sqrt(2), dt)])])
    return [b.node("Mul", [b.node("Mul", [x, b.scalar(0.5, dt)]), b.node("Add", [e, b.scalar(1, dt)])])]


_COMPARE = {"eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual", "ge": "GreaterOrEqual"}


def _compare(b, c):
    op = c.attrs["op"]
    if op not in _COMPARE and op != "ne":
        raise Unsupported(f"Compare(op={op!r}) has no ONNX operator")
    if op in ("le", "ge"):
        b.need(12, f"{_COMPARE[op]}")
    dt = np.result_type(b.dtype(c.inputs[0]), b.dtype(c.inputs[1]))
    a, y = b.x(c, 0, dt), b.x(c, 1, dt)
    if op == "ne":
        return [b.node("Not", [b.node("Equal", [a, y])])]
    return [b.node(_COMPARE[op], [a, y])]


def _logic(b, c):
    op = c.attrs["op"]
    if op.startswith("logical_"):
        ins = [b.x(c, i, np.dtype(bool)) for i in range(len(c.inputs))]
        onnx_op = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "logical_not": "Not"}[op]
        return [b.node(onnx_op, ins)]
    if b.out_dtype(c) == np.dtype(bool):      # &, |, ^, ~ on bools
        onnx_op = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor", "bitwise_not": "Not"}[op]
        return [b.node(onnx_op, [b.x(c, i, np.dtype(bool)) for i in range(len(c.inputs))])]
    b.need(18, f"Bitwise{op[len('bitwise_'):].capitalize()}")
    ins = [b.x(c, i, b.out_dtype(c)) for i in range(len(c.inputs))]
    return [b.node("Bitwise" + op[len("bitwise_"):].capitalize(), ins)]


def _rounding(b, c):
    op, x = c.attrs["op"], b.x(c, 0)
    dt = b.out_dtype(c)
    if op == "floor":
        return [b.node("Floor", [x])]
    if op == "ceil":
        return [b.node("Ceil", [x])]
    if op == "sign":
        return [b.node("Sign", [x])]
    if not np.issubdtype(dt, np.floating):
        return [b.node("Identity", [x])]
    if op == "trunc":
        neg = b.node("Less", [x, b.scalar(0, dt)])
        return [b.node("Where", [neg, b.node("Ceil", [x]), b.node("Floor", [x])])]
    d = c.attrs.get("decimals", 0) or 0      # round: half to even in both (NumPy's rule and ONNX's)
    if d == 0:
        return [b.node("Round", [x])]
    s = b.scalar(10.0 ** d, dt)
    return [b.node("Div", [b.node("Round", [b.node("Mul", [x, s])]), s])]


def _predicate(b, c):
    op, x = c.attrs["op"], b.x(c, 0)
    if op == "isnan":
        return [b.node("IsNaN", [x])]
    if op == "isinf":
        return [b.node("IsInf", [x])]
    return [b.node("Not", [b.node("Or", [b.node("IsNaN", [x]), b.node("IsInf", [x])])])]


# ------------------------------------------------------------------ reductions
def _axes(b, c):
    axis = c.attrs.get("axis")
    nd = len(b.shape(c.inputs[0]))
    return None if axis is None else tuple(a % nd for a in axis)


def _reduce(op, input_axes_from):
    def convert(b, c):
        dt = b.out_dtype(c)
        x = b.x(c, 0, dt)
        axes = _axes(b, c)
        keep = int(bool(c.attrs.get("keepdims", False)))
        if axes == ():
            return [b.node("Identity", [x])]
        if c.name == "Amax" and c.attrs.get("neg"):
            op_ = "ReduceMin"
        else:
            op_ = op
        return [b.reduce(op_, x, axes, keep, input_axes_from)]
    return convert


def _cumsum(b, c):
    b.need(11, "CumSum")
    return [b.node("CumSum", [b.x(c, 0, b.out_dtype(c)), b.const(host.array(c.attrs["axis"], np.int64))])]


def _argreduce(b, c):
    op, axis, keep = c.attrs["op"], c.attrs.get("axis"), int(bool(c.attrs.get("keepdims", False)))
    x = b.x(c, 0)
    onnx_op = {"argmax": "ArgMax", "argmin": "ArgMin"}[op]
    if axis is None:
        flat = b.node("Reshape", [x, b.const(host.array([-1], np.int64))])
        out = b.node(onnx_op, [flat], axis=0, keepdims=0)
        if keep:   # keepdim with dim=None: every dim becomes 1
            out = b.node("Reshape", [out, b.const(host.ones(len(b.shape(c.inputs[0])), np.int64))])
        return [out]
    return [b.node(onnx_op, [x], axis=axis, keepdims=keep)]


# ------------------------------------------------------------------ movement
def _reshape(b, c):
    out = c.outputs[0]
    shape = b.int_vector(list(zip(b.shape(out), b.shape2(out))), allow_infer=True)
    return [b.node("Reshape", [b.x(c, 0), shape])]


def _permute(b, c):
    return [b.node("Transpose", [b.x(c, 0)], perm=list(c.attrs["dims"]))]


def _expand(b, c):
    out = c.outputs[0]
    shape = b.int_vector(list(zip(b.shape(out), b.shape2(out))))
    return [b.node("Expand", [b.x(c, 0), shape])]


def _flip(b, c):
    axes = list(c.attrs["axes"])
    n = len(axes)
    return [b.slice(b.x(c, 0), [(-1, -1)] * n, [(INT_MIN, INT_MIN)] * n, axes, [-1] * n)]


def _roll(b, c):
    x = b.x(c, 0)
    shape, shape2 = b.shape(c.inputs[0]), b.shape2(c.inputs[0])
    for s, ax in zip(c.attrs["shifts"], c.attrs["axes"]):
        n, n2 = shape[ax], shape2[ax]
        k = s % n if n else 0
        if n2 and s % n2 != k:
            raise Unsupported(f"roll by {s} along dim {ax}, a dynamic axis")
        if k == 0:
            continue
        tail = b.slice(x, [(-k, -k)], [(INT_MAX, INT_MAX)], [ax], [1])
        head = b.slice(x, [(0, 0)], [(-k, -k)], [ax], [1])
        x = b.node("Concat", [tail, head], axis=ax)
    return [x if x != b.x(c, 0) else b.node("Identity", [x])]


def _index(b, c):
    key, key2 = c.attrs["key"], b.attr2(c, "key")
    x = b.x(c, 0)
    shape = b.shape(c.inputs[0])
    nd = len(shape)
    consumed = sum(k is not None and k is not Ellipsis for k in key)
    if sum(k is SLOT for k in key) > 1 or (SLOT in key and any(isinstance(k, int) for k in key)):
        raise Unsupported("indexing with more than one index tensor (or an index tensor and an int)")
    # Ellipsis -> full slices
    full, full2 = [], []
    for k, k2 in zip(key, key2):
        if k is Ellipsis:
            full += [slice(None)] * (nd - consumed)
            full2 += [slice(None)] * (nd - consumed)
        else:
            full.append(k)
            full2.append(k2)
    slots = iter(range(1, len(c.inputs)))
    # 1. every slice in one Slice node
    starts, ends, axes, steps = [], [], [], []
    ax = 0
    for k, k2 in zip(full, full2):
        if k is None:
            continue
        if isinstance(k, slice) and k != slice(None):
            step = 1 if k.step is None else k.step
            if (k.step or 1) != (k2.step or 1):
                raise Unsupported("a slice step that follows a dynamic axis")
            lo, hi = (0, INT_MAX) if step > 0 else (-1, INT_MIN)
            starts.append((lo if k.start is None else k.start, lo if k2.start is None else k2.start))
            ends.append((hi if k.stop is None else k.stop, hi if k2.stop is None else k2.stop))
            axes.append(ax)
            steps.append(step)
        ax += 1
    if axes:
        x = b.slice(x, starts, ends, axes, steps)
    # 2. ints and the index tensor, from the last axis back so the earlier axes keep their numbers
    picks = []
    ax = 0
    for k in full:
        if k is None:
            continue
        if k is SLOT or (isinstance(k, int) and not isinstance(k, bool)):
            picks.append((ax, k))
        ax += 1
    for ax, k in reversed(picks):
        if k is SLOT:
            i = next(slots)
            if not np.issubdtype(b.dtype(c.inputs[i]), np.integer):
                raise Unsupported("indexing with a boolean mask (its output shape depends on the data)")
            x = b.node("Gather", [x, b.x(c, i, np.dtype(np.int64))], axis=ax)
        else:
            x = b.node("Gather", [x, b.const(host.array(k, np.int64))], axis=ax)
    # 3. None -> new axes of size 1, at their place in the output
    new, pos = [], 0
    for k in full:
        if k is None:
            new.append(pos)
            pos += 1
        elif k is SLOT:
            pos += len(b.shape(c.inputs[1]))
        elif isinstance(k, slice):
            pos += 1
    if new:
        x = b.unsqueeze(x, new)
    if x == b.x(c, 0):
        x = b.node("Identity", [x])
    return [x]


def _cat(b, c):
    dt = b.out_dtype(c)
    return [b.node("Concat", [b.x(c, i, dt) for i in range(len(c.inputs))], axis=c.attrs["axis"])]


def _pad(b, c):
    b.need(11, "Pad with pads as an input")
    pads = c.attrs["pads"]
    dt = b.out_dtype(c)
    flat = [p[0] for p in pads] + [p[1] for p in pads]
    return [b.node("Pad", [b.x(c, 0), b.const(host.array(flat, np.int64)), b.scalar(c.attrs["value"], dt)],
                   mode="constant")]


def _gather(b, c):
    return [b.node("GatherElements", [b.x(c, 0), b.x(c, 1, np.dtype(np.int64))], axis=c.attrs["axis"])]


def _scatter(reduction):
    def convert(b, c):
        b.need(16 if reduction else 11, "ScatterElements" + (f"(reduction='{reduction}')" if reduction else ""))
        dt = b.out_dtype(c)
        kw = {"reduction": reduction} if reduction else {}
        # inputs (x, src, index); src may be larger than index: its leading block is used, as torch does
        src, index = b.x(c, 1, dt), b.x(c, 2, np.dtype(np.int64))
        ishape, sshape = b.shape(c.inputs[2]), b.shape(c.inputs[1])
        if ishape != sshape:
            if b.shape2(c.inputs[2]) != ishape or b.shape2(c.inputs[1]) != sshape:
                raise Unsupported("a scatter whose src and index differ in shape along a dynamic axis")
            n = len(ishape)
            src = b.slice(src, [(0, 0)] * n, [(i, i) for i in ishape], list(range(n)), [1] * n)
        return [b.node("ScatterElements", [b.x(c, 0, dt), index, src], axis=c.attrs["axis"], **kw)]
    return convert


# ------------------------------------------------------------------ linear algebra and layers
def _matmul(b, c):
    dt = b.out_dtype(c)
    return [b.node("MatMul", [b.x(c, 0, dt), b.x(c, 1, dt)])]


def _attention(b, c):
    """Attention (ops/attention.py) as MatMul, Mul, [Add of the causal mask], Softmax, MatMul; its
    two outputs are o and the probabilities p."""
    b.need(13, "Softmax over one axis")
    dt = b.out_dtype(c)
    q, k, v = (b.x(c, i, dt) for i in range(3))
    r = len(b.shape(c.inputs[0]))
    kt = b.node("Transpose", [k], perm=list(range(r - 2)) + [r - 1, r - 2])
    s = b.node("Mul", [b.node("MatMul", [q, kt]), b.scalar(c.attrs["scale"], dt)])
    if c.attrs["causal"]:
        p = c.outputs[1]
        (L, S), (L2, S2) = b.shape(p)[-2:], b.shape2(p)[-2:]
        if (L, S) == (L2, S2):
            mask = host.full((L, S), -np.inf, dt)
            mask[tuple(host.tril_indices(L, S))] = 0    # 0 where key j <= query i, -inf above
            mask = b.const(mask, "causal_mask")
        else:   # the sequence is a dynamic axis: the mask is built for the runtime length
            b.need(14, "Trilu, for a causal mask whose size follows a dynamic axis")
            full = b.node("Expand", [b.scalar(-np.inf, dt), b.int_vector([(L, L2), (S, S2)])])
            mask = b.node("Trilu", [full, b.const(host.array(1, np.int64))], upper=1)
        s = b.node("Add", [s, mask])
    p = b.node("Softmax", [s], axis=-1)
    return [b.node("MatMul", [p, v]), p]


def _einsum(b, c):
    b.need(12, "Einsum")
    dt = b.out_dtype(c)
    return [b.node("Einsum", [b.x(c, i, dt) for i in range(len(c.inputs))], equation=c.attrs["eq"])]


def _linear(b, c):
    ins = [b.x(c, i) for i in range(len(c.inputs))]
    return [b.node("Gemm", ins, transB=1)]


def _pads(padding, nd):
    """Ember's ((before, after) per spatial dim) or None as ONNX's [begin..., end...]."""
    padding = padding or ((0, 0),) * nd
    return [p[0] for p in padding] + [p[1] for p in padding]


def _conv(b, c):
    w = b.shape(c.inputs[1])
    ins = [b.x(c, i) for i in range(len(c.inputs))]      # x, w and the optional bias
    return [b.node("Conv", ins, kernel_shape=list(w[2:]), strides=list(c.attrs["stride"]),
                   dilations=list(c.attrs["dilation"]), group=c.attrs["groups"],
                   pads=_pads(c.attrs.get("padding"), len(w) - 2))]


def _maxpool(b, c):
    b.need(10, "MaxPool with dilations")
    kernel = list(c.attrs["kernel"])
    return [b.node("MaxPool", [b.x(c, 0)], kernel_shape=kernel, strides=list(c.attrs["stride"]),
                   dilations=list(c.attrs["dilation"]), pads=_pads(c.attrs.get("padding"), len(kernel)))]


def _maxpool_index(b, c):
    if c.attrs.get("pads") is not None:
        raise Unsupported("max pooling with return_indices=True")
    b.need(10, "MaxPool with dilations")
    x = b.x(c, 0)
    spatial, spatial2 = b.shape(c.inputs[0])[2:], b.shape2(c.inputs[0])[2:]
    _, idx = b.node("MaxPool", [x], n_out=2, kernel_shape=list(c.attrs["kernel"]),
                    strides=list(c.attrs["stride"]), dilations=list(c.attrs["dilation"]))
    # ONNX counts indices over the whole tensor (N, C, *S); Ember's are within one (n, c) plane
    plane = b.int_vector([(math.prod(spatial), math.prod(spatial2))])
    return [b.node("Mod", [idx, plane])]


def _softmax(op):
    def convert(b, c):
        b.need(13, f"{op} over one axis (before opset 13 it flattens the trailing dims)")
        return [b.node(op, [b.x(c, 0)], axis=c.attrs["axis"])]
    return convert


def _norm(b, c, with_affine):
    n, eps = c.attrs["n"], c.attrs["eps"]
    x = b.x(c, 0)
    dt = b.out_dtype(c)
    shape = b.shape(c.inputs[0])
    if b.opset >= 17:
        if with_affine:
            w, bias = b.x(c, 1, dt), b.x(c, 2, dt)
        else:
            w, bias = b.const(host.ones(shape[len(shape) - n:], dt)), b.const(host.zeros(shape[len(shape) - n:], dt))
        return [b.node("LayerNormalization", [x, w, bias], axis=-n, epsilon=eps)]
    axes = tuple(range(len(shape) - n, len(shape)))
    mean = b.reduce("ReduceMean", x, axes, 1, 18)
    d = b.node("Sub", [x, mean])
    var = b.reduce("ReduceMean", b.node("Mul", [d, d]), axes, 1, 18)
    y = b.node("Div", [d, b.node("Sqrt", [b.node("Add", [var, b.scalar(eps, dt)])])])
    if with_affine:
        y = b.node("Add", [b.node("Mul", [y, b.x(c, 1, dt)]), b.x(c, 2, dt)])
    return [y]


def _layer_norm(b, c):
    return _norm(b, c, with_affine=True)


def _normalize(b, c):
    return _norm(b, c, with_affine=False)


def _embedding(b, c):
    return [b.node("Gather", [b.x(c, 0), b.x(c, 1, np.dtype(np.int64))], axis=0)]


def _assign(b, c):
    """An in-place write on a tensor the forward made (writes into parameters and buffers are refused
    before this): the written value, out of place."""
    if c.attrs.get("key") is not None:
        raise Unsupported("an in-place write into part of a tensor (x[key] = v)")
    dst = b.x(c, 0)
    dt = b.dtype(c.inputs[0])
    src = b.scalar(c.attrs["value"], dt) if c.attrs.get("value") is not None else b.x(c, 1, dt)
    op = c.attrs.get("op")
    if op is None:
        return [b.node("Expand", [src, b.node("Shape", [dst])])]
    onnx_op = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}.get(op)
    if onnx_op is None:
        raise Unsupported(f"in-place op {op!r}")
    return [b.node(onnx_op, [dst, src])]


# ------------------------------------------------------------------ whole modules
def _iofc(b, w):
    """torch's gate blocks (i, f, g, o) along dim 0 of w -> ONNX's order (i, o, f, c)."""
    H = b.param_shape(w)[0] // 4
    parts = [b.slice(b.param(w), [(k * H, k * H)], [((k + 1) * H, (k + 1) * H)], [0], [1]) for k in (0, 3, 1, 2)]
    return b.node("Concat", parts, axis=0)


def _concat0(b, ts):
    return ts[0] if len(ts) == 1 else b.node("Concat", ts, axis=0)


def _lstm(b, c):
    """nn.LSTM -> one ONNX LSTM per layer (both directions in it); weights reordered in the graph so the
    initializers keep the module's parameter names."""
    m = c.attrs["module"]
    b.need(7, "LSTM")
    if m.proj_size:
        raise Unsupported(f"nn.LSTM with proj_size={m.proj_size}: ONNX's LSTM has no projection")
    dirs = 2 if m.bidirectional else 1
    x = b.x(c, 0)
    unbatched = len(b.shape(c.inputs[0])) == 2
    if unbatched:
        x = b.unsqueeze(x, [1])
    elif m.batch_first:
        x = b.node("Transpose", [x], perm=[1, 0, 2])                          # (L, N, H_in)
    h0 = c0 = ""
    if len(c.inputs) == 3:
        h0, c0 = b.x(c, 1), b.x(c, 2)
        if unbatched:
            h0, c0 = b.unsqueeze(h0, [1]), b.unsqueeze(c0, [1])
    hs, cs = [], []
    for layer in range(m.num_layers):
        W, R, B = [], [], []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, _ = m._weights(layer, d)
            W.append(b.unsqueeze(_iofc(b, w_ih), [0]))
            R.append(b.unsqueeze(_iofc(b, w_hh), [0]))
            if b_ih is not None:
                B.append(b.unsqueeze(b.node("Concat", [_iofc(b, b_ih), _iofc(b, b_hh)], axis=0), [0]))
        ins = [x, _concat0(b, W), _concat0(b, R), _concat0(b, B) if B else "", ""]
        if h0:
            k = layer * dirs
            ins += [b.slice(h0, [(k, k)], [(k + dirs, k + dirs)], [0], [1]),
                    b.slice(c0, [(k, k)], [(k + dirs, k + dirs)], [0], [1])]
        y, h, cc = b.node("LSTM", ins, n_out=3, hidden_size=m.hidden_size,
                          direction="bidirectional" if dirs == 2 else "forward")
        # Y (L, dirs, N, H) -> (L, N, dirs * H); 0 in a Reshape target copies the input's size
        y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
        x = b.node("Reshape", [y, b.const(host.array([0, 0, -1], np.int64))])
        hs.append(h)
        cs.append(cc)
    h_n, c_n = _concat0(b, hs), _concat0(b, cs)
    if unbatched:
        return [b.squeeze(x, [1]), b.squeeze(h_n, [1]), b.squeeze(c_n, [1])]
    if m.batch_first:
        x = b.node("Transpose", [x], perm=[1, 0, 2])
    return [x, h_n, c_n]


TABLE = {
    **{name: _unary(op) for name, op in _UNARY.items()},
    **{name: _binary(op) for name, op in _BINARY.items()},
    "Log1p": _log1p, "Expm1": _expm1, "Clamp": _clamp, "Cast": _cast, "Clone": _identity,
    "ToDevice": _identity, "Where": _where, "Gelu": _gelu, "Compare": _compare, "Logic": _logic,
    "Rounding": _rounding, "Predicate": _predicate,
    "Sum": _reduce("ReduceSum", 13), "Amax": _reduce("ReduceMax", 18), "Prod": _reduce("ReduceProd", 18),
    "Cumsum": _cumsum, "ArgReduce": _argreduce,
    "Reshape": _reshape, "Permute": _permute, "Expand": _expand, "Flip": _flip, "Roll": _roll,
    "Index": _index, "Cat": _cat, "Pad": _pad, "Gather": _gather,
    "Scatter": _scatter(None), "ScatterAdd": _scatter("add"),
    "MatMul": _matmul, "Attention": _attention, "Einsum": _einsum, "Linear": _linear, "Conv": _conv, "MaxPool": _maxpool, "MaxPoolIndex": _maxpool_index,
    "Softmax": _softmax("Softmax"), "LogSoftmax": _softmax("LogSoftmax"),
    "LayerNorm": _layer_norm, "Normalize": _normalize,
    "Embedding": _embedding, "Assign": _assign,
    "LSTM": _lstm,     # the nn.LSTM module, captured as one call (capture's `opaque`)
}
