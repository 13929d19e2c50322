"""ember/amp against torch.amp on the CPU: autocast's op lists, models layer by layer, the state API,
ember.compile under autocast, and GradScaler step by step."""
import threading
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
from helpers import check_op

BF16_TOL = dict(atol=2e-2, rtol=2e-2, grad_atol=3e-2, grad_rtol=3e-2)


def amp(fn, **kw):
    """fn(lib, *args) run inside lib.autocast('cpu', **kw)."""
    def run(lib, *args):
        with lib.autocast("cpu", **kw):
            return fn(lib, *args)
    return run


def tgt(lib, data):
    return lib.tensor(data)


# (name, fn(lib, *args), input shapes): float32 in; torch's CPU lists decide the output dtype
OPS = [
    # lower_precision_fp: bfloat16 out
    ("matmul", lambda lib, a, b: lib.matmul(a, b), [(3, 4), (4, 5)]),
    ("matmul_op", lambda lib, a, b: a @ b, [(2, 3, 4), (4, 5)]),
    ("mm", lambda lib, a, b: lib.mm(a, b), [(3, 4), (4, 5)]),
    ("bmm", lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    ("addmm", lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2), [(3, 5), (3, 4), (4, 5)]),
    ("baddbmm", lambda lib, c, a, b: lib.baddbmm(c, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm", lambda lib, c, a, b: lib.addbmm(c, a, b), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("einsum", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), [(3, 4), (4, 5)]),
    ("tensordot", lambda lib, a, b: lib.tensordot(a, b, 1), [(3, 4), (4, 5)]),
    ("inner", lambda lib, a, b: lib.inner(a, b), [(3, 4), (5, 4)]),
    ("multi_dot", lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), [(3, 4), (4, 5), (5, 2)]),
    ("vecdot", lambda lib, a, b: lib.linalg.vecdot(a, b), [(3, 4), (3, 4)]),
    ("linear", lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(2, 3, 4), (5, 4), (5,)]),
    ("conv1d", lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, padding=1), [(2, 3, 8), (4, 3, 3), (4,)]),
    ("conv2d", lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, stride=2), [(2, 3, 6, 6), (4, 3, 3, 3), (4,)]),
    ("conv3d", lambda lib, x, w: lib.nn.functional.conv3d(x, w), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)]),
    ("conv_transpose1d", lambda lib, x, w, b: lib.nn.functional.conv_transpose1d(x, w, b), [(2, 3, 5), (3, 4, 3), (4,)]),
    ("conv_transpose2d", lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2), [(1, 3, 4, 4), (3, 2, 3, 3)]),
    ("prelu", lambda lib, x, w: lib.nn.functional.prelu(x, w), [(2, 3, 4), (3,)]),
    ("sdpa", lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v), [(2, 3, 4), (2, 5, 4), (2, 5, 4)]),
    # float32 list: float32 out (fed bfloat16 below)
    ("mse_loss", lambda lib, a, b: lib.nn.functional.mse_loss(a, b), [(3, 4), (3, 4)]),
    ("l1_loss", lambda lib, a, b: lib.nn.functional.l1_loss(a, b, reduction="none"), [(3, 4), (3, 4)]),
    ("smooth_l1_loss", lambda lib, a, b: lib.nn.functional.smooth_l1_loss(a, b, reduction="sum"), [(3, 4), (3, 4)]),
    ("huber_loss", lambda lib, a, b: lib.nn.functional.huber_loss(a, b), [(3, 4), (3, 4)]),
    ("cross_entropy", lambda lib, a: lib.nn.functional.cross_entropy(a, tgt(lib, [0, 2, 1])), [(3, 4)]),
    ("nll_loss", lambda lib, a: lib.nn.functional.nll_loss(a, tgt(lib, [0, 2, 1])), [(3, 4)]),
    ("bce_with_logits", lambda lib, a: lib.nn.functional.binary_cross_entropy_with_logits(
        a, lib.full_like(a, 0.25)), [(3, 4)]),
    ("kl_div", lambda lib, a, b: lib.nn.functional.kl_div(a, b, reduction="batchmean"), [(3, 4), (3, 4)]),
    ("margin_ranking", lambda lib, a, b: lib.nn.functional.margin_ranking_loss(a, b, lib.ones(4)), [(4,), (4,)]),
    ("hinge_embedding", lambda lib, a: lib.nn.functional.hinge_embedding_loss(a, lib.ones(3, 4)), [(3, 4)]),
    ("triplet_margin", lambda lib, a, b, c: lib.nn.functional.triplet_margin_loss(a, b, c), [(3, 4), (3, 4), (3, 4)]),
    ("cosine_embedding", lambda lib, a, b: lib.nn.functional.cosine_embedding_loss(a, b, lib.ones(3)), [(3, 4), (3, 4)]),
    ("soft_margin", lambda lib, a: lib.nn.functional.soft_margin_loss(a, lib.ones(3, 4)), [(3, 4)]),
    ("multi_margin", lambda lib, a: lib.nn.functional.multi_margin_loss(a, tgt(lib, [0, 2, 1])), [(3, 4)]),
    ("cdist", lambda lib, a, b: lib.cdist(a, b), [(3, 4), (5, 4)]),
    ("prod", lambda lib, a: lib.prod(a, 1), [(3, 4)]),
    ("trace", lambda lib, a: lib.trace(a), [(4, 4)]),
    ("quantile", lambda lib, a: lib.quantile(a, 0.3, dim=1), [(3, 4)]),
    # on no list: run on the inputs' dtypes (float32 in, float32 out)
    ("mv", lambda lib, a, v: lib.mv(a, v), [(3, 4), (4,)]),
    ("einsum_one_operand", lambda lib, a: lib.einsum("ij->ji", a), [(3, 4)]),
    ("bilinear", lambda lib, a, b, w: lib.nn.functional.bilinear(a, b, w), [(2, 3), (2, 4), (5, 3, 4)]),
    ("dot", lambda lib, a, b: lib.dot(a, b), [(4,), (4,)]),
    ("relu", lambda lib, a: lib.nn.functional.relu(a), [(3, 4)]),
    ("softmax", lambda lib, a: lib.softmax(a, -1), [(3, 4)]),
    ("layer_norm", lambda lib, a: lib.nn.functional.layer_norm(a, (4,)), [(3, 4)]),
    ("sum", lambda lib, a: a.sum(), [(3, 4)]),
]


@pytest.mark.parametrize("fn,shapes", [c[1:] for c in OPS], ids=[c[0] for c in OPS])
def test_autocast_ops_match_torch(fn, shapes):
    # float32 inputs: torch's output dtype, values within bfloat16's precision, float32 gradients
    check_op(amp(fn), *shapes, dtypes=("float32",), **BF16_TOL)


LOWER_THEN_FP32 = [c for c in OPS if c[0] in ("mse_loss", "l1_loss", "cross_entropy", "kl_div", "cdist", "prod",
                                                "bce_with_logits", "triplet_margin", "relu", "softmax", "mv")]


@pytest.mark.parametrize("fn,shapes", [c[1:] for c in LOWER_THEN_FP32], ids=[c[0] for c in LOWER_THEN_FP32])
def test_autocast_ops_on_bfloat16_inputs(fn, shapes):
    # bfloat16 inputs: the float32 list computes in float32 (gradients back in bfloat16), the rest stays
    check_op(amp(fn), *shapes, dtypes=("bfloat16",), **BF16_TOL)


def test_float64_and_explicit_dtype_are_not_cast():
    check_op(amp(lambda lib, a, b: lib.mm(a, b)), (3, 4), (4, 5), dtypes=("float64",))
    check_op(amp(lambda lib, a: lib.prod(a, 1, dtype=lib.bfloat16)), (3, 4), dtypes=("float32",), **BF16_TOL)


# ------------------------------------------------------------------------------ models layer by layer
def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.ReLU(), lib.nn.Linear(16, 16), lib.nn.GELU(),
                             lib.nn.LayerNorm(16), lib.nn.Linear(16, 3))


def _cnn(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.BatchNorm2d(4), lib.nn.ReLU(),
                             lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Linear(4 * 3 * 3, 5))


def _transformer(lib):
    return lib.nn.Sequential(lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                            batch_first=True))


def _pair(build):
    torch.manual_seed(0)
    tm = build(torch)
    em = build(ember)
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(state)
    return tm, em


def _run_model(lib, model, x, target):
    dtypes = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: dtypes.append(
        (type(mod).__name__, str(out.dtype).split(".")[-1]))) for m in model]
    with lib.autocast("cpu"):
        out = model(x)
        loss = lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target)
    loss.backward()
    for h in hooks:
        h.remove()
    return dtypes, out, loss


@pytest.mark.parametrize("build,shape,classes", [(_mlp, (5, 6), 3), (_cnn, (2, 3, 6, 6), 5),
                                                 (_transformer, (2, 4, 8), 8)], ids=["mlp", "cnn", "transformer"])
def test_models_match_torch_layer_by_layer(build, shape, classes):
    tm, em = _pair(build)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    n = shape[0] * (shape[1] if build is _transformer else 1)
    target = np.arange(n) % classes
    t_dt, t_out, t_loss = _run_model(torch, tm, torch.tensor(x), torch.tensor(target))
    e_dt, e_out, e_loss = _run_model(ember, em, ember.tensor(x), ember.tensor(target))
    assert e_dt == t_dt, f"per-layer output dtypes {e_dt} != torch's {t_dt}"
    assert e_loss.dtype is ember.float32 and t_loss.dtype == torch.float32
    np.testing.assert_allclose(e_out.float().detach().numpy(), t_out.float().detach().numpy(), atol=5e-2, rtol=5e-2)
    np.testing.assert_allclose(e_loss.item(), t_loss.item(), atol=2e-2, rtol=2e-2)
    t_grads = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        tg = t_grads[name].grad
        assert p.grad.dtype is ember.float32 and tg.dtype == torch.float32, name
        scale = max(float(tg.abs().max()), 1e-3)
        np.testing.assert_allclose(p.grad.numpy() / scale, tg.numpy() / scale, atol=6e-2, err_msg=name)


def test_mlp_output_dtypes_are_torchs_exactly():
    # spelled out: Linear -> bfloat16 and everything after it stays there, as torch
    _, em = _pair(_mlp)
    dtypes, _, _ = _run_model(ember, em, ember.randn(5, 6), ember.tensor([0, 1, 2, 0, 1]))
    assert [d for _, d in dtypes] == ["bfloat16"] * 6   # LayerNorm: bfloat16 in, float32 weights, bfloat16 out


# ------------------------------------------------------------------------------ the state API
def test_state_api_defaults_and_nesting():
    assert not ember.is_autocast_enabled("cpu") and not ember.is_autocast_cpu_enabled()
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16 and ember.get_autocast_cpu_dtype() is ember.bfloat16
    assert ember.get_autocast_dtype("cuda") is ember.float16 and ember.get_autocast_gpu_dtype() is ember.float16
    assert ember.get_autocast_ipu_dtype() is ember.float16 and ember.get_autocast_xla_dtype() is ember.bfloat16
    assert not ember.is_autocast_ipu_enabled() and not ember.is_autocast_xla_enabled()
    assert ember.is_autocast_cache_enabled() and not ember.is_autocast_enabled()
    a, b = ember.ones(2, 3), ember.ones(3, 2)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()   # no argument: cuda
        assert (a @ b).dtype is ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (a @ b).dtype is ember.float32
            assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16, cache_enabled=False):
            assert (a @ b).dtype is ember.float16 and not ember.is_autocast_cache_enabled()
        assert (a @ b).dtype is ember.bfloat16 and ember.is_autocast_cache_enabled()
    assert (a @ b).dtype is ember.float32 and not ember.is_autocast_enabled("cpu")


def test_setters_and_nesting_counter_match_torch():
    ember.set_autocast_enabled("cpu", True)
    torch.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is True
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype is ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
        torch.set_autocast_enabled("cpu", False)
    ember.set_autocast_cpu_enabled(True)
    assert ember.is_autocast_cpu_enabled()
    ember.set_autocast_cpu_enabled(False)
    ember.set_autocast_dtype("cpu", ember.float16)
    assert ember.get_autocast_cpu_dtype() is ember.float16
    ember.set_autocast_cpu_dtype(ember.bfloat16)
    ember.set_autocast_gpu_dtype(ember.bfloat16)
    assert ember.get_autocast_gpu_dtype() is ember.bfloat16
    ember.set_autocast_gpu_dtype(ember.float16)
    ember.set_autocast_ipu_dtype(ember.bfloat16)
    ember.set_autocast_ipu_dtype(ember.float16)
    ember.set_autocast_xla_dtype(ember.bfloat16)
    ember.set_autocast_ipu_enabled(False)
    ember.set_autocast_xla_enabled(False)
    ember.set_autocast_enabled(False)   # torch's one-argument form: cuda
    assert not ember.is_autocast_enabled("cuda")
    ember.set_autocast_cache_enabled(False)
    assert not ember.is_autocast_cache_enabled()
    ember.set_autocast_cache_enabled(True)
    assert ember.autocast_increment_nesting() == 1 and ember.autocast_decrement_nesting() == 0
    ember.clear_autocast_cache()
    assert ember.amp.is_autocast_available("cpu") and not ember.amp.is_autocast_available("ipu")


def test_decorator_form():
    @ember.autocast("cpu")
    def f(a, b):
        assert ember.is_autocast_enabled("cpu")
        return a @ b

    @ember.autocast("cpu", enabled=False)
    def g(a, b):
        return a @ b

    a, b = ember.ones(2, 3), ember.ones(3, 2)
    assert f(a, b).dtype is ember.bfloat16 and not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert g(a, b).dtype is ember.float32
        assert ember.is_autocast_enabled("cpu")
    assert f.__name__ == "f"


def test_autocast_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = ember.is_autocast_enabled("cpu")
        seen["dtype"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype
        with ember.autocast("cpu"):
            seen["inside"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype

    with ember.autocast("cpu", dtype=ember.float16):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype is ember.float16   # ours unchanged
    assert seen == {"enabled": False, "dtype": ember.float32, "inside": ember.bfloat16}


def test_gradient_flows_through_the_cast_in_float32():
    w = ember.randn(4, 3, requires_grad=True)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"):
        y = x @ w
    assert y.dtype is ember.bfloat16 and y.grad_fn is not None
    y.float().sum().backward()
    assert w.grad.dtype is ember.float32
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(x.numpy().sum(0)[:, None], 3, 1), atol=3e-2, rtol=2e-2)


def test_weight_cast_is_reused_in_a_region_and_renewed_after_an_update():
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    with ember.autocast("cpu"):
        y1 = x @ w
        y2 = x @ w
        with ember.no_grad():
            w.add_(1.0)            # in place: the cached cast is stale
        y3 = x @ w
    np.testing.assert_array_equal(y1.float().detach().numpy(), y2.float().detach().numpy())
    np.testing.assert_allclose(y3.float().detach().numpy(), y1.float().detach().numpy() + 3, atol=0.1)
    (y1.float().sum() + y2.float().sum()).backward()   # both uses of the one cached cast reach w
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 4.0))


def test_autocast_errors_match_torch():
    with pytest.raises(ValueError, match="autocast: expected `device_type` of type `str`, got: `<class 'int'>`"):
        ember.autocast(1)
    with pytest.raises(RuntimeError, match="autocast: unsupported autocast device_type 'tpu'"):
        ember.autocast("tpu")
    with pytest.raises(RuntimeError, match="is_autocast_enabled: unsupported autocast device_type 'foo'"):
        ember.is_autocast_enabled("foo")
    with pytest.raises(TypeError, match="autocast: argument 'enabled' must be bool, not str"):
        ember.autocast("cpu", enabled="yes")
    with pytest.raises(TypeError, match="set_autocast_enabled: argument 'enabled' must be bool"):
        ember.set_autocast_enabled("cpu", 1)
    with warnings.catch_warnings(record=True) as w:   # torch warns and turns autocast off
        warnings.simplefilter("always")
        with ember.autocast("cpu", dtype=ember.float32):
            assert not ember.is_autocast_enabled("cpu")
    assert "CPU Autocast only supports dtypes of ember.bfloat16, ember.float16" in str(w[0].message)


# ------------------------------------------------------------------------------ ember.compile
def test_compiled_function_retraces_inside_autocast():
    w = ember.randn(4, 3)

    @ember.compile
    def f(x):
        return (x @ w).relu()

    x = ember.randn(2, 4)
    assert f(x).dtype is ember.float32            # traced outside autocast
    with ember.autocast("cpu"):
        with pytest.warns(UserWarning, match="retracing.*autocast"):
            y = f(x)                               # another guard key: a new trace, never the stale one
        assert y.dtype is ember.bfloat16
        with ember.autocast("cpu"):
            expected = (x @ w).relu()
        np.testing.assert_array_equal(f(x).float().numpy(), expected.float().numpy())   # replayed
    assert f(x).dtype is ember.float32 and f.cache_info()["traces"] == 2


def test_autocast_inside_a_compiled_function_is_captured():
    model = enn.Linear(4, 3)

    @ember.compile
    def step(x):
        with ember.autocast("cpu"):
            y = model(x)
        return y, y.float().sum()

    x = ember.randn(2, 4)
    with ember.no_grad():
        for _ in range(3):   # traced, then replayed: the casts are in the graph
            y, s = step(x)
            assert y.dtype is ember.bfloat16 and s.dtype is ember.float32
        with ember.autocast("cpu"):
            ref = model(x)
    assert step.cache_info()["hits"] == 2
    np.testing.assert_array_equal(y.float().numpy(), ref.float().detach().numpy())


def test_traced_function_refuses_another_autocast_state():
    traced = ember.jit.trace(enn.Linear(3, 2), ember.ones(4, 3))
    with ember.autocast("cpu"):
        with pytest.raises(ember.jit.GuardError, match="autocast"):
            traced(ember.ones(4, 3))


# ------------------------------------------------------------------------------ GradScaler
def _scaler_run(lib, opt_name, inject, steps=10, unscale_at=(3,), **kw):
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    X = rng.standard_normal((6, 4)).astype(np.float32)
    m = lib.nn.Linear(4, 3)
    m.weight.data, m.bias.data = lib.tensor(W), lib.tensor(b)
    opt = getattr(lib.optim, opt_name)(m.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **kw)
    x = lib.tensor(X)
    scales, skipped, trackers = [], [], []
    for i in range(steps):
        opt.zero_grad()
        scaler.scale((m(x) ** 2).mean()).backward()
        if i in inject:
            m.weight.grad[0, 0] = float("inf") if i % 2 else float("nan")
        if i in unscale_at:
            scaler.unscale_(opt)
        skipped.append(scaler.step(opt) is None)
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
    return scales, skipped, trackers, m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy(), \
        scaler.state_dict()


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_grad_scaler_matches_torch_step_by_step(opt_name):
    kw = dict(init_scale=2.0 ** 10, growth_interval=2)
    t = _scaler_run(torch, opt_name, {1, 2, 6}, **kw)
    e = _scaler_run(ember, opt_name, {1, 2, 6}, **kw)
    assert e[0] == t[0], f"scales {e[0]} != torch's {t[0]}"
    assert e[2] == t[2], f"growth trackers {e[2]} != torch's {t[2]}"
    assert e[0] != sorted(e[0], reverse=True)   # it grew as well as backed off
    np.testing.assert_allclose(e[3], t[3], atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(e[4], t[4], atol=1e-6, rtol=1e-5)
    assert e[5] == t[5]


def test_grad_scaler_skips_the_step_on_inf():
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    before = m.weight.detach().clone()
    scaler.scale(m(ember.ones(1, 2)).sum()).backward()
    m.bias.grad[0] = float("nan")
    assert scaler.step(opt) is None
    np.testing.assert_array_equal(m.weight.detach().numpy(), before.numpy())
    scaler.update()
    assert scaler.get_scale() == 4.0
    opt.zero_grad()
    scaler.scale(m(ember.ones(1, 2)).sum()).backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), [[4.0, 4.0]])    # scaled gradients
    scaler.unscale_(opt)
    np.testing.assert_allclose(m.weight.grad.numpy(), [[1.0, 1.0]])    # true ones
    scaler.step(opt)
    np.testing.assert_allclose(m.weight.detach().numpy(), before.numpy() - 1.0)


def test_grad_scaler_scale_nested_outputs_and_state():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    a, b = ember.ones(2), ember.full((1,), 2.0)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[0].tolist() == [4.0, 4.0] and out[1][0].tolist() == [8.0]
    bf = scaler.scale(ember.ones(2, dtype=ember.bfloat16))
    assert bf.dtype is ember.bfloat16   # a 0-d float32 scale keeps the output's dtype, as torch
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 7)
    scaler.set_growth_factor(4.0)
    scaler.set_backoff_factor(0.5)
    scaler.set_growth_interval(3)
    assert scaler.state_dict() == {"scale": 4.0, "growth_factor": 4.0, "backoff_factor": 0.5,
                                   "growth_interval": 3, "_growth_tracker": 0}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 4.0 and other.get_growth_interval() == 3
    assert ember.GradScaler is ember.amp.GradScaler and other.is_enabled()
    # update(new_scale=)
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    other.scale(m(ember.ones(1, 2)).sum()).backward()
    other.step(opt)
    other.update(16.0)
    assert other.get_scale() == 16.0
    other.update(ember.tensor(32.0))
    assert other.get_scale() == 32.0


def test_grad_scaler_disabled_is_a_pass_through():
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler(enabled=False)
    loss = m(ember.ones(1, 2)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
    assert scaler._get_growth_tracker() == 0
    scaler.load_state_dict({})   # a disabled scaler ignores it, as torch


def test_grad_scaler_errors_match_torch():
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match="GradScaler.step: attempted step but _scale is None"):
        scaler.step(opt)
    scaler.scale(m(ember.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\)\.$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\)\.$"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last update\(\)\.$"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element tensor"):
        scaler.update(2)
    scaler.update()
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        scaler.load_state_dict({})
    with pytest.raises(ValueError, match="growth_factor should be > 1, got 1.0"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match="backoff_factor should be < 1, got 1.5"):
        ember.amp.GradScaler("cpu", backoff_factor=1.5)
    with pytest.raises(ValueError, match="growth_interval should be a positive integer, got 0"):
        ember.amp.GradScaler("cpu", growth_interval=0)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors, got str"):
        ember.amp.GradScaler("cpu").scale(["loss"])
    half = enn.Linear(2, 1).to(ember.float16)
    s = ember.amp.GradScaler("cpu")
    s.scale(half(ember.ones(1, 2, dtype=ember.float16)).float().sum()).backward()
    with pytest.raises(ValueError, match="attempting to unscale FP16 gradients"):
        s.step(ember.optim.SGD(half.parameters(), lr=0.1))


@pytest.mark.parametrize("name", ["ember.amp", "ember.amp.grad_scaler"])
def test_docstring_examples(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember}, report=True)
    assert result.attempted > 0 and result.failed == 0


def test_grad_scaler_defaults_to_cuda_and_turns_off_without_it_as_torch():
    """torch.amp.GradScaler() means device 'cuda'; without a GPU it warns and is disabled (scale() is the
    identity), so a ported AMP loop runs unchanged on a CPU-only machine."""
    import inspect
    import torch
    assert inspect.signature(ember.amp.GradScaler).parameters["device"].default == \
        inspect.signature(torch.amp.GradScaler).parameters["device"].default == "cuda"
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = ember.amp.GradScaler()
    assert not s.is_enabled()
    loss = ember.ones(())
    assert s.scale(loss) is loss


# ------------------------------------------------------------------------------ the cast cache and the scaler's edges
def test_cast_cache_keeps_grad_mode_and_dtype_apart_and_ends_with_the_region():
    from ember.amp import _cache
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    with ember.autocast("cpu"):
        with ember.no_grad():
            x @ w                  # a cast made without a graph ...
        y = x @ w                  # ... is not the one a graph-building call reuses: w gets its gradient
        with ember.autocast("cpu", dtype=ember.float16):
            z = x @ w              # nor a cast to another dtype
        assert _cache()
    assert not _cache()            # leaving the outermost region drops the casts (torch clears its cache)
    assert y.dtype is ember.bfloat16 and z.dtype is ember.float16
    y.float().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 2.0))


def test_grad_scaler_does_not_grow_the_scale_to_inf():
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=2.0 ** 127, growth_factor=2.0, growth_interval=1)
    scaler.scale(m(ember.ones(1, 2)).sum() * 0).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 127 and scaler._get_growth_tracker() == 0   # 2^128 is inf in float32


def test_grad_scaler_backs_off_when_any_optimizer_saw_inf():
    a, b = enn.Linear(2, 1), enn.Linear(2, 1)
    opt_a, opt_b = ember.optim.SGD(a.parameters(), lr=1.0), ember.optim.SGD(b.parameters(), lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(a(ember.ones(1, 2)).sum() + b(ember.ones(1, 2)).sum()).backward()
    a.bias.grad[0] = float("inf")          # the first optimizer's step is skipped, the second's taken
    assert scaler.step(opt_a) is None
    scaler.step(opt_b)
    scaler.update()
    assert scaler.get_scale() == 4.0


def test_compiled_call_in_a_region_casts_a_weight_the_region_has_cached():
    """ember.compile's trace makes its own cast (not the region's cached tensor, which the graph would keep
    as a constant: the weight's later updates would not reach the compiled calls)."""
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    f = ember.compile(lambda x: x @ w)
    with ember.autocast("cpu"):
        x @ w                      # cached
        f(x)
        f(x)
    with ember.no_grad():
        w.add_(1.0)
    with ember.autocast("cpu"):
        got = f(x).float().detach().numpy()
        want = (x @ w).float().detach().numpy()
    np.testing.assert_array_equal(got, want)


def test_autocast_finds_the_device_of_keyword_only_tensors(fake_cuda):
    a, b = ember.ones(2, 3, device="cuda"), ember.ones(3, 2, device="cuda")
    with ember.autocast("cuda"):
        assert ember.mm(input=a, mat2=b).dtype is ember.float16
        assert ember.mm(a, b).dtype is ember.float16


# ------------------------------------------------------------------------------ mutation-testing follow-ups
def _in_thread(fn):
    """fn() in a fresh thread (a new thread starts from autocast's defaults); re-raises what it raised."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:   # noqa: BLE001 - handed back to the caller
            box["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_autocast_lets_exceptions_through_and_restores_the_state():
    with pytest.raises(KeyError, match="boom"):
        with ember.autocast("cpu"):
            raise KeyError("boom")
    assert not ember.is_autocast_enabled("cpu") and ember.amp.ON == [] and not ember.amp.active()


def test_the_fast_path_list_is_empty_whenever_autocast_is_off_everywhere():
    assert ember.amp.ON == []
    with ember.autocast("cpu"):
        assert ember.amp.ON == [None] and ember.amp.active()
        with ember.autocast("cpu", enabled=False):
            assert ember.amp.ON == [] and not ember.amp.active()
        assert ember.amp.ON == [None]
    assert ember.amp.ON == []
    with ember.autocast("cpu", enabled=False):
        assert ember.amp.ON == []
    ember.set_autocast_enabled("cpu", True)
    ember.set_autocast_enabled("cpu", True)   # twice: still one entry for this thread
    assert ember.amp.ON == [None]
    ember.set_autocast_enabled("cpu", False)
    assert ember.amp.ON == []


def test_another_threads_region_changes_nothing_here():
    """While another thread is inside autocast, this thread's ops run as written: keyword arguments kept,
    nothing cast, `active()` false."""
    entered, leave = threading.Event(), threading.Event()

    def other():
        with ember.autocast("cpu"):
            entered.set()
            leave.wait(30)
    t = threading.Thread(target=other)
    t.start()
    try:
        entered.wait(30)
        assert ember.amp.ON == [None] and not ember.amp.active()
        x, w, b = ember.ones(2, 3), ember.ones(4, 3), ember.full((4,), 5.0)
        y = ember.nn.functional.linear(x, w, bias=b)
        assert y.dtype is ember.float32 and y.tolist() == [[8.0] * 4] * 2
        assert ember.mm(input=x, mat2=w.T).tolist() == [[3.0] * 4] * 2
    finally:
        leave.set()
        t.join()
    assert ember.amp.ON == []


def test_set_autocast_enabled_alone_casts_to_the_default_dtype_in_a_fresh_thread():
    def run():
        ember.set_autocast_enabled("cpu", True)
        try:
            return ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype, ember.get_autocast_dtype("cpu")
        finally:
            ember.set_autocast_enabled("cpu", False)
    assert _in_thread(run) == (ember.bfloat16, ember.bfloat16)


def test_weight_casts_are_shared_like_torchs_cached_casts():
    """torch reuses one cast of a float32 leaf weight within a region: both matmuls hang off the same
    ToCopyBackward node; Ember's hang off the same CastBackward."""
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    with ember.autocast("cpu"), torch.autocast("cpu"):
        y1, y2 = x @ w, x @ w
        t1, t2 = torch.ones(2, 3) @ tw, torch.ones(2, 3) @ tw
    assert t1.grad_fn.next_functions[1][0] is t2.grad_fn.next_functions[1][0]
    assert y1.grad_fn.next_functions[1][0] is y2.grad_fn.next_functions[1][0]
    with ember.autocast("cpu", cache_enabled=False), torch.autocast("cpu", cache_enabled=False):
        assert not ember.is_autocast_cache_enabled() and not ember.amp._cache()
        y1, y2 = x @ w, x @ w
        t1, t2 = torch.ones(2, 3) @ tw, torch.ones(2, 3) @ tw
        assert not ember.amp._cache()
    assert t1.grad_fn.next_functions[1][0] is not t2.grad_fn.next_functions[1][0]
    assert y1.grad_fn.next_functions[1][0] is not y2.grad_fn.next_functions[1][0]
    with ember.autocast("cpu", cache_enabled=True):
        assert ember.is_autocast_cache_enabled() is True


def test_only_leaf_weights_are_cached_and_activations_are_freed():
    """The cache keeps leaves that require grad (weights); an activation or a plain input is cast afresh
    and not kept alive by the cache until the region ends."""
    import gc
    import weakref
    w = ember.randn(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        h = ember.ones(2, 3, requires_grad=True) * 2.0     # not a leaf
        plain = ember.ones(2, 3)                           # a leaf without grad
        refs = [weakref.ref(h), weakref.ref(plain)]
        y = (h @ w) + (plain @ w)
        assert set(ember.amp._cache()) == {id(w)}
        del h, plain
        gc.collect()
        assert [r() for r in refs] == [None, None]
    assert y.dtype is ember.bfloat16


def test_cached_cast_follows_repeated_in_place_updates_of_the_same_kind():
    """The cache compares the weight's version number: two `add_`s in one region give two fresh casts."""
    w = ember.zeros(2, 2, requires_grad=True)
    x = ember.ones(1, 2)
    got = []
    with ember.autocast("cpu"):
        for _ in range(3):
            got.append((x @ w).float().tolist())
            with ember.no_grad():
                w.add_(1.0)
    assert got == [[[0.0, 0.0]], [[2.0, 2.0]], [[4.0, 4.0]]]


def test_the_cast_cache_works_in_a_fresh_thread():
    def run():
        w = ember.randn(3, 3, requires_grad=True)
        with ember.autocast("cpu"):
            y1, y2 = ember.ones(2, 3) @ w, ember.ones(2, 3) @ w
            return y1.grad_fn.next_functions[1][0] is y2.grad_fn.next_functions[1][0], len(ember.amp._cache())
    assert _in_thread(run) == (True, 1)


def test_an_autocast_op_leaves_the_compile_guard_key_as_it_was():
    """After an autocast op ran, the state key is the one before (`suspended` back to False, not another
    falsy value): a function compiled before replays rather than retracing."""
    def run():
        before = ember.amp.state_key()
        with ember.autocast("cpu"):
            ember.mm(ember.ones(2, 2), ember.ones(2, 2))
        return before, ember.amp.state_key()
    before, after = _in_thread(run)
    assert before == after == ((), (), False) and after[2] is False


def test_cpu_autocast_leaves_cuda_ops_alone(fake_cuda):
    def run():   # a fresh thread: no 'cuda' entry in its autocast state at all
        x, w = ember.ones(1, 2, device="cuda"), ember.ones(3, 2, device="cuda")
        b = ember.full((3,), 2.0, device="cuda")
        with ember.autocast("cpu"):
            return ember.nn.functional.linear(x, w, bias=b), ember.mm(input=x, mat2=w.T)
    y, z = _in_thread(run)
    assert y.dtype is ember.float32 and y.cpu().tolist() == [[4.0, 4.0, 4.0]]
    assert z.dtype is ember.float32 and z.cpu().tolist() == [[2.0, 2.0, 2.0]]


def test_device_strings_with_an_index_and_the_error_messages_match_torch():
    for dev in ("cpu:0", "cuda:0"):
        assert ember.is_autocast_enabled(dev) is torch.is_autocast_enabled(dev) is False
    with ember.autocast("cpu:0"):
        assert ember.is_autocast_enabled("cpu") and ember.mm(ember.ones(1, 1), ember.ones(1, 1)).dtype is ember.bfloat16
    for fn, name in [(ember.get_autocast_dtype, "get_autocast_dtype"),
                     (lambda d: ember.set_autocast_dtype(d, ember.float16), "set_autocast_dtype"),
                     (lambda d: ember.set_autocast_enabled(d, True), "set_autocast_enabled")]:
        with pytest.raises(RuntimeError, match=rf"^{name}: unsupported autocast device_type 'foo'; expected one of "
                                               r"cpu, cuda, ipu, xla$"):
            fn("foo")
    with pytest.raises(TypeError, match="^set_autocast_enabled: argument 'enabled' must be bool, not int$"):
        ember.set_autocast_enabled("cpu", 1)
    with pytest.raises(RuntimeError, match=r"^autocast: device_type 'ipu' is not supported by Ember \(cpu, cuda\)$"):
        ember.autocast("ipu")
    with pytest.raises(AttributeError, match="^module 'ember.amp' has no attribute 'nope'$"):
        ember.amp.nope
    ember.set_autocast_cache_enabled(True)
    assert ember.is_autocast_cache_enabled() is True


def test_autocast_op_takes_torchs_three_policies_only():
    from ember.amp import autocast_op
    for policy in ("lower", "fp32", "keep"):
        assert callable(autocast_op(policy))
    with pytest.raises(ValueError, match="^autocast_op: unknown policy 'fast'$"):
        autocast_op("fast")


def test_nesting_counter_counts_as_torchs():
    got = [ember.autocast_increment_nesting(), ember.autocast_increment_nesting(),
           ember.autocast_decrement_nesting(), ember.autocast_decrement_nesting()]
    want = [torch.autocast_increment_nesting(), torch.autocast_increment_nesting(),
            torch.autocast_decrement_nesting(), torch.autocast_decrement_nesting()]
    assert got == want == [1, 2, 1, 0]


def test_legacy_per_device_functions_name_their_device():
    assert "get_autocast_dtype('cpu')" in ember.get_autocast_cpu_dtype.__doc__
    assert "set_autocast_enabled('xla', ...)" in ember.set_autocast_xla_enabled.__doc__


def test_disabled_autocast_is_false_not_just_falsy():
    """An autocast that turns itself off (CUDA missing, a dtype the CPU does not take) reports False,
    with one warning, as torch 2.13 (which warned twice for CUDA and float32 before the fix)."""
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    for kw in ({}, {"dtype": ember.float32}):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ember.autocast("cuda", **kw):
                assert ember.is_autocast_enabled("cuda") is False
        assert [str(m.message) for m in w] == ["CUDA is not available. Disabling autocast."]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ember.autocast("cpu", dtype=ember.float32):
            assert ember.is_autocast_enabled("cpu") is False
    assert [str(m.message) for m in w] == [
        "In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast only supports "
        "dtypes of ember.bfloat16, ember.float16 currently (got ember.float32)."]


def test_cuda_autocast_takes_float32_as_torch(fake_cuda):
    """torch 2.13 checks no dtype for CUDA: autocast('cuda', dtype=float32) runs, the lower-precision list
    then computes in float32 (a float16 input is cast up)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.autocast("cuda", dtype=ember.float32):
            assert ember.is_autocast_enabled("cuda") is True
            y = ember.mm(ember.ones(2, 2, dtype=ember.float16, device="cuda"), ember.ones(2, 2, device="cuda"))
    assert y.dtype is ember.float32 and y.cpu().tolist() == [[2.0, 2.0]] * 2


def test_warnings_point_at_the_callers_line():
    """Deselected under mutmut (its trampoline adds a frame): each warning names this file."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.autocast("cpu", dtype=ember.float32)
        if not ember.cuda.is_available():
            ember.autocast("cuda")
            ember.amp.GradScaler()
    assert w and all(m.filename == __file__ for m in w), [(m.filename, str(m.message)) for m in w]


def _scaled_step_setup(scaler, model=None):
    m = model or enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    scaler.scale(m(ember.ones(1, 2)).sum()).backward()
    return m, opt


def test_grad_scaler_defaults_and_a_fresh_state_dict_match_torch():
    import inspect
    params = inspect.signature(ember.amp.GradScaler).parameters
    tparams = inspect.signature(torch.amp.GradScaler).parameters
    assert {k: p.default for k, p in params.items()} == {k: p.default for k, p in tparams.items()}
    e, t = ember.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    assert e.state_dict() == t.state_dict()          # before any scale(): the growth tracker is 0
    assert e._get_growth_tracker() == t._get_growth_tracker() == 0
    assert e.get_growth_interval() == 2000 and e.get_scale() == t.get_scale() == 65536.0


def test_grad_scaler_scale_is_float32_even_under_a_float64_default():
    """The scale is a float32 tensor, as torch's: 0.1 reads back as float32's 0.1 once scale() made it."""
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        e, t = ember.amp.GradScaler("cpu", init_scale=0.1), torch.amp.GradScaler("cpu", init_scale=0.1)
        assert e.get_scale() == t.get_scale() == 0.1
        e.scale(ember.ones(2))
        t.scale(torch.ones(2))
        assert e.get_scale() == t.get_scale() == float(np.float32(0.1))
    finally:
        ember.set_default_dtype(old)


def test_grad_scaler_state_dict_round_trips_into_a_used_scaler_and_keeps_counting():
    src = ember.amp.GradScaler("cpu", init_scale=16.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)
    for _ in range(2):   # two clean steps: the tracker at 2
        m, opt = _scaled_step_setup(src)
        src.step(opt)
        src.update()
    sd = src.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 3,
                  "_growth_tracker": 2}
    for used in (False, True):
        dst = ember.amp.GradScaler("cpu", init_scale=2.0)
        if used:                     # its scale and tracker exist already: load overwrites both
            m, opt = _scaled_step_setup(dst)
            dst.step(opt)
            dst.update()
        dst.load_state_dict(sd)
        assert dst.state_dict() == sd
        assert (dst.get_growth_factor(), dst.get_backoff_factor()) == (3.0, 0.25)
        m, opt = _scaled_step_setup(dst)   # one more clean step completes the interval: x3
        assert m.weight.grad.tolist() == [[16.0, 16.0]]
        dst.step(opt)
        dst.update()
        assert dst.get_scale() == 48.0 and dst._get_growth_tracker() == 0
        m, opt = _scaled_step_setup(dst)   # an inf: x0.25
        m.bias.grad[0] = float("inf")
        dst.step(opt)
        dst.update()
        assert dst.get_scale() == 12.0


def test_grad_scaler_passes_the_step_arguments_on():
    class Recorder(ember.optim.SGD):
        def step(self, *args, **kwargs):
            self.seen = (args, kwargs)
            return "stepped"
    for enabled in (True, False):
        m = enn.Linear(2, 1)
        opt = Recorder(m.parameters(), lr=0.1)
        scaler = ember.amp.GradScaler("cpu", enabled=enabled)
        scaler.scale(m(ember.ones(1, 2)).sum()).backward()
        assert scaler.step(opt, 1, flag=2) == "stepped" and opt.seen == ((1,), {"flag": 2})


def test_grad_scaler_unscales_past_parameters_without_a_gradient():
    used, unused = enn.Linear(2, 1), enn.Linear(2, 1)
    opt = ember.optim.SGD(list(unused.parameters()) + list(used.parameters()), lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale(used(ember.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    assert unused.weight.grad is None and used.weight.grad.tolist() == [[1.0, 1.0]]


def test_grad_scaler_error_messages():
    s = ember.amp.GradScaler("cpu")
    fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
    m = enn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    for name, call in [("unscale_", lambda: s.unscale_(opt)), ("update", s.update), ("step", lambda: s.step(opt))]:
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value) == f"GradScaler.{name}: attempted {name} but _scale is None. {fix}"
    with pytest.raises(TypeError, match=r"^GradScaler: device must be a device type string \('cpu', 'cuda'\), "
                                        r"got 0$"):
        ember.amp.GradScaler(0)
    with pytest.raises(ValueError, match="^GradScaler: backoff_factor should be < 1, got 1.0$"):
        ember.amp.GradScaler("cpu", backoff_factor=1.0)
    for bad in (2.5, True):
        with pytest.raises(ValueError, match=f"^GradScaler: growth_interval should be a positive integer, got {bad}$"):
            ember.amp.GradScaler("cpu", growth_interval=bad)
    # no gradient at all: nothing to check for inf
    s.scale(ember.ones(()))
    with pytest.raises(RuntimeError, match=r"^GradScaler.step: no inf checks were recorded for this optimizer \(no "
                                           r"parameter has a gradient: was backward\(\) called on the scaled loss\?\)$"):
        s.step(opt)
    with pytest.raises(RuntimeError, match=r"^GradScaler.update: no inf checks were recorded prior to update\(\) "
                                           r"\(call step\(\) or unscale_\(\) first\)$"):
        _fresh_scaled(ember.amp.GradScaler("cpu")).update()
    msg = r"^GradScaler.update: new_scale should be a float or a 1-element tensor with requires_grad=False$"
    for bad in (ember.tensor([1.0, 2.0]), ember.tensor(2.0, requires_grad=True)):
        with pytest.raises(ValueError, match=msg):
            s.update(bad)
    with pytest.raises(RuntimeError, match=r"^Closure use is not currently supported if GradScaler is enabled\.$"):
        s.step(opt, closure=lambda: None)
    with pytest.raises(RuntimeError, match=r"^The source state dict is empty, possibly because it was saved from a "
                                           r"disabled instance of GradScaler\.$"):
        s.load_state_dict({})


def _fresh_scaled(scaler):
    scaler.scale(ember.ones(()))
    return scaler


def test_grad_scaler_fp16_gradients_error_and_what_update_says_after_it():
    half = enn.Linear(2, 1).to(ember.float16)
    s = ember.amp.GradScaler("cpu")
    s.scale(half(ember.ones(1, 2, dtype=ember.float16)).float().sum()).backward()
    with pytest.raises(ValueError, match=r"^GradScaler.unscale_: attempting to unscale FP16 gradients \(keep the "
                                         r"parameters in float32 and let autocast make the float16 copies\)$"):
        s.step(ember.optim.SGD(half.parameters(), lr=0.1))
    with pytest.raises(RuntimeError, match="^GradScaler.update: no inf checks were recorded"):
        s.update()   # the failed step recorded nothing


def test_grad_scaler_without_cuda_is_disabled_as_false():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = ember.amp.GradScaler()
    assert s.is_enabled() is False
    assert [str(m.message) for m in w] == ["ember.amp.GradScaler is enabled, but CUDA is not available. Disabling."]


def test_grad_scaler_keeps_the_scale_on_the_outputs_device_and_unscales_each_gradient_on_its_own(fake_cuda):
    """The scale lives on the device of the first scaled output (no host copy per step, as torch); a model
    split over two devices gets each gradient unscaled where it is; outputs on two devices each scaled."""
    first, second = enn.Linear(2, 2).to("cuda"), enn.Linear(2, 1)
    opt = ember.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=1.0)
    scaler = ember.amp.GradScaler("cuda", init_scale=4.0)
    with ember.no_grad():
        first.weight.fill_(1.0), first.bias.fill_(0.0), second.weight.fill_(1.0), second.bias.fill_(0.0)
    loss = second(first(ember.ones(1, 2, device="cuda")).cpu()).sum().to("cuda")
    scaler.scale(loss).backward()
    assert str(scaler._scale.device) == "cuda:0"
    scaler.unscale_(opt)
    assert first.weight.grad.cpu().tolist() == [[1.0, 1.0]] * 2 and second.weight.grad.tolist() == [[2.0, 2.0]]
    out = scaler.scale([ember.ones(1, device="cuda"), ember.ones(1)])
    assert [str(t.device) for t in out] == ["cuda:0", "cpu"] and [t.cpu().item() for t in out] == [4.0, 4.0]
    assert scaler.scale(ember.ones(1)).tolist() == [4.0]      # a CPU output of a CUDA-scaled model
    fresh = ember.amp.GradScaler("cuda", init_scale=2.0)
    assert fresh.scale([ember.ones(1, device="cuda")])[0].cpu().tolist() == [2.0]
    assert str(fresh._scale.device) == "cuda:0"                # made by the first output of a list
