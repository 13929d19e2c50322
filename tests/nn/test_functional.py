"""ember/nn/functional.py: the ops with no module of their own, against torch via check_op."""
import numpy as np
import pytest
import torch

import ember
from helpers import check_op, NoGrad, raises_exactly

RNG = np.random.default_rng(4)
CAUSAL_BOOL = np.tril(np.ones((5, 5), dtype=bool))
MASK_BOOL = RNG.uniform(size=(5, 6)) > 0.3
MASK_BOOL[:, 0] = True
FLOAT_MASK = RNG.standard_normal((5, 6))

CASES = [
    ("sdpa", lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v), [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)]),
    ("sdpa_causal", lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), [(2, 5, 4), (2, 5, 4), (2, 5, 4)]),
    ("sdpa_bool_mask", lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m), [(2, 5, 4), (2, 6, 4), (2, 6, 3), MASK_BOOL]),
    ("sdpa_float_mask_scale", lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3), [(2, 5, 4), (2, 6, 4), (2, 6, 3), FLOAT_MASK]),
    ("one_hot", lambda lib, t: lib.nn.functional.one_hot(t), [np.array([0, 3, 1])]),
    ("one_hot_n", lambda lib, t: lib.nn.functional.one_hot(t, 5), [np.array([[0, 3], [1, 4]])]),
    ("pad_constant", lambda lib, x: lib.nn.functional.pad(x, (1, 2, 0, 1), value=0.5), [(2, 3, 4)]),
    ("pad_negative", lambda lib, x: lib.nn.functional.pad(x, (-1, 2)), [(2, 3, 4)]),
    ("pad_reflect", lambda lib, x: lib.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect"), [(2, 3, 4, 5)]),
    ("pad_replicate", lambda lib, x: lib.nn.functional.pad(x, (2, 3), mode="replicate"), [(2, 3, 4)]),
    ("pad_circular", lambda lib, x: lib.nn.functional.pad(x, (1, 2, 2, 1), mode="circular"), [(1, 2, 4, 5)]),
    ("interp_nearest_size", lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 7)), [(2, 3, 3, 4)]),
    ("interp_nearest_scale", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2), [(2, 3, 3, 4)]),
    ("interp_nearest_down", lambda lib, x: lib.nn.functional.interpolate(x, size=(2, 3)), [(1, 2, 5, 7)]),
    ("interp_bilinear", lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 7), mode="bilinear"), [(2, 3, 3, 4)]),
    ("interp_bilinear_ac", lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True), [(2, 3, 3, 4)]),
    ("interp_bilinear_scale_down", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear"), [(1, 2, 6, 8)]),
    ("interp_linear", lambda lib, x: lib.nn.functional.interpolate(x, size=7, mode="linear"), [(2, 3, 4)]),
    ("normalize", lambda lib, x: lib.nn.functional.normalize(x), [(4, 5)]),
    ("normalize_p1_dim", lambda lib, x: lib.nn.functional.normalize(x, p=1.0, dim=-1), [(3, 4, 5)]),
    ("cosine_similarity", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b), [(4, 5), (4, 5)]),
    ("cosine_similarity_bcast", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, dim=-1), [(3, 4, 5), (4, 5)]),
    # along the broadcast dim: x2's norm is over its 3 broadcast copies (it was over the one row)
    ("cosine_similarity_bcast_dim", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, dim=0), [(3, 4), (1, 4)]),
    ("pairwise_distance", lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b), [(4, 5), (4, 5)]),
    ("unfold", lambda lib, x: lib.nn.functional.unfold(x, 3), [(2, 3, 5, 6)]),
    ("unfold_args", lambda lib, x: lib.nn.functional.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=2), [(2, 2, 6, 7)]),
    ("fold", lambda lib, x: lib.nn.functional.fold(x, (5, 6), 3), [(2, 18, 12)]),
    ("fold_args", lambda lib, x: lib.nn.functional.fold(x, (6, 7), (2, 3), dilation=(1, 2), padding=1, stride=2), [(2, 12, 12)]),
    ("embedding", lambda lib, i, w: lib.nn.functional.embedding(i, w), [np.array([[0, 2], [3, 3]]), (4, 3)]),
    ("linear", lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(3, 4), (2, 4), (2,)]),
    ("bilinear", lambda lib, a, b, w: lib.nn.functional.bilinear(a, b, w), [(3, 4), (3, 2), (5, 4, 2)]),
    ("conv2d", lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=2, padding=1), [(2, 3, 6, 6), (4, 3, 3, 3)]),
    ("conv_transpose2d", lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2), [(2, 3, 4, 4), (3, 2, 3, 3)]),
    ("layer_norm", lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (5,), w, b), [(3, 5), (5,), (5,)]),
    ("group_norm", lambda lib, x: lib.nn.functional.group_norm(x, 2), [(3, 4, 5)]),
    ("batch_norm_eval", lambda lib, x, m, v: lib.nn.functional.batch_norm(x, m, v), [(3, 4), NoGrad((4,)), NoGrad(np.array([0.5, 1, 2, 3.0]))]),
    ("log_softmax_implicit", lambda lib, x: lib.nn.functional.log_softmax(x, dim=1), [(3, 4)]),
    ("softmax_dtype", lambda lib, x: lib.nn.functional.softmax(x, dim=-1, dtype=lib.float64), [(3, 4)]),
    ("gelu_tanh", lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"), [(3, 4)]),
    ("avg_pool2d", lambda lib, x: lib.nn.functional.avg_pool2d(x, 2, 1), [(1, 2, 4, 4)]),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 3), [(1, 2, 7)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_functional(fn, inputs):
    check_op(fn, *inputs)


def test_sdpa_dropout_keeps_shape_and_scale():
    # with value = ones each output is the sum of a dropped attention row: 1 on average only if the
    # kept weights are scaled by 1/(1-p) (0.5 without). A row sum's variance is at most p/(1-p) = 1,
    # so the mean of 4096 rows is 1 within 6 standard errors of 1/64
    ember.manual_seed(0)
    q = ember.randn(256, 16, 8)
    out = ember.nn.functional.scaled_dot_product_attention(q, q, ember.ones(256, 16, 8), dropout_p=0.5)
    assert out.shape == (256, 16, 8)
    rows = out.numpy()[..., 0]
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(rows[..., None], out.shape))
    assert abs(rows.mean() - 1.0) < 6 / 64
    assert not np.allclose(rows, 1.0)          # and it did drop something


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_grouped_query_attention(causal):
    sdpa = lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,  # noqa: E731
                                                                            enable_gqa=True)
    check_op(sdpa, (2, 6, 3, 4), (2, 2, 5, 4), (2, 3, 5, 4))
    check_op(sdpa, (6, 4, 4), (1, 4, 4), (6, 4, 4))
    for L in (torch, ember):
        q, k = L.ones(2, 6, 3, 8), L.ones(2, 4, 5, 8)
        with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the number of heads"):
            L.nn.functional.scaled_dot_product_attention(q, k, k, enable_gqa=True)


def test_sdpa_causal_and_mask_conflict():
    q = ember.randn(1, 3, 2)
    with pytest.raises(ValueError, match="either"):
        ember.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3), is_causal=True)


def test_one_hot_errors_and_pad_errors():
    with pytest.raises(RuntimeError, match="index tensor"):
        ember.nn.functional.one_hot(ember.tensor([1.0]))
    with pytest.raises(ValueError, match="divisible by 2"):
        ember.nn.functional.pad(ember.zeros(2, 2), (1,))


def _double_backward(op):
    def fn(lib, x):
        y = op(lib, x)
        g, = lib.autograd.grad((y * y.detach().sin()).sum(), x, create_graph=True)
        return (g * g).sum()
    return fn


FUSED = [   # the fused primitives of ember/ops/layers.py, through second derivatives
    ("gelu", lambda lib, x: lib.nn.functional.gelu(x)),
    ("softmax", lambda lib, x: lib.nn.functional.softmax(x, -1)),
    ("log_softmax", lambda lib, x: lib.nn.functional.log_softmax(x, 0)),
    ("layer_norm", lambda lib, x: lib.nn.functional.layer_norm(x, (3, 4))),
]


@pytest.mark.parametrize("op", [c[1] for c in FUSED], ids=[c[0] for c in FUSED])
def test_fused_double_backward(op):
    check_op(_double_backward(op), (2, 3, 4), dtypes=("float64",))


def test_fused_linear_and_layer_norm_double_backward():
    def lin(lib, x, w, b):
        y = lib.nn.functional.linear(x, w, b)
        gs = lib.autograd.grad((y * y * y).sum(), (x, w, b), create_graph=True)
        return sum((g * g).sum() for g in gs)

    def ln(lib, x, w, b):
        y = lib.nn.functional.layer_norm(x, (4,), w, b)
        gs = lib.autograd.grad((y * y.detach().sin() * y).sum(), (x, w, b), create_graph=True)
        return sum((g * g).sum() for g in gs)
    check_op(lin, (3, 4), (2, 4), (2,), dtypes=("float64",))
    check_op(ln, (2, 3, 4), (4,), (4,), dtypes=("float64",))


def test_pad_and_interpolate_argument_errors():
    F = ember.nn.functional
    x = ember.ones(1, 2, 3, 3)
    cases = [
        ("pad: padding for 3 dims given to a 2-D input", lambda: F.pad(ember.ones(2, 2), (1,) * 6)),
        (r"pad: reflect padding \(3, 0\) must be smaller than the dim size 3", lambda: F.pad(x[0], (3, 0), mode="reflect")),
        (r"interpolate: expected \(N, C, ...\) input, got \(3,\)", lambda: F.interpolate(ember.ones(3), size=2)),
        ("interpolate: give exactly one of size and scale_factor", lambda: F.interpolate(x, size=4, scale_factor=2)),
        ("align_corners option can only be set with the interpolating modes", lambda: F.interpolate(x, size=4, align_corners=True)),
        ("interpolate: mode 'linear' needs a 3-D", lambda: F.interpolate(x, size=4, mode="linear")),
    ]
    for msg, call in cases:
        with pytest.raises(ValueError, match=msg):
            call()
    check_op(lambda lib, a: lib.nn.functional.pad(a, (0, 0)), (2, 3))          # no padding: the input back


# ------------------------------------------------------------------ edges of pad, interpolate, distances
EDGE_CASES = [
    ("pad_crop_left_only", lambda lib, x: lib.nn.functional.pad(x, (-1, 0)), [(2, 3, 4)]),
    ("pad_crop_right_only", lambda lib, x: lib.nn.functional.pad(x, (0, -2, 1, 0)), [(2, 3, 4)]),
    ("pad_crop_and_grow", lambda lib, x: lib.nn.functional.pad(x, (1, -2, -1, 2), value=0.25), [(2, 3, 4)]),
    ("pad_every_dim", lambda lib, x: lib.nn.functional.pad(x, (1, 2)), [(4,)]),
    ("pad_reflect_widest", lambda lib, x: lib.nn.functional.pad(x, (2, 2), mode="reflect"), [(2, 3)]),
    ("interp_trilinear", lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 5, 2), mode="trilinear"), [(1, 2, 2, 3, 4)]),
    ("interp_trilinear_ac", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.5, mode="trilinear", align_corners=True), [(1, 1, 2, 3, 4)]),
    ("interp_linear_ac_to_1", lambda lib, x: lib.nn.functional.interpolate(x, size=1, mode="linear", align_corners=True), [(2, 3, 4)]),
    ("interp_linear_ac_to_2", lambda lib, x: lib.nn.functional.interpolate(x, size=2, mode="linear", align_corners=True), [(2, 3, 4)]),
    ("interp_scale_tuple", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=(2, 1.5)), [(1, 2, 3, 4)]),
    ("interp_scale_tuple_bilinear", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=(0.5, 1.75), mode="bilinear"), [(1, 2, 4, 4)]),
    ("interp_scale_not_recomputed", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.7, mode="bilinear"), [(1, 2, 3, 5)]),
    ("interp_recompute_nearest", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.7, recompute_scale_factor=True), [(1, 2, 3, 5)]),
    ("interp_recompute_bilinear", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True), [(1, 2, 3, 5)]),
    ("normalize_small", lambda lib, x: lib.nn.functional.normalize(x), [0.01 * RNG.standard_normal((4, 5))]),
    ("normalize_zero_row_eps", lambda lib, x: lib.nn.functional.normalize(x, eps=0.5), [np.array([[0.0, 0.0], [0.1, -0.2], [3.0, 4.0]])]),
    ("cosine_similarity_small", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b), [1e-5 * RNG.standard_normal((4, 5)), (4, 5)]),
    ("pairwise_distance_3d_keepdim", lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b, keepdim=True), [(2, 3, 4), (2, 3, 4)]),
    ("pairwise_distance_p1_eps", lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b, 1.0, 0.5), [(2, 3, 4), (2, 3, 4)]),
    ("one_hot_empty", lambda lib, t: lib.nn.functional.one_hot(t, 3), [np.zeros(0, dtype=np.int64)]),
    ("one_hot_top_class", lambda lib, t: lib.nn.functional.one_hot(t, 4), [np.array([3, 0])]),
    ("sdpa_causal_rectangular", lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), [(2, 3, 4), (2, 5, 4), (2, 5, 3)]),
    ("sdpa_causal_wide_float16_shape", lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), [(1, 2, 6, 4), (1, 2, 6, 4), (1, 2, 6, 4)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in EDGE_CASES], ids=[c[0] for c in EDGE_CASES])
def test_functional_edges(fn, inputs):
    check_op(fn, *inputs)


def test_sdpa_causal_mask_built_fresh(monkeypatch):
    """The composite path's causal mask (batch dims that broadcast, mixed dtypes, dropout: what the one
    Attention node does not take) is cached per (L, S, dtype, device): an empty cache builds it again, and
    the masks of other shapes, dtypes and devices are not mixed up (the cache is shared by the process)."""
    from ember.nn.functional import attention
    monkeypatch.setattr(attention, "_CAUSAL", {})
    for dtypes in (("float32", "float64"), ("float64", "float32")):
        attention._CAUSAL.clear()
        check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                 (2, 4, 3), (1, 6, 3), (1, 6, 2), dtypes=dtypes)
    attention._CAUSAL.clear()
    q, k = ember.randn(1, 4, 3), ember.randn(4, 3)
    ember.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True)
    m = ember.nn.functional.scaled_dot_product_attention(q.to("meta"), k.to("meta"), k.to("meta"), is_causal=True)
    assert m.device.type == "meta" and m.shape == (1, 4, 3)
    bias = attention._causal_bias(4, 4, ember.zeros(1, device="meta"))
    assert bias.device.type == "meta" and bias.shape == (4, 4) and bias.dtype == ember.float32
    assert len(attention._CAUSAL) == 2


def test_sdpa_mask_on_another_device(fake_cuda):
    q = ember.zeros(1, 3, 2, device="cuda")
    with pytest.raises(RuntimeError, match=r"^scaled_dot_product_attention: expected all tensors to be on the same "
                                           r"device, but found at least two devices, cuda:0 and cpu \(query "
                                           r"\(1, 3, 2\) float32 cuda:0, attn_mask \(3, 3\) bool cpu\) \(at "):
        ember.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3, dtype=ember.bool))
    out = ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.device.type == "cuda"


def test_one_hot_on_the_tensors_device(fake_cuda):
    out = ember.nn.functional.one_hot(ember.tensor([2, 0], device="cuda"), 3)
    assert out.device.type == "cuda" and out.dtype == ember.int64
    np.testing.assert_array_equal(out.to("cpu").numpy(), [[0, 0, 1], [1, 0, 0]])


@pytest.mark.parametrize("values,n,message", [
    ([-1, 1], 2, "one_hot: class values must be in [0, 2), got [-1, 1]"),
    ([2, 1], 2, "one_hot: class values must be in [0, 2), got [1, 2]"),
    ([], -1, "one_hot: can not infer the total number of classes from an empty tensor; pass num_classes"),
])
def test_one_hot_errors_exactly(values, n, message):
    """torch raises for each (an empty tensor without num_classes included; Ember returned (0, 0))."""
    import torch
    with pytest.raises(RuntimeError):
        torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), n)
    with pytest.raises(RuntimeError) as e:
        ember.nn.functional.one_hot(ember.tensor(values, dtype=ember.int64), n)
    assert str(e.value).startswith(message + " (at ")


VISION_ERRORS = [
    (lambda: F_.pad(ember.ones(1, 2, 3), (0, 3), mode="reflect"), ValueError,
     "pad: reflect padding (0, 3) must be smaller than the dim size 3"),
    (lambda: F_.pad(ember.ones(2, 2), (1, 1, 1, 1, 1, 1)), ValueError,
     "pad: padding for 3 dims given to a 2-D input"),
    (lambda: F_.interpolate(ember.ones(1, 1, 4, 4, 4), size=3, mode="bilinear"), ValueError,
     "interpolate: mode 'bilinear' needs a 4-D input, got (1, 1, 4, 4, 4)"),
    (lambda: F_.interpolate(ember.ones(1, 1, 4, 4), size=3, mode="trilinear"), ValueError,
     "interpolate: mode 'trilinear' needs a 5-D input, got (1, 1, 4, 4)"),
    (lambda: F_.interpolate(ember.ones(1, 1, 4, 4), size=3, mode="linear"), ValueError,
     "interpolate: mode 'linear' needs a 3-D input, got (1, 1, 4, 4)"),
    (lambda: F_.interpolate(ember.ones(1, 1, 4), size=(3, 3)), ValueError,
     "size must be an int or a tuple of 1 ints, got (3, 3)"),
    (lambda: F_.normalize(ember.ones(2, 3, dtype=ember.int64)), RuntimeError,
     "normalize: expected a floating point input, got int64"),
    (lambda: F_.normalize(ember.ones(2, 3), dim=5), IndexError,
     "normalize: Dimension out of range (expected to be in range of [-2, 1], but got 5); the tensor has 2 dims"),
]


@pytest.mark.parametrize("k", range(len(VISION_ERRORS)))
def test_vision_errors_exactly(k):
    call, exc, message = VISION_ERRORS[k]
    raises_exactly(call, exc, message)


F_ = ember.nn.functional


# ------------------------------------------------------------------ attention as one node (ops/attention.py)
def _heads(lib, qkv, H):
    """q, k, v as (B, H, T, E) strided views of one (B, T, 3 * H * E) projection, as a GPT makes them."""
    B, T, C3 = qkv.shape
    return [t.reshape(B, T, H, C3 // 3 // H).transpose(1, 2) for t in qkv.split(C3 // 3, dim=2)]


@pytest.mark.parametrize("T", [5, 40])   # 40: causal products in two row blocks (cpu_kernels._causal_split)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_one_node_on_head_views_like_torch(causal, T):
    """Values and gradients of q, k, v and of the projection they are views of; output read back through
    transpose(1, 2).reshape as a transformer does."""
    def f(lib, qkv):
        q, k, v = _heads(lib, qkv, 2)
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return y.transpose(1, 2).reshape(qkv.shape[0], qkv.shape[1], -1)
    check_op(f, (2, T, 12))


@pytest.mark.parametrize("L,S", [(3, 5), (5, 3), (1, 4), (4, 1), (40, 50), (50, 40), (64, 32)])
def test_sdpa_one_node_causal_with_other_lengths(L, S):
    """torch's is_causal aligns the mask top-left: query i sees keys 0..i, whatever L and S."""
    check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
             (2, 3, L, 4), (2, 3, S, 4), (2, 3, S, 2))
    check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3),
             (L, 4), (S, 4), (S, 3))


def test_sdpa_one_node_takes_the_call_and_lays_out_heads_for_the_next_reshape():
    from ember.ops.attention import Attention
    q, k, v = (ember.randn(2, 3, 4, 5, requires_grad=True) for _ in range(3))
    y = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert type(y.grad_fn) is Attention
    # (B, H, L, E) whose memory is (B, L, H, E): transpose(1, 2) is contiguous, reshape needs no copy
    t = y.transpose(1, 2)
    assert t.is_contiguous()
    np.testing.assert_array_equal(t.reshape(2, 4, 15).detach().numpy(), t.detach().numpy().reshape(2, 4, 15))


@pytest.mark.parametrize("T", [7, 36])   # 36: causal products in two row blocks
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_one_node_kernels_equal_numpy_forward(causal, T):
    """The CPU kernel (BLAS products and one numba pass) and the primitive's NumPy forward agree to
    float32 rounding, values and gradients, on strided head views."""
    from ember.backends import cpu_kernels
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((3, T, 24)).astype(np.float32), rng.standard_normal((3, 2, T, 4)).astype(np.float32)
    res = []
    for on in (True, False):
        (cpu_kernels.enable if on else cpu_kernels.disable)()
        try:
            qkv = ember.tensor(x, requires_grad=True)
            y = ember.nn.functional.scaled_dot_product_attention(*_heads(ember, qkv, 2), is_causal=causal)
            y.backward(ember.tensor(g))
            res.append((y.detach().numpy(), qkv.grad.numpy()))
        finally:
            cpu_kernels.enable()
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_one_node_half_precision_like_torch(dtype):
    check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
             (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 3), dtypes=(dtype,))


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_one_node_double_backward_like_torch(causal):
    """With create_graph the backward is Tensor ops: gradients of the gradients match torch's."""
    import torch
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float64) for s in ((2, 4, 3), (2, 5, 3), (2, 5, 2))]
    out = {}
    for lib in (torch, ember):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        gq, gk, gv = lib.autograd.grad((y * y).sum(), (q, k, v), create_graph=True)
        total = (gq * gq).sum() + (gk * gk).sum() + (gv * gv).sum()
        out[lib.__name__] = [t.detach().numpy() for t in lib.autograd.grad(total, (q, k, v))]
    for a, b in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_sdpa_one_node_on_meta_and_its_errors():
    q = ember.randn(2, 3, 4, 5, device="meta")
    k = ember.randn(2, 3, 6, 5, device="meta")
    v = ember.randn(2, 3, 6, 7, device="meta")
    y = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.device.type == "meta" and y.shape == (2, 3, 4, 7)
    from ember.ops.attention import Attention
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention: query .* do not fit"):
        Attention.apply(q, ember.randn(2, 3, 6, 4, device="meta"), v, scale=1.0, causal=False)


@pytest.mark.parametrize("qs,ks,vs", [((4, 5), (6, 5), (6, 7)), ((3, 4, 5), (3, 6, 5), (3, 6, 7)),
                                      ((2, 1, 3, 4, 5), (2, 1, 3, 6, 5), (2, 1, 3, 6, 7))])
def test_attention_node_shapes_on_meta(qs, ks, vs):
    """The primitive's infer: o (..., L, Ev) and p (..., L, S) for 2-D to 5-D inputs."""
    from ember.ops.attention import Attention
    q, k, v = (ember.empty(*s, device="meta") for s in (qs, ks, vs))
    o, p = Attention.apply(q, k, v, scale=1.0, causal=True)
    assert o.shape == qs[:-1] + (7,) and p.shape == qs[:-1] + (6,)


@pytest.mark.parametrize("qs,ks,vs", [((5,), (5,), (5,)),                                  # 1-D
                                      ((4, 5), (6, 5), (6,)), ((4, 5), (5,), (6, 7)),      # one 1-D
                                      ((2, 4, 5), (6, 5), (6, 7)),                         # ranks differ
                                      ((2, 4, 5), (2, 6, 5), (6, 7)),
                                      ((2, 3, 4, 5), (2, 2, 6, 5), (2, 3, 6, 7)),          # leading dims
                                      ((2, 3, 4, 5), (2, 3, 6, 5), (2, 2, 6, 7)),
                                      ((2, 3, 4, 5), (2, 3, 6, 4), (2, 3, 6, 7)),          # E
                                      ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 5, 7))])         # S
def test_attention_node_refuses_shapes_that_do_not_fit(qs, ks, vs):
    from ember.ops.attention import Attention
    q, k, v = (ember.empty(*s, device="meta") for s in (qs, ks, vs))
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: query \(.*\) do not fit"):
        Attention.apply(q, k, v, scale=1.0, causal=False)


@pytest.mark.parametrize("qs,ks,vs", [((3, 5, 4), (3, 5, 4), (3, 5, 4)),                   # not (B, H, L, E)
                                      ((2, 3, 5, 4), (2, 2, 5, 4), (2, 3, 5, 4)),          # heads of k
                                      ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)),          # S != L
                                      ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 6, 4)),          # v's keys
                                      ((2, 3, 5, 4), (2, 3, 5, 4), (1, 3, 5, 4))])         # v's batch
def test_attention_grad_packed_refuses_other_than_heads_with_as_many_keys_as_queries(qs, ks, vs):
    from ember.ops.attention import AttentionGradPacked
    q, k, v = (ember.empty(*s, device="meta") for s in (qs, ks, vs))
    p, g = ember.empty(*qs[:-1], ks[-2], device="meta"), ember.empty(*qs[:-1], vs[-1], device="meta")
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: packed gradients need \(B, H, L, E\)"):
        AttentionGradPacked.apply(q, k, v, p, g, scale=1.0, causal=False)


def test_attention_causal_split_takes_two_row_blocks_from_32_causal_rows():
    """The sizes the kernel tests use (T = 36, 40; L = 40, 50, 64) do run the two-block products, and 31
    rows or a non-causal call do not (the threshold is a speed decision: both paths give the same values)."""
    from types import SimpleNamespace
    from ember.backends.cpu_kernels import _causal_split
    causal, full = SimpleNamespace(causal=True), SimpleNamespace(causal=False)
    assert [_causal_split(causal, L, S) for L, S in [(36, 36), (40, 40), (40, 50), (50, 40), (64, 32)]] == \
        [18, 20, 20, 25, 32]
    assert _causal_split(causal, 32, 32) == 16 and _causal_split(causal, 31, 31) == 0
    assert _causal_split(full, 40, 40) == 0
    assert _causal_split(causal, 64, 31) == 0   # the first block would be wider than the keys


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("shapes", [((0, 2, 5, 4), (0, 2, 5, 4), (0, 2, 5, 3)), ((2, 2, 0, 4), (2, 2, 5, 4), (2, 2, 5, 3)),
                                    ((2, 2, 5, 0), (2, 2, 5, 0), (2, 2, 5, 3)), ((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 0))],
                         ids=["batch", "queries", "E", "Ev"])
def test_sdpa_one_node_empty_inputs_like_torch(shapes, kernels):
    from ember.backends import cpu_kernels
    (cpu_kernels.enable if kernels else cpu_kernels.disable)()
    try:
        check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                 *shapes)
    finally:
        cpu_kernels.enable()


@pytest.mark.parametrize("kernels", [True, False])
def test_sdpa_one_node_large_and_unequal_scores(kernels):
    """Scores of +-300 in one row and of +-1 in the next: the softmax subtracts each row's own max
    (exp(300) overflows float32; a max over the whole tensor underflows the small rows to 0/0)."""
    from ember.backends import cpu_kernels
    try:
        (cpu_kernels.enable if kernels else cpu_kernels.disable)()
        q = np.zeros((2, 2, 3), np.float32)
        q[:, 0] = [30.0, -20.0, 10.0]
        q[:, 1] = [0.1, 0.2, -0.1]
        k = np.random.default_rng(0).uniform(-10, 10, (2, 4, 3)).astype(np.float32)
        check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v),
                 q, k, (2, 4, 2), dtypes=("float32",))
    finally:
        cpu_kernels.enable()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_one_node_half_precision_numpy_forward(dtype):
    """The primitive's own forward (no kernels: what other devices run) computes 2-byte floats in float32."""
    from ember.backends import cpu_kernels
    cpu_kernels.disable()
    try:
        check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                 (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 3), dtypes=(dtype,))
    finally:
        cpu_kernels.enable()


def test_sdpa_one_node_double_backward_on_meta():
    """create_graph on meta: the recomputed causal mask is a meta tensor too; shapes only."""
    q, k, v = (ember.empty(2, 4, 3, device="meta", requires_grad=True) for _ in range(3))
    y = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    gq, gk, gv = ember.autograd.grad(y.sum(), (q, k, v), create_graph=True)
    assert gq.device.type == "meta" and gq.shape == (2, 4, 3) and gq.requires_grad
    (h,) = ember.autograd.grad(gq.sum(), (k,))
    assert h.device.type == "meta" and h.shape == (2, 4, 3)


@pytest.mark.parametrize("kernels", [True, False])
def test_sdpa_one_node_float16_scores_beyond_float16_range(kernels):
    """Scores of 300 * 250 * 4 overflow float16 (max 65504): computed in float32, as torch does, the
    result is finite and torch's."""
    from ember.backends import cpu_kernels
    try:
        (cpu_kernels.enable if kernels else cpu_kernels.disable)()
        q, k = np.full((1, 2, 4), 300.0, np.float32), np.full((1, 3, 4), 250.0, np.float32)
        k[0, 1] = -250.0
        check_op(lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v),
                 q, k, (1, 3, 2), dtypes=("float16",), grad=False)
    finally:
        cpu_kernels.enable()


# ------------------------------------------------------------------ attention: rows with no key to attend to
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_fully_masked_row_gives_zeros_as_torch(mask_kind):
    # torch: a query whose every key is masked gives 0 (and 0 gradients), not softmax's 0/0 = NaN
    keep = np.array([[True, False, True], [False, False, False], [False, True, False]])
    mask = keep if mask_kind == "bool" else np.where(keep, 0.5, -np.inf)
    t_out, _ = check_op(lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
                        (2, 3, 4), (2, 3, 4), (2, 3, 2), NoGrad(mask))
    assert (t_out[:, 1] == 0).all()


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_masked_row_of_minus_inf_scores_reading_a_nan_value_as_torch(mask_kind):
    # with a mask (the composite path): a row whose every visible score is -inf from the inputs gives 0;
    # its score gradient is softmax's backward on weights 0, 0 * NaN = NaN in q's and k's gradients where
    # the row reads a NaN value (batch 0), 0 where it reads none (batch 1), as torch (Ember's where() gave 0)
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 3, 3)), np.abs(rng.standard_normal((2, 4, 3))) + 0.1, rng.standard_normal((2, 4, 2))
    q[:, 1, 0] = -np.inf                   # row 1: every score -inf (k > 0)
    v[0, 2, 1] = np.nan                    # a value rows 0, 1 and 2 read, in batch 0 only
    keep = np.array([[True, True, True, False], [True, False, True, True], [False, True, True, True]])
    mask = keep if mask_kind == "bool" else np.where(keep, 0.5, -np.inf)
    fn = lambda lib, a, b, c, m: lib.nn.functional.scaled_dot_product_attention(a, b, c, attn_mask=m)
    t_out, _ = check_op(fn, q, k, v, NoGrad(mask))
    assert (t_out[1, 1] == 0).all() and t_out[0, 1, 1].isnan()
    # the rows' gradients where the NaN is read: torch's, NaN in the dead row too (it was 0)
    import torch
    for lib in (torch, ember):
        a = lib.tensor(q, requires_grad=True)
        fn(lib, a, lib.tensor(k), lib.tensor(v), lib.tensor(mask)).sum().backward()
        assert a.grad[0, 1].isnan().all() and (a.grad[1, 1] == 0).all(), lib.__name__


def test_sdpa_row_of_minus_inf_scores_gives_zeros_as_torch():
    # no mask (the one-node path): a -inf in q or k can make every score of a row -inf; torch gives 0 there,
    # and a NaN or +inf score a NaN row
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 4, 3)), np.abs(rng.standard_normal((2, 3, 3))) + 0.1, rng.standard_normal((2, 3, 2))
    q[0, 1, 0], q[1, 2, 1] = -np.inf, np.inf     # every score of those rows -inf / +inf
    q[1, 0, 2] = np.nan
    for causal in (False, True):
        t_out, _ = check_op(lambda lib, a, b, c: lib.nn.functional.scaled_dot_product_attention(a, b, c, is_causal=causal),
                            q, k, v)
        assert (t_out[0, 1] == 0).all() and t_out[1, 2].isnan().all()
