"""Compiled CPU kernels behind the hottest eager primitives: exact GELU, softmax, log_softmax, LayerNorm
(and Normalize), training-mode BatchNorm and their gradients, each one numba loop (BatchNorm: a pass per
statistic) where the NumPy forward is 7-25 ufunc passes (bench/w5_parts.py, bench/RESULTS.md); and 2-D
max pooling (MaxPool, MaxPoolGrad, MaxPoolIndex, float32 and float64, bit for bit the NumPy forwards: see
the section below and docs/convolution.md). Add and Linear's bias add have kernels only to split large
float32 arrays over the CPU pool (cpu_pool.py), bit for bit NumPy's adds.

`install` registers them in `cpu.kernels` (through `cpu.register_kernel`); `Primitive.apply` then calls
`kernel(node, *arrays)` instead of `node.forward(*arrays)` for host arrays of those primitives only.
Nothing here imports numba until a kernel first runs (`import ember` stays numba-free); where numba is
not installed (the optional `ember[jit]` extra) that first call unregisters every kernel and the NumPy
forwards run as before. `EMBER_CPU_KERNELS=0` in the environment, or `disable()`, turns them off
(also those of modules imported later).

A kernel handles the common case and hands the rest to the primitive's own forward. The GELU, softmax and
LayerNorm kernels take float32 arrays, and float16/bfloat16 computed in float32 (as the forwards and
torch's CPU kernels do; `Primitive.apply` casts the result back), reductions over the last axis. float64
and other axes run the NumPy forward, so these kernels change results only by float32 rounding (erf and
exp are a few ulp from NumPy's).
"""
from __future__ import annotations

import math
import os
import threading
from typing import Callable

import numpy as np

from . import cpu, cpu_pool

_K = None          # the `_numba_kernels` module once imported
_installed: dict[type, Callable] = {}    # Primitive class -> kernel, what `install` registered (for enable/disable)
_F32 = np.dtype(np.float32)
_EMPTY = np.empty(0, np.float32)
_scratch_arrays = threading.local()   # _scratch
ADD, GELU, GELU_GRAD = 0, 1, 2        # _numba_pool.elementwise_job's loops (that module imports numba)


def _k():
    """The compiled kernels module, or None (every kernel unregistered) where numba cannot be imported."""
    global _K
    if _K is None:
        try:
            from . import _numba_kernels
        except ImportError:
            disable()
            return None
        _K = _numba_kernels
    return _K


_on = os.environ.get("EMBER_CPU_KERNELS", "1") != "0"


def install(table: dict) -> None:
    """Register `{Primitive class: name of a kernel in this module}` (unless they are disabled: then
    `enable()` registers them)."""
    for cls, name in table.items():
        _installed[cls] = globals()[name]
        if _on:
            cpu.register_kernel(cls, _installed[cls])


def enable() -> None:
    global _on
    _on = True
    for cls, fn in _installed.items():
        cpu.register_kernel(cls, fn)


def disable() -> None:
    """Unregister the kernels: every primitive runs its NumPy forward (tests compare both ways)."""
    global _on
    _on = False
    for cls in _installed:
        cpu.unregister_kernel(cls)


def enabled() -> bool:
    return any(cls in cpu.kernels for cls in _installed)


_NUMBA = None


def will_run(cls, arrays, attrs=None) -> bool:
    """Whether `cls`'s compiled kernel (not its NumPy forward) would run on `arrays` (arrays, or
    anything with their shape and dtype) whose first is float32, with attributes `attrs`: registered,
    and numba importable. The planner then counts the kernel's `scratch` (none: one loop)."""
    global _NUMBA
    kernel = getattr(cls, "cpu_kernel", None)
    if kernel is None or not arrays or arrays[0].dtype != np.float32:
        return False
    takes = getattr(kernel, "takes", None)   # a kernel that runs only on some layouts says which
    if takes is not None and not takes(arrays, attrs or {}):
        return False
    if _NUMBA is None:
        import importlib.util
        _NUMBA = _K is not None or importlib.util.find_spec("numba") is not None
    return _NUMBA


def _f32(a):
    """`a` as a C-contiguous float32 array (2-byte floats widened), or None for other dtypes."""
    dt = a.dtype
    if dt == np.float32:
        return np.ascontiguousarray(a)
    if dt.itemsize == 2 and dt.kind in "fV":   # float16, bfloat16 (ml_dtypes)
        return a.astype(np.float32)
    return None


def _rows(node, x, axis):
    """(rows, n) float32 view of x reduced over its last axis `axis`, or None (fallback)."""
    if x.ndim == 0 or axis % x.ndim != x.ndim - 1 or x.shape[-1] == 0:
        return None
    xs = _f32(x)
    return None if xs is None else xs.reshape(-1, x.shape[-1])


# ---- the kernels: fn(node, *arrays) like node.forward --------------------------------------------

def where(node, c, a, b):
    """Where as one select loop when the condition has the result's shape and a and b are of one float
    dtype, each of that shape or a single value (relu's gradient, masked_fill, clamps); the result takes
    the memory order of the first full-size value (channels-last arrays stay so); else NumPy's where."""
    dt = a.dtype
    if not (dt == b.dtype and dt.kind == "f" and dt.itemsize >= 4 and c.dtype == np.bool_ and c.size > 4096):
        return node.forward(c, a, b)
    shape = c.shape
    full = [x for x in (c, a, b) if x.shape == shape]
    if any(x.shape != shape and (x.size != 1 or x.ndim > len(shape)) for x in (a, b)) or len(full) < 2:
        return node.forward(c, a, b)
    perm = _memory_order(full[1])
    # an operand laid out otherwise (a channels-last mask beside a C-order gradient: NumPy's where over
    # mixed orders took 0.5 ms for W4's 300k elements) is copied into the output's order first
    flat = [_flat(x, perm) for x in full]
    flat = [f if f is not None else np.ascontiguousarray(x.transpose(perm)).reshape(-1) for f, x in zip(flat, full)]
    K = _k()
    if K is None:
        return node.forward(c, a, b)
    out = np.empty_like(full[1])   # full[1]'s memory order (order='K')
    o = _flat(out, perm)
    if a.shape == shape and b.shape == shape:
        K.where_select(flat[0], flat[1], flat[2], o)
    elif b.shape == shape:
        K.where_select_a(flat[0], a.reshape(-1)[0], flat[1], o)
    else:
        K.where_select_b(flat[0], flat[1], b.reshape(-1)[0], o)
    return out


def _memory_order(a):
    """The axes of `a` from the largest stride to the smallest (C order: 0, 1, ...; NHWC: 0, 2, 3, 1)."""
    return tuple(sorted(range(a.ndim), key=lambda i: -abs(a.strides[i])))


def _flat(a, perm):
    """`a`'s memory as a flat array when its axes in `perm` order are C-contiguous, else None."""
    t = a.transpose(perm)
    return t.reshape(-1) if t.flags.c_contiguous else None


def add(node, a, b):
    """a + b of two float32 C-contiguous arrays of one shape, from 64k elements: chunks over the CPU pool
    (W5's residual adds; one IEEE add per element, NumPy's values). Anything else: NumPy."""
    if a.size >= cpu_pool.MIN_SPLIT and a.__class__ is np.ndarray and b.__class__ is np.ndarray \
            and a.dtype == _F32 and b.dtype == _F32 and a.shape == b.shape and a.flags.c_contiguous \
            and b.flags.c_contiguous:
        out = np.empty(a.shape, np.float32)
        if cpu_pool.split("elementwise_job", a.size, ADD, a.size, a.ctypes.data, b.ctypes.data, out.ctypes.data):
            return out
    return a + b


def linear(node, x, w, b=None):
    """Linear: the GEMM, then a float32 bias added over the CPU pool's threads by row chunks (NumPy's
    `y += b` is one thread: 54 us of W5's 600 us 1024x128x512 layer)."""
    y = x @ w.T
    if b is not None:
        if not (y.dtype == _F32 and b.dtype == _F32 and y.ndim == 2 and y.flags.c_contiguous
                and b.flags.c_contiguous and y.size >= cpu_pool.MIN_SPLIT
                and cpu_pool.split("bias_act_job", y.size, y.shape[0], y.shape[1], y.ctypes.data, b.ctypes.data,
                                   b.size, 0)):
            y += b
    return y


def gelu(node, x):
    xs = _f32(x)
    K = _k() if xs is not None else None
    if K is None:
        return node.forward(x)
    out = np.empty(x.shape, np.float32)
    if not cpu_pool.split("elementwise_job", xs.size, GELU, xs.size, xs.ctypes.data, xs.ctypes.data,
                          out.ctypes.data):
        K.gelu(xs.reshape(-1), out.reshape(-1))
    return out


def gelu_grad(node, x, g):
    xs, gs = _f32(x), _f32(g)
    K = _k() if xs is not None and gs is not None and x.shape == g.shape else None
    if K is None:
        return node.forward(x, g)
    out = np.empty(x.shape, np.float32)
    if not cpu_pool.split("elementwise_job", xs.size, GELU_GRAD, xs.size, xs.ctypes.data, gs.ctypes.data,
                          out.ctypes.data):
        K.gelu_grad(xs.reshape(-1), gs.reshape(-1), out.reshape(-1))
    return out


def softmax(node, x):
    x2 = _rows(node, x, node.axis)
    K = _k() if x2 is not None else None
    if K is None:
        return node.forward(x)
    out = np.empty(x2.shape, np.float32)
    K.softmax(x2, out)
    return out.reshape(x.shape)


def log_softmax(node, x):
    x2 = _rows(node, x, node.axis)
    K = _k() if x2 is not None else None
    if K is None:
        return node.forward(x)
    out = np.empty(x2.shape, np.float32)
    K.log_softmax(x2, out)
    return out.reshape(x.shape)


def softmax_grad(node, y, g):
    y2 = _rows(node, y, node.axis)
    g2 = _rows(node, g, node.axis) if y2 is not None and y.shape == g.shape else None
    K = _k() if g2 is not None else None
    if K is None:
        return node.forward(y, g)
    out = np.empty(y2.shape, np.float32)
    K.softmax_grad(y2, g2, out)
    return out.reshape(y.shape)


# ---- scaled dot-product attention (ops/attention.py) ----------------------------------------------

def _heads_out(lead, L, E):
    """An uninitialised float32 (*lead, L, E) array laid out as (*lead[:-1], L, lead[-1], E) in memory:
    with lead = (B, H), the (B, L, H, E) order a transformer's `transpose(1, 2).reshape(B, L, H * E)`
    reads next without a copy (the view back is C-contiguous)."""
    if len(lead) < 2:
        return np.empty(lead + (L, E), np.float32)
    return np.empty(lead[:-1] + (L, lead[-1], E), np.float32).swapaxes(-2, -3)


def _attn_inputs(*arrays):
    """The arrays as float32 (2-byte floats widened; strided views kept), or None for other dtypes and
    for empty inputs (the forward runs). Shapes were checked by the caller (F.scaled_dot_product_attention)."""
    out = []
    for a in arrays:
        if a.dtype == np.float32:
            out.append(a)
        elif a.dtype.itemsize == 2 and a.dtype.kind in "fV":
            out.append(a.astype(np.float32))
        else:
            return None
        if a.size == 0:
            return None
    return out


def _pool(q):
    """The CPU pool (backends/cpu_pool.py) for a 4-d attention when it has more than one thread, else None."""
    if q.ndim != 4:
        return None
    pl = cpu_pool.pool()
    return pl if pl is not None and pl.size() > 1 else None


def _scratch(name, shape):
    """A float32 work array private to one kernel call (never returned), the same one again when the last
    call of this name had this shape: the memory is then still in cache. A fresh np.empty lands wherever
    malloc puts it. W5's compiled step ran 0.4% and 1.4% faster (two paired A/B runs, bench/RESULTS.md,
    session 12) with attention's k^T, v^T and ds reused this way. One array per name and thread."""
    d = _scratch_arrays.__dict__
    a = d.get(name)
    if a is None or a.shape != shape:
        a = d[name] = np.empty(shape, np.float32)
    return a


def _causal_split(node, L, S):
    """h for the two-block causal products, or 0. With `causal`, query rows [0, h) see only keys [0, h)
    (top-left aligned: row i sees j <= i), so every product skips the (h, S - h) corner it would
    multiply by zeros: three quarters of the work at L = S. Below 32 rows the extra BLAS calls cost more
    than the quarter saves."""
    h = L // 2
    return h if node.causal and h >= 16 and h <= S else 0


def attention(node, q, k, v):
    """o = softmax(q k^T * scale [masked]) v: the products in BLAS (NumPy's matmul over the strided
    head views; causal ones in two row blocks, `_causal_split`), scale, mask and softmax in one numba
    pass over the scores, o written into the (B, L, H, E) layout (`_heads_out`)."""
    arrays = _attn_inputs(q, k, v)
    K = _k() if arrays is not None else None
    if K is None:
        return node.forward(q, k, v)
    q, k, v = arrays
    L, S = q.shape[-2], k.shape[-2]
    pl = _pool(q)
    if pl is not None:   # (batch, head) pairs split over the CPU pool's threads
        s = np.empty(q.shape[:-1] + (S,), np.float32)
        o = _heads_out(q.shape[:-2], L, v.shape[-1])
        A = cpu_pool.attention_args(pl, q, k, v, s, (o,), node.scale, node.causal)
        if A is not None:
            pl.run(pl.NP.attention_job.address, min(pl.size(), int(A[0])), A)
            return o, s
    # k^T copied first: BLAS is ~1.7x faster on it than on the transposed view (E = 32: W5's heads)
    kt = _scratch("kt", k.shape[:-2] + k.shape[:-3:-1])
    np.copyto(kt, k.swapaxes(-1, -2))
    h = _causal_split(node, L, S)
    s = np.empty(q.shape[:-1] + (S,), np.float32)   # (..., L, S); the skipped corner is zeroed by the softmax
    o = _heads_out(q.shape[:-2], L, v.shape[-1])
    if h:
        np.matmul(q[..., :h, :], kt[..., :h], out=s[..., :h, :h])
        np.matmul(q[..., h:, :], kt, out=s[..., h:, :])
    else:
        np.matmul(q, kt, out=s)
    K.attention_softmax(s.reshape(-1, L, S), np.float32(node.scale), node.causal)
    if h:
        np.matmul(s[..., :h, :h], v[..., :h, :], out=o[..., :h, :])
        np.matmul(s[..., h:, :], v, out=o[..., h:, :])
    else:
        np.matmul(s, v, out=o)
    return o, s


def attention_grad(node, q, k, v, p, g):
    """dv = p^T g, ds = p * (g v^T - rowsum) * scale (one numba pass), dq = ds k, dk = ds^T q; each
    gradient written into the (B, L, H, E) layout; causal products in two row blocks as the forward."""
    arrays = _attn_inputs(q, k, v, p, g)
    K = _k() if arrays is not None else None
    if K is None:
        return node.forward(q, k, v, p, g)
    q, k, v, p, g = arrays
    lead, L, S = q.shape[:-2], q.shape[-2], k.shape[-2]
    dq, dk, dv = _heads_out(lead, L, q.shape[-1]), _heads_out(lead, S, k.shape[-1]), _heads_out(lead, S, v.shape[-1])
    _attention_grad_into(K, node, q, k, v, p, g, dq, dk, dv)
    return dq, dk, dv


def attention_grad_packed(node, q, k, v, p, g):
    """AttentionGradPacked: the three gradients written into the column blocks of one (B, L, 3 * H * E)
    array (each block in the (B, L, H, E) order), no Cat after them."""
    arrays = _attn_inputs(q, k, v, p, g)
    K = _k() if arrays is not None and q.ndim == 4 and v.shape[-1] == q.shape[-1] else None
    if K is None:
        return node.forward(q, k, v, p, g)
    q, k, v, p, g = arrays
    B, H, L, E = q.shape
    out = np.empty((B, L, 3, H, E), np.float32)
    dq, dk, dv = (out[:, :, i].swapaxes(1, 2) for i in range(3))
    _attention_grad_into(K, node, q, k, v, p, g, dq, dk, dv)
    return out.reshape(B, L, 3 * H * E)


def _attention_grad_into(K, node, q, k, v, p, g, dq, dk, dv):
    L, S = q.shape[-2], k.shape[-2]
    p = np.ascontiguousarray(p)
    pl = _pool(q)
    if pl is not None:
        ds = _scratch("ds", p.shape)
        A = cpu_pool.attention_args(pl, q, k, v, ds, (dq, dk, dv), node.scale, node.causal, p=p, g=g)
        if A is not None:
            pl.run(pl.NP.attention_grad_job.address, min(pl.size(), int(A[0])), A)
            return
    h = _causal_split(node, L, S)
    vt = _scratch("vt", v.shape[:-2] + v.shape[:-3:-1])
    np.copyto(vt, v.swapaxes(-1, -2))                 # v^T: as k^T in the forward
    ds = _scratch("ds", p.shape)                      # dp, then ds in place
    if h:
        np.matmul(p[..., :h].swapaxes(-1, -2), g, out=dv[..., :h, :])
        np.matmul(p[..., h:, h:].swapaxes(-1, -2), g[..., h:, :], out=dv[..., h:, :])
        np.matmul(g[..., :h, :], vt[..., :h], out=ds[..., :h, :h])
        np.matmul(g[..., h:, :], vt, out=ds[..., h:, :])
    else:
        np.matmul(p.swapaxes(-1, -2), g, out=dv)
        np.matmul(g, vt, out=ds)
    K.attention_softmax_grad(p.reshape(-1, L, S), ds.reshape(-1, L, S), np.float32(node.scale), node.causal)
    if h:
        np.matmul(ds[..., :h, :h], k[..., :h, :], out=dq[..., :h, :])
        np.matmul(ds[..., h:, :], k, out=dq[..., h:, :])
        np.matmul(ds[..., :h].swapaxes(-1, -2), q, out=dk[..., :h, :])
        np.matmul(ds[..., h:, h:].swapaxes(-1, -2), q[..., h:, :], out=dk[..., h:, :])
    else:
        np.matmul(ds, k, out=dq)
        np.matmul(ds.swapaxes(-1, -2), q, out=dk)


def _norm_rows(node, x):
    """(x as (rows, d) float32, d) for normalisation over the trailing node.n dims, or (None, d)."""
    n = node.n
    if n < 1 or n > x.ndim:
        return None, 0
    d = math.prod(x.shape[x.ndim - n:])
    xs = _f32(x) if d else None
    return (None if xs is None else xs.reshape(-1, d)), d


def layer_norm(node, x, w, b):
    x2, d = _norm_rows(node, x)
    ws, bs = (_f32(w), _f32(b)) if x2 is not None else (None, None)
    ok = ws is not None and bs is not None and ws.size == d and bs.size == d
    K = _k() if ok else None
    if K is None:
        return node.forward(x, w, b)
    out = np.empty(x2.shape, np.float32)
    ws, bs = ws.reshape(-1), bs.reshape(-1)
    if not cpu_pool.split("layer_norm_job", x2.size, x2.shape[0], d, x2.ctypes.data, ws.ctypes.data, bs.ctypes.data,
                          out.ctypes.data, int(np.float32(node.eps).view(np.int32)), 1):
        K.layer_norm(x2, ws, bs, out, np.float32(node.eps), True)
    return out.reshape(x.shape)


def normalize(node, x):
    x2, d = _norm_rows(node, x)
    K = _k() if x2 is not None else None
    if K is None:
        return node.forward(x)
    out = np.empty(x2.shape, np.float32)
    K.layer_norm(x2, _EMPTY, _EMPTY, out, np.float32(node.eps), False)
    return out.reshape(x.shape)


def layer_norm_grad(node, x, g, w=None):
    x2, d = _norm_rows(node, x)
    g2 = _f32(g) if x2 is not None and g.shape == x.shape else None
    ws = _EMPTY if w is None else (_f32(w) if g2 is not None else None)
    ok = g2 is not None and ws is not None and (w is None or ws.size == d)
    K = _k() if ok else None
    if K is None:
        return node.forward(x, g, w) if w is not None else node.forward(x, g)
    # rows in blocks of K.LN_GRAD_BLOCK, each block's weight/bias sums apart, then added in block order:
    # the same values whether the blocks run on one thread or are split over the CPU pool's
    rows = x2.shape[0]
    with_w = bool(node.with_w)
    with_b = with_w and bool(node.with_b)
    nb = -(-rows // K.LN_GRAD_BLOCK)
    out = np.empty((rows + with_w + with_b, d), np.float32)
    parts = np.zeros((nb, 2, d if with_w else 0), np.float32)
    g2, ws, eps = g2.reshape(-1, d), ws.reshape(-1), np.float32(node.eps)
    has_w = w is not None
    if x2.size < cpu_pool.MIN_SPLIT or not cpu_pool.split(   # (the size first: each .ctypes costs ~0.4 us)
            "layer_norm_grad_job", x2.size, rows, d, x2.ctypes.data, g2.ctypes.data, ws.ctypes.data,
            out.ctypes.data, parts.ctypes.data, int(eps.view(np.int32)), has_w | 2 * with_w | 4 * with_b):
        K.layer_norm_grad_blocks(x2, g2, ws, out[:rows], parts, eps, has_w, with_w, with_b, 0, nb)
    if not with_w:
        return out.reshape(x.shape)
    out[rows:] = 0
    K.add_blocks(parts[:, 0], out[rows])
    if with_b:
        K.add_blocks(parts[:, 1], out[rows + 1])
    return out


def adam_step(node, p, g, m, v, *rest):
    """AdamStep in one pass over each element, bit for bit its forward (float32 parameters whose state
    is C-contiguous float32 of the same shape; the rest runs the forward)."""
    vmax = rest[0] if node.amsgrad else _EMPTY
    f = _F32    # `is` first: NumPy's float32 descriptor is one object (a 100-element step is ~1 us of kernel)
    shape = p.shape
    ok = all(a.dtype is f or a.dtype == f for a in (p, g, m, v)) and p.flags.c_contiguous \
        and m.flags.c_contiguous and v.flags.c_contiguous and m.shape == shape and v.shape == shape \
        and g.shape == shape and (not node.amsgrad or (vmax.dtype == f and vmax.flags.c_contiguous
                                                       and vmax.shape == shape))
    K = _k() if ok else None
    if K is None:
        return node.forward(p, g, m, v, *rest)
    step, lr = rest[-2], rest[-1]
    t = float(step) + 1.0   # float64, as `step += 1` (a 0-d ufunc call costs 1.7 us)
    step[()] = t
    wd = node.weight_decay
    key = (t, float(lr), node.beta1, node.beta2, node.eps, wd, node.decoupled)
    args = _ADAM_SCALARS.get(key)
    if args is None:   # once per step value for all the parameters (a dozen 0-d NumPy ops: ~10 us)
        f32 = np.float32
        step_size = f32((lr / (1 - node.beta1 ** step)).astype(f32))    # as AdamStep.forward computes them
        bc2_sqrt = f32(np.sqrt(1 - node.beta2 ** step).astype(f32))
        decay = f32((1 - lr * wd).astype(f32)) if node.decoupled and wd != 0 else f32(1)
        w = 1 - node.beta1
        w1 = f32(w) if w < 0.5 else f32(1 - w)
        args = (decay, f32(wd), w1, w < 0.5, f32(1 - node.beta2), f32(node.beta2), step_size, bc2_sqrt,
                f32(node.eps))
        bits = tuple(int(f32(a).view(np.int32)) for i, a in enumerate(args) if i != 3)   # the pool job's floats
        if len(_ADAM_SCALARS) >= 64:
            _ADAM_SCALARS.clear()
        _ADAM_SCALARS[key] = args = (args, bits)
    args, bits = args
    gf = g.reshape(-1) if g.flags.c_contiguous else np.ascontiguousarray(g).reshape(-1)
    flags = args[3] | 2 * node.decoupled | 4 * node.maximize | 8 * node.amsgrad
    if p.size < ADAM_MIN_SPLIT or not cpu_pool.split(   # (the check first: each .ctypes costs ~0.4 us)
            "adam_job", p.size, p.size, p.ctypes.data, gf.ctypes.data, m.ctypes.data, v.ctypes.data,
            vmax.ctypes.data, *bits, flags, min_work=ADAM_MIN_SPLIT):
        K.adam_step(p.reshape(-1), gf, m.reshape(-1), v.reshape(-1), vmax.reshape(-1), *args, node.decoupled,
                    node.maximize, node.amsgrad)
    return p


# (step, lr, hyper-parameters) -> (the kernel's float32 scalars, their bits for the pool job); 64 entries at most
_ADAM_SCALARS: dict[tuple, tuple] = {}
ADAM_MIN_SPLIT = 1 << 14   # elements: an Adam step does ~20 operations on 5 arrays per element, 4x GELU's work


def embedding_grad(node, g, idx):
    """EmbeddingGrad as one pass over g's rows (float32 and float64; 13x the NumPy forward at W5's
    (1024, 128) into 65 rows). Each index's rows are added one after the other in their order, where the
    forward's reduceat adds them pairwise: the two differ by float rounding. Embedding checked the
    indices."""
    ok = g.dtype in (np.float32, np.float64) and idx.dtype.kind in "iu" and idx.size and g.size and not node.freq
    K = _k() if ok else None
    if K is None:
        return node.forward(g, idx)
    flat = np.ascontiguousarray(idx).reshape(-1).astype(np.int64, copy=False)
    vals = np.ascontiguousarray(g).reshape(flat.size, -1)
    out = np.zeros((node.num, vals.shape[1]), g.dtype)
    pad = -1 if node.padding_idx is None else node.padding_idx % node.num
    K.embedding_grad(flat, vals, out, pad)
    return out.reshape((node.num,) + g.shape[idx.ndim:])


# ---- training-mode batch norm (BatchNorm, BatchNormGrad) ------------------------------------------

def _bn_layout(x):
    """(2-D or 3-D float32 view, layout) of x (N, C, *S): 'ncs' for C-contiguous x as (N, C, S), 'mc'
    for channels-last x as (N * S, C); (None, None) for anything else (the NumPy forward runs)."""
    if x.dtype != np.float32 or x.ndim < 2 or x.size == 0:
        return None, None
    if x.flags.c_contiguous:
        return x.reshape(x.shape[0], x.shape[1], -1), "ncs"
    last = np.moveaxis(x, 1, -1)
    if last.flags.c_contiguous:
        return last.reshape(-1, x.shape[1]), "mc"
    return None, None


def _like(x, view, layout):
    """A new array of x's shape in x's memory layout, and its view in `layout`'s shape."""
    if layout == "ncs":
        out = np.empty(x.shape, np.float32)
        return out, out.reshape(view.shape)
    last = np.empty(np.moveaxis(x, 1, -1).shape, np.float32)
    return np.moveaxis(last, -1, 1), last.reshape(view.shape)


def _in_layout(a, x, layout):
    """`a` (x's shape) as a float32 view in x's layout, copying if its memory is laid out otherwise."""
    if a.dtype != np.float32 or a.shape != x.shape:
        return None
    if layout == "ncs":
        return np.ascontiguousarray(a).reshape(x.shape[0], x.shape[1], -1)
    return np.ascontiguousarray(np.moveaxis(a, 1, -1)).reshape(-1, x.shape[1])


def batch_norm(node, x, w, b):
    xv, layout = _bn_layout(x)
    ok = xv is not None and w.dtype == np.float32 and b.dtype == np.float32
    K = _k() if ok else None
    if K is None:
        return node.forward(x, w, b)
    C = x.shape[1]
    y, yv = _like(x, xv, layout)
    mean, var = np.empty(C, np.float32), np.empty(C, np.float32)
    fn = K.batch_norm_ncs if layout == "ncs" else K.batch_norm_mc
    fn(xv, np.ascontiguousarray(w), np.ascontiguousarray(b), np.float32(node.eps), yv, mean, var)
    return y, mean, var


def batch_norm_grad(node, x, g, w, mean, var):
    xv, layout = _bn_layout(x)
    gv = _in_layout(g, x, layout) if xv is not None else None
    ok = gv is not None and all(a.dtype == np.float32 for a in (w, mean, var))
    K = _k() if ok else None
    if K is None:
        return node.forward(x, g, w, mean, var)
    C = x.shape[1]
    gx, gxv = _like(x, xv, layout)
    gw, gb = np.empty(C, np.float32), np.empty(C, np.float32)
    fn = K.batch_norm_grad_ncs if layout == "ncs" else K.batch_norm_grad_mc
    fn(xv, gv, np.ascontiguousarray(w), np.ascontiguousarray(mean), np.ascontiguousarray(var),
       np.float32(node.eps), gxv, gw, gb)
    return gx, gw, gb
# ---- 2-D max pooling (MaxPool, MaxPoolGrad, MaxPoolIndex) ----------------------------------------
# float32 and float64 activations in channels-last memory (what Conv, ReLU and BatchNorm produce), with
# at least 8 channels: the loops vectorise over the channels. They give exactly the NumPy forwards'
# values (comparisons and selects; the gradient's adds in the same order). The rest (NCHW-contiguous
# or fewer channels: a loop over 1-4 channels ran 2-5x slower than the NumPy forwards' strided ufuncs;
# other dtypes; 1-D and 3-D pooling) runs the NumPy forward.

def _pool_ok(x, node_kernel):
    """Whether the loops take this (N, C, H, W) x: see above."""
    return len(node_kernel) == 2 and x.ndim == 4 and x.dtype in (np.float32, np.float64) \
        and x.shape[1] >= 8 and x.transpose(0, 2, 3, 1).flags.c_contiguous


def _as_nhwc(a):
    """a (N, C, H, W) as the C-contiguous channels-last array the loops read (a copy only where a is
    not laid out channels-last)."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _new_nhwc(shape, dtype, zero=False):
    """(a channels-last array of shape (N, C, H, W), its (N, H, W, C) memory the loops write)."""
    N, C, H, W = shape
    buf = (np.zeros if zero else np.empty)((N, H, W, C), dtype)
    return buf.transpose(0, 3, 1, 2), buf


def _pool_attrs(node):
    (kh, kw), (sh, sw), (dh, dw) = node.kernel, node.stride, node.dilation
    return kh, kw, sh, sw, dh, dw


def _leading_pads(padding):
    if padding is None:
        return 0, 0
    return padding[0][0], padding[1][0]


def max_pool(node, x):
    K = _k() if _pool_ok(x, node.kernel) else None
    if K is None:
        return node.forward(x)
    y, buf = _new_nhwc(node.infer(x)[0], x.dtype)
    xs, attrs = _as_nhwc(x), _pool_attrs(node) + _leading_pads(node.padding)
    if not (_split_images(xs) and cpu_pool.split("max_pool_job", xs.size, *xs.shape, *buf.shape[1:3],
                                                  xs.ctypes.data, buf.ctypes.data, *attrs)):
        K.max_pool2d(xs, buf, *attrs)
    return y


def _split_images(xs):
    """Whether a pooling loop over the channels-last float32 xs may go to the CPU pool, a range of images
    per thread (each image's values are computed as in one call): more than one image, enough elements."""
    return xs.dtype == _F32 and xs.shape[0] > 1 and xs.size >= cpu_pool.MIN_SPLIT


def max_pool_grad(node, x, y, g):
    ok = _pool_ok(x, node.kernel) and y.dtype == x.dtype and y.shape == g.shape and g.dtype.kind == "f"
    K = _k() if ok else None
    if K is None:
        return node.forward(x, y, g)
    kh, kw, sh, sw, dh, dw = _pool_attrs(node)
    ph, pw = _leading_pads(node.padding)
    yl = _as_nhwc(y)
    OH, OW = yl.shape[1], yl.shape[2]
    H, W = x.shape[2], x.shape[3]
    disjoint = sh >= dh * (kh - 1) + 1 and sw >= dw * (kw - 1) + 1
    # the one-pass loop writes every position a window covers: zero the rest only where there is any
    tiled = disjoint and dh == 1 and dw == 1 and sh == kh and sw == kw and ph == 0 and pw == 0 \
        and OH * sh == H and OW * sw == W
    xs, gs = _as_nhwc(x), _as_nhwc(g.astype(x.dtype, copy=False))
    C = xs.shape[3]
    pl = cpu_pool.pool() if _split_images(xs) else None
    if pl is not None and pl.size() > 1:   # a range of images per thread, gx zeroed there where needed
        gx, buf = _new_nhwc(x.shape, x.dtype)
        threads = pl.capacity + 1
        left, nan = np.empty((threads, OW, C), x.dtype), np.zeros(threads, np.int64)
        if cpu_pool.split("max_pool_grad_job", xs.size, *xs.shape, OH, OW, xs.ctypes.data, yl.ctypes.data,
                          gs.ctypes.data, buf.ctypes.data, left.ctypes.data, nan.ctypes.data,
                          kh, kw, sh, sw, dh, dw, ph, pw, int(disjoint), int(not tiled)):
            return node.forward(x, y, g) if nan.any() else gx
    gx, buf = _new_nhwc(x.shape, x.dtype, zero=not tiled)
    left = np.empty((OW, C), x.dtype)
    if K.max_pool2d_grad(xs, yl, gs, buf, left, kh, kw, sh, sw, dh, dw, ph, pw, disjoint):
        return node.forward(x, y, g)   # a window holding NaN: its gradient goes to its last NaN
    return gx


def _index_takes(arrays, attrs):
    """MaxPoolIndex's kernel takes a 4-D channels-last x (will_run: the planner then counts no scratch)."""
    return _pool_ok(arrays[0], (0, 0))


def max_pool_index(node, x):
    K = _k() if _pool_ok(x, node.kernel) else None
    if K is None:
        return node.forward(x)
    idx, buf = _new_nhwc(node.infer(x)[0], np.int64)
    pt, pl = _leading_pads(node.pads)
    W0 = x.shape[3] - (sum(node.pads[1]) if node.pads is not None else 0)
    if K.max_pool2d_index(_as_nhwc(x), buf, *_pool_attrs(node), pt, pl, W0) and node.pads is not None:
        return node.forward(x)   # a window whose maximum is -inf: its first -inf inside the input
    return np.ascontiguousarray(idx)   # C order, as the NumPy forward's


max_pool_index.takes = _index_takes  # type: ignore[attr-defined]  # read by getattr in will_run


# ---- small convolutions (cpu_conv.py: stride 1, few channels, tiles of im2col + GEMM over threads) ----

def _conv_module():
    if _k() is None:
        return None
    from . import cpu_conv
    return cpu_conv


def conv(node, x, w, b=None):
    C = _conv_module()
    y = C.conv(node, x, w, b) if C is not None else None
    return node.forward(x, w, b) if y is None else y


def conv_relu(node, x, w, b=None):
    """Conv then ReLU in one pass over each tile (a compiled graph's fused `Conv+Relu`), or None where
    the small-convolution loops do not take the conv."""
    C = _conv_module() if _on else None
    return C.conv(node, x, w, b, relu=True) if C is not None else None


def conv_input_grad(node, g, w):
    C = _conv_module()
    gx = C.conv_input_grad(node, g, w) if C is not None else None
    return node.forward(g, w) if gx is None else gx


def conv_weight_grad(node, x, g):
    C = _conv_module()
    gw = C.conv_weight_grad(node, x, g) if C is not None else None
    return node.forward(x, g) if gw is None else gw


def _conv_takes(which):
    """will_run's test for the three: cpu_conv.takes on the (x, w) the primitive stands for."""
    def takes(arrays, attrs):
        from types import SimpleNamespace
        from . import cpu_conv
        from ..ops.layers import _Spec
        a, b = arrays[0], arrays[1]
        if which == "conv":
            x, w = a, b
        elif which == "input":
            x, w = _Spec(attrs["x_shape"], a.dtype), b
        else:
            x, w = a, _Spec(attrs["w_shape"], a.dtype)
        return cpu_conv.takes(x, w, SimpleNamespace(**attrs))
    return takes


def _conv_scratch(which):
    def scratch(attrs, ins, out):
        from . import cpu_conv
        return cpu_conv.scratch(which, attrs, ins, out)
    return scratch


# read by getattr in will_run and in the planner's tracker
conv.takes, conv.scratch = _conv_takes("conv"), _conv_scratch("conv")   # type: ignore[attr-defined]
conv_input_grad.takes = _conv_takes("input")                           # type: ignore[attr-defined]
conv_input_grad.scratch = _conv_scratch("input")                       # type: ignore[attr-defined]
conv_weight_grad.takes = _conv_takes("weight")                         # type: ignore[attr-defined]
conv_weight_grad.scratch = _conv_scratch("weight")                     # type: ignore[attr-defined]


# ---- Winograd's input transform (layers._winograd_input), not a primitive: called from there ---------

def winograd_input(xl, th, tw):
    """V (16, N, th, tw, C) of the padded channels-last float32/float64 xl (N, 2th+2, 2tw+2, C) in one
    numba pass (bit for bit the NumPy passes, which make 8 temporaries: 3x slower at ResNet-18's layer 1),
    or None: kernels off, numba missing, another dtype or a non-NumPy array."""
    if not _on or xl.__class__ is not np.ndarray or xl.dtype not in (np.float32, np.float64):
        return None
    K = _k()
    if K is None:
        return None
    xl = np.ascontiguousarray(xl)
    V = np.empty((16, xl.shape[0], th, tw, xl.shape[3]), xl.dtype)
    K.winograd_input(xl, V, th, tw)
    return V
