"""ember/nn/embedding.py against torch."""
import numpy as np
import pytest

import ember
from .nn_helpers import check_module

IDX = np.array([[1, 2, 0, 4], [4, 3, 2, 9]], dtype=np.int64)

CASES = [
    ("embedding", lambda lib: lib.nn.Embedding(10, 3)),
    ("embedding_padding_idx", lambda lib: lib.nn.Embedding(10, 3, padding_idx=2)),
    ("embedding_negative_padding_idx", lambda lib: lib.nn.Embedding(10, 3, padding_idx=-1)),
    ("embedding_scale_grad_by_freq", lambda lib: lib.nn.Embedding(10, 3, scale_grad_by_freq=True)),
    ("embedding_scale_grad_by_freq_padding", lambda lib: lib.nn.Embedding(10, 3, padding_idx=4,
                                                                         scale_grad_by_freq=True)),
]


@pytest.mark.parametrize("build", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_embedding(build):
    check_module(build, IDX, modes=("train",))


def test_padding_row_is_zero_and_gets_no_grad():
    m = ember.nn.Embedding(5, 2, padding_idx=0)
    assert not m.weight[0].detach().numpy().any()
    m(ember.tensor([0, 0, 1])).sum().backward()
    assert not m.weight.grad[0].numpy().any()
    np.testing.assert_allclose(m.weight.grad[1].numpy(), [1, 1])


def test_from_pretrained_and_max_norm():
    w = ember.tensor([[3.0, 4.0], [0.3, 0.4]])
    m = ember.nn.Embedding.from_pretrained(w, max_norm=1.0)
    assert not m.weight.requires_grad
    out = m(ember.tensor([0, 1]))
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-5)
    with pytest.raises(RuntimeError, match="integer"):
        m(ember.tensor([0.0]))


def test_embedding_max_norm_renormalises_the_looked_up_rows_like_torch():
    from helpers import check_op

    def fn(lib, w):
        w = w.detach().clone()
        out = lib.nn.functional.embedding(lib.tensor([[0, 2], [0, 3]], device=w.device), w, max_norm=1.0)
        return out, w   # rows 0 and 2 renormalised in place, row 1 (not looked up) left long
    check_op(fn, np.array([[3.0, 4.0], [0.3, 0.4], [1.0, 1.0], [0.1, 0.0]]), grad=False)


def test_embedding_double_backward_and_errors():
    from helpers import check_op

    def fn(lib, w):
        y = lib.nn.functional.embedding(lib.tensor([[0, 2, 2], [1, 0, 3]], device=w.device), w, padding_idx=2)
        g, = lib.autograd.grad((y * y * y).sum(), w, create_graph=True)
        return (g * g).sum()
    check_op(fn, (4, 3), dtypes=("float64",))
    with pytest.raises(IndexError, match="out of range"):
        ember.nn.Embedding(3, 2)(ember.tensor([3]))


def test_embedding_arguments_and_repr_like_torch():
    import torch
    # torch checks these two with `assert`; Ember raises ValueError with the same message
    with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
        ember.nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(ValueError, match="Embeddings parameter is expected to be 2-dimensional"):
        ember.nn.Embedding.from_pretrained(ember.ones(3))
    for build in (lambda L: L.nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0), lambda L: L.nn.Embedding(2, 2)):
        assert repr(build(ember)) == repr(build(torch))
    m = ember.nn.Embedding(5, 3, padding_idx=-2)
    assert m.padding_idx == 3 and not m.weight[3].detach().numpy().any()   # negative: counted from the end
    w = ember.randn(4, 2)
    frozen = ember.nn.Embedding.from_pretrained(w)
    assert not frozen.weight.requires_grad and frozen.weight.tolist() == w.tolist()
    assert ember.nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad


# ------------------------------------------------------------------ the functional form's options and errors
from helpers import check_op


@pytest.mark.parametrize("kw", [{"padding_idx": -1}, {"padding_idx": 2}, {"max_norm": 1.0, "norm_type": 1.0},
                                {"max_norm": 0.5}])
def test_functional_embedding_options_as_torch(kw):
    idx = np.array([[0, 2, 4], [4, 4, 1]])

    def fn(lib, w):
        w = w.detach().clone().requires_grad_(True) if "max_norm" in kw else w   # max_norm renormalises in place
        out = lib.nn.functional.embedding(lib.tensor(idx, device=w.device), w, **kw)
        return out, w.detach()
    check_op(fn, (5, 3), grad="max_norm" not in kw)


def test_embedding_on_two_devices(fake_cuda):
    with pytest.raises(RuntimeError) as e:
        ember.nn.functional.embedding(ember.tensor([1, 2]), ember.zeros(5, 2, device="cuda"))
    assert str(e.value).startswith("embedding: expected all tensors to be on the same device, but found at least two "
                                   "devices, cuda:0 and cpu (weight (5, 2) float32 cuda:0, indices (2,) int64 cpu) (at ")


def test_embedding_with_meta_indices():
    out = ember.nn.functional.embedding(ember.zeros(2, 3, dtype=ember.int64, device="meta"),
                                        ember.zeros(5, 4, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 3, 4)


def test_embedding_sparse_is_refused_and_scale_grad_by_freq_differentiates_twice():
    with pytest.raises(NotImplementedError, match="^embedding: sparse gradients are not supported"):
        ember.nn.functional.embedding(ember.tensor([1]), ember.zeros(5, 2), sparse=True)
    from helpers import check_op

    def fn(lib, w):   # the double backward as torch's: the rows looked up again, not divided
        y = lib.nn.functional.embedding(lib.tensor([[0, 2, 2], [1, 0, 0]], device=w.device), w,
                                        scale_grad_by_freq=True)
        g, = lib.autograd.grad((y * y * y).sum(), w, create_graph=True)
        return (g * g).sum()
    check_op(fn, (4, 3), dtypes=("float64",))


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_gradient_differentiated_in_the_upstream_gradient(padding_idx):
    # EmbeddingGrad(v, idx) sums rows of v into the table: its gradient in v looks gg up again, and the
    # padding row, which got nothing, gives nothing back
    from helpers import check_op

    def fn(lib, w, v):
        idx = lib.tensor([[0, 2, 2], [1, 0, 3]], device=w.device)
        y = lib.nn.functional.embedding(idx, w, padding_idx=padding_idx)
        gw, = lib.autograd.grad(y, w, v, create_graph=True)
        return gw
    check_op(fn, (4, 3), (2, 3, 3), dtypes=("float64",))


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_gradient_on_the_fake_device(fake_cuda, padding_idx):
    # the device path of EmbeddingGrad (an unbuffered add per index, not the host's sort + reduceat)
    from helpers import check_op
    check_op(lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=padding_idx), (5, 3), IDX % 5,
             device="cuda")


@pytest.mark.parametrize("kernels", [True, False], ids=["kernels", "numpy"])
def test_embedding_primitive_gradient_of_a_table_with_more_dims(kernels):
    # the Embedding primitive looks up rows of any shape (ember.nn.functional takes 2-D tables only): its
    # gradient sums rows of that shape back into the table
    from ember.backends import cpu_kernels
    from ember.ops.layers import Embedding
    (cpu_kernels.enable if kernels else cpu_kernels.disable)()
    try:
        rng = np.random.default_rng(0)
        w = ember.tensor(rng.standard_normal((5, 3, 2)), requires_grad=True)
        g = rng.standard_normal((2, 4, 3, 2))
        Embedding.apply(w, ember.tensor(IDX % 5), padding_idx=None).backward(ember.tensor(g))
    finally:
        cpu_kernels.enable()
    want = np.zeros((5, 3, 2))
    np.add.at(want, IDX % 5, g)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ EmbeddingBag, F.embedding_bag
FLAT = np.array([1, 2, 4, 4, 0, 5, 3, 4], dtype=np.int64)
OFFSETS = np.array([0, 2, 2, 5], dtype=np.int64)          # bag 1 is empty
BAG_CASES = [   # (name, build, inputs): inputs after the index tensor (offsets, per_sample_weights)
    ("sum", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="sum"), [OFFSETS]),
    ("mean", lambda lib: lib.nn.EmbeddingBag(6, 3), [OFFSETS]),
    ("max", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="max"), [OFFSETS]),
    ("sum_padding", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="sum", padding_idx=4), [OFFSETS]),
    ("mean_padding", lambda lib: lib.nn.EmbeddingBag(6, 3, padding_idx=4), [OFFSETS]),
    ("max_padding_negative", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="max", padding_idx=-2), [OFFSETS]),
    ("mean_last_offset", lambda lib: lib.nn.EmbeddingBag(6, 3, include_last_offset=True),
     [np.array([0, 3, 3, 8], dtype=np.int64)]),
    ("max_last_offset_padding", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="max", include_last_offset=True,
                                                               padding_idx=0), [np.array([0, 4, 5, 8])]),
    ("sum_per_sample_weights", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="sum"), [OFFSETS, (8,)]),
    ("sum_per_sample_weights_padding", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="sum", padding_idx=4),
     [OFFSETS, (8,)]),
    ("one_bag", lambda lib: lib.nn.EmbeddingBag(6, 3), [np.array([0])]),
    ("trailing_empty_bags", lambda lib: lib.nn.EmbeddingBag(6, 3, mode="max"), [np.array([0, 8, 8])]),
]


def _bag_call(m, x, *rest):
    return m(x, *rest)


@pytest.mark.parametrize("build,rest", [c[1:] for c in BAG_CASES], ids=[c[0] for c in BAG_CASES])
def test_embedding_bag(build, rest):
    check_module(build, FLAT, *rest, call=_bag_call, modes=("train",))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_empty(mode):
    """2-D input: fixed-size bags, one per row (a row all padding is an empty bag); an empty 1-D input: empty
    bags."""
    two_d = np.array([[1, 2, 4], [4, 4, 4], [0, 0, 5]], dtype=np.int64)
    check_module(lambda lib: lib.nn.EmbeddingBag(6, 3, mode=mode, padding_idx=4), two_d, modes=("train",))
    check_module(lambda lib: lib.nn.EmbeddingBag(6, 3, mode=mode), np.zeros(0, dtype=np.int64),
                 np.array([0, 0]), call=_bag_call, modes=("train",))


def test_embedding_bag_functional_and_2d_per_sample_weights():
    from helpers import check_op
    check_op(lambda lib, i, w, o: lib.nn.functional.embedding_bag(i, w, o, mode="max"), FLAT, (6, 3), OFFSETS)
    check_op(lambda lib, i, w, p: lib.nn.functional.embedding_bag(i, w, mode="sum", per_sample_weights=p),
             np.array([[1, 2, 4], [4, 3, 3]]), (6, 3), (2, 3))
    check_op(lambda lib, i, w, o: lib.nn.functional.embedding_bag(i, w, o, max_norm=1.0, mode="sum"),
             FLAT, (6, 3), OFFSETS, grad=False)


def test_embedding_bag_scale_grad_by_freq():
    """Each row's gradient divided by its index's count in the input, as F.embedding's. torch's embedding_bag
    divides by the count of another index after a repeated one (below: row 2, seen once, gets half its gradient),
    so the reference is torch's F.embedding summed per bag."""
    import torch
    idx, offs = [1, 2, 4, 1, 0, 5, 3], [0, 2, 3, 5]
    w = np.random.default_rng(0).standard_normal((6, 3))
    g = np.random.default_rng(1).standard_normal((4, 3))
    tw = torch.tensor(w, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(idx), tw, scale_grad_by_freq=True)
    ref = torch.stack([rows[a:b].mean(0) for a, b in zip(offs, offs[1:] + [len(idx)])])
    ref.backward(torch.tensor(g))
    ew = ember.tensor(w, requires_grad=True)
    out = ember.nn.functional.embedding_bag(ember.tensor(idx), ew, ember.tensor(offs), scale_grad_by_freq=True)
    out.backward(ember.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), atol=1e-12)
    assert ew.grad.numpy()[1, 0] != 0 and tw.grad[1, 0] != 0


def test_embedding_bag_module_like_torch():
    import torch
    for lib in (torch, ember):
        assert repr(lib.nn.EmbeddingBag(10, 3)) == "EmbeddingBag(10, 3, mode='mean')"
        assert repr(lib.nn.EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum",
                                        padding_idx=-1)) == \
            "EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode='sum', padding_idx=9)"
    m = ember.nn.EmbeddingBag(5, 2, mode="sum", padding_idx=1)
    assert not m.weight[1].detach().numpy().any() and m.weight[0].detach().numpy().any()
    p = ember.nn.EmbeddingBag.from_pretrained(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), mode="max")
    assert not p.weight.requires_grad
    np.testing.assert_array_equal(p(ember.tensor([[0, 1]])).numpy(), [[3.0, 4.0]])
    assert ember.nn.EmbeddingBag.from_pretrained(ember.ones(2, 2), freeze=False).weight.requires_grad


F = ember.nn.functional
W = ember.zeros(6, 3)
BAG_ERRORS = [
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([1])), RuntimeError,
     "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
     "position 0. However, got 1"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0, 3])), RuntimeError,
     "embedding_bag: offsets[-1] can not be greater than input's length 2 but got offsets[-1] of 3"),
    (lambda: F.embedding_bag(ember.tensor([1, 2, 3]), W, ember.tensor([0, 2, 1])), RuntimeError,
     "embedding_bag: offsets must not decrease, got [0, 2, 1]"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W), ValueError,
     "embedding_bag: offsets has to be a 1D Tensor but got None"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([[0]])), ValueError,
     "embedding_bag: offsets has to be a 1D Tensor"),
    (lambda: F.embedding_bag(ember.tensor([[1, 2]]), W, ember.tensor([0])), ValueError,
     "embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
     "length sequences. However, found offsets of type <class 'ember._tensor.Tensor'>"),
    (lambda: F.embedding_bag(ember.zeros(1, 1, 1, dtype=ember.int64), W), ValueError,
     "embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0]), mode="min"), ValueError,
     "embedding_bag: mode has to be one of sum, mean or max"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0]), mode="max", scale_grad_by_freq=True),
     ValueError, "embedding_bag: max mode does not support scaling the gradient by the frequency"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0]), per_sample_weights=ember.ones(2)),
     NotImplementedError, "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported "
                          "for mode='sum' (got mode='mean')"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0]), mode="sum",
                             per_sample_weights=ember.ones(3)), ValueError,
     "embedding_bag: If per_sample_weights (3,) is not None, then it must have the same shape as the input (2,)"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), ember.zeros(6), ember.tensor([0])), ValueError,
     "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    (lambda: F.embedding_bag(ember.tensor([1, 2]), W, ember.tensor([0]), padding_idx=6), RuntimeError,
     "embedding_bag: padding_idx must be within the number of embeddings, -6 through 5, but got 6"),
    (lambda: F.embedding_bag(ember.zeros(2, 0, dtype=ember.int64), W), RuntimeError,   # torch: arange's step 0
     "embedding_bag: a 2-D input holds bags of input.size(1) indices, which must not be 0; got shape (2, 0)"),
    (lambda: F.embedding_bag(ember.tensor([1.0, 2.0]), W, ember.tensor([0])), RuntimeError,
     "embedding_bag: expected an integer index tensor, got float32"),
    (lambda: F.embedding_bag(ember.tensor([1, 7]), W, ember.tensor([0])), IndexError,
     "embedding: index out of range: indices must be in [0, 6), got [1, 7]"),
]


@pytest.mark.parametrize("k", range(len(BAG_ERRORS)))
def test_embedding_bag_errors(k):
    from helpers import raises_exactly
    raises_exactly(*BAG_ERRORS[k])
