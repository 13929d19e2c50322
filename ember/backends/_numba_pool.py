"""The loops behind `cpu_pool` (numba only; imported when the pool first starts).

One mailbox per worker thread, a 64-byte line of int64 words in an array the Python side allocates:

    SEQ   the number of jobs posted to this worker      DONE  the number it has finished
    FN    the job: a C function fn(int32 i, void *p, int32 d)   P, I, D  its arguments
    SLEEP 1 while the worker sleeps in futex(SEQ)       READY 1 once the worker runs its loop

Line 0 is the pool's lock (one parallel region at a time; it also holds the OpenBLAS thread count the
region replaced). A worker spins on SEQ (pause, and a sched_yield every 256 turns so that a thread the
kernel put on the same CPU gets to run), then after ~10 ms without work sleeps in futex_wait; a poster
that sees SLEEP wakes it. Every word is read and written with sequentially consistent atomics: the
SLEEP/SEQ handshake is Dekker's, and that needs seq_cst on both sides.

`run_jobs` is the parallel region: jobs 1..n-1 to workers 0..n-2, job 0 on the calling thread, then
wait for all. OpenBLAS's level-3 jobs wait on each other, so every job must run at once: the Python
side starts a worker for every thread OpenBLAS may use. Inside a region OpenBLAS is set to one thread,
so a job's own BLAS calls never come back here (that would wait on the lock the region holds).
"""
from typing import Any

from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _numba_conv as KC
from . import _numba_kernels as K

LINE = 64                        # bytes per mailbox
SEQ, DONE, FN, P, I, D, SLEEP, READY = (8 * k for k in range(8))
SPIN = 200_000                   # spin turns (~10 ms) before a worker sleeps
YIELD_EVERY = 256
_SYS_FUTEX, _SYS_SCHED_YIELD = 202, 24
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_JIT: dict[str, Any] = dict(nogil=True, cache=True)

_i64 = ir.IntType(64)
_i32 = ir.IntType(32)


def _ptr(builder, addr):
    return builder.inttoptr(addr, _i64.as_pointer())


@intrinsic
def load(typingctx, addr):
    """The int64 at address `addr` (atomic, seq_cst)."""
    def cg(context, builder, sig, args):
        return builder.load_atomic(_ptr(builder, args[0]), "seq_cst", 8)
    return types.int64(types.int64), cg


@intrinsic
def store(typingctx, addr, value):
    """*addr = value (atomic, seq_cst)."""
    def cg(context, builder, sig, args):
        builder.store_atomic(args[1], _ptr(builder, args[0]), "seq_cst", 8)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), cg


@intrinsic
def cas(typingctx, addr, old, new):
    """Atomically: if *addr == old, *addr = new; whether it was."""
    def cg(context, builder, sig, args):
        r = builder.cmpxchg(_ptr(builder, args[0]), args[1], args[2], "seq_cst", "seq_cst")
        return builder.extract_value(r, 1)
    return types.boolean(types.int64, types.int64, types.int64), cg


@intrinsic
def pause(typingctx):
    """The CPU's spin-wait hint (x86 `pause`)."""
    def cg(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                            "llvm.x86.sse2.pause")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), cg


@intrinsic
def syscall3(typingctx, number, a, b, c):
    """libc's syscall(number, a, b, c, 0, 0, 0)."""
    def cg(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_i64, [_i64], var_arg=True), "syscall")
        zero = ir.Constant(_i64, 0)
        return builder.call(fn, list(args) + [zero, zero, zero])
    return types.int64(types.int64, types.int64, types.int64, types.int64), cg


@intrinsic
def call_job(typingctx, fn, i, p, d):
    """fn(int32 i, void *p, int32 d) for a function at address fn (OpenBLAS's dojob signature)."""
    def cg(context, builder, sig, args):
        vp = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [_i32, vp, _i32])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()),
                     [builder.trunc(args[1], _i32), builder.inttoptr(args[2], vp), builder.trunc(args[3], _i32)])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64), cg


@intrinsic
def call_int(typingctx, fn, x):
    """int32 fn(int32 x) for a function at address fn (openblas_set_num_threads_local)."""
    def cg(context, builder, sig, args):
        fnty = ir.FunctionType(_i32, [_i32])
        r = builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [builder.trunc(args[1], _i32)])
        return builder.sext(r, _i64)
    return types.int64(types.int64, types.int64), cg


@intrinsic
def address(typingctx, p):
    """A void pointer as an int64."""
    def cg(context, builder, sig, args):
        return builder.ptrtoint(args[0], _i64)
    return types.int64(types.voidptr), cg


@intrinsic
def f32_ptr(typingctx, addr):
    def cg(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.FloatType().as_pointer())
    return types.CPointer(types.float32)(types.int64), cg


@intrinsic
def i64_ptr(typingctx, p):
    def cg(context, builder, sig, args):
        return builder.bitcast(args[0], _i64.as_pointer())
    return types.CPointer(types.int64)(types.voidptr), cg


@intrinsic
def i64_ptr_at(typingctx, addr):
    """An int64 address as a pointer to int64."""
    def cg(context, builder, sig, args):
        return builder.inttoptr(args[0], _i64.as_pointer())
    return types.CPointer(types.int64)(types.int64), cg


@intrinsic
def sgemm(typingctx, fn, ta, tb, m, n, k, a, lda, b, ldb, c, ldc):
    """Row-major C = op(A) op(B) (alpha 1, beta 0) through the CBLAS sgemm at address fn, whose integers
    are 64-bit (NumPy's ILP64 OpenBLAS); A, B, C are float32 addresses."""
    def cg(context, builder, sig, args):
        f = ir.FloatType()
        fp = f.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [_i32, _i32, _i32, _i64, _i64, _i64, f, fp, _i64, fp, _i64, f, fp, _i64])
        fn_, ta_, tb_, m_, n_, k_, a_, lda_, b_, ldb_, c_, ldc_ = args
        builder.call(builder.inttoptr(fn_, fnty.as_pointer()),
                     [ir.Constant(_i32, 101), builder.trunc(ta_, _i32), builder.trunc(tb_, _i32), m_, n_, k_,
                      ir.Constant(f, 1.0), builder.inttoptr(a_, fp), lda_, builder.inttoptr(b_, fp), ldb_,
                      ir.Constant(f, 0.0), builder.inttoptr(c_, fp), ldc_])
        return context.get_dummy_value()
    i = types.int64
    return types.void(i, i, i, i, i, i, i, i, i, i, i, i), cg


# --- the pool ---------------------------------------------------------------------------------------

@njit(**_JIT)
def worker(box, w):
    """Worker w's loop (its mailbox is line w + 1). Ember never stops it (the thread is a daemon); the
    SEQ < 0 exit is there because numba cannot compile a loop without one."""
    base = box + (w + 1) * LINE
    if base == 0:           # a call that only compiles this function
        return
    store(base + READY, 1)
    spins = 0
    while True:
        s = load(base + SEQ)
        if s < 0:
            return
        if s != load(base + DONE):
            call_job(load(base + FN), load(base + I), load(base + P), load(base + D))
            store(base + DONE, s)
            spins = 0
            continue
        spins += 1
        if spins % YIELD_EVERY:
            pause()
        else:
            syscall3(_SYS_SCHED_YIELD, 0, 0, 0)
        if spins > SPIN:
            store(base + SLEEP, 1)
            if load(base + SEQ) == s:
                syscall3(_SYS_FUTEX, base + SEQ, _FUTEX_WAIT_PRIVATE, s & 0xFFFFFFFF)
            store(base + SLEEP, 0)
            spins = 0


@njit(**_JIT)
def _spin(k):
    if k % YIELD_EVERY:
        pause()
    else:
        syscall3(_SYS_SCHED_YIELD, 0, 0, 0)


@njit(**_JIT)
def run_jobs(box, set_threads, fn, n, p0, elsize, d):
    """The parallel region: fn(i, p0 + i * elsize, d) for i in [0, n), at once, job 0 on this thread."""
    k = 0
    while not cas(box, 0, 1):
        k += 1
        _spin(k)
    saved = call_int(set_threads, 1)       # a job's own BLAS calls stay on its thread
    for j in range(1, n):
        base = box + j * LINE
        s = load(base + SEQ) + 1
        store(base + FN, fn)
        store(base + I, j)
        store(base + P, p0 + j * elsize)
        store(base + D, d)
        store(base + SEQ, s)
        if load(base + SLEEP):
            syscall3(_SYS_FUTEX, base + SEQ, _FUTEX_WAKE_PRIVATE, 1)
    call_job(fn, 0, p0, d)
    for j in range(1, n):
        base = box + j * LINE
        k = 0
        while load(base + DONE) != load(base + SEQ):
            k += 1
            _spin(k)
    call_int(set_threads, saved)
    store(box, 0)


def blas_callback(box, set_threads):
    """A C function for openblas_set_threads_callback_function that runs OpenBLAS's jobs in `run_jobs`
    (compiled for this process: the mailbox address is a constant in it)."""
    @cfunc(types.void(types.int32, types.voidptr, types.int32, types.uint64, types.voidptr, types.int32))
    def callback(sync, dojob, numjobs, elsize, jobdata, d):
        run_jobs(box, set_threads, address(dojob), numjobs, address(jobdata), types.int64(elsize), d)
    return callback


# --- attention, one (batch, head) pair after another, split over the pool --------------------------
# The job's argument block (int64): see cpu_pool.attention_args. Each 4-d array is (address, batch
# stride, head stride, row stride) in elements, its last axis contiguous. E is q's and k's last
# size, Ev v's (A[21]).
_NT, _T = 111, 112     # CblasNoTrans, CblasTrans


@njit(**_JIT)
def _split(A):
    L, S = A[2], A[3]
    h = L // 2
    return h if A[6] != 0 and h >= 16 and h <= S else 0


@njit(**_JIT)
def _at(A, k, b, h):
    """The address of matrix (b, h) of the 4-d array described at A[k:k + 4]."""
    return A[k] + 4 * (b * A[k + 1] + h * A[k + 2])


@njit(**_JIT)
def attention_range(A, lo, hi):
    """Forward for pairs [lo, hi): s = q k^T (two row blocks when causal), softmax in place, o = s v."""
    H, L, S, E, Ev, fn = A[1], A[2], A[3], A[4], A[21], A[7]
    scale = K._f32_from_bits(A[5])
    causal = A[6] != 0
    ql, kl, vl, ol = A[11], A[15], A[19], A[27]
    h2 = _split(A)
    for idx in range(lo, hi):
        b, hd = idx // H, idx % H
        q, k, v, o = _at(A, 8, b, hd), _at(A, 12, b, hd), _at(A, 16, b, hd), _at(A, 24, b, hd)
        s = A[20] + 4 * idx * L * S
        if h2:
            sgemm(fn, _NT, _T, h2, h2, E, q, ql, k, kl, s, S)
            sgemm(fn, _NT, _T, L - h2, S, E, q + 4 * h2 * ql, ql, k, kl, s + 4 * h2 * S, S)
        else:
            sgemm(fn, _NT, _T, L, S, E, q, ql, k, kl, s, S)
        K.attention_softmax(carray(f32_ptr(s), (1, L, S)), scale, causal)
        if h2:
            sgemm(fn, _NT, _NT, h2, Ev, h2, s, S, v, vl, o, ol)
            sgemm(fn, _NT, _NT, L - h2, Ev, S, s + 4 * h2 * S, S, v, vl, o + 4 * h2 * ol, ol)
        else:
            sgemm(fn, _NT, _NT, L, Ev, S, s, S, v, vl, o, ol)


@njit(**_JIT)
def attention_grad_range(A, lo, hi):
    """Backward for pairs [lo, hi): dv = p^T g, ds = p * (g v^T - rowsum) * scale, dq = ds k, dk = ds^T q
    (causal: the products skip the corner the mask zeroes, as the forward). ds goes to a scratch block
    per pair (A[20]); dq, dk, dv at A[24:36]; p contiguous at A[36], g at A[37:41]."""
    H, L, S, E, Ev, fn = A[1], A[2], A[3], A[4], A[21], A[7]
    scale = K._f32_from_bits(A[5])
    causal = A[6] != 0
    ql, kl, vl = A[11], A[15], A[19]
    dql, dkl, dvl, gl = A[27], A[31], A[35], A[40]
    h2 = _split(A)
    for idx in range(lo, hi):
        b, hd = idx // H, idx % H
        q, k, v = _at(A, 8, b, hd), _at(A, 12, b, hd), _at(A, 16, b, hd)
        dq, dk, dv, g = _at(A, 24, b, hd), _at(A, 28, b, hd), _at(A, 32, b, hd), _at(A, 37, b, hd)
        ds = A[20] + 4 * idx * L * S
        p = A[36] + 4 * idx * L * S
        if h2:
            sgemm(fn, _T, _NT, h2, Ev, L, p, S, g, gl, dv, dvl)
            sgemm(fn, _T, _NT, S - h2, Ev, L - h2, p + 4 * (h2 * S + h2), S, g + 4 * h2 * gl, gl,
                  dv + 4 * h2 * dvl, dvl)
            sgemm(fn, _NT, _T, h2, h2, Ev, g, gl, v, vl, ds, S)
            sgemm(fn, _NT, _T, L - h2, S, Ev, g + 4 * h2 * gl, gl, v, vl, ds + 4 * h2 * S, S)
        else:
            sgemm(fn, _T, _NT, S, Ev, L, p, S, g, gl, dv, dvl)
            sgemm(fn, _NT, _T, L, S, Ev, g, gl, v, vl, ds, S)
        K.attention_softmax_grad(carray(f32_ptr(p), (1, L, S)), carray(f32_ptr(ds), (1, L, S)), scale, causal)
        if h2:
            sgemm(fn, _NT, _NT, h2, E, h2, ds, S, k, kl, dq, dql)
            sgemm(fn, _NT, _NT, L - h2, E, S, ds + 4 * h2 * S, S, k, kl, dq + 4 * h2 * dql, dql)
            sgemm(fn, _T, _NT, h2, E, L, ds, S, q, ql, dk, dkl)
            sgemm(fn, _T, _NT, S - h2, E, L - h2, ds + 4 * (h2 * S + h2), S, q + 4 * h2 * ql, ql,
                  dk + 4 * h2 * dkl, dkl)
        else:
            sgemm(fn, _NT, _NT, L, E, S, ds, S, k, kl, dq, dql)
            sgemm(fn, _T, _NT, S, E, L, ds, S, q, ql, dk, dkl)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def attention_job(i, p, n):
    A = carray(i64_ptr(p), (48,))
    attention_range(A, A[0] * i // n, A[0] * (i + 1) // n)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def attention_grad_job(i, p, n):
    A = carray(i64_ptr(p), (48,))
    attention_grad_range(A, A[0] * i // n, A[0] * (i + 1) // n)


@njit(**_JIT)
def run(box, set_threads, fn, n, args):
    """A parallel region from Python: fn's n jobs over the argument block `args` (an address)."""
    run_jobs(box, set_threads, fn, n, args, 0, n)


# --- elementwise and row kernels, split in contiguous chunks (the same values as one call) -----------

@njit(**_JIT)
def _chunk(total, i, n, align):
    """[lo, hi) of part i of n of range(total), cut at multiples of align."""
    step = (total + n * align - 1) // (n * align) * align
    lo = min(total, i * step)
    return lo, min(total, lo + step)


ADD, GELU, GELU_GRAD = 0, 1, 2   # elementwise_job's loops


@njit(inline="always", **_JIT)
def _part(A, k, lo, hi):
    """Elements [lo, hi) of the float32 array at address A[k]."""
    return carray(f32_ptr(A[k] + 4 * lo), (hi - lo,))


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def elementwise_job(i, p, n):
    """A = [loop, size, x, y, out] (GELU reads no y: pass x's address): K.add(x, y, out), K.gelu(x, out) or
    K.gelu_grad(x, y, out) over a chunk of the elements."""
    A = carray(i64_ptr(p), (5,))
    lo, hi = _chunk(A[1], i, n, 16)
    if hi > lo:
        x, y, out = _part(A, 2, lo, hi), _part(A, 3, lo, hi), _part(A, 4, lo, hi)
        if A[0] == ADD:
            K.add(x, y, out)
        elif A[0] == GELU:
            K.gelu(x, out)
        else:
            K.gelu_grad(x, y, out)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def layer_norm_job(i, p, n):
    """A = [rows, d, x, w, b, out, eps bits, affine]: LayerNorm of a block of rows."""
    A = carray(i64_ptr(p), (8,))
    rows, d = A[0], A[1]
    lo, hi = _chunk(rows, i, n, 1)
    if hi > lo:
        nw = d if A[7] else 0
        K.layer_norm(carray(f32_ptr(A[2] + 4 * lo * d), (hi - lo, d)), carray(f32_ptr(A[3]), (nw,)),
                     carray(f32_ptr(A[4]), (nw,)), carray(f32_ptr(A[5] + 4 * lo * d), (hi - lo, d)),
                     K._f32_from_bits(A[6]), A[7] != 0)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def layer_norm_grad_job(i, p, n):
    """A = [rows, d, x, g, w, dx, parts, eps bits, flags (1: has_w, 2: with_w, 4: with_b)]: LayerNorm's
    gradient over a range of row blocks (K.layer_norm_grad_blocks; parts is (blocks, 2, d or 0))."""
    A = carray(i64_ptr(p), (9,))
    rows, d, fl = A[0], A[1], A[8]
    nb = (rows + K.LN_GRAD_BLOCK - 1) // K.LN_GRAD_BLOCK
    lo, hi = _chunk(nb, i, n, 1)
    if hi > lo:
        has_w, with_w = (fl & 1) != 0, (fl & 2) != 0
        K.layer_norm_grad_blocks(carray(f32_ptr(A[2]), (rows, d)), carray(f32_ptr(A[3]), (rows, d)),
                                 carray(f32_ptr(A[4]), (d if has_w else 0,)), carray(f32_ptr(A[5]), (rows, d)),
                                 carray(f32_ptr(A[6]), (nb, 2, d if with_w else 0)), K._f32_from_bits(A[7]),
                                 has_w, with_w, (fl & 4) != 0, lo, hi)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def max_pool_job(i, p, n):
    """A = [N, H, W, C, OH, OW, x, out, kh, kw, sh, sw, dh, dw, ph, pw]: K.max_pool2d over a range of
    images of the channels-last (N, H, W, C) x and (N, OH, OW, C) out."""
    A = carray(i64_ptr(p), (16,))
    lo, hi = _chunk(A[0], i, n, 1)
    if hi > lo:
        H, W, C, OH, OW = A[1], A[2], A[3], A[4], A[5]
        K.max_pool2d(carray(f32_ptr(A[6] + 4 * lo * H * W * C), (hi - lo, H, W, C)),
                     carray(f32_ptr(A[7] + 4 * lo * OH * OW * C), (hi - lo, OH, OW, C)),
                     A[8], A[9], A[10], A[11], A[12], A[13], A[14], A[15])


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def max_pool_grad_job(i, p, n):
    """A = [N, H, W, C, OH, OW, x, y, g, gx, left, nan, kh, kw, sh, sw, dh, dw, ph, pw, disjoint, zero]:
    K.max_pool2d_grad over a range of images (gx zeroed there first when `zero`); job i uses row i of
    the scratch `left` (threads, OW, C) and writes whether its windows hold NaN to nan[i]."""
    A = carray(i64_ptr(p), (22,))
    lo, hi = _chunk(A[0], i, n, 1)
    flag = carray(i64_ptr_at(A[11] + 8 * i), (1,))
    flag[0] = 0
    if hi > lo:
        H, W, C, OH, OW = A[1], A[2], A[3], A[4], A[5]
        gx = carray(f32_ptr(A[9] + 4 * lo * H * W * C), (hi - lo, H, W, C))
        if A[21] != 0:
            gx[:] = 0
        nan = K.max_pool2d_grad(carray(f32_ptr(A[6] + 4 * lo * H * W * C), (hi - lo, H, W, C)),
                                carray(f32_ptr(A[7] + 4 * lo * OH * OW * C), (hi - lo, OH, OW, C)),
                                carray(f32_ptr(A[8] + 4 * lo * OH * OW * C), (hi - lo, OH, OW, C)), gx,
                                carray(f32_ptr(A[10] + 4 * i * OW * C), (OW, C)),
                                A[12], A[13], A[14], A[15], A[16], A[17], A[18], A[19], A[20] != 0)
        flag[0] = 1 if nan else 0


# --- the small convolutions' loops (cpu_conv.py), a range of lines (image, output row) or images each --

@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def conv_pad_job(i, p, n):
    """A = [N, H, W, C, Hp, Wp, x, xp, pt, pl]: KC.pad_rows over a range of images."""
    A = carray(i64_ptr(p), (10,))
    lo, hi = _chunk(A[0], i, n, 1)
    if hi > lo:
        KC.pad_rows(carray(f32_ptr(A[6]), (A[0], A[1], A[2], A[3])), carray(f32_ptr(A[7]), (A[0], A[4], A[5], A[3])),
                    A[8], A[9], lo, hi)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def im2col_job(i, p, n):
    """A = [N, Hp, Wp, C, kh, kw, OH, OW, xp, cols]: KC.im2col over a range of lines."""
    A = carray(i64_ptr(p), (10,))
    N, Hp, Wp, C, kh, kw, OH, OW = A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7]
    lo, hi = _chunk(N * OH, i, n, 1)
    if hi > lo:
        k = kh * kw * C
        KC.im2col(carray(f32_ptr(A[8]), (N, Hp, Wp, C)), kh, kw, OH, OW,
                  carray(f32_ptr(A[9] + 4 * lo * OW * k), ((hi - lo) * OW, k)), lo, hi)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def direct3x3_job(i, p, n):
    """A = [N, Hp, Wp, O, OH, OW, xp, wk, b, nb, relu, y]: KC.direct3x3 over a range of lines."""
    A = carray(i64_ptr(p), (12,))
    N, Hp, Wp, O, OH, OW = A[0], A[1], A[2], A[3], A[4], A[5]
    lo, hi = _chunk(N * OH, i, n, 1)
    if hi > lo:
        KC.direct3x3(carray(f32_ptr(A[6]), (N, Hp, Wp, 1)), carray(f32_ptr(A[7]), (9, O)), OH, OW,
                     carray(f32_ptr(A[8]), (A[9],)), A[10] != 0,
                     carray(f32_ptr(A[11] + 4 * lo * OW * O), ((hi - lo) * OW, O)), lo, hi)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def direct3x3_weight_grad_job(i, p, n):
    """A = [N, Hp, Wp, O, OH, OW, xp, g, parts, blocks]: KC.direct3x3_weight_grad_blocks over a range of
    blocks (g (N * OH * OW, O), parts (blocks, 9, O))."""
    A = carray(i64_ptr(p), (10,))
    N, Hp, Wp, O, OH, OW, nb = A[0], A[1], A[2], A[3], A[4], A[5], A[9]
    lo, hi = _chunk(nb, i, n, 1)
    if hi > lo:
        KC.direct3x3_weight_grad_blocks(carray(f32_ptr(A[6]), (N, Hp, Wp, 1)), carray(f32_ptr(A[7]), (N * OH * OW, O)),
                                        OH, OW, carray(f32_ptr(A[8]), (nb, 9, O)), lo, hi)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def bias_act_job(i, p, n):
    """A = [M, O, y, b, nb, relu]: KC.bias_act over a range of rows."""
    A = carray(i64_ptr(p), (6,))
    lo, hi = _chunk(A[0], i, n, 1)
    if hi > lo:
        KC.bias_act(carray(f32_ptr(A[2] + 4 * lo * A[1]), (hi - lo, A[1])), carray(f32_ptr(A[3]), (A[4],)), A[5] != 0)


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def col2im_job(i, p, n):
    """A = [N, Hp, Wp, C, kh, kw, OH, OW, dcols, gxp]: KC.col2im over a range of images (a window never
    reaches into another image)."""
    A = carray(i64_ptr(p), (10,))
    N, Hp, Wp, C, kh, kw, OH, OW = A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7]
    lo, hi = _chunk(N, i, n, 1)
    if hi > lo:
        k, rows = kh * kw * C, OH * OW
        KC.col2im(carray(f32_ptr(A[8] + 4 * lo * rows * k), ((hi - lo) * rows, k)), kh, kw, OH, OW,
                  carray(f32_ptr(A[9] + 4 * lo * Hp * Wp * C), (hi - lo, Hp, Wp, C)))


@cfunc(types.void(types.int32, types.voidptr, types.int32), cache=True, nogil=True)
def adam_job(i, p, n):
    """A = [size, p, g, m, v, vmax, decay, wd, w1, c2, beta2, step_size, bc2_sqrt, eps (float32 bits), flags
    (1: small_w1, 2: decoupled, 4: maximize, 8: amsgrad)]: K.adam_step over a chunk of the elements."""
    A = carray(i64_ptr(p), (15,))
    lo, hi = _chunk(A[0], i, n, 16)
    if hi > lo:
        k, fl = hi - lo, A[14]
        ams = (fl & 8) != 0
        f = K._f32_from_bits
        K.adam_step(carray(f32_ptr(A[1] + 4 * lo), (k,)), carray(f32_ptr(A[2] + 4 * lo), (k,)),
                    carray(f32_ptr(A[3] + 4 * lo), (k,)), carray(f32_ptr(A[4] + 4 * lo), (k,)),
                    carray(f32_ptr(A[5] + 4 * lo), (k if ams else 0,)), f(A[6]), f(A[7]), f(A[8]), (fl & 1) != 0,
                    f(A[9]), f(A[10]), f(A[11]), f(A[12]), f(A[13]), (fl & 2) != 0, (fl & 4) != 0, ams)
