"""Each pass alone on a small graph (what it removes or merges, and that the result is unchanged), and the
golden printed graphs of the reference models after the default pipeline (tests/jit/golden/*.txt;
EMBER_UPDATE_GOLDEN=1 rewrites them)."""
import os
import pathlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.jit import kernels
from ember.jit import passes as P
from tests.jit.models import make

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _compiled(fn, *args, passes):
    f = ember.compile(fn, passes=passes)
    f(*args)
    return f


def _same_as_eager(fn, *args, passes):
    f = _compiled(fn, *args, passes=passes)
    out = f(*args)
    ref = fn(*args)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    return f.graph


def test_dce_drops_unused_work_but_keeps_writes():
    buf = ember.zeros(3)

    def fn(x):
        unused = (x.exp() * 3).sum()        # noqa: F841  dead
        buf.add_(x)                           # an in-place write: stays
        return x * 2
    g0 = _compiled(fn, ember.ones(3), passes=[]).graph
    g1 = _compiled(fn, ember.ones(3), passes=["dce"]).graph
    assert {"Exp", "Sum"} <= set(g0.counts()) and not {"Exp", "Sum"} & set(g1.counts())
    assert g1.counts()["Assign"] == 1
    before = buf.numpy().copy()
    f = _compiled(fn, ember.ones(3), passes=["dce"])
    f(ember.ones(3))
    np.testing.assert_array_equal(buf.numpy(), before + 2)     # traced call + replay: two writes


def test_fold_runs_constant_subgraphs_once():
    def fn(x):
        mask = ember.triu(ember.full((4, 4), float("-inf")), diagonal=1)   # constants only
        return x + mask
    g0 = _compiled(fn, ember.ones(4, 4), passes=[]).graph
    g = _same_as_eager(fn, ember.ones(4, 4), passes=["fold", "dce"])
    assert len(g) == 1 and g.nodes[0].name == "Add" and len(g0) > 1
    assert any(v.kind == "const" and (v.src or "").startswith("folded") for v in g.leaves)


def test_fold_leaves_written_constants_alone():
    def fn(x):
        c = ember.zeros(3)
        c.add_(x)          # the constant's memory is written: folding reads of it would be stale
        return c * 2
    g = _same_as_eager(fn, ember.ones(3), passes=["fold", "dce"])
    assert "Mul" in g.counts()


def _calls_equal_eager(fn, make_x, passes, calls=4):
    """Each of several calls of the compiled fn (the trace, then replays) equals fn run eagerly."""
    f = ember.compile(fn, passes=passes)
    for i in range(calls):
        np.testing.assert_array_equal(f(make_x(i)).numpy(), fn(make_x(i)).numpy(), err_msg=f"call {i}")
    return f.graph


@pytest.mark.parametrize("passes", [["fold"], None])
def test_fold_leaves_a_constant_result_written_later_alone(passes):
    def fn(x):
        c = ember.ones(3) * 2   # constants only: foldable, but written below
        c.add_(x)               # folded, the constant kept each run's write: 3, 4, 5, ...
        return c
    g = _calls_equal_eager(fn, lambda i: ember.ones(3) * i, passes)
    assert "Mul" in g.counts()


@pytest.mark.parametrize("passes", [["cse"], None])
def test_cse_keeps_apart_equal_values_one_of_which_is_written_later(passes):
    def fn(x):
        a = x.exp()
        b = x.exp()             # merged with a, it was zeroed by a's write
        a.mul_(0)
        return a + b
    g = _calls_equal_eager(fn, lambda i: ember.ones(3) * i, passes)
    if passes == ["cse"]:
        assert g.counts()["Exp"] == 2


def test_cse_merges_identical_pure_calls():
    def fn(x):
        return x.exp() + x.exp()
    g0 = _compiled(fn, ember.ones(3), passes=[]).graph
    g = _same_as_eager(fn, ember.ones(3), passes=["cse", "dce"])
    assert g0.counts()["Exp"] == 2 and g.counts()["Exp"] == 1


def test_cse_does_not_merge_across_an_in_place_write():
    def fn(x):
        a = x.exp()
        x.mul_(2)
        b = x.exp()
        return a + b
    x = ember.ones(3)
    f = ember.compile(fn, passes=["cse", "dce"])
    f(x.clone())
    y = ember.ones(3)
    out = f(y)
    assert f.graph.counts()["Exp"] == 2
    np.testing.assert_allclose(out.numpy(), np.exp(1) + np.exp(2), rtol=1e-6)


def test_cse_keeps_random_draws_apart():
    g = _compiled(lambda x: ember.rand(3) + ember.rand(3) + x, ember.ones(3), passes=["cse"]).graph
    assert g.counts()["Random"] == 2


def test_simplify_removes_identities():
    def fn(x):
        return ((x * 1.0 + 0.0).reshape(2, 3) / 1.0).to(ember.float32).neg().neg() * 3
    g0 = _compiled(fn, ember.ones(2, 3), passes=[]).graph
    g = _same_as_eager(fn, ember.ones(2, 3), passes=["simplify", "dce"])
    assert len(g0) >= 6
    assert len(g) <= 1, str(g)


def _split_step(sizes, keys=None):
    """A step whose backward scatters the pieces of a split (or of overlapping slices) back: returns
    the compiled function and a fresh leaf for it."""
    w = ember.randn(4, 6, generator=ember.Generator().manual_seed(0)).requires_grad_()

    def fn(x):
        w.grad = None
        y = x @ w
        parts = y.split(sizes, dim=1) if keys is None else [y[:, k] for k in keys]
        loss = sum(((i + 1.0) * p.tanh()).sum() for i, p in enumerate(parts))
        loss.backward()
        return loss
    return fn, w


def _grad_after(fn, w, x, passes):
    f = ember.compile(fn, passes=passes)
    f(x)
    f(x)                              # a replay
    return f.graph, w.grad.numpy().copy()


def test_concat_turns_the_backward_of_split_into_one_cat():
    x = ember.randn(5, 4, generator=ember.Generator().manual_seed(1))
    fn, w = _split_step([1, 2, 3])
    fn(x)
    eager = w.grad.numpy().copy()
    g0, grad0 = _grad_after(fn, w, x, passes=[])
    g, grad = _grad_after(fn, w, x, passes=["concat"])
    assert g0.counts()["IndexAddInto"] == 3 and "Cat" not in g0.counts()
    assert g.counts()["Cat"] == 1 and "IndexAddInto" not in g.counts(), str(g)
    cat = next(n for n in g.nodes if n.name == "Cat")
    assert cat.attrs == {"axis": 1} and [v.shape for v in cat.inputs] == [(5, 1), (5, 2), (5, 3)]
    np.testing.assert_array_equal(grad, eager)
    np.testing.assert_array_equal(grad0, eager)


@pytest.mark.parametrize("keys", [[slice(0, 3), slice(2, 6)],           # overlapping: a sum, not a cat
                                  [slice(0, 2), slice(3, 6)]])          # a gap: zeros stay in column 2
def test_concat_leaves_slices_that_do_not_tile_alone(keys):
    x = ember.randn(5, 4, generator=ember.Generator().manual_seed(2))
    fn, w = _split_step(None, keys)
    fn(x)
    eager = w.grad.numpy().copy()
    g, grad = _grad_after(fn, w, x, passes=["concat"])
    assert "Cat" not in g.counts() and g.counts()["IndexAddInto"] == 2, str(g)
    np.testing.assert_allclose(grad, eager, rtol=1e-6)


def _qkv_step(extra_read=False, causal=True):
    """A fused q/k/v projection split into heads, as a GPT does; `extra_read`: the step also reads
    q's head view after the attention (its gradient then has a second reader)."""
    w = ember.randn(8, 24, generator=ember.Generator().manual_seed(5)).requires_grad_()

    def fn(x):
        w.grad = None
        B, T, _ = x.shape
        q, k, v = (t.reshape(B, T, 2, 4).transpose(1, 2) for t in (x @ w).split(8, dim=2))
        y = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        loss = (y.transpose(1, 2).reshape(B, T, 8) ** 2).sum()
        if extra_read:
            loss = loss + (q * q).sum()
        loss.backward()
        return loss
    return fn, w


@pytest.mark.parametrize("causal", [True, False])
def test_pack_attention_writes_the_qkv_gradients_into_the_projection_columns(causal):
    x = ember.randn(2, 40, 8, generator=ember.Generator().manual_seed(6))   # 40: two-block causal products
    fn, w = _qkv_step(causal=causal)
    fn(x)
    eager = w.grad.numpy().copy()
    g0, grad0 = _grad_after(fn, w, x, passes=["concat", "dce"])
    g, grad = _grad_after(fn, w, x, passes=["concat", "pack_attention"])
    assert g0.counts()["AttentionGrad"] == 1 and g0.counts()["Cat"] == 1
    assert g.counts().get("AttentionGradPacked") == 1, str(g)
    assert "AttentionGrad" not in g.counts() and "Cat" not in g.counts(), str(g)
    np.testing.assert_allclose(grad, eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad0, eager, rtol=1e-5, atol=1e-6)


def test_pack_attention_leaves_gradients_another_node_reads():
    x = ember.randn(2, 5, 8, generator=ember.Generator().manual_seed(7))
    fn, w = _qkv_step(extra_read=True)
    fn(x)
    eager = w.grad.numpy().copy()
    g, grad = _grad_after(fn, w, x, passes=["concat", "pack_attention"])
    assert "AttentionGradPacked" not in g.counts() and g.counts()["AttentionGrad"] == 1, str(g)
    np.testing.assert_allclose(grad, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("Ev", [4, 6])   # 6: value heads wider than q and k's (the kernel leaves them to the forward)
def test_attention_grad_packed_kernel_equals_its_forward(Ev):
    """The CPU kernel (gradients written into column blocks) and the primitive's NumPy forward agree."""
    from ember.backends import cpu_kernels
    from ember.ops.attention import Attention, AttentionGradPacked
    rng = np.random.default_rng(8)
    q, k = (rng.standard_normal((2, 3, 36, 4)).astype(np.float32) for _ in range(2))
    v, g = (rng.standard_normal((2, 3, 36, Ev)).astype(np.float32) for _ in range(2))
    node = Attention.__new__(Attention)
    node.__dict__.update(scale=0.5, causal=True)
    _, p = node.forward(q, k, v)
    packed = AttentionGradPacked.__new__(AttentionGradPacked)
    packed.__dict__.update(scale=0.5, causal=True)
    want = packed.forward(q, k, v, p, g)
    got = cpu_kernels.attention_grad_packed(packed, q, k, v, p, g)
    assert got.shape == want.shape == (2, 36, 3 * (8 + Ev))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _attention_grad_graph(B=2, H=3, L=4, E=5, *, dims=(0, 2, 1, 3), order=(0, 1, 2), axis=-1, shape=None,
                          two_nodes=False, read=None, write_q=False):
    """A graph as a GPT's backward leaves it after `concat`: AttentionGrad's (B, H, L, E) gradients, each
    permuted by `dims`, reshaped (to (B, L, H * E) unless `shape`) and concatenated along `axis` in `order`.
    `two_nodes`: dq from a second AttentionGrad; `read`: 'reshape', 'permute' or 'grad' (dq's value at that
    step is also an output); `write_q`: an in-place write of q between the AttentionGrad and the Cat."""
    from ember.jit.ir import Graph
    from ember.ops.attention import AttentionGrad
    from ember.ops.inplace import Assign
    from ember.ops.primitives import Cat, Permute, Reshape
    gr = Graph()
    q, k, v, g = (gr.new_value((B, H, L, E), "float32", kind="input", src=i) for i in range(4))
    p = gr.new_value((B, H, L, L), "float32", kind="input", src=4)
    attrs = {"scale": 0.5, "causal": True}
    grads = [gr.new_value((B, H, L, E), "float32") for _ in range(3)]
    gr.add_node(AttentionGrad, attrs, [q, k, v, p, g], grads)
    if two_nodes:
        other = [gr.new_value((B, H, L, E), "float32") for _ in range(3)]
        gr.add_node(AttentionGrad, attrs, [q, k, v, p, g], other)
        grads[0] = other[0]
        gr.outputs += other[1:]
    if write_q:
        gr.add_node(Assign, {}, [q, gr.new_value((B, H, L, E), "float32", kind="input", src=5)], [], mutates=(0,))
    pieces = []
    for j, t in enumerate(grads):
        pt = gr.new_value(tuple(t.shape[d] for d in dims), "float32")
        gr.add_node(Permute, {"dims": dims}, [t], [pt])
        to = shape or (pt.shape[0], pt.shape[1], pt.shape[2] * pt.shape[3])
        r = gr.new_value(to, "float32")
        gr.add_node(Reshape, {"shape": to}, [pt], [r])
        pieces.append(r)
        if j == 0 and read is not None:
            gr.outputs.append({"grad": t, "permute": pt, "reshape": r}[read])
    pieces = [pieces[i] for i in order]
    ax = axis % 3
    cat = gr.new_value(pieces[0].shape[:ax] + (sum(r.shape[ax] for r in pieces),) + pieces[0].shape[ax + 1:], "float32")
    gr.add_node(Cat, {"axis": axis}, pieces, [cat])
    gr.outputs.insert(0, cat)
    return gr


@pytest.mark.parametrize("axis", [2, -1])
def test_pack_attention_takes_the_cat_of_the_three_head_gradients(axis):
    """The pattern alone (the control of the refusals below): one AttentionGradPacked writes the Cat's
    output; the AttentionGrad, permutes and reshapes are gone."""
    g = P.pack_attention(_attention_grad_graph(axis=axis))
    assert g.counts() == {"AttentionGradPacked": 1}, str(g)
    assert g.outputs[0].node is g.nodes[0]
    assert g.nodes[0].attrs == {"scale": 0.5, "causal": True} and len(g.nodes[0].inputs) == 5


@pytest.mark.parametrize("kw", [
    {"read": "reshape"}, {"read": "permute"}, {"read": "grad"},   # a gradient on the way has another reader
    {"dims": (0, 1, 2, 3), "H": 4},                  # not the heads' transpose back (shapes still fit: H = L)
    {"dims": (0, 2, 1, 3), "shape": (2, 12, 5)},      # reshaped to another layout than (B, L, H * E)
    {"axis": 1}, {"axis": 0},                        # concatenated along rows or batch
    {"order": (1, 0, 2)}, {"order": (0, 2, 1)},      # the gradients in another order than q, k, v
    {"two_nodes": True},                             # dq from another attention than dk and dv
    {"write_q": True},                               # q written in place before the Cat: the gradient must not move
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_pack_attention_leaves_every_other_pattern_alone(kw):
    """Each condition of the match: a graph that breaks it keeps its AttentionGrad and Cat (packing it would
    write other values, or compute a gradient twice, or read q after its write)."""
    g = P.pack_attention(_attention_grad_graph(**kw))
    assert "AttentionGradPacked" not in g.counts(), str(g)
    assert g.counts()["Cat"] == 1 and g.counts()["AttentionGrad"] == 1 + kw.get("two_nodes", False), str(g)


def test_simplify_drops_the_clone_of_a_gradient_nothing_else_reads():
    x = ember.randn(5, 4, generator=ember.Generator().manual_seed(3))
    fn, w = _split_step([6])
    fn(x)
    eager = w.grad.numpy().copy()
    g0, _ = _grad_after(fn, w, x, passes=[])
    g, grad = _grad_after(fn, w, x, passes=["simplify", "dce"])
    assert g0.counts()["Clone"] == 1 and "Clone" not in g.counts(), str(g)
    np.testing.assert_array_equal(grad, eager)
    assert not np.shares_memory(grad, x.numpy())


def test_simplify_keeps_the_clone_of_a_view():
    w = ember.randn(3, generator=ember.Generator().manual_seed(4)).requires_grad_()

    def fn(x):
        w.grad = None
        (x.expand(2, 3) * w).sum().backward()     # w's gradient is a view until the clone
        return w.grad
    f = ember.compile(fn, passes=["simplify", "dce"])
    x = ember.ones(3)
    f(x)
    out = f(x)
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0])
    assert f.graph.counts().get("Clone", 0) == 1, str(f.graph)


def test_fuse_makes_one_node_per_chain_and_keeps_bits():
    def fn(x, w):
        return ((x @ w).relu() * 2 + 1).tanh()
    x, w = ember.randn(5, 4), ember.randn(4, 3)
    g = _same_as_eager(fn, x, w, passes=["fuse"])
    assert g.counts() == {"Fused": 1}, str(g)
    assert g.nodes[0].attrs["ops"] == "MatMul+Relu+Mul+Add+Tanh"


def test_fuse_linear_bias_relu_is_the_notes_conv_relu():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
    x = ember.randn(2, 1, 5, 5)
    with ember.no_grad():
        g = _same_as_eager(model, x, passes=["fuse"])
    assert any(n.name == "Fused" and n.attrs["ops"] == "Conv+Relu" for n in g.nodes), str(g)   # bias inside Conv


def test_memplan_frees_arrays_after_their_last_use():
    def fn(x):
        return (x.exp() + 1).log()
    f = ember.compile(fn, passes=["memplan"])
    f(ember.ones(3)); f(ember.ones(3))
    assert "del " in f.code
    f = ember.compile(fn, passes=[])
    f(ember.ones(3)); f(ember.ones(3))
    assert "del " not in f.code


def test_unknown_pass_is_named():
    f = ember.compile(lambda x: x + 1, passes=["dce", "nope"])
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        f(ember.ones(1))


def test_debug_2_prints_the_graph_after_each_pass(monkeypatch, capsys):
    from ember import _debug
    monkeypatch.setattr(_debug, "LEVEL", 2)
    f = ember.compile(lambda x: x.exp() + 1, passes=["dce", "fuse"])
    f(ember.ones(2))
    err = capsys.readouterr().err
    assert "graph after dce" in err and "graph after fuse" in err and "Fused" in err


@pytest.mark.parametrize("pool", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)],
                         ids=["2x2", "3x3-overlapping"])
def test_pool_relu_masks_the_pooled_gradient_with_the_same_result(pool):
    """ReLU's mask after MaxPoolGrad becomes a mask on the pooled gradient before it: gradients equal
    the unrewritten graph's bit for bit (ties, zeros, a NaN and overlapping windows included), and the
    graph has no full-size Compare left."""
    ember.manual_seed(0)
    conv = nn.Conv2d(2, 8, 3, padding=1)
    x = ember.randn(3, 2, 8, 8)
    x[0, 0, :3, :3] = 0.0                       # windows whose maximum is 0: ReLU's mask takes them
    x[1, 1, 4, 4] = float("nan")

    def step(x):
        y = F.max_pool2d(ember.relu(conv(x)), **pool)
        (y * y.detach().nan_to_num() + y).sum().backward()
        g = conv.weight.grad.clone(), conv.bias.grad.clone()
        conv.weight.grad = conv.bias.grad = None
        return g

    def run(passes):
        f = ember.compile(step, passes=passes)
        f(x)
        return [t.numpy() for t in f(x)], f.graph
    got, graph = run(P.DEFAULT)
    want, _ = run([p for p in P.DEFAULT if p != "pool_relu"])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    grads = [n for n in graph.nodes if n.name == "MaxPoolGrad"]
    assert len(grads) == 1 and grads[0].inputs[2].node.name in ("Where", "Fused")
    assert grads[0].inputs[2].shape == grads[0].inputs[1].shape          # the pooled shape


def test_pool_relu_leaves_other_masks_alone():
    """Only `Where(relu_out <= 0, 0, MaxPoolGrad(relu_out, ...))` is rewritten: a clamp's gradient mask
    (Compare 'ge' on the clamp's input) after a MaxPoolGrad stays where it was."""
    def step(x):
        y = F.max_pool2d(x.clamp(min=0.5), 2)
        y.sum().backward()
        return x.grad

    x = ember.randn(2, 3, 4, 4, requires_grad=True)
    f = ember.compile(lambda: step(x), passes=["pool_relu"])
    f()
    names = [n.name for n in f.graph.nodes]
    assert names.index("MaxPoolGrad") < names.index("Where")


# --- golden graphs ----------------------------------------------------------------------------------
def _gpt_block():
    ember.manual_seed(0)
    blk = nn.TransformerEncoderLayer(16, 2, dim_feedforward=64, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=True)
    blk.eval()
    x = ember.randn(2, 8, 16)
    mask = ember.triu(ember.full((8, 8), float("-inf")), diagonal=1)
    return (lambda x: blk(x, src_mask=mask, is_causal=True)), x


def _model(kind):
    if kind == "gpt_block":
        return _gpt_block()
    model, _, x, _ = make(kind)
    model.eval()
    return model, x


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt_block"])
def test_golden_graph(kind):
    fn, x = _model(kind)
    with ember.no_grad():
        f = ember.compile(fn)
        f(x)
        out = f(x)
        np.testing.assert_array_equal(out.numpy(), fn(x).numpy())
    text = f.graph.format(lines=False) + "\n"
    path = GOLDEN / f"{kind}.txt"
    if os.environ.get("EMBER_UPDATE_GOLDEN") or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"the printed graph of {kind} changed; diff it against {path}"


def test_fuse_does_not_move_a_member_past_a_write_of_what_it_reads():
    def fn(x):
        a = x * 2           # fused with the add below, it would run after the write and read x + 1
        x.add_(1)
        return a + 1
    g = _calls_equal_eager(fn, lambda i: ember.ones(2) * i, ["fuse"])
    assert "Fused" not in g.counts()


def test_cse_does_not_merge_reads_of_one_view_across_a_write_of_its_base():
    def fn(x):
        v = x.reshape(4)     # the same value before and after the write: only the table reset tells
        a = v.exp()
        x.mul_(2)
        b = v.exp()
        return a + b
    g = _calls_equal_eager(fn, lambda i: ember.ones(2, 2) * i, ["cse"])
    assert g.counts()["Exp"] == 2


def test_dce_keeps_an_input_only_dead_code_read():
    def fn(x, y):
        _ = y.exp()          # dead: dropped, but y stays an input the call binds
        return x * 2
    f = ember.compile(fn, passes=["dce"])
    for i in range(3):
        assert f(ember.ones(2) * i, ember.ones(3)).tolist() == [2.0 * i] * 2
    assert [v.kind for v in f.graph.leaves].count("input") == 2 and "Exp" not in f.graph.counts()


# --- fuse_updates -------------------------------------------------------------------------------------
def _sgd_step(X, Y, W1, W2, lr=1e-3):
    """W2's manual step: forward, backward, `p -= lr * p.grad`, `p.grad.zero_()` (one update region each)."""
    def step():
        loss = (X.mm(W1).clamp(min=0).mm(W2) - Y).pow(2).sum()
        loss.backward()
        with ember.no_grad():       # bench/compiled.py's W2 order: both updates, then both zero_()
            for p in (W1, W2):
                p.sub_(lr * p.grad)
            for p in (W1, W2):
                p.grad.zero_()
        return loss
    return step


def _sgd_tensors(seed, n=8, d=40, h=32, o=10):
    rng = np.random.default_rng(seed)
    arr = [rng.standard_normal(s, dtype=np.float32) for s in ((n, d), (n, o), (d, h), (h, o))]
    X, Y, W1, W2 = (ember.from_numpy(a.copy()) for a in arr)
    return X, Y, W1.requires_grad_(), W2.requires_grad_()


@pytest.mark.parametrize("mode", ["auto", "numpy"])
def test_fuse_updates_makes_one_in_place_node_per_update_and_keeps_bits(mode, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_JIT_KERNELS", mode)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    eager, comp = _sgd_tensors(0), _sgd_tensors(0)
    e, f = _sgd_step(*eager), ember.compile(_sgd_step(*comp))
    runs = kernels.RUNS["numba"]
    for i in range(4):
        np.testing.assert_array_equal(f().detach().numpy(), e().detach().numpy(), err_msg=f"loss of call {i}")
        for a, b in zip(comp[2:], eager[2:]):    # the parameters and their zeroed gradients, bit for bit
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=f"call {i}")
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy(), err_msg=f"call {i}")
    regions = [n for n in f.graph.nodes if n.name == "Fused" and n.mutates]
    assert sorted(n.attrs["ops"] for n in regions) == ["Assign+Mul+Assign+Assign"] * 2, str(f.graph)
    assert "Assign" not in f.graph.counts(), str(f.graph)
    written = sorted(tuple(n.inputs[i].shape for i in n.mutates) for n in regions)
    assert written == [((32, 10), (32, 10)), ((40, 32), (40, 32))]      # the gradient and the parameter
    # W1's region (1280 elements), W2's (320) and relu's gradient (256) in numba, in the two calls after the
    # second trace (the first call's gradients were None)
    in_numba = mode == "auto" and _has_numba()
    assert kernels.RUNS["numba"] - runs == 6 * in_numba


def _has_numba():
    import importlib.util
    return importlib.util.find_spec("numba") is not None


def test_fuse_updates_keeps_apart_a_region_something_reads_between_its_writes():
    def fn(p, g):
        g.add_(1)
        p.sub_(g * 0.5)
        s = p.sum()          # reads p between the region's writes: fused, it would see p before the sub
        g.mul_(0)
        return s + g.sum()
    make = lambda i: (ember.ones(300) * i, ember.ones(300) * (i + 1))      # noqa: E731
    f = ember.compile(fn)
    for i in range(3):
        pe, ge = make(i)
        pc, gc = make(i)
        np.testing.assert_array_equal(f(pc, gc).numpy(), fn(pe, ge).numpy())
        np.testing.assert_array_equal(pc.numpy(), pe.numpy())
    assert not any(n.mutates for n in f.graph.nodes if n.name == "Fused"), str(f.graph)


def test_fuse_updates_takes_a_region_whose_reads_come_before_it():
    def fn(p, g):
        s = p.sum()          # before the first write: the region may still form
        g.add_(1)
        p.sub_(g * 0.5)
        g.mul_(0)
        return s
    f = ember.compile(fn)
    for i in range(3):
        pe, ge = ember.ones(300) * i, ember.ones(300) * (i + 1)
        pc, gc = ember.ones(300) * i, ember.ones(300) * (i + 1)
        np.testing.assert_array_equal(f(pc, gc).numpy(), fn(pe, ge).numpy())
        np.testing.assert_array_equal(pc.numpy(), pe.numpy())
        np.testing.assert_array_equal(gc.numpy(), ge.numpy())
    assert [n.attrs["ops"] for n in f.graph.nodes if n.mutates] == ["Assign+Mul+Assign+Assign"], str(f.graph)


@pytest.mark.parametrize("layout", ["overlapping", "transposed", "contiguous"])
def test_update_kernel_takes_only_arrays_it_can_run_element_by_element(layout):
    """Traced on two tensors, the region writes `a` from `b` in one loop; replayed with b overlapping a
    (shifted views of one tensor) element order would show, and a transposed b is not laid out like a:
    those calls run member by member, with eager's result."""
    def fn(a, b):
        a.add_(b * 2)
        a.mul_(3)
        return a

    def make(layout):
        base = ember.arange(40 * 41, dtype=ember.float32)
        if layout == "overlapping":
            return base[1:1601].reshape(40, 40), base[:1600].reshape(40, 40)
        if layout == "transposed":
            return base[:1600].reshape(40, 40), (base[:1600] * 0.5).reshape(40, 40).t()
        return base[:1600].reshape(40, 40).clone(), (base[:1600] * 0.5).reshape(40, 40)
    f = ember.compile(fn)
    for i, lay in enumerate(("contiguous", layout, layout, "contiguous", layout)):
        a, b = make(lay)
        runs = kernels.RUNS["numba"]
        np.testing.assert_array_equal(f(a, b).numpy(), fn(*make(lay)).numpy(), err_msg=lay)
        np.testing.assert_array_equal(a.numpy(), fn(*make(lay)).numpy(), err_msg=lay)
        if _has_numba():      # the first call traces; then the loop runs on the contiguous pair only
            assert kernels.RUNS["numba"] - runs == (i > 0 and lay == "contiguous"), lay
    assert f.cache_info().traces == 1, f.cache_info()
    assert [n.attrs["ops"] for n in f.graph.nodes if n.mutates] == ["Mul+Assign+Assign"], str(f.graph)


def test_an_update_region_saves_and_loads(tmp_path):
    """A saved step keeps its update regions; loaded, it trains as the compiled step goes on to."""
    comp = _sgd_tensors(1)
    f = ember.compile(_sgd_step(*comp))
    f(); f()
    f.save(tmp_path / "sgd.ejit")
    g = ember.jit.load(tmp_path / "sgd.ejit")
    assert sum(n.name == "Fused" and bool(n.mutates) for n in g.graph.nodes) == 2, str(g.graph)
    got = [float(g()) for _ in range(3)]
    want = [float(f().detach()) for _ in range(3)]
    assert got == want
    params = sorted((t.numpy() for t in g.state.values() if t.shape in ((40, 32), (32, 10))), key=lambda a: a.shape)
    assert len(params) == 4      # W1, W2 and their gradients
    for p in comp[2:]:
        assert any(np.array_equal(p.detach().numpy(), a) for a in params)
        assert any(np.array_equal(p.grad.numpy(), a) for a in params)


def test_an_update_region_whose_written_tensors_are_both_used_after_it():
    def fn(p, g):
        g.add_(1)
        p.sub_(g * 0.5)
        return p * 2 + g      # both written tensors read after the region: a node of two outputs
    f = ember.compile(fn, passes=["fuse_updates"])
    for i in range(3):
        pe, ge = ember.arange(300.0) * i, ember.ones(300) * (i + 1)
        pc, gc = ember.arange(300.0) * i, ember.ones(300) * (i + 1)
        np.testing.assert_array_equal(f(pc, gc).numpy(), fn(pe, ge).numpy())
        np.testing.assert_array_equal(pc.numpy(), pe.numpy())
    region, = [n for n in f.graph.nodes if n.mutates]
    assert len(region.outputs) == 2 and region.attrs["ops"] == "Assign+Mul+Assign", str(f.graph)


def _update_calls_equal_eager(fn, make, calls=4):
    """Each call of the compiled fn (trace, then replays) returns and writes what fn does eagerly."""
    f = ember.compile(fn)
    for i in range(calls):
        eager, comp = make(i), make(i)
        np.testing.assert_array_equal(f(*comp).numpy(), fn(*eager).numpy(), err_msg=f"call {i}")
        for a, b in zip(comp, eager):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"call {i}")
    return f.graph


def _pg(i, n=300, dtype=None):
    return (ember.arange(float(n), dtype=dtype) * (i + 1), ember.ones(n, dtype=dtype) * (i + 2), ember.ones(n, dtype=dtype) * 3)


def test_fuse_updates_keeps_apart_a_region_a_view_reads_between_its_writes():
    def fn(p, g, h):
        v = p[::1]           # a view of p taken before the writes
        g.add_(1)
        p.sub_(g * 0.5)
        s = v.sum()          # reads p through the view after the sub; fused, the sub would come after it
        g.mul_(0)
        return s
    g = _update_calls_equal_eager(fn, _pg)
    assert not any(n.mutates for n in g.nodes if n.name == "Fused"), str(g)


def test_fuse_updates_keeps_apart_a_region_whose_input_is_written_between():
    def fn(p, g, h):
        g.add_(1)
        t = g * h
        h.mul_(2)            # writes h, which the region read before: fused, the Mul would read h * 2
        p.sub_(t)
        g.mul_(0)
        return p.sum()
    g = _update_calls_equal_eager(fn, _pg)
    assert not any(n.mutates for n in g.nodes if n.name == "Fused"), str(g)


def test_fuse_updates_joins_regions_one_node_connects():
    def fn(p, g, h):
        g.add_(1)
        h.add_(2)
        p.sub_(g * h)        # the product reads both updated tensors: one region
        return p.sum()
    g = _update_calls_equal_eager(fn, _pg)
    region, = [n for n in g.nodes if n.mutates]
    assert region.attrs["ops"] == "Assign+Assign+Mul+Assign", str(g)
    assert region.where == region.fused[-1].where       # the line of its last write


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_fuse_updates_takes_a_two_member_update(dtype):
    def fn(p, g, h):
        p.sub_(g * 0.5)
        return p.sum()
    g = _update_calls_equal_eager(fn, lambda i: _pg(i, dtype=dtype))
    assert [n.attrs["ops"] for n in g.nodes if n.mutates] == ["Mul+Assign"], str(g)


def test_an_update_region_under_dynamic_batch_sizes():
    """SGD with momentum by hand, compiled with dynamic=True: one region writes the gradient, the momentum
    buffer and the parameter; every batch size gives eager's bits without a retrace per size."""
    def make():
        rng = np.random.default_rng(0)
        W = ember.from_numpy(rng.standard_normal((40, 30), dtype=np.float32)).requires_grad_()
        buf = ember.zeros(40, 30)

        def step(x):
            loss = (x @ W).relu().sum()
            loss.backward()
            with ember.no_grad():
                buf.mul_(0.9).add_(W.grad)
                W.sub_(0.01 * buf)
                W.grad.zero_()
            return loss
        return W, buf, step
    (We, be, se), (Wc, bc, sc) = make(), make()
    f = ember.compile(sc, dynamic=True)
    rng = np.random.default_rng(1)
    for n in (8, 8, 8, 16, 8, 24, 16):
        x = ember.from_numpy(rng.standard_normal((n, 40), dtype=np.float32))
        assert f(x).item() == se(x).item(), n
        np.testing.assert_array_equal(Wc.detach().numpy(), We.detach().numpy(), err_msg=str(n))
        np.testing.assert_array_equal(bc.numpy(), be.numpy(), err_msg=str(n))
    assert f.cache_info().traces == 3, f.cache_info()      # grads None, steady state, a second size
    region, = [n for n in f.graph.nodes if n.mutates]
    assert region.attrs["ops"] == "Assign+Assign+Assign+Mul+Assign+Assign", str(f.graph)


def test_an_update_region_on_a_gradient_the_step_creates_and_returns():
    """Gradients set to None after each step: every call makes W.grad anew (a Clone the region writes in
    place), returns it, and updates W; replays give eager's bits."""
    def make():
        rng = np.random.default_rng(0)
        W = ember.from_numpy(rng.standard_normal((40, 30), dtype=np.float32)).requires_grad_()

        def step(x):
            (x @ W).relu().sum().backward()
            with ember.no_grad():
                W.grad.mul_(2.0)
                W.sub_(0.01 * W.grad)
            g, W.grad = W.grad, None
            return g
        return W, step
    (We, se), (Wc, sc) = make(), make()
    f = ember.compile(sc)
    rng = np.random.default_rng(1)
    for i in range(4):
        x = ember.from_numpy(rng.standard_normal((8, 40), dtype=np.float32))
        np.testing.assert_array_equal(f(x).numpy(), se(x).numpy(), err_msg=str(i))
        np.testing.assert_array_equal(Wc.detach().numpy(), We.detach().numpy(), err_msg=str(i))
        assert Wc.grad is None
    assert f.cache_info().traces == 1
    assert [n.attrs["ops"] for n in f.graph.nodes if n.mutates] == ["Assign+Mul+Assign"], str(f.graph)
