"""The one-pool prototype of docs/design-cpu-threads.md, measured on a compiled workload (default W5).

    .venv/bin/python bench/cpu_pool_ab.py [W5] [--rounds 12] [--no-attention]

Two threads each side. The script patches Ember in its own process only (nothing in ember/ uses this):
OpenBLAS's threading callback is pointed at numba's OpenMP team, and the numba kernels behind GELU,
LayerNorm, Adam and attention get parallel twins (attention: one (batch, head) per iteration, its
products through NumPy's OpenBLAS `sgemm` called from numba). It then alternates the compiled step
without the patch ("base"), with it ("pool") and torch's eager step, and prints the medians and the
median of the paired pool/base ratios.

Needs numba's `omp` threading layer (a GNU OpenMP runtime); it stops with a message otherwise. Never use
this in a process that forks afterwards (see the design page).
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np
import torch   # noqa: F401  (before numba's OpenMP layer loads: see main)
from llvmlite import ir
from numba import cfunc, njit, prange, threading_layer, types
from numba.extending import intrinsic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ember.backends import _numba_kernels as K          # noqa: E402
from ember.backends import cpu, cpu_kernels as CK       # noqa: E402
from ember.backends._numba_kernels import (             # noqa: E402  (bound now: K's names are patched)
    adam_step as s_adam_step, attention_softmax as s_attention_softmax,
    attention_softmax_grad as s_attention_softmax_grad, gelu as s_gelu, gelu_grad as s_gelu_grad,
    layer_norm as s_layer_norm, layer_norm_grad as s_layer_norm_grad)


def _numpy_openblas():
    from threadpoolctl import threadpool_info
    paths = [p["filepath"] for p in threadpool_info() if p["user_api"] == "blas" and "numpy.libs" in p["filepath"]]
    if not paths:
        sys.exit("cpu_pool_ab: NumPy's own OpenBLAS not found (threadpoolctl)")
    lib = ctypes.CDLL(paths[0])
    set_cb = lib.scipy_openblas_set_threads_callback_function64_
    set_cb.argtypes, set_cb.restype = [ctypes.c_void_p], None
    sgemm = lib.scipy_cblas_sgemm64_
    i64, e, vp, f = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    sgemm.argtypes, sgemm.restype = [e, e, e, i64, i64, i64, f, vp, i64, vp, i64, f, vp, i64], None
    return set_cb, sgemm


SET_CALLBACK, SGEMM = _numpy_openblas()


# ---- OpenBLAS's jobs on numba's team -----------------------------------------------------------------

@intrinsic
def _dojob(typingctx, fn, i, data, arg):
    """Call OpenBLAS's `dojob(int i, void *data, int arg)` through its address."""
    sig = types.void(types.intp, types.int32, types.intp, types.int32)

    def codegen(context, builder, signature, args):
        p8 = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32), p8, ir.IntType(32)])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()),
                     [args[1], builder.inttoptr(args[2], p8), args[3]])
        return context.get_dummy_value()
    return sig, codegen


@njit(parallel=True, nogil=True)
def _run_jobs(fn, numjobs, elsize, base, arg):
    for i in prange(numjobs):                   # OpenBLAS needs every job running at once: omp gives that
        _dojob(fn, np.int32(i), base + i * elsize, arg)


@cfunc(types.void(types.int32, types.intp, types.int32, types.intp, types.intp, types.int32), nogil=True)
def _callback(sync, dojob, numjobs, elsize, jobdata, arg):
    _run_jobs(dojob, numjobs, elsize, jobdata, arg)


# ---- parallel twins of the kernels: one chunk per thread, the serial loop on each ---------------------

@njit(inline="always")
def _chunk(n, parts, c):
    return n * c // parts, n * (c + 1) // parts


@njit(parallel=True, nogil=True)
def p_gelu(x, out, parts):
    for c in prange(parts):
        lo, hi = _chunk(x.size, parts, c)
        s_gelu(x[lo:hi], out[lo:hi])


@njit(parallel=True, nogil=True)
def p_gelu_grad(x, g, out, parts):
    for c in prange(parts):
        lo, hi = _chunk(x.size, parts, c)
        s_gelu_grad(x[lo:hi], g[lo:hi], out[lo:hi])


@njit(parallel=True, nogil=True)
def p_layer_norm(x, w, b, out, eps, affine, parts):
    for c in prange(parts):
        lo, hi = _chunk(x.shape[0], parts, c)
        s_layer_norm(x[lo:hi], w, b, out[lo:hi], eps, affine)


@njit(parallel=True, nogil=True)
def p_layer_norm_grad(x, g, w, dx, dw, db, eps, has_w, with_w, with_b, parts):
    n = x.shape[1]
    pw, pb = np.zeros((parts, n), np.float32), np.zeros((parts, n), np.float32)
    for c in prange(parts):                     # dw, db: a partial sum per chunk, added after
        lo, hi = _chunk(x.shape[0], parts, c)
        s_layer_norm_grad(x[lo:hi], g[lo:hi], w, dx[lo:hi], pw[c], pb[c], eps, has_w, with_w, with_b)
    for c in range(parts):
        dw += pw[c]
        db += pb[c]


@njit(parallel=True, nogil=True)
def p_adam_step(p, g, m, v, vmax, decay, wd, w1, small_w1, c2, beta2, step_size, bc2_sqrt, eps,
                decoupled, maximize, amsgrad, parts):
    for c in prange(parts):
        lo, hi = _chunk(p.size, parts, c)
        s_adam_step(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], vmax[lo:hi] if amsgrad else vmax, decay, wd, w1,
                    small_w1, c2, beta2, step_size, bc2_sqrt, eps, decoupled, maximize, amsgrad)


ROW, NT, TR = 101, 111, 112
ONE, ZERO = np.float32(1.0), np.float32(0.0)


@njit(inline="always")
def _mm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc):
    SGEMM(ROW, ta, tb, m, n, k, ONE, a, lda, b, ldb, ZERO, c, ldc)


@njit(parallel=True, nogil=True)
def p_attention(q, k, v, s, o, scale, causal, h):
    """cpu_kernels.attention per (batch, head): the same products (causal ones in two row blocks)."""
    B, H, L, E = q.shape
    S, Ev = k.shape[2], v.shape[3]
    lq, lk, lv, lo = q.strides[2] // 4, k.strides[2] // 4, v.strides[2] // 4, o.strides[2] // 4
    for i in prange(B * H):
        b, hh = i // H, i % H
        qp, kp, vp = q[b, hh].ctypes.data, k[b, hh].ctypes.data, v[b, hh].ctypes.data
        sp, op = s[b, hh].ctypes.data, o[b, hh].ctypes.data
        if h:
            _mm(NT, TR, h, h, E, qp, lq, kp, lk, sp, S)
            _mm(NT, TR, L - h, S, E, qp + h * lq * 4, lq, kp, lk, sp + h * S * 4, S)
        else:
            _mm(NT, TR, L, S, E, qp, lq, kp, lk, sp, S)
        s_attention_softmax(s[b, hh:hh + 1], scale, causal)
        if h:
            _mm(NT, NT, h, Ev, h, sp, S, vp, lv, op, lo)
            _mm(NT, NT, L - h, Ev, S, sp + h * S * 4, S, vp, lv, op + h * lo * 4, lo)
        else:
            _mm(NT, NT, L, Ev, S, sp, S, vp, lv, op, lo)


@njit(parallel=True, nogil=True)
def p_attention_grad(q, k, v, p, g, dq, dk, dv, ds, scale, causal, h):
    """cpu_kernels._attention_grad_into per (batch, head)."""
    B, H, L, E = q.shape
    S, Ev = k.shape[2], v.shape[3]
    lq, lk, lv, lg = q.strides[2] // 4, k.strides[2] // 4, v.strides[2] // 4, g.strides[2] // 4
    ldq, ldk, ldv = dq.strides[2] // 4, dk.strides[2] // 4, dv.strides[2] // 4
    for i in prange(B * H):
        b, hh = i // H, i % H
        qp, kp, vp, gp = q[b, hh].ctypes.data, k[b, hh].ctypes.data, v[b, hh].ctypes.data, g[b, hh].ctypes.data
        pp, dsp = p[b, hh].ctypes.data, ds[b, hh].ctypes.data
        dqp, dkp, dvp = dq[b, hh].ctypes.data, dk[b, hh].ctypes.data, dv[b, hh].ctypes.data
        if h:
            _mm(TR, NT, h, Ev, L, pp, S, gp, lg, dvp, ldv)
            _mm(TR, NT, S - h, Ev, L - h, pp + (h * S + h) * 4, S, gp + h * lg * 4, lg, dvp + h * ldv * 4, ldv)
            _mm(NT, TR, h, h, Ev, gp, lg, vp, lv, dsp, S)
            _mm(NT, TR, L - h, S, Ev, gp + h * lg * 4, lg, vp, lv, dsp + h * S * 4, S)
        else:
            _mm(TR, NT, S, Ev, L, pp, S, gp, lg, dvp, ldv)
            _mm(NT, TR, L, S, Ev, gp, lg, vp, lv, dsp, S)
        s_attention_softmax_grad(p[b, hh:hh + 1], ds[b, hh:hh + 1], scale, causal)
        if h:
            _mm(NT, NT, h, E, h, dsp, S, kp, lk, dqp, ldq)
            _mm(NT, NT, L - h, E, S, dsp + h * S * 4, S, kp, lk, dqp + h * ldq * 4, ldq)
            _mm(TR, NT, h, E, L, dsp, S, qp, lq, dkp, ldk)
            _mm(TR, NT, S - h, E, L - h, dsp + (h * S + h) * 4, S, qp + h * lq * 4, lq, dkp + h * ldk * 4, ldk)
        else:
            _mm(NT, NT, L, E, S, dsp, S, kp, lk, dqp, ldq)
            _mm(TR, NT, S, E, L, dsp, S, qp, lq, dkp, ldk)


# ---- switching the patch on and off -------------------------------------------------------------------

MIN = 16384   # elements: below this a kernel stays serial
SERIAL = {"gelu": s_gelu, "gelu_grad": s_gelu_grad, "layer_norm": s_layer_norm,
          "layer_norm_grad": s_layer_norm_grad, "adam_step": s_adam_step}
_ROWS = {"layer_norm", "layer_norm_grad"}


def _twin(name):
    par, ser = globals()["p_" + name], SERIAL[name]

    def run(*a):
        ok = a[0].size >= MIN and (name not in _ROWS or a[0].shape[0] >= 2)
        return par(*a, 2) if ok else ser(*a)
    return run


PARALLEL = {name: _twin(name) for name in SERIAL}
_attention, _attention_grad_into = CK.attention, CK._attention_grad_into


def _strided_ok(*arrays):
    return all(a.ndim == 4 and a.dtype == np.float32 and a.strides[-1] == 4 for a in arrays)


def attention(node, q, k, v):
    if not _strided_ok(q, k, v):
        return _attention(node, q, k, v)
    L, S = q.shape[-2], k.shape[-2]
    s = np.empty(q.shape[:-1] + (S,), np.float32)
    o = CK._heads_out(q.shape[:-2], L, v.shape[-1])
    p_attention(q, k, v, s, o, np.float32(node.scale), node.causal, CK._causal_split(node, L, S))
    return o, s


def attention_grad_into(K_, node, q, k, v, p, g, dq, dk, dv):
    if not _strided_ok(q, k, v, g, dq, dk, dv):
        return _attention_grad_into(K_, node, q, k, v, p, g, dq, dk, dv)
    p = np.ascontiguousarray(p)
    ds = np.empty(p.shape, np.float32)
    L, S = q.shape[-2], k.shape[-2]
    p_attention_grad(q, k, v, p, g, dq, dk, dv, ds, np.float32(node.scale), node.causal, CK._causal_split(node, L, S))


def patch(on, with_attention=True):
    SET_CALLBACK(_callback.address if on else None)
    for name in SERIAL:
        setattr(K, name, (PARALLEL if on else SERIAL)[name])
    use = on and with_attention
    CK._attention_grad_into = attention_grad_into if use else _attention_grad_into
    for cls, fn in list(cpu.kernels.items()):
        if fn in (_attention, attention):
            cpu.kernels[cls] = attention if use else _attention


def check_attention():
    """The patched attention equals cpu_kernels' (float32 rounding) at W5's shapes, causal or not."""
    class Node:
        scale = 32 ** -0.5

    rng = np.random.default_rng(0)
    B, H, L, E = 16, 4, 64, 32
    for causal in (True, False):
        Node.causal = causal
        qkv = rng.standard_normal((B, L, 3, H, E), dtype=np.float32)
        q, k, v = (qkv[:, :, i].swapaxes(1, 2) for i in range(3))
        g = CK._heads_out((B, H), L, E)
        g[...] = rng.standard_normal(g.shape)
        o1, p1 = _attention(Node, q, k, v)
        d1 = CK.attention_grad_packed(Node, q, k, v, p1, g)
        patch(True)
        try:
            o2, p2 = attention(Node, q, k, v)
            d2 = CK.attention_grad_packed(Node, q, k, v, p2, g)
        finally:
            patch(False)
        for a, b in ((o1, o2), (p1, p2), (d1, d2)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", nargs="?", default="W5")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--no-attention", action="store_true")
    args = ap.parse_args()
    import ember
    import compiled as C
    torch.set_num_threads(2)
    ember.set_num_threads(2)
    check_attention()
    if threading_layer() != "omp":
        sys.exit(f"cpu_pool_ab: numba's threading layer is {threading_layer()!r}, the prototype needs 'omp'")
    step, _ = C.compiled_step(args.name)
    t_step = C.WORKLOADS[args.name](torch)
    iters = C.ITERS[args.name]

    def timed(fn):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) / iters

    base, pool, tor, ratios = [], [], [], []
    for _ in range(args.rounds):
        time.sleep(0.25)
        patch(False)
        base.append(timed(step))
        time.sleep(0.25)
        patch(True, not args.no_attention)
        pool.append(timed(step))
        patch(False)
        time.sleep(0.25)
        tor.append(timed(t_step))
        ratios.append(pool[-1] / base[-1])
    b, p, t = (statistics.median(x) for x in (base, pool, tor))
    print(f"{C.machine()}\n{args.name} compiled, 2 threads: base {b * 1e3:.2f} ms, pool {p * 1e3:.2f} ms, "
          f"torch {t * 1e3:.2f} ms; paired pool / base {statistics.median(ratios):.3f}; "
          f"base / torch {b / t:.3f}; pool / torch {p / t:.3f}")


if __name__ == "__main__":
    main()
