"""The CPU pool (backends/cpu_pool.py): OpenBLAS's jobs and attention's (batch, head) pairs on one set of
threads. Values must be exactly those of the serial kernels; forks, threads and the off switch must work."""
import multiprocessing as mp
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember.backends import cpu_kernels, cpu_pool

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def pool():
    pl = cpu_pool.pool()
    if pl is None:
        pytest.skip("no CPU pool here (EMBER_CPU_POOL=0, or a BLAS other than NumPy's OpenBLAS)")
    if pl.size() < 2:
        pytest.skip("one BLAS thread: attention does not use the pool")
    return pl


class _Node:
    def __init__(self, causal, E):
        self.causal, self.scale = causal, float(1 / np.sqrt(E))


def _heads(B, H, L, E, seed):
    """q, k, v as the GPT's views: (B, H, L, E) over one (B, L, 3, H, E) projection."""
    rng = np.random.default_rng(seed)
    qkv = rng.standard_normal((B, L, 3, H, E), dtype=np.float32)
    return tuple(qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))


@pytest.fixture
def runs(monkeypatch):
    """How many parallel regions the kernels started (so a test knows the pool path ran)."""
    count = [0]
    real = cpu_pool.Pool.run

    def counted(self, *a):
        count[0] += 1
        return real(self, *a)
    monkeypatch.setattr(cpu_pool.Pool, "run", counted)
    return count


def _serial(fn, *args):
    saved = cpu_kernels._pool
    cpu_kernels._pool = lambda q: None
    try:
        return fn(*args)
    finally:
        cpu_kernels._pool = saved


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("L", [64, 40, 8])
def test_attention_on_the_pool_is_the_serial_kernel(pool, runs, causal, L):
    B, H, E = 3, 4, 32
    q, k, v = _heads(B, H, L, E, 0)
    node = _Node(causal, E)
    g = np.random.default_rng(1).standard_normal((B, H, L, E), dtype=np.float32)
    o, s = cpu_kernels.attention(node, q, k, v)
    o_ref, s_ref = _serial(cpu_kernels.attention, node, q, k, v)
    assert np.array_equal(o, o_ref) and np.array_equal(s, s_ref)
    # the mask: a causal row i has exactly i + 1 non-zero probabilities
    if causal:
        assert np.array_equal((s[0, 0] != 0).sum(-1), np.arange(1, L + 1))
    grads = cpu_kernels.attention_grad(node, q, k, v, s, g)
    grads_ref = _serial(cpu_kernels.attention_grad, node, q, k, v, s, g)
    for a, b in zip(grads, grads_ref):
        assert np.array_equal(a, b)
    packed = cpu_kernels.attention_grad_packed(node, q, k, v, s, g)
    assert np.array_equal(packed, _serial(cpu_kernels.attention_grad_packed, node, q, k, v, s, g))
    assert runs[0] == 3


def test_attention_against_float64(pool):
    """Not only the same as the serial kernel: right (float64 reference, causal)."""
    B, H, L, E = 2, 4, 64, 32
    q, k, v = _heads(B, H, L, E, 2)
    o, _ = cpu_kernels.attention(_Node(True, E), q, k, v)
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    sc = q64 @ k64.swapaxes(-1, -2) / np.sqrt(E)
    sc = np.where(np.tril(np.ones((L, L), bool)), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(o, p @ v64, rtol=1e-4, atol=1e-5)


def test_args_refuse_what_the_loops_do_not_take(pool):
    q, k, v = _heads(2, 2, 128, 32, 3)
    s = np.empty((2, 2, 128, 128), np.float32)
    o = np.empty((2, 2, 128, 32), np.float32)
    assert cpu_pool.attention_args(pool, q, k, v, s, (o,), 1.0, True) is None       # 128*128*32 > 2**18: BLAS threads
    q, k, v = _heads(2, 2, 16, 8, 3)
    qt = np.ascontiguousarray(q.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)        # columns not contiguous
    s, o = np.empty((2, 2, 16, 16), np.float32), np.empty((2, 2, 16, 8), np.float32)
    assert cpu_pool.attention_args(pool, qt, k, v, s, (o,), 1.0, True) is None
    assert cpu_pool.attention_args(pool, q, k, v, s, (o,), 1.0, True) is not None


def test_gemm_through_the_pool(pool):
    """OpenBLAS's threaded GEMMs now run their jobs on the pool: still right, at every shape class."""
    rng = np.random.default_rng(4)
    for m, k, n in [(1024, 128, 512), (64, 1000, 100), (513, 257, 129), (7, 5, 3)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        np.testing.assert_allclose(a @ b, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def _child(q):
    a = np.ones((512, 512), np.float32)
    qq, kk, vv = _heads(4, 4, 64, 32, 5)
    o, _ = cpu_kernels.attention(_Node(True, 32), qq, kk, vv)
    q.put((float((a @ a)[0, 0]), float(np.abs(o).sum()), cpu_pool.pool() is None))


def test_forked_child_runs_without_the_pool(pool):
    """A fork (DataLoader workers) copies no pool threads: the child must neither hang nor use them."""
    qq, kk, vv = _heads(4, 4, 64, 32, 5)
    o, _ = cpu_kernels.attention(_Node(True, 32), qq, kk, vv)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    gemm, total, no_pool = q.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert gemm == 512.0 and no_pool
    assert total == pytest.approx(float(np.abs(o).sum()), rel=1e-6)


def test_threads_share_the_pool(pool):
    """Several Python threads calling BLAS and attention at once: one region at a time, all right."""
    q, k, v = _heads(4, 4, 64, 32, 6)
    node = _Node(True, 32)
    ref, _ = _serial(cpu_kernels.attention, node, q, k, v)
    a = np.random.default_rng(7).standard_normal((256, 256), dtype=np.float32)
    ref_a = a @ a
    errors = []

    def work():
        try:
            for _ in range(20):
                o, _ = cpu_kernels.attention(node, q, k, v)
                assert np.array_equal(o, ref)
                np.testing.assert_allclose(a @ a, ref_a, rtol=1e-5, atol=1e-4)
        except Exception as e:   # noqa: BLE001  (reported below)
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts) and not errors


def test_the_step_of_a_gpt_block_equals_one_thread(pool, runs):
    """Training steps of causal self-attention (the GPT's): the same parameters at two threads (pool)
    and one, eager and compiled."""
    F = ember.nn.functional

    class Attn(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = ember.nn.Linear(64, 192), ember.nn.Linear(64, 64)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def run(threads, compiled):
        ember.set_num_threads(threads)
        ember.manual_seed(0)
        model = Attn()
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x = ember.randn(4, 64, 64)

        def step():
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss
        step = ember.compile(step) if compiled else step
        for _ in range(3):
            step()
        return [p.detach().numpy().copy() for p in model.parameters()]
    n = ember.get_num_threads()
    try:
        for compiled in (False, True):
            runs[0] = 0
            one, two = run(1, compiled), run(max(2, n), compiled)
            assert runs[0] >= 6    # three steps' attention forwards and backwards ran on the pool
            for a, b in zip(one, two):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    finally:
        ember.set_num_threads(n)


def test_off_switch():
    code = "from ember.backends import cpu_pool; print(cpu_pool.pool() is None)"
    env = dict(os.environ, EMBER_CPU_POOL="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.stdout.strip() == "True", r.stderr


class _LN:
    n, eps = 1, 1e-5


@pytest.mark.parametrize("shape", [(1024, 512), (333, 257), (70001,)])
def test_elementwise_and_row_kernels_split_over_the_pool(pool, runs, shape):
    """GELU, its gradient and LayerNorm cut into one chunk per thread: the values of one call."""
    NP = pool.NP
    assert (cpu_kernels.ADD, cpu_kernels.GELU, cpu_kernels.GELU_GRAD) == (NP.ADD, NP.GELU, NP.GELU_GRAD)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape, dtype=np.float32) * 3
    g = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape[-1], dtype=np.float32)
    b = rng.standard_normal(shape[-1], dtype=np.float32)
    node = _LN()
    for fn, args in ((cpu_kernels.gelu, (node, x)), (cpu_kernels.gelu_grad, (node, x, g)),
                     (cpu_kernels.layer_norm, (node, x, w, b))):
        assert np.array_equal(fn(*args), _serial_split(fn, *args)), fn.__name__
    assert runs[0] == 3


def test_add_and_linear_bias_split_over_the_pool(pool, runs):
    """Add of two large float32 arrays and Linear's bias add, chunks per thread: NumPy's values bit for
    bit (one IEEE add per element); other dtypes, broadcasting and small arrays stay NumPy's."""
    rng = np.random.default_rng(14)
    a = rng.standard_normal((16, 64, 128), dtype=np.float32)
    b = rng.standard_normal((16, 64, 128), dtype=np.float32)
    assert np.array_equal(cpu_kernels.add(None, a, b), a + b) and runs[0] == 1
    x = rng.standard_normal((1024, 128), dtype=np.float32)
    w = rng.standard_normal((515, 128), dtype=np.float32)
    bias = rng.standard_normal(515, dtype=np.float32)
    want = x @ w.T
    want += bias
    assert np.array_equal(cpu_kernels.linear(None, x, w, bias), want) and runs[0] == 2
    assert np.array_equal(cpu_kernels.linear(None, x, w), x @ w.T)
    for p, q in ((a, b[0]), (a.astype(np.float64), b.astype(np.float64)), (a[:3], b[:3]), (a.transpose(1, 0, 2), b.transpose(1, 0, 2))):
        assert np.array_equal(cpu_kernels.add(None, p, q), p + q)
    assert runs[0] == 2
    t = ember.from_numpy(a).requires_grad_()
    (t + ember.from_numpy(b)).sum().backward()          # the kernel is the one eager mode runs
    assert runs[0] == 3 and np.array_equal(t.grad.numpy(), np.ones_like(a))


class _LNGrad:
    n, eps = 1, 1e-5

    def __init__(self, with_w, with_b):
        self.with_w, self.with_b = with_w, with_b


@pytest.mark.parametrize("affine", ["weight and bias", "weight", "none"])
@pytest.mark.parametrize("shape", [(1024, 128), (1000, 131), (70001, 2)])
def test_layer_norm_grad_splits_its_row_blocks_over_the_pool(pool, runs, shape, affine):
    """LayerNorm's gradient: dx, and the weight/bias sums of each block of rows added in block order,
    the same values whichever thread ran a block; and within float32 rounding of a float64 reference."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape, dtype=np.float32) * 3 + 1
    g = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape[-1], dtype=np.float32)
    node = _LNGrad(affine != "none", affine == "weight and bias")
    args = (node, x, g) + ((w,) if affine != "none" else ())
    got = cpu_kernels.layer_norm_grad(*args)
    assert runs[0] == 1
    assert np.array_equal(got, _serial_split(cpu_kernels.layer_norm_grad, *args))
    x64, g64, w64 = x.astype(np.float64), g.astype(np.float64), w.astype(np.float64)
    mean, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    xhat = (x64 - mean) / np.sqrt(var + 1e-5)
    h = g64 * w64 if affine != "none" else g64
    dx = (h - h.mean(-1, keepdims=True) - xhat * (h * xhat).mean(-1, keepdims=True)) / np.sqrt(var + 1e-5)
    want = np.concatenate([dx] + ([(g64 * xhat).sum(0, keepdims=True)] if affine != "none" else []) +
                          ([g64.sum(0, keepdims=True)] if affine == "weight and bias" else []))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-3, atol=1e-3 * np.sqrt(shape[0]))


@pytest.mark.parametrize("opt, kw", [("Adam", {}), ("AdamW", {"weight_decay": 0.1}),
                                     ("Adam", {"weight_decay": 0.1, "amsgrad": True, "maximize": True}),
                                     ("Adam", {"betas": (0.3, 0.9)})])
def test_adam_step_splits_its_elements_over_the_pool(pool, runs, monkeypatch, opt, kw):
    """Adam's step on chunks of a parameter's elements, one per thread: the one-thread values."""
    import ember
    rng = np.random.default_rng(10)
    start = rng.standard_normal((300, 70), dtype=np.float32)       # 21000 elements: split
    small = rng.standard_normal(1000, dtype=np.float32)             # below the threshold: one thread

    def train(split):
        monkeypatch.setattr(cpu_pool, "split", split)
        ps = [ember.from_numpy(start.copy()).requires_grad_(), ember.from_numpy(small.copy()).requires_grad_()]
        o = getattr(ember.optim, opt)(ps, lr=1e-2, **kw)
        for i in range(3):
            for p in ps:
                p.grad = ember.from_numpy(np.sin(p.detach().numpy() * (i + 1)))
            o.step()
        return [p.detach().numpy() for p in ps]
    real = cpu_pool.split
    got = train(real)
    assert runs[0] == 3                 # the large parameter, three steps
    want = train(lambda *a, **k: False)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def _serial_split(fn, *args):
    saved = cpu_pool.split
    cpu_pool.split = lambda *a: False
    try:
        return fn(*args)
    finally:
        cpu_pool.split = saved


@pytest.mark.parametrize("causal", [True, False])
def test_attention_with_values_of_another_width(pool, runs, causal):
    """v's last size differs from q's and k's (E = 16, Ev = 24; L != S)."""
    rng = np.random.default_rng(9)
    q = rng.standard_normal((2, 3, 40, 16), dtype=np.float32)
    k = rng.standard_normal((2, 3, 48, 16), dtype=np.float32)
    v = rng.standard_normal((2, 3, 48, 24), dtype=np.float32)
    g = rng.standard_normal((2, 3, 40, 24), dtype=np.float32)
    node = _Node(causal, 16)
    o, s = cpu_kernels.attention(node, q, k, v)
    o_ref, s_ref = _serial(cpu_kernels.attention, node, q, k, v)
    assert np.array_equal(o, o_ref) and np.array_equal(s, s_ref)
    for a, b in zip(cpu_kernels.attention_grad(node, q, k, v, s, g),
                    _serial(cpu_kernels.attention_grad, node, q, k, v, s, g)):
        assert np.array_equal(a, b)
    assert runs[0] == 2


def _pool_node(cls, k, s, pad, dilation=1):
    node = cls.__new__(cls)
    node.__dict__.update(kernel=(k, k), stride=(s, s), dilation=(dilation, dilation),
                         padding=None if not pad else ((pad, pad), (pad, pad)))
    return node


@pytest.mark.parametrize("N, C, H, W, k, s, pad, dil", [
    (64, 16, 28, 28, 2, 2, 0, 1),     # W4's pools: windows tile x, gx needs no zeroing
    (5, 16, 33, 31, 3, 2, 1, 1),      # overlapping windows with padding: gradients add
    (3, 8, 101, 100, 2, 3, 0, 1),     # gaps between windows: the jobs zero gx there
    (4, 24, 40, 40, 2, 2, 1, 2)])     # dilation
def test_max_pool_splits_its_images_over_the_pool(pool, runs, N, C, H, W, k, s, pad, dil):
    """MaxPool and its gradient, a range of images per thread: the values of one call (the windows of
    one image never reach another), and a window holding NaN still goes to the NumPy forward."""
    from ember.ops.layers import MaxPool, MaxPoolGrad
    rng = np.random.default_rng(12)
    x = np.ascontiguousarray(rng.standard_normal((N, H, W, C), dtype=np.float32)).transpose(0, 3, 1, 2)
    fwd, bwd = _pool_node(MaxPool, k, s, pad, dil), _pool_node(MaxPoolGrad, k, s, pad, dil)
    y = cpu_kernels.max_pool(fwd, x)
    assert runs[0] == 1
    assert np.array_equal(y, _serial_split(cpu_kernels.max_pool, fwd, x))
    assert np.array_equal(y, fwd.forward(x))
    g = rng.standard_normal(y.shape, dtype=np.float32)
    for grad in (g, np.ascontiguousarray(g.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):   # NCHW and NHWC
        gx = cpu_kernels.max_pool_grad(bwd, x, y, grad)
        assert np.array_equal(gx, _serial_split(cpu_kernels.max_pool_grad, bwd, x, y, grad))
        assert np.array_equal(gx, bwd.forward(x, y, grad))
    assert runs[0] == 3
    x[N - 1, 0, 1, 1] = np.nan          # in the last thread's images
    y = cpu_kernels.max_pool(fwd, x)
    assert np.isnan(y[N - 1, 0]).any()
    gx = cpu_kernels.max_pool_grad(bwd, x, y, g)
    assert np.array_equal(gx, bwd.forward(x, y, g), equal_nan=True)


_CONV_JOBS = ("conv_pad_job", "im2col_job", "direct3x3_job", "direct3x3_weight_grad_job", "bias_act_job", "col2im_job")


@pytest.mark.parametrize("N, C, H, W, O, k, pad", [
    (64, 1, 28, 28, 16, 3, 1),     # W4's first layer: one channel, the direct 3x3 loops
    (7, 1, 30, 33, 16, 3, 0),      # 196 lines: the weight gradient's last block is short
    (64, 16, 14, 14, 32, 3, 1),    # W4's second layer: im2col, bias and ReLU, col2im
    (7, 3, 33, 30, 16, 5, 2)])
def test_small_convolutions_split_their_loops_over_the_pool(pool, monkeypatch, N, C, H, W, O, k, pad):
    """The small convolutions' loops (cpu_conv.py: padding, im2col, the direct 3x3 loops, bias and ReLU,
    col2im), a range of lines or images per thread: forward and all three gradients equal one thread's,
    with and without the ReLU after the Conv; the one-channel weight gradient near float64's."""
    import ember.nn.functional as F
    rng = np.random.default_rng(13)
    x = np.ascontiguousarray(rng.standard_normal((N, H, W, C), dtype=np.float32)).transpose(0, 3, 1, 2)
    w = rng.standard_normal((O, C, k, k), dtype=np.float32)
    b = rng.standard_normal(O, dtype=np.float32)
    g = rng.standard_normal((N, O, H + 2 * pad - k + 1, W + 2 * pad - k + 1), dtype=np.float32)
    real, jobs = cpu_pool.split, []

    def run(split, relu):
        monkeypatch.setattr(cpu_pool, "split", split)
        ts = [ember.from_numpy(a).requires_grad_() for a in (x, w, b)]
        y = F.conv2d(*ts, padding=pad)
        y = F.relu(y) if relu else y
        y.backward(ember.from_numpy(g))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts]

    def counted(job, *a, **kw):
        ran = real(job, *a, **kw)
        if ran and job in _CONV_JOBS:
            jobs.append(job)
        return ran
    for relu in (True, False):
        got, want = run(counted, relu), run(lambda *a, **kw: False, relu)
        for name, a, e in zip(("y", "x.grad", "w.grad", "b.grad"), got, want):
            assert np.array_equal(a, e), name
    assert ("direct3x3_job" if C == 1 else "im2col_job") in jobs
    assert C == 1 or "bias_act_job" in jobs
    assert ("direct3x3_weight_grad_job" if C == 1 else "col2im_job" if C >= 8 else "im2col_job") in jobs
    if C == 1:
        x64, g64 = x.astype(np.float64), g.astype(np.float64)
        xp = np.pad(x64, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        OH, OW = g.shape[2:]
        ref = np.stack([np.einsum("nhw,nohw->o", xp[:, 0, i:i + OH, j:j + OW], g64)
                        for i in range(3) for j in range(3)], 1).reshape(O, 1, 3, 3)
        np.testing.assert_allclose(got[2], ref, rtol=1e-4, atol=1e-4 * np.sqrt(N * OH * OW))


def test_more_threads_than_cores_after_the_pool_started(pool):
    """ember.set_num_threads above the core count: OpenBLAS then cuts its GEMMs into more jobs, and
    each must find a worker (else the region waits forever)."""
    n = ember.get_num_threads()
    rng = np.random.default_rng(10)
    a = rng.standard_normal((1024, 512), dtype=np.float32)
    b = rng.standard_normal((512, 768), dtype=np.float32)
    ref = a.astype(np.float64) @ b
    try:
        ember.set_num_threads(n + 3)
        assert pool.capacity >= n + 2 and pool.size() == n + 3
        np.testing.assert_allclose(a @ b, ref, rtol=1e-4, atol=1e-3)
        q, k, v = _heads(2, 4, 64, 32, 11)
        o, _ = cpu_kernels.attention(_Node(True, 32), q, k, v)
        assert np.array_equal(o, _serial(cpu_kernels.attention, _Node(True, 32), q, k, v)[0])
    finally:
        ember.set_num_threads(n)
    assert pool.size() == n


def test_a_stale_cache_of_the_jobs_is_dropped(tmp_path, monkeypatch):
    """numba keys a cached function on its own file: when a loop the pool's jobs call (in
    _numba_kernels.py) changes, their cache entries must go, else the jobs keep running the old loop."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "__pycache__").mkdir()
    kernels, cached = tmp_path / "_numba_kernels.py", tmp_path / "__pycache__" / "_numba_pool.elementwise_job-1.py311.nbi"
    other = tmp_path / "__pycache__" / "_numba_kernels.gelu-1.py311.nbi"
    for f in (kernels, cached, other):
        f.write_text("x")
    os.utime(kernels, (1000, 1000))
    os.utime(cached, (2000, 2000))
    assert cpu_pool.drop_stale_cache(str(tmp_path)) == 0 and cached.exists()    # the cache is newer
    os.utime(kernels, (3000, 3000))
    assert cpu_pool.drop_stale_cache(str(tmp_path)) == 1
    assert not cached.exists() and other.exists()     # numba follows _numba_kernels' own functions itself
    cache_dir = tmp_path / "cache" / "deep"
    cache_dir.mkdir(parents=True)
    elsewhere = cache_dir / "_numba_pool.adam_job-9.py311.nbc"
    elsewhere.write_text("x")
    os.utime(elsewhere, (2000, 2000))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert cpu_pool.drop_stale_cache(str(tmp_path)) == 1 and not elsewhere.exists()
