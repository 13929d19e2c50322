"""ember/nn/loss.py (and the functional losses) against torch, one line per configuration."""
import inspect
import re
import os
import warnings

import numpy as np
import pytest

import ember
from helpers import check_op, Const, NoGrad, raises_as_torch, raises_exactly
from .nn_helpers import check_module

RNG = np.random.default_rng(3)
T5 = np.array([1, 0, 3, 3, 2], dtype=np.int64)
T5_IGN = np.array([1, -100, 3, 3, 2], dtype=np.int64)
T_ND = RNG.integers(0, 4, (2, 3, 5)).astype(np.int64)
PROBS = RNG.dirichlet(np.ones(4), 5)
W4 = np.array([0.5, 1.0, 2.0, 1.5])
P01 = RNG.uniform(0.05, 0.95, (5, 3))
Y01 = RNG.integers(0, 2, (5, 3)).astype(np.float64)
W53 = RNG.uniform(0.5, 1.5, (5, 3))
SIGN = np.where(RNG.uniform(size=5) > 0.5, 1.0, -1.0)


def _w(lib, a):
    return lib.tensor(a)

LOSSES = [
    ("mse", lambda lib: lib.nn.MSELoss(), [(4, 3), NoGrad((4, 3))]),
    ("mse_both_grad", lambda lib: lib.nn.MSELoss(reduction="sum"), [(4, 3), (4, 3)]),
    ("mse_none", lambda lib: lib.nn.MSELoss(reduction="none"), [(4, 3), (4, 3)]),
    ("l1", lambda lib: lib.nn.L1Loss(), [(4, 3), (4, 3)]),
    ("smooth_l1", lambda lib: lib.nn.SmoothL1Loss(), [(4, 3), (4, 3)]),
    ("smooth_l1_beta", lambda lib: lib.nn.SmoothL1Loss(beta=0.5, reduction="sum"), [(4, 3), (4, 3)]),
    ("smooth_l1_beta0", lambda lib: lib.nn.SmoothL1Loss(beta=0.0), [(4, 3), (4, 3)]),
    ("huber", lambda lib: lib.nn.HuberLoss(delta=0.7), [(4, 3), (4, 3)]),
    ("ce", lambda lib: lib.nn.CrossEntropyLoss(), [(5, 4), T5]),
    ("ce_sum", lambda lib: lib.nn.CrossEntropyLoss(reduction="sum"), [(5, 4), T5]),
    ("ce_none", lambda lib: lib.nn.CrossEntropyLoss(reduction="none"), [(5, 4), T5]),
    ("ce_ignore", lambda lib: lib.nn.CrossEntropyLoss(ignore_index=-100), [(5, 4), T5_IGN]),
    ("ce_weight", lambda lib: lib.nn.CrossEntropyLoss(weight=_w(lib, W4)), [(5, 4), T5_IGN]),
    ("ce_smooth", lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.1), [(5, 4), T5_IGN]),
    ("ce_smooth_weight", lambda lib: lib.nn.CrossEntropyLoss(weight=_w(lib, W4), label_smoothing=0.2), [(5, 4), T5_IGN]),
    ("ce_smooth_weight_sum", lambda lib: lib.nn.CrossEntropyLoss(weight=_w(lib, W4), label_smoothing=0.2, reduction="sum"), [(5, 4), T5_IGN]),
    ("ce_nd", lambda lib: lib.nn.CrossEntropyLoss(), [(2, 4, 3, 5), T_ND]),
    ("ce_nd_smooth_none", lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.1, reduction="none"), [(2, 4, 3, 5), T_ND]),
    ("ce_unbatched", lambda lib: lib.nn.CrossEntropyLoss(), [(4,), np.array(2)]),
    ("ce_probs", lambda lib: lib.nn.CrossEntropyLoss(), [(5, 4), NoGrad(PROBS)]),
    ("ce_probs_weight_smooth", lambda lib: lib.nn.CrossEntropyLoss(weight=_w(lib, W4), label_smoothing=0.1), [(5, 4), NoGrad(PROBS)]),
    ("nll", lambda lib: lib.nn.NLLLoss(), [(5, 4), T5]),
    ("nll_weight_ignore", lambda lib: lib.nn.NLLLoss(weight=_w(lib, W4), ignore_index=3), [(5, 4), T5]),
    ("nll_nd_none", lambda lib: lib.nn.NLLLoss(reduction="none"), [(2, 4, 3, 5), T_ND]),
    ("bce", lambda lib: lib.nn.BCELoss(), [P01, NoGrad(Y01)]),
    ("bce_weight_sum", lambda lib: lib.nn.BCELoss(weight=_w(lib, W53), reduction="sum"), [P01, NoGrad(Y01)]),
    ("bce_logits", lambda lib: lib.nn.BCEWithLogitsLoss(), [(5, 3), NoGrad(Y01)]),
    ("bce_logits_pos_weight", lambda lib: lib.nn.BCEWithLogitsLoss(pos_weight=_w(lib, np.array([1.0, 2.0, 0.5]))), [(5, 3), NoGrad(Y01)]),
    ("bce_logits_weight_none", lambda lib: lib.nn.BCEWithLogitsLoss(weight=_w(lib, np.array([1.0, 2.0, 0.5])), reduction="none"), [(5, 3), (5, 3)]),
    ("kl_div_batchmean", lambda lib: lib.nn.KLDivLoss(reduction="batchmean"), [np.log(PROBS), NoGrad(PROBS)]),
    ("kl_div_mean", lambda lib: lib.nn.KLDivLoss(), [np.log(PROBS), NoGrad(np.where(PROBS > 0.2, PROBS, 0.0))]),
    ("kl_div_log_target", lambda lib: lib.nn.KLDivLoss(reduction="sum", log_target=True), [np.log(PROBS), np.log(PROBS[::-1].copy())]),
    ("multi_margin", lambda lib: lib.nn.MultiMarginLoss(), [(5, 4), T5]),
    ("multi_margin_p2_weight", lambda lib: lib.nn.MultiMarginLoss(p=2, margin=0.5, weight=_w(lib, W4)), [(5, 4), T5]),
    ("margin_ranking", lambda lib: lib.nn.MarginRankingLoss(margin=0.3), [(5,), (5,), NoGrad(SIGN)]),
    ("cosine_embedding", lambda lib: lib.nn.CosineEmbeddingLoss(margin=0.2), [(5, 3), (5, 3), NoGrad(SIGN)]),
    ("triplet", lambda lib: lib.nn.TripletMarginLoss(), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_p1_swap", lambda lib: lib.nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="none"), [(5, 3), (5, 3), (5, 3)]),
]


@pytest.mark.parametrize("build,inputs", [c[1:] for c in LOSSES], ids=[c[0] for c in LOSSES])
def test_losses(build, inputs):
    check_module(build, *inputs, modes=("train",), return_buffers=False)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("shapes", [((4, 1), (4,)), ((4,), (4, 1)), ((4, 3), (3,))])
def test_regression_loss_warns_and_broadcasts_as_torch(name, shapes):
    """torch warns (UserWarning, naming both sizes) and broadcasts: code that runs there runs here,
    and the warning points at the user's line."""
    import torch
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    with pytest.warns(UserWarning, match="different to the input size"):
        want = getattr(torch.nn.functional, name)(torch.tensor(a), torch.tensor(b)).item()
    with pytest.warns(UserWarning) as rec:
        line = inspect.currentframe().f_lineno + 1
        got = getattr(ember.nn.functional, name)(ember.tensor(a), ember.tensor(b)).item()
    w, = rec.list
    assert str(w.message) == (f"{name}: using a target size {shapes[1]} that is different to the input size "
                              f"{shapes[0]}. This will likely lead to incorrect results due to broadcasting. "
                              f"Please ensure they have the same size. (at test_loss.py:{line})")
    assert os.path.basename(w.filename) == "test_loss.py" and w.lineno == line
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_regression_loss_module_warns_at_the_users_line():
    with pytest.warns(UserWarning) as rec:
        line = inspect.currentframe().f_lineno + 1
        ember.nn.MSELoss()(ember.zeros(4, 1), ember.zeros(4))
    assert rec.list[0].lineno == line and os.path.basename(rec.list[0].filename) == "test_loss.py"


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "kl_div"])
def test_loss_shapes_that_cannot_broadcast_raise(name):
    with pytest.raises(RuntimeError, match=rf"{name}: target shape \(4,\) and input shape \(4, 3\) cannot be "
                                           rf"broadcast together \(at test_loss\.py:\d+\)"):
        getattr(ember.nn.functional, name)(ember.zeros(4, 3), ember.zeros(4))


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
def test_kl_div_target_gradient_at_zero_target_is_nan_as_torch(reduction):
    # torch's xlogy(t, t) gradient for t is log t + t / t: NaN at t == 0 (0 / 0)
    from helpers import check_op
    t = np.array([[0.0, 0.5, 0.5], [0.2, 0.0, 0.8]])
    check_op(lambda L, x, t: L.nn.functional.kl_div(x, t, reduction=reduction), np.log(PROBS[:2, :3]), t)


def test_kl_div_mean_reduction_warns_as_torch():
    import torch
    for L in (torch, ember):
        x, t = L.tensor(np.log(PROBS)), L.tensor(PROBS)
        with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
            L.nn.functional.kl_div(x, t)
        with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
            L.nn.KLDivLoss()(x, t)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            L.nn.functional.kl_div(x, t, reduction="batchmean")
            L.kl_div(x, t, 1)                                # ATen's op: the same mean, no warning


def test_kl_div_broadcasts_silently_as_torch():
    import torch
    a, b = np.log(PROBS[:, :1]), PROBS[0]                      # (5, 1) against (4,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                         # no size warning in either library
        got = ember.nn.functional.kl_div(ember.tensor(a), ember.tensor(b), reduction="sum").item()
        want = torch.nn.functional.kl_div(torch.tensor(a), torch.tensor(b), reduction="sum").item()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("fn", [ember.nn.functional.binary_cross_entropy,
                                ember.nn.functional.binary_cross_entropy_with_logits])
def test_bce_losses_refuse_other_target_shapes_as_torch(fn):
    with pytest.raises(ValueError, match=r"target shape \(4,\) differs from input shape \(4, 1\)"):
        fn(ember.full((4, 1), 0.5), ember.zeros(4))


def test_cross_entropy_float_class_indices_blame_the_dtype():
    """torch: 'expected target dtype to be Long'; a float target of the class-index shape is indices
    stored as floats, not probabilities of the wrong shape."""
    with pytest.raises(RuntimeError) as e:
        line = inspect.currentframe().f_lineno + 1
        ember.nn.functional.cross_entropy(ember.zeros(4, 3), ember.tensor([0.0, 1.0, 2.0, 0.0]))
    assert str(e.value) == ("cross_entropy: expected a target of class indices (int64) of shape (4,) or of "
                            "probabilities (float) of the input's shape (4, 3), got float32 of shape (4,) "
                            f"(class indices must be integers: use target.long()) (at test_loss.py:{line})")
    with pytest.raises(RuntimeError, match=r"nll_loss: expected an integer class-index target of shape \(4,\), "
                                           r"got float32 of shape \(4,\)"):
        ember.nn.functional.nll_loss(ember.zeros(4, 3), ember.tensor([0.0, 1.0, 2.0, 0.0]))


def test_cross_entropy_bad_target():
    with pytest.raises(ValueError, match="expected target shape"):
        ember.nn.functional.cross_entropy(ember.zeros(4, 3), ember.tensor([[0], [1], [2], [0]]))
    with pytest.raises(IndexError, match="out of bounds"):
        ember.nn.functional.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 3]))


def test_bce_range_error():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        ember.nn.functional.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))


F_LOSSES = [
    ("nll_loss", lambda lib, x, t: lib.nn.functional.nll_loss(x, t, ignore_index=1), [(5, 4), T5]),
    ("kl_div", lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="batchmean"), [np.log(PROBS), NoGrad(PROBS)]),
    ("multi_margin_loss", lambda lib, x, t: lib.nn.functional.multi_margin_loss(x, t, margin=0.7), [(5, 4), T5]),
    ("margin_ranking_loss", lambda lib, a, b, y: lib.nn.functional.margin_ranking_loss(a, b, y, reduction="sum"), [(5,), (5,), NoGrad(SIGN)]),
    ("cosine_embedding_loss", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, reduction="none"), [(5, 3), (5, 3), NoGrad(SIGN)]),
    ("triplet_margin_loss", lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, margin=0.3, p=3), [(5, 3), (5, 3), (5, 3)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in F_LOSSES], ids=[c[0] for c in F_LOSSES])
def test_functional_losses(fn, inputs):
    check_op(fn, *inputs)


# ------------------------------------------------------------------ every functional loss with torch's defaults
SIGN3 = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
F_DEFAULTS = [   # inputs in [-2, 2): differences up to 4 cross huber's delta and smooth_l1's beta (1.0)
    ("mse_loss", lambda lib, a, b: lib.nn.functional.mse_loss(a, b), [(4, 3), (4, 3)]),
    ("l1_loss", lambda lib, a, b: lib.nn.functional.l1_loss(a, b), [(4, 3), (4, 3)]),
    ("smooth_l1_loss", lambda lib, a, b: lib.nn.functional.smooth_l1_loss(a, b), [(4, 3), (4, 3)]),
    ("huber_loss", lambda lib, a, b: lib.nn.functional.huber_loss(a, b), [(4, 3), (4, 3)]),
    ("huber_loss_weight", lambda lib, a, b, w: lib.nn.functional.huber_loss(a, b, delta=0.5, weight=w), [(4, 3), (4, 3), NoGrad(W53[:4] + 1)]),
    ("bce", lambda lib, p, y: lib.nn.functional.binary_cross_entropy(p, y), [P01, NoGrad(Y01)]),
    ("bce_target_grad", lambda lib, p, y: lib.nn.functional.binary_cross_entropy(p, y), [NoGrad(P01), RNG.uniform(0, 1, (5, 3))]),
    ("bce_logits", lambda lib, x, y: lib.nn.functional.binary_cross_entropy_with_logits(x, y), [(5, 3), NoGrad(Y01)]),
    ("kl_div", lambda lib, x, t: lib.nn.functional.kl_div(x, t), [np.log(PROBS), NoGrad(PROBS)]),
    ("kl_div_0d_batchmean", lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="batchmean"), [np.array(-1.2), np.array(0.3)]),
    ("kl_div_target_grad", lambda lib, x, t: lib.nn.functional.kl_div(x, t, reduction="sum"), [np.log(PROBS), PROBS]),
    ("nll_loss", lambda lib, x, t: lib.nn.functional.nll_loss(x, t), [(5, 4), T5]),
    ("cross_entropy", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), [(5, 4), T5]),
    ("multi_margin_loss", lambda lib, x, t: lib.nn.functional.multi_margin_loss(x, t), [(5, 4), T5]),
    ("multi_margin_loss_unbatched", lambda lib, x, t: lib.nn.functional.multi_margin_loss(x, t, p=2, reduction="sum"), [(4,), np.array(2)]),
    ("multi_margin_loss_weight_none", lambda lib, x, t, w: lib.nn.functional.multi_margin_loss(x, t, weight=w, reduction="none"), [(5, 4), T5, NoGrad(W4)]),
    ("margin_ranking_loss", lambda lib, a, b, y: lib.nn.functional.margin_ranking_loss(a, b, y), [(5,), (5,), NoGrad(SIGN3)]),
    ("margin_ranking_loss_none", lambda lib, a, b, y: lib.nn.functional.margin_ranking_loss(a, b, y, 0.5, reduction="none"), [(5,), (5,), NoGrad(SIGN3)]),
    ("cosine_embedding_loss", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y), [(5, 3), (5, 3), NoGrad(SIGN3)]),
    ("cosine_embedding_loss_sum", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, reduction="sum"), [(5, 3), (5, 3), NoGrad(SIGN3)]),
    ("cosine_embedding_loss_unbatched", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, 0.1), [(3,), (3,), NoGrad(np.array(-1.0))]),
    ("cosine_embedding_loss_zero_row", lambda lib, a, b, y: lib.nn.functional.cosine_embedding_loss(a, b, y, reduction="none"), [NoGrad(np.array([[0.0, 0, 0], [1, 2, 3]])), np.array([[1.0, 2, 0], [0, 0, 0]]), NoGrad(np.array([1.0, 1.0]))]),
    ("triplet_margin_loss", lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_margin_loss_eps_swap", lambda lib, a, p, n: lib.nn.functional.triplet_margin_loss(a, p, n, eps=0.3, swap=True, reduction="sum"), [(5, 3), (5, 3), (5, 3)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in F_DEFAULTS], ids=[c[0] for c in F_DEFAULTS])
def test_functional_losses_default_arguments(fn, inputs):
    check_op(fn, *inputs)


def test_binary_cross_entropy_at_zero_and_one_as_torch():
    """Saturated probabilities (a float32 sigmoid gives exactly 1.0 from x = 17 on): the logs are clamped
    at -100 and the gradient is torch's (p - t) / max(p (1 - p), 1e-12), finite (it was NaN)."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.25])
    check_op(lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t, reduction="none"), p, NoGrad(t))
    check_op(lambda lib, p, t: lib.nn.functional.binary_cross_entropy(p, t, reduction="sum"), p, NoGrad(t))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_a_mean_over_no_counted_target_is_nan_with_a_zero_gradient_as_torch(smoothing):
    # every target ignored: the loss is 0 / 0 = NaN in both; the gradient was 1/0 * 0 = NaN, torch's is 0
    check_op(lambda L, x, t: L.nn.functional.cross_entropy(x, t, label_smoothing=smoothing), (3, 2),
             NoGrad(np.full(3, -100)))
    check_op(lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w), (2, 3), NoGrad(np.array([1, 1])),
             NoGrad(np.array([1.0, 0.0, 1.0])))   # every counted target of weight 0


@pytest.mark.parametrize("pos_weight", [None, np.array([1.0, 2.0, 0.5])])
def test_binary_cross_entropy_with_logits_gradient_at_zero_logits_as_torch(pos_weight):
    """A zero-initialised head gives logits of exactly 0: the gradient is sigmoid(0) - t (it was 1 - t)."""
    pw = NoGrad(pos_weight) if pos_weight is not None else None
    check_op(lambda L, x, t, pw: L.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="sum"),
             np.zeros((5, 3)), NoGrad(Y01), pw)
    check_op(lambda L, x, t: L.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none"),
             np.array([[0.0, -30.0, 30.0], [-100.0, 100.0, 0.0]]), Y01[:2].copy())


def test_binary_cross_entropy_double_backward():
    def fn(lib, p, t):
        g, = lib.autograd.grad(lib.nn.functional.binary_cross_entropy(p, t), p, create_graph=True)
        return (g * g.detach().sin()).sum()
    check_op(fn, P01, NoGrad(Y01), dtypes=("float64",))


REGRESSION = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_loss_broadcast_warning_text(name):
    """As test_regression_loss_warns_and_broadcasts_as_torch, without the location (runs under mutmut)."""
    import torch
    a, b = RNG.standard_normal((4, 1)), RNG.standard_normal(4)
    with pytest.warns(UserWarning):
        want = getattr(torch.nn.functional, name)(torch.tensor(a), torch.tensor(b)).item()
    with pytest.warns(UserWarning) as rec:
        got = getattr(ember.nn.functional, name)(ember.tensor(a), ember.tensor(b)).item()
    w, = rec.list
    assert str(w.message).startswith(f"{name}: using a target size (4,) that is different to the input size "
                                     f"(4, 1). This will likely lead to incorrect results due to broadcasting. "
                                     f"Please ensure they have the same size. (at ")
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", REGRESSION + ["kl_div"])
def test_loss_broadcast_error_names_the_op(name):
    with pytest.raises(RuntimeError, match=rf"^{name}: target shape \(4,\) and input shape \(4, 3\) cannot be "
                                           rf"broadcast together \(at "):
        getattr(ember.nn.functional, name)(ember.zeros(4, 3), ember.zeros(4))


def _loss_args(name):
    z, i = ember.zeros, ember.tensor([0, 1, 2, 0])
    return {
        "mse_loss": (z(4, 3), z(4, 3)), "l1_loss": (z(4, 3), z(4, 3)), "smooth_l1_loss": (z(4, 3), z(4, 3)),
        "huber_loss": (z(4, 3), z(4, 3)), "kl_div": (z(4, 3), z(4, 3)),
        "binary_cross_entropy": (ember.full((4, 3), 0.5), z(4, 3)),
        "binary_cross_entropy_with_logits": (z(4, 3), z(4, 3)),
        "nll_loss": (z(4, 3), i), "multi_margin_loss": (z(4, 3), i),
        "margin_ranking_loss": (z(4), z(4), ember.ones(4)),
        "cosine_embedding_loss": (z(4, 3), z(4, 3), ember.ones(4)),
        "triplet_margin_loss": (z(4, 3), z(4, 3), z(4, 3)),
    }[name]


ALL_LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "nll_loss", "multi_margin_loss", "margin_ranking_loss",
              "cosine_embedding_loss", "triplet_margin_loss"]


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_unknown_reduction_names_the_op(name):
    with pytest.raises(ValueError, match=rf"^{name}: reduction must be 'mean', 'sum' or 'none', got 'avg' \(at "):
        getattr(ember.nn.functional, name)(*_loss_args(name), reduction="avg")


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_losses_reduce_as_torch_by_default(name):
    """The default reduction is 'mean' (F.huber_loss's too): the same as reduction='mean'."""
    args = _loss_args(name)
    fn = getattr(ember.nn.functional, name)
    assert fn(*args).shape == ()
    np.testing.assert_array_equal(fn(*args).numpy(), fn(*args, reduction="mean").numpy())


DEVICE_CASES = [   # (loss, index of the argument moved to the CPU, its name in the message)
    ("mse_loss", 1, "target"), ("l1_loss", 1, "target"), ("smooth_l1_loss", 1, "target"),
    ("huber_loss", 1, "target"), ("kl_div", 1, "target"), ("binary_cross_entropy", 1, "target"),
    ("binary_cross_entropy_with_logits", 1, "target"), ("nll_loss", 1, "target"),
    ("multi_margin_loss", 1, "target"), ("margin_ranking_loss", 1, "input2"),
    ("margin_ranking_loss", 2, "target"),
]


@pytest.mark.parametrize("name,k,what", DEVICE_CASES, ids=[f"{c[0]}-{c[2]}" for c in DEVICE_CASES])
def test_loss_on_two_devices_names_the_op_and_operand(fake_cuda, name, k, what):
    args = [a.to("cuda") for a in _loss_args(name)]
    args[k] = args[k].to("cpu")
    shape = tuple(args[k].shape)
    with pytest.raises(RuntimeError, match=rf"^{name}: expected all tensors to be on the same device, but found at "
                                           rf"least two devices, cuda:0 and cpu \(input .* cuda:0, {what} "
                                           rf"{re.escape(str(shape))} \S+ cpu\) \(at "):
        getattr(ember.nn.functional, name)(*args)


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy", "multi_margin_loss"])
def test_class_weight_on_another_device(fake_cuda, name):
    x, t = ember.zeros(4, 3, device="cuda"), ember.tensor([0, 1, 2, 0], device="cuda")
    op = "cross_entropy" if name == "cross_entropy" else name
    with pytest.raises(RuntimeError, match=rf"^{op}: expected all tensors .* cuda:0 and cpu \(input \(4, 3\) "
                                           rf"float32 cuda:0, weight \(3,\) float32 cpu\)"):
        getattr(ember.nn.functional, name)(x, t, weight=ember.ones(3))


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_multi_margin_loss_at_nan_and_inf_as_torch(p, margin):
    # torch adds only the terms with margin - x[y] + x[i] > 0 off the target: a NaN term (a NaN input,
    # inf - inf) adds nothing to the value or the gradient (was NaN), nor does a NaN weight of a target
    # with no such term
    x = np.array([[np.nan, 0.5, 0.1], [0.2, np.inf, -1.0], [np.inf, np.inf, 0.0], [0.3, -0.2, np.nan],
                  [5.0, 0.0, -5.0]])
    t = np.array([0, 2, 1, 1, 0])
    w = np.array([np.nan, 2.0, 0.5])
    for reduction in ("none", "mean", "sum"):
        check_op(lambda L, a, tt: L.nn.functional.multi_margin_loss(a, tt, p, margin, reduction=reduction), x, t)
        check_op(lambda L, a, tt, ww: L.nn.functional.multi_margin_loss(a, tt, p, margin, ww, reduction=reduction),
                 x, t, NoGrad(w))


def test_multi_margin_loss_on_the_inputs_device(fake_cuda):
    x = ember.tensor(RNG.standard_normal((5, 4)), device="cuda")
    out = ember.nn.functional.multi_margin_loss(x, ember.tensor(T5, device="cuda"))
    want = ember.nn.functional.multi_margin_loss(x.to("cpu"), ember.tensor(T5))
    assert out.device.type == "cuda"
    np.testing.assert_allclose(out.to("cpu").numpy(), want.numpy(), rtol=1e-12)


SHAPE_ERRORS = [
    ("cosine_embedding_loss", (ember.zeros(4, 3), ember.zeros(4, 2), ember.zeros(4)), ValueError,
     "cosine_embedding_loss: input shapes (4, 3) and (4, 2) differ"),
    ("cosine_embedding_loss", (ember.zeros(4, 3), ember.zeros(4, 3), ember.zeros(5)), ValueError,
     "cosine_embedding_loss: target shape (5,) should be (4,) for inputs (4, 3)"),
    ("cosine_embedding_loss", (ember.zeros(3), ember.zeros(3), ember.zeros(1)), ValueError,
     "cosine_embedding_loss: target shape (1,) should be () for inputs (3,)"),
    ("margin_ranking_loss", (ember.zeros(4), ember.zeros(4, 1), ember.zeros(4)), RuntimeError,
     "margin_ranking_loss: all input tensors should have the same number of dimensions, got input1 (4,), "
     "input2 (4, 1), target (4,)"),
    ("triplet_margin_loss", (ember.zeros(4, 3), ember.zeros(4, 2), ember.zeros(4, 3)), ValueError,
     "triplet_margin_loss: anchor (4, 3), positive (4, 2) and negative (4, 3) must have one shape"),
    ("multi_margin_loss", (ember.zeros(4, 3), ember.zeros(4, dtype=ember.int64)), ValueError,
     "multi_margin_loss: only p == 1 and p == 2 supported, got 3"),
    ("multi_margin_loss", (ember.zeros(4, 3), ember.zeros(4)), RuntimeError,
     "multi_margin_loss: expected an integer class-index target of shape (4,), got float32 of shape (4,) "
     "(use target.long())"),
    ("binary_cross_entropy", (ember.full((4, 1), 0.5), ember.zeros(4)), ValueError,
     "binary_cross_entropy: target shape (4,) differs from input shape (4, 1); they would broadcast "
     "silently and give a wrong loss. Reshape the target (e.g. target.view_as(input))."),
    ("binary_cross_entropy", (ember.tensor([-0.5]), ember.tensor([1.0])), RuntimeError,
     "binary_cross_entropy: all elements of input should be between 0 and 1"),
    # a NaN probability too (torch checks 0 <= x <= 1; Ember's x < 0 or x > 1 let NaN through to a NaN loss)
    ("binary_cross_entropy", (ember.tensor([float("nan"), 0.5]), ember.tensor([1.0, 0.0])), RuntimeError,
     "binary_cross_entropy: all elements of input should be between 0 and 1"),
    # the target too, NaN and infinities included (Ember gave a NaN loss and +-inf gradients); input first
    ("binary_cross_entropy", (ember.tensor([0.3, 0.5]), ember.tensor([float("nan"), 0.0])), RuntimeError,
     "binary_cross_entropy: all elements of target should be between 0 and 1"),
    ("binary_cross_entropy", (ember.tensor([0.3, 0.5]), ember.tensor([0.0, -float("inf")])), RuntimeError,
     "binary_cross_entropy: all elements of target should be between 0 and 1"),
    ("binary_cross_entropy", (ember.tensor([0.3, 0.5]), ember.tensor([2.0, 0.0])), RuntimeError,
     "binary_cross_entropy: all elements of target should be between 0 and 1"),
    ("binary_cross_entropy", (ember.tensor([2.0]), ember.tensor([2.0])), RuntimeError,
     "binary_cross_entropy: all elements of input should be between 0 and 1"),
    # a weight or pos_weight that requires grad, as torch (Ember detached multi_margin_loss's weight)
    ("multi_margin_loss", (ember.zeros(4, 3), ember.zeros(4, dtype=ember.int64), 1, 1.0,
                           ember.ones(3, requires_grad=True)), RuntimeError,
     "multi_margin_loss: is not differentiable with respect to argument 'weight'; this input cannot have "
     "requires_grad True (pass weight.detach())"),
    ("binary_cross_entropy_with_logits", (ember.zeros(4, 3), ember.zeros(4, 3), None, None, None, "mean",
                                          ember.ones(3, requires_grad=True)), RuntimeError,
     "binary_cross_entropy_with_logits: is not differentiable with respect to argument 'pos_weight'; this "
     "input cannot have requires_grad True (pass pos_weight.detach())"),
    ("binary_cross_entropy_with_logits", (ember.zeros(3), ember.zeros(3), None, None, None, "mean",
                                          ember.ones(2, 3)), RuntimeError,
     "binary_cross_entropy_with_logits: pos_weight shape (2, 3) does not broadcast to input shape (3,)"),
]


@pytest.mark.parametrize("k", range(len(SHAPE_ERRORS)))
def test_loss_argument_errors_exactly(k):
    name, args, exc, message = SHAPE_ERRORS[k]
    kw = {"p": 3} if message.endswith("got 3") else {}
    raises_exactly(lambda: getattr(ember.nn.functional, name)(*args, **kw), exc, message)


# ------------------------------------------------------------------ cross_entropy / nll_loss corners
T_3D = RNG.integers(0, 4, (2, 3)).astype(np.int64)
T_3D_IGN = np.array([[1, -100, 3], [0, 2, -100]])
PROBS_3D = RNG.dirichlet(np.ones(4), (2, 3)).transpose(0, 2, 1).copy()   # (2, 4, 3): classes on dim 1
CE_CORNERS = [
    ("ce_3d_input", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), [(2, 4, 3), T_3D]),
    ("ce_3d_smooth_weight_none", lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w, ignore_index=-100, reduction="none", label_smoothing=0.3), [(2, 4, 3), T_3D_IGN, NoGrad(W4)]),
    ("ce_3d_smooth_weight_sum", lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w, reduction="sum", label_smoothing=0.3), [(2, 4, 3), T_3D_IGN, NoGrad(W4)]),
    ("ce_3d_smooth_mean", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=0.3), [(2, 4, 3), T_3D_IGN]),
    ("ce_smoothing_one", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=1.0), [(5, 4), T5]),
    ("ce_probs_sum", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, reduction="sum"), [(5, 4), NoGrad(PROBS)]),
    ("ce_probs_none_smooth", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, reduction="none", label_smoothing=0.2), [(5, 4), NoGrad(PROBS)]),
    ("ce_probs_3d_weight_smooth", lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w, label_smoothing=0.2), [(2, 4, 3), NoGrad(PROBS_3D), NoGrad(W4)]),
    ("ce_probs_unbatched", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), [(4,), NoGrad(PROBS[0])]),
    ("ce_probs_target_grad", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t), [(5, 4), PROBS]),
    ("ce_unbatched_weight", lambda lib, x, t, w: lib.nn.functional.cross_entropy(x, t, w), [(4,), np.array(2), NoGrad(W4)]),
    ("nll_unbatched_weight_none", lambda lib, x, t, w: lib.nn.functional.nll_loss(x, t, w, reduction="none"), [(4,), np.array(1), NoGrad(W4)]),
    ("nll_one_sample_none", lambda lib, x, t: lib.nn.functional.nll_loss(x, t, reduction="none"), [(1, 4, 1), np.array([[2]])]),
    ("nll_ignore_sum", lambda lib, x, t: lib.nn.functional.nll_loss(x, t, ignore_index=3, reduction="sum"), [(5, 4), T5]),
    ("ce_unbatched_none", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, reduction="none"), [(4,), np.array(3)]),
    ("ce_unbatched_smooth_none", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, reduction="none", label_smoothing=0.1), [(4,), np.array(0)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in CE_CORNERS], ids=[c[0] for c in CE_CORNERS])
def test_cross_entropy_and_nll_corners(fn, inputs):
    check_op(fn, *inputs)


@pytest.mark.parametrize("target", ["probs", "indices"])
def test_cross_entropy_of_an_empty_batch_is_nan_as_torch(target):
    import torch
    t = (lambda lib: lib.zeros(0, 4)) if target == "probs" else (lambda lib: lib.zeros(0, dtype=lib.int64))
    want = torch.nn.functional.cross_entropy(torch.zeros(0, 4), t(torch))
    with np.errstate(all="ignore"):
        got = ember.nn.functional.cross_entropy(ember.zeros(0, 4), t(ember))
    assert np.isnan(want.item()) and np.isnan(got.item())


@pytest.mark.parametrize("target,kw,message", [
    ([0, 3], {}, "nll_loss: target 3 is out of bounds for 3 classes"),
    ([-1, 1], {}, "nll_loss: target -1 is out of bounds for 3 classes"),
    ([-100, 0, 7, -2], {}, "nll_loss: target 7 is out of bounds for 3 classes"),
    ([2, -5, 1], {"ignore_index": 2}, "nll_loss: target -5 is out of bounds for 3 classes"),
    ([0, 3], {"label_smoothing": 0.1}, "nll_loss: target 3 is out of bounds for 3 classes"),
])
def test_out_of_bounds_target_names_the_first_bad_class(target, kw, message):
    import torch
    x = np.zeros((len(target), 3))
    with pytest.raises((IndexError, RuntimeError)):
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(target), **kw)
    with pytest.raises(IndexError) as e:
        ember.nn.functional.cross_entropy(ember.tensor(x), ember.tensor(target), **kw)
    assert str(e.value).startswith(message + " (at "), str(e.value)


@pytest.mark.parametrize("smoothing", [-0.1, 1.5])
def test_label_smoothing_out_of_range(smoothing):
    with pytest.raises(ValueError) as e:
        ember.nn.functional.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 1]), label_smoothing=smoothing)
    assert str(e.value).startswith(f"cross_entropy: label_smoothing must be in [0, 1], got {smoothing} (at ")


def test_cross_entropy_target_errors_exactly():
    F = ember.nn.functional
    cases = [   # (call, type, message)
        (lambda: F.cross_entropy(ember.zeros(4, 3), ember.zeros(4, 2)), RuntimeError,
         "cross_entropy: expected a target of class indices (int64) of shape (4,) or of probabilities (float) of "
         "the input's shape (4, 3), got float32 of shape (4, 2)"),
        (lambda: F.cross_entropy(ember.zeros(4, 3), ember.zeros(5, dtype=ember.int64)), ValueError,
         "cross_entropy: expected target shape (4,) for input shape (4, 3), got (5,)"),
        (lambda: F.nll_loss(ember.zeros(4, 3), ember.zeros(4, 1, dtype=ember.int64)), ValueError,
         "nll_loss: expected target shape (4,) for input shape (4, 3), got (4, 1)"),
        (lambda: F.nll_loss(ember.zeros(4, 3), ember.zeros(4)), RuntimeError,
         "nll_loss: expected an integer class-index target of shape (4,), got float32 of shape (4,) "
         "(use target.long())"),
        (lambda: F.cross_entropy(ember.zeros(4, 3), ember.zeros(4, 3), reduction="avg"), ValueError,
         "cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        (lambda: F.cross_entropy(ember.zeros(4, 3), ember.zeros(4, dtype=ember.int64), reduction="avg",
                                 label_smoothing=0.1), ValueError,
         "nll_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    ]
    for call, exc, message in cases:
        raises_exactly(call, exc, message)


def test_cross_entropy_probability_target_on_another_device(fake_cuda):
    x = ember.zeros(4, 3, device="cuda")
    for name, args in (("target", (x, ember.zeros(4, 3))), ("weight", (x, ember.zeros(4, 3, device="cuda"), ember.ones(3)))):
        with pytest.raises(RuntimeError, match=rf"^cross_entropy: expected all tensors to be on the same device, "
                                               rf"but found at least two devices, cuda:0 and cpu \(input \(4, 3\) "
                                               rf"float32 cuda:0, {name} "):
            ember.nn.functional.cross_entropy(*args)


def test_smooth_l1_with_beta_zero_checks_the_reduction():
    with pytest.raises(ValueError, match=r"^smooth_l1_loss: reduction must be 'mean', 'sum' or 'none', got 'avg' \(at "):
        ember.nn.functional.smooth_l1_loss(ember.zeros(3), ember.zeros(3), beta=0.0, reduction="avg")


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_nll_loss_unbatched_with_weight(reduction):
    check_op(lambda lib, x, t, w: lib.nn.functional.nll_loss(x, t, w, reduction=reduction), (4,), np.array(2), NoGrad(W4))


# ------------------------------------------------------------------ the losses added after the first set
# gaussian_nll_loss, poisson_nll_loss, soft_margin_loss, multilabel_soft_margin_loss, multilabel_margin_loss,
# hinge_embedding_loss, triplet_margin_with_distance_loss and their modules, against torch.
VAR43 = RNG.uniform(0.3, 2.0, (4, 3))
VAR_SMALL = np.array([[0.0, 1e-8, 0.5], [2.0, 1e-3, 1.0], [0.7, 0.0, 3.0], [1e-7, 0.2, 0.9]])   # some under eps
COUNTS = np.array([[0.0, 1.0, 1.5], [3.0, 0.5, 7.0], [2.0, 0.0, 4.0], [1.0, 12.0, 0.25]])   # 0, 1, >1
COUNTS_POS = np.where(COUNTS == 0, 0.5, COUNTS)     # torch's target gradient with full=True is NaN at 0
SIGN43 = np.where(RNG.uniform(size=(4, 3)) > 0.5, 1.0, -1.0)
HINGE_T = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [0.0, 2.0, -1.0], [1.0, -1.0, -1.0]])   # 0, 2: both terms
ML_T = np.array([[3, 0, -1, 1], [1, -1, 2, 2], [2, 2, 0, -1], [-1, 0, 1, 2], [0, 1, 2, 3]])   # padding, duplicates
ML_T1 = np.array([2, 0, -1, 3])
W3 = np.array([0.5, 2.0, 1.25])


def _cos_dist(lib):
    return lambda x, y: 1 - lib.nn.functional.cosine_similarity(x, y)


NEW_LOSSES = [   # (id, build(lib, reduction), inputs): each runs with every reduction
    ("gaussian_nll", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(4, 3), (4, 3), VAR43]),
    ("gaussian_nll_full_var_per_row", lambda L, r: L.nn.GaussianNLLLoss(full=True, reduction=r), [(4, 3), (4, 3), VAR43[:, 0].copy()]),
    ("gaussian_nll_var_col", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(4, 3), (4, 3), VAR43[:, :1].copy()]),
    ("gaussian_nll_var_row", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(4, 3), (4, 3), VAR43[:1].copy()]),
    ("gaussian_nll_float_var", lambda L, r: L.nn.GaussianNLLLoss(eps=0.1, reduction=r), [(4, 3), (4, 3), Const(0.05)]),
    ("gaussian_nll_clamped_var", lambda L, r: L.nn.GaussianNLLLoss(eps=0.01, reduction=r), [(4, 3), (4, 3), VAR_SMALL]),
    ("gaussian_nll_1d", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(3,), (3,), VAR43[0].copy()]),
    ("gaussian_nll_1d_var_0d", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(3,), (3,), np.array(0.7)]),
    ("gaussian_nll_target_broadcast", lambda L, r: L.nn.GaussianNLLLoss(reduction=r), [(4, 3), (3,), VAR43]),
    ("poisson_nll", lambda L, r: L.nn.PoissonNLLLoss(reduction=r), [(4, 3), NoGrad(COUNTS)]),
    ("poisson_nll_full", lambda L, r: L.nn.PoissonNLLLoss(full=True, reduction=r), [(4, 3), NoGrad(COUNTS)]),
    ("poisson_nll_full_target_grad", lambda L, r: L.nn.PoissonNLLLoss(full=True, reduction=r), [(4, 3), COUNTS_POS]),
    ("poisson_nll_rate", lambda L, r: L.nn.PoissonNLLLoss(log_input=False, reduction=r), [VAR43, COUNTS]),
    ("poisson_nll_rate_full_eps", lambda L, r: L.nn.PoissonNLLLoss(log_input=False, full=True, eps=0.3, reduction=r), [VAR_SMALL, NoGrad(COUNTS)]),
    ("poisson_nll_1d", lambda L, r: L.nn.PoissonNLLLoss(full=True, reduction=r), [(3,), COUNTS_POS[1]]),
    ("soft_margin", lambda L, r: L.nn.SoftMarginLoss(reduction=r), [(4, 3), NoGrad(SIGN43)]),
    ("soft_margin_target_broadcast", lambda L, r: L.nn.SoftMarginLoss(reduction=r), [(4, 3), NoGrad(SIGN43[0])]),
    ("soft_margin_1d", lambda L, r: L.nn.SoftMarginLoss(reduction=r), [(5,), NoGrad(SIGN)]),
    ("soft_margin_0d", lambda L, r: L.nn.SoftMarginLoss(reduction=r), [(), NoGrad(np.array(-1.0))]),
    ("multilabel_soft_margin", lambda L, r: L.nn.MultiLabelSoftMarginLoss(reduction=r), [(5, 3), Y01]),
    ("multilabel_soft_margin_weight", lambda L, r: L.nn.MultiLabelSoftMarginLoss(weight=_w(L, W3), reduction=r), [(5, 3), NoGrad(Y01)]),
    ("multilabel_soft_margin_1d", lambda L, r: L.nn.MultiLabelSoftMarginLoss(reduction=r), [(3,), NoGrad(Y01[0])]),
    ("multilabel_soft_margin_3d", lambda L, r: L.nn.MultiLabelSoftMarginLoss(reduction=r), [(2, 4, 3), NoGrad(RNG.uniform(0, 1, (2, 4, 3)))]),
    ("multilabel_margin", lambda L, r: L.nn.MultiLabelMarginLoss(reduction=r), [(5, 4), ML_T]),
    ("multilabel_margin_1d", lambda L, r: L.nn.MultiLabelMarginLoss(reduction=r), [(4,), ML_T1]),
    ("hinge_embedding", lambda L, r: L.nn.HingeEmbeddingLoss(reduction=r), [(4, 3), NoGrad(HINGE_T)]),
    ("hinge_embedding_margin", lambda L, r: L.nn.HingeEmbeddingLoss(margin=0.5, reduction=r), [(4, 3), NoGrad(SIGN43)]),
    ("hinge_embedding_target_broadcast", lambda L, r: L.nn.HingeEmbeddingLoss(margin=2.0, reduction=r), [(4, 3), NoGrad(SIGN43[1])]),
    ("hinge_embedding_1d", lambda L, r: L.nn.HingeEmbeddingLoss(reduction=r), [(5,), NoGrad(SIGN)]),
    ("triplet_distance", lambda L, r: L.nn.TripletMarginWithDistanceLoss(reduction=r), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_distance_swap_margin", lambda L, r: L.nn.TripletMarginWithDistanceLoss(margin=2.5, swap=True, reduction=r), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_distance_cosine", lambda L, r: L.nn.TripletMarginWithDistanceLoss(distance_function=_cos_dist(L), margin=0.4, reduction=r), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_distance_1d", lambda L, r: L.nn.TripletMarginWithDistanceLoss(margin=3.0, reduction=r), [(3,), (3,), (3,)]),
    ("triplet_distance_broadcast", lambda L, r: L.nn.TripletMarginWithDistanceLoss(margin=3.0, swap=True, reduction=r), [(5, 3), (1, 3), (5, 3)]),
]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("build,inputs", [c[1:] for c in NEW_LOSSES], ids=[c[0] for c in NEW_LOSSES])
def test_new_losses_every_reduction(build, inputs, reduction):
    check_module(lambda lib: build(lib, reduction), *inputs, modes=("train",), return_buffers=False)


F_NEW = [   # the functional forms, with torch's defaults and the legacy size_average/reduce flags
    ("gaussian_nll_loss", lambda L, x, t, v: L.nn.functional.gaussian_nll_loss(x, t, v), [(4, 3), (4, 3), VAR43]),
    ("gaussian_nll_loss_full_eps", lambda L, x, t, v: L.nn.functional.gaussian_nll_loss(x, t, v, True, 0.01, "sum"), [(4, 3), (4, 3), VAR_SMALL]),
    ("poisson_nll_loss", lambda L, x, t: L.nn.functional.poisson_nll_loss(x, t), [(4, 3), COUNTS]),
    ("poisson_nll_loss_positional", lambda L, x, t: L.nn.functional.poisson_nll_loss(x, t, False, True, None, 0.1, None, "none"), [VAR43, COUNTS_POS]),
    ("poisson_nll_loss_size_average_false", lambda L, x, t: L.nn.functional.poisson_nll_loss(x, t, size_average=False), [(4, 3), COUNTS]),
    ("poisson_nll_loss_reduce_false", lambda L, x, t: L.nn.functional.poisson_nll_loss(x, t, reduce=False, reduction="sum"), [(4, 3), COUNTS]),
    ("poisson_nll_loss_int_target", lambda L, x, t: L.nn.functional.poisson_nll_loss(x, t, full=True), [(4, 3), COUNTS.astype(np.int64)]),
    ("soft_margin_loss", lambda L, x, t: L.nn.functional.soft_margin_loss(x, t), [(4, 3), NoGrad(SIGN43)]),
    ("soft_margin_loss_reduce_false", lambda L, x, t: L.nn.functional.soft_margin_loss(x, t, reduce=False), [(4, 3), NoGrad(SIGN43)]),
    ("multilabel_soft_margin_loss", lambda L, x, t: L.nn.functional.multilabel_soft_margin_loss(x, t), [(5, 3), Y01]),
    ("multilabel_soft_margin_loss_weight_bcast", lambda L, x, t, w: L.nn.functional.multilabel_soft_margin_loss(x, t, w, reduction="none"), [(5, 3), Y01[0].copy(), NoGrad(W53)]),
    ("multilabel_soft_margin_loss_size_average_false", lambda L, x, t: L.nn.functional.multilabel_soft_margin_loss(x, t, size_average=False), [(5, 3), Y01]),
    ("multilabel_margin_loss", lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t), [(5, 4), ML_T]),
    ("multilabel_margin_loss_reduce_false", lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t, reduce=False), [(5, 4), ML_T]),
    ("multilabel_margin_loss_0d", lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t, reduction="none"), [(), np.array(0)]),
    ("multilabel_margin_loss_empty_batch_none", lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t, reduction="none"), [(0, 4), np.zeros((0, 4), np.int64)]),
    ("hinge_embedding_loss", lambda L, x, t: L.nn.functional.hinge_embedding_loss(x, t), [(4, 3), NoGrad(HINGE_T)]),
    ("hinge_embedding_loss_int_target", lambda L, x, t: L.nn.functional.hinge_embedding_loss(x, t, 0.7, reduction="none"), [(4, 3), SIGN43.astype(np.int64)]),
    ("hinge_embedding_loss_outer_broadcast", lambda L, x, t: L.nn.functional.hinge_embedding_loss(x, t, reduction="none"), [(4,), NoGrad(SIGN43[:, :1].copy())]),
    ("hinge_embedding_loss_size_average_false", lambda L, x, t: L.nn.functional.hinge_embedding_loss(x, t, size_average=False), [(4, 3), NoGrad(HINGE_T)]),
    ("triplet_margin_with_distance_loss", lambda L, a, p, n: L.nn.functional.triplet_margin_with_distance_loss(a, p, n), [(5, 3), (5, 3), (5, 3)]),
    ("triplet_margin_with_distance_loss_l1_swap", lambda L, a, p, n: L.nn.functional.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1), margin=2.0, swap=True, reduction="none"), [(5, 3), (5, 3), (5, 3)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in F_NEW], ids=[c[0] for c in F_NEW])
def test_new_functional_losses(fn, inputs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "size_average and reduce args will be deprecated")   # torch's
        check_op(fn, *inputs)


def test_new_losses_legacy_flags_change_the_reduction():
    """size_average/reduce override `reduction` (a loss that ignored them would give the mean)."""
    F = ember.nn.functional
    x, t = ember.tensor(RNG.standard_normal((4, 3))), ember.tensor(SIGN43)
    for name in ["poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss"]:
        fn = getattr(F, name)
        np.testing.assert_allclose(fn(x, t, size_average=False).item(), fn(x, t, reduction="sum").item(), rtol=1e-12)
        assert fn(x, t, reduce=False, reduction="sum").shape == fn(x, t, reduction="none").shape
    for cls in [ember.nn.PoissonNLLLoss, ember.nn.SoftMarginLoss, ember.nn.MultiLabelSoftMarginLoss,
                ember.nn.MultiLabelMarginLoss, ember.nn.HingeEmbeddingLoss]:
        assert cls(size_average=False).reduction == "sum" and cls(reduce=False).reduction == "none"


@pytest.mark.parametrize("x,t", [([1.0, 0.5, 1.5], [-1.0, -1.0, -1.0]), ([0.0, 2.0, -1.0], [1.0, 0.0, -1.0])])
def test_hinge_embedding_gradient_at_the_margin_as_torch(x, t):
    """torch's clamp_min passes the gradient where margin - input is exactly 0 (a relu would not)."""
    check_op(lambda L, x, t: L.nn.functional.hinge_embedding_loss(x, t, reduction="sum"), np.array(x), NoGrad(np.array(t)))


def test_multilabel_margin_loss_of_an_empty_batch():
    """torch returns uninitialised memory for 'sum' and 'mean' of an empty batch (1.7e21 one run, 0 the next):
    here the sum is 0 and the mean 0 / 0 = NaN, as the other losses."""
    x, t = ember.zeros(0, 4, requires_grad=True), ember.zeros(0, 4, dtype=ember.int64)
    F = ember.nn.functional
    assert F.multilabel_margin_loss(x, t, reduction="sum").item() == 0.0
    with np.errstate(all="ignore"):
        assert np.isnan(F.multilabel_margin_loss(x, t).item())
    F.multilabel_margin_loss(x, t, reduction="sum").backward()
    assert x.grad is None or x.grad.shape == (0, 4)


def test_multilabel_margin_gradient_at_a_zero_margin_as_torch():
    """torch counts a pair only where 1 - (x[j] - x[i]) > 0: exactly 0 gives no gradient."""
    check_op(lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t, reduction="sum"),
             np.array([[2.0, 1.0, 0.5, 1.25]]), np.array([[0, 3, -1, 1]]))


def test_soft_margin_loss_is_stable_for_large_margins():
    """Ember's log(1 + exp(z)) does not overflow (torch's gives inf from z = 89 in float32); same gradient."""
    x, t = ember.tensor([-100.0, 100.0], requires_grad=True), ember.tensor([1.0, 1.0])
    loss = ember.nn.functional.soft_margin_loss(x, t, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [100.0, 0.0], atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0], atol=1e-6)


def test_gaussian_nll_loss_double_backward():
    def fn(lib, x, t, v):
        g = lib.autograd.grad(lib.nn.functional.gaussian_nll_loss(x, t, v, full=True), (x, v), create_graph=True)
        return (g[0] * g[0]).sum() + (g[1] * g[1].detach().sin()).sum()
    check_op(fn, (4, 3), NoGrad((4, 3)), VAR43, dtypes=("float64",))


@pytest.mark.parametrize("name,args", [
    ("gaussian_nll_loss", lambda: (ember.randn(4, 3), ember.randn(4, 3), ember.rand(4) + 0.5)),
    ("poisson_nll_loss", lambda: (ember.randn(4, 3), ember.tensor(COUNTS, dtype=ember.float32))),
    ("soft_margin_loss", lambda: (ember.randn(4, 3), ember.tensor(SIGN43, dtype=ember.float32))),
    ("multilabel_soft_margin_loss", lambda: (ember.randn(5, 3), ember.tensor(Y01, dtype=ember.float32))),
    ("multilabel_margin_loss", lambda: (ember.randn(5, 4), ember.tensor(ML_T))),
    ("hinge_embedding_loss", lambda: (ember.randn(4, 3), ember.tensor(HINGE_T, dtype=ember.float32))),
    ("triplet_margin_with_distance_loss", lambda: (ember.randn(5, 3), ember.randn(5, 3), ember.randn(5, 3))),
])
def test_new_losses_compile_with_their_backward(name, args):
    """ember.compile replays the loss and its gradient (composites of traced ops, no Python-side state)."""
    fn = getattr(ember.nn.functional, name)

    def step(x, *rest):
        x = x.detach().requires_grad_(True)
        loss = fn(x, *rest)
        loss.backward()
        return loss.detach(), x.grad

    compiled = ember.compile(step)
    for _ in range(2):   # trace, then replay on new values
        a = args()
        want, got = step(*a), compiled(*a)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.cache_info()["hits"] == 1


NEW_NAMES = ["gaussian_nll_loss", "poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
             "multilabel_margin_loss", "hinge_embedding_loss", "triplet_margin_with_distance_loss",
             "GaussianNLLLoss", "PoissonNLLLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
             "MultiLabelMarginLoss", "HingeEmbeddingLoss", "TripletMarginWithDistanceLoss"]


@pytest.mark.parametrize("name", NEW_NAMES)
def test_new_losses_have_torchs_signature(name):
    import torch
    where = (ember.nn, torch.nn) if name[0].isupper() else (ember.nn.functional, torch.nn.functional)
    fns = [getattr(m, name) for m in where]
    if name[0].isupper():
        fns = [f.__init__ for f in fns] + [getattr(m, name).forward for m in where]
        pairs = [(fns[0], fns[1]), (fns[2], fns[3])]
    else:
        pairs = [tuple(fns)]
    for mine, theirs in pairs:
        ps = [(p.name, p.kind, p.default) for p in inspect.signature(mine).parameters.values()]
        want = [(p.name, p.kind, p.default) for p in inspect.signature(theirs).parameters.values()]
        assert ps == want


def _new_error_cases(L):
    """(id, call, torch's exception type, Ember's exception type, Ember's message)."""
    F, z, i64 = L.nn.functional, L.zeros, L.int64
    return [
        ("gaussian_negative_float_var", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), -1.0), ValueError,
         "gaussian_nll_loss: var has negative entry/entries: got var = -1.0"),
        ("gaussian_negative_var", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), L.full((4, 3), -0.5)), ValueError,
         "gaussian_nll_loss: var has negative entry/entries (min -0.5)"),
        ("gaussian_var_last_dim", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), L.ones(3)), ValueError,
         "gaussian_nll_loss: var is of incorrect size: (3,) for input (4, 3) (expected (4, 3), (4,), or (4, 3) "
         "with one dimension of size 1)"),
        ("gaussian_var_two_ones", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), L.ones(1, 1)), ValueError,
         "gaussian_nll_loss: var is of incorrect size: (1, 1) for input (4, 3) (expected (4, 3), (4,), or (4, 3) "
         "with one dimension of size 1)"),
        ("gaussian_var_0d", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), L.ones(())), ValueError,
         "gaussian_nll_loss: var is of incorrect size: () for input (4, 3) (expected (4, 3), (4,), or (4, 3) "
         "with one dimension of size 1)"),
        ("gaussian_var_extra_dim", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), L.ones(4, 3, 1)), ValueError,
         "gaussian_nll_loss: var is of incorrect size: (4, 3, 1) for input (4, 3) (expected (4, 3), (4,), or "
         "(4, 3) with one dimension of size 1)"),
        ("gaussian_target", lambda: F.gaussian_nll_loss(z(4, 3), z(4), L.ones(4, 3)), RuntimeError,
         "gaussian_nll_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together"),
        ("gaussian_reduction", lambda: F.gaussian_nll_loss(z(4, 3), z(4, 3), 1.0, reduction="avg"), ValueError,
         "gaussian_nll_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("poisson_target", lambda: F.poisson_nll_loss(z(4, 3), z(4)), RuntimeError,
         "poisson_nll_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together"),
        ("poisson_reduction", lambda: F.poisson_nll_loss(z(4, 3), z(4, 3), reduction="avg"), ValueError,
         "poisson_nll_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("soft_margin_target", lambda: F.soft_margin_loss(z(4, 3), z(4)), RuntimeError,
         "soft_margin_loss: target shape (4,) does not broadcast to input shape (4, 3)"),
        ("soft_margin_wider_target", lambda: F.soft_margin_loss(z(4, 1), z(4)), RuntimeError,
         "soft_margin_loss: target shape (4,) does not broadcast to input shape (4, 1)"),
        ("soft_margin_target_grad", lambda: F.soft_margin_loss(z(3), z(3, requires_grad=True)), RuntimeError,
         "soft_margin_loss: is not differentiable with respect to target; pass target.detach()"),
        ("soft_margin_reduction", lambda: F.soft_margin_loss(z(3), z(3), reduction="avg"), ValueError,
         "soft_margin_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("multilabel_soft_margin_target", lambda: F.multilabel_soft_margin_loss(z(4, 3), z(4)), RuntimeError,
         "multilabel_soft_margin_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together"),
        ("multilabel_soft_margin_weight", lambda: F.multilabel_soft_margin_loss(z(4, 3), z(4, 3), L.ones(4)),
         RuntimeError, "multilabel_soft_margin_loss: weight shape (4,) and loss shape (4, 3) cannot be broadcast "
                       "together"),
        ("multilabel_soft_margin_0d", lambda: F.multilabel_soft_margin_loss(z(()), z(())), IndexError,
         "multilabel_soft_margin_loss: expected a (C,) or (N, C) input, got a 0-d tensor"),
        ("multilabel_soft_margin_reduction", lambda: F.multilabel_soft_margin_loss(z(4, 3), z(4, 3), reduction="avg"),
         ValueError, "multilabel_soft_margin_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("multilabel_margin_target_shape", lambda: F.multilabel_margin_loss(z(2, 4), z(2, 3, dtype=i64)), RuntimeError,
         "multilabel_margin_loss: inconsistent target size: (2, 3) for input of size: (2, 4)"),
        ("multilabel_margin_flat_target", lambda: F.multilabel_margin_loss(z(2, 4), z(8, dtype=i64)), RuntimeError,
         "multilabel_margin_loss: inconsistent target size: (8,) for input of size: (2, 4)"),
        ("multilabel_margin_1d_target", lambda: F.multilabel_margin_loss(z(4), z(3, dtype=i64)), RuntimeError,
         "multilabel_margin_loss: inconsistent target size: (3,) for input of size: (4,)"),
        ("multilabel_margin_2d_target_1d_input", lambda: F.multilabel_margin_loss(z(4), z(1, 4, dtype=i64)),
         RuntimeError, "multilabel_margin_loss: inconsistent target size: (1, 4) for input of size: (4,)"),
        ("multilabel_margin_3d", lambda: F.multilabel_margin_loss(z(2, 4, 1), z(2, 4, 1, dtype=i64)), RuntimeError,
         "multilabel_margin_loss: expected a non-empty (C,) or (N, C) input (N may be 0), got shape (2, 4, 1)"),
        ("multilabel_margin_no_classes", lambda: F.multilabel_margin_loss(z(2, 0), z(2, 0, dtype=i64)), RuntimeError,
         "multilabel_margin_loss: expected a non-empty (C,) or (N, C) input (N may be 0), got shape (2, 0)"),
        ("multilabel_margin_float_target", lambda: F.multilabel_margin_loss(z(2, 4), z(2, 4)), RuntimeError,
         "multilabel_margin_loss: expected an integer (int64) target, got float32"),
        ("multilabel_margin_target_too_big", lambda: F.multilabel_margin_loss(z(2, 4), L.tensor([[4, -1, 0, 0], [0] * 4])),
         RuntimeError, "multilabel_margin_loss: target index 4 is out of range for 4 classes (-1 ends a row's targets)"),
        ("multilabel_margin_target_below_minus_one", lambda: F.multilabel_margin_loss(z(1, 4), L.tensor([[3, -2, 0, 1]])),
         RuntimeError, "multilabel_margin_loss: target index -2 is out of range for 4 classes (-1 ends a row's "
                       "targets)"),
        ("multilabel_margin_reduction", lambda: F.multilabel_margin_loss(z(1, 4), z(1, 4, dtype=i64), reduction="avg"),
         ValueError, "multilabel_margin_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("hinge_target", lambda: F.hinge_embedding_loss(z(4, 3), z(4)), RuntimeError,
         "hinge_embedding_loss: target shape (4,) and input shape (4, 3) cannot be broadcast together"),
        ("hinge_reduction", lambda: F.hinge_embedding_loss(z(4, 3), z(4, 3), reduction="avg"), ValueError,
         "hinge_embedding_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        ("triplet_ndim", lambda: F.triplet_margin_with_distance_loss(z(4, 3), z(4, 3), z(3)), RuntimeError,
         "triplet_margin_with_distance_loss: the anchor, positive, and negative tensors are expected to have the "
         "same number of dimensions, but got: anchor 2D (4, 3), positive 2D (4, 3), and negative 1D (3,) inputs"),
        ("triplet_shapes", lambda: F.triplet_margin_with_distance_loss(z(4, 3), z(4, 3), z(4, 2)), RuntimeError,
         "triplet_margin_with_distance_loss: anchor (4, 3) and negative (4, 2) cannot be broadcast together"),
        ("triplet_swap_shapes", lambda: F.triplet_margin_with_distance_loss(z(1, 3), z(4, 3), z(2, 3), swap=True),
         RuntimeError, "triplet_margin_with_distance_loss: positive (4, 3) and negative (2, 3) cannot be broadcast "
                       "together"),
        ("triplet_margin", lambda: F.triplet_margin_with_distance_loss(z(4, 3), z(4, 3), z(4, 3), margin=0), ValueError,
         "triplet_margin_with_distance_loss: margin must be greater than 0, got 0"),
        ("triplet_reduction", lambda: F.triplet_margin_with_distance_loss(z(4, 3), z(4, 3), z(4, 3), margin=-1,
                                                                          reduction="avg"), ValueError,
         "triplet_margin_with_distance_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    ]


NEW_ERRORS = _new_error_cases(ember)


@pytest.mark.parametrize("k", range(len(NEW_ERRORS)), ids=[c[0] for c in NEW_ERRORS])
def test_new_loss_errors_exactly_where_torch_raises(k):
    """Each bad call raises in torch too (the same exception type), and here with the op and the shapes."""
    import torch
    name, call, exc, message = NEW_ERRORS[k]
    torch_call = _new_error_cases(torch)[k][1]
    with pytest.raises(exc):
        torch_call()
    raises_exactly(call, exc, message)


def test_triplet_margin_with_distance_module_refuses_a_margin_of_zero_as_torch():
    import torch
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                                             "got 0 instead"):
            lib.nn.TripletMarginWithDistanceLoss(margin=0)


def test_triplet_margin_with_distance_module_keeps_a_distance_module_as_a_submodule():
    class Scaled(ember.nn.Module):   # a learned distance: its parameters are the loss's
        def __init__(self):
            super().__init__()
            self.scale = ember.nn.Parameter(ember.ones(3))

        def forward(self, x, y):
            return ((x - y) * self.scale).norm(dim=-1)

    loss = ember.nn.TripletMarginWithDistanceLoss(distance_function=Scaled())
    assert [n for n, _ in loss.named_parameters()] == ["distance_function.scale"]
    out = loss(ember.zeros(2, 3), ember.ones(2, 3), ember.zeros(2, 3))
    out.backward()
    assert loss.distance_function.scale.grad is not None and out.item() > 0


def test_new_losses_on_two_devices_name_the_operand(fake_cuda):
    F = ember.nn.functional
    x = ember.zeros(4, 3, device="cuda")
    cases = [(lambda: F.gaussian_nll_loss(x, x, ember.ones(4, 3)), "var"),
             (lambda: F.poisson_nll_loss(x, ember.zeros(4, 3)), "target"),
             (lambda: F.soft_margin_loss(x, ember.zeros(4, 3)), "target"),
             (lambda: F.multilabel_soft_margin_loss(x, x, ember.ones(3)), "weight"),
             (lambda: F.multilabel_margin_loss(x, ember.zeros(4, 3, dtype=ember.int64)), "target"),
             (lambda: F.hinge_embedding_loss(x, ember.zeros(4, 3)), "target"),
             (lambda: F.triplet_margin_with_distance_loss(x, x, ember.zeros(4, 3)), "negative")]
    for call, what in cases:
        with pytest.raises(RuntimeError, match=rf"expected all tensors to be on the same device, .* cuda:0 and cpu "
                                               rf"\(\w+ \(4, 3\) float32 cuda:0, {what} "):
            call()


P43 = np.abs(np.random.default_rng(7).standard_normal((4, 3))) % 1 * 0.9 + 0.05   # probabilities in (0, 1)
OLD_LOSSES = {   # the older functional losses: (call with legacy flags, inputs)
    "mse_loss": (lambda L, kw, x, t: L.nn.functional.mse_loss(x, t, **kw), [(4, 3), (4, 3)]),
    "l1_loss": (lambda L, kw, x, t: L.nn.functional.l1_loss(x, t, **kw), [(4, 3), (4, 3)]),
    "smooth_l1_loss": (lambda L, kw, x, t: L.nn.functional.smooth_l1_loss(x, t, **kw), [(4, 3), (4, 3)]),
    "nll_loss": (lambda L, kw, x, t: L.nn.functional.nll_loss(x, t, **kw), [(4, 3), np.array([0, 2, 1, 2])]),
    "cross_entropy": (lambda L, kw, x, t: L.nn.functional.cross_entropy(x, t, **kw), [(4, 3), np.array([0, 2, 1, 2])]),
    "binary_cross_entropy": (lambda L, kw, x, t: L.nn.functional.binary_cross_entropy(x, t, **kw), [P43, NoGrad(P43[::-1].copy())]),
    "binary_cross_entropy_with_logits": (lambda L, kw, x, t: L.nn.functional.binary_cross_entropy_with_logits(x, t, **kw), [(4, 3), NoGrad(P43)]),
    "kl_div": (lambda L, kw, x, t: L.nn.functional.kl_div(x, t, **kw), [(4, 3), NoGrad(P43)]),
    "multi_margin_loss": (lambda L, kw, x, t: L.nn.functional.multi_margin_loss(x, t, **kw), [(4, 3), np.array([0, 2, 1, 2])]),
    "margin_ranking_loss": (lambda L, kw, a, b, t: L.nn.functional.margin_ranking_loss(a, b, t, **kw), [(4,), (4,), NoGrad(np.array([1.0, -1.0, 1.0, -1.0]))]),
    "cosine_embedding_loss": (lambda L, kw, a, b, t: L.nn.functional.cosine_embedding_loss(a, b, t, **kw), [(4, 3), (4, 3), NoGrad(np.array([1.0, -1.0, 1.0, -1.0]))]),
    "triplet_margin_loss": (lambda L, kw, a, p, n: L.nn.functional.triplet_margin_loss(a, p, n, **kw), [(4, 3), (4, 3), (4, 3)]),
}


@pytest.mark.parametrize("name", sorted(OLD_LOSSES))
@pytest.mark.parametrize("kw", [dict(size_average=False), dict(reduce=False), dict(size_average=True, reduce=True),
                                dict(size_average=False, reduce=True, reduction="none")], ids=str)
def test_legacy_size_average_and_reduce_flags_as_torch(name, kw):
    # the functional forms took the flags and ignored them: F.mse_loss(x, t, size_average=False) was the mean
    fn, inputs = OLD_LOSSES[name]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "size_average and reduce args will be deprecated")   # torch's
        check_op(lambda L, *a: fn(L, kw, *a), *inputs)


# ------------------------------------------------------------------ CTC loss
CTC_RNG = np.random.default_rng(11)
CTC_T, CTC_N, CTC_C = 7, 4, 5
CTC_TARGETS = np.array([[1, 2, 2, 3], [4, 4, 4, 1], [2, 3, 1, 1], [1, 1, 1, 1]], dtype=np.int64)  # repeats
CTC_TL = np.array([4, 3, 2, 0], dtype=np.int64)
CTC_IL = np.array([7, 6, 5, 3], dtype=np.int64)
CTC_CONCAT = np.concatenate([CTC_TARGETS[n, :CTC_TL[n]] for n in range(CTC_N)])
# row 0: 1 2 2 3 needs 5 frames (a blank between the 2s), has 2: impossible (inf); row 1: 4 4 needs 3, has 3
CTC_IMPOSSIBLE = (np.array([[1, 2, 2, 3], [4, 4, 0, 0]], dtype=np.int64), (2, 3), (4, 2))


def _ctc(lib, x, targets, il, tl, **kw):
    return lib.nn.functional.ctc_loss(x.log_softmax(-1), targets, il, tl, **kw)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("targets", ["padded", "concatenated"])
def test_ctc_loss_matches_torch(reduction, targets):
    tg = CTC_TARGETS if targets == "padded" else CTC_CONCAT
    check_op(lambda lib, x, t: _ctc(lib, x, t, tuple(CTC_IL), tuple(CTC_TL), reduction=reduction),
             (CTC_T, CTC_N, CTC_C), tg, low=-3, high=3)


def test_ctc_loss_lengths_as_tensors_blank_and_unbatched():
    tg = np.where(CTC_TARGETS == 4, 0, CTC_TARGETS)   # blank=4: the labels are 0..3
    check_op(lambda lib, x, t, il, tl: _ctc(lib, x, t, il, tl, blank=4), (CTC_T, CTC_N, CTC_C), tg, CTC_IL, CTC_TL)
    check_op(lambda lib, x, t: _ctc(lib, x, t, lib.tensor(6), lib.tensor(4), reduction="none"),
             (CTC_T, CTC_C), CTC_TARGETS[0])
    check_op(lambda lib, x, t: lib.nn.CTCLoss(blank=0, reduction="sum")(x.log_softmax(-1), t, lib.tensor(CTC_IL),
                                                                         lib.tensor(CTC_TL)),
             (CTC_T, CTC_N, CTC_C), CTC_TARGETS)
    check_op(lambda lib, x, t: lib.ctc_loss(x.log_softmax(-1), t, tuple(CTC_IL), tuple(CTC_TL)),   # 'none'
             (CTC_T, CTC_N, CTC_C), CTC_TARGETS)
    check_op(lambda lib, x, t: lib.ctc_loss(x.log_softmax(-1), t, tuple(CTC_IL), tuple(CTC_TL), 0, 1),  # 'mean'
             (CTC_T, CTC_N, CTC_C), CTC_TARGETS)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")   # NumPy making torch's NaN
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_ctc_loss_impossible_alignment_is_inf_or_zero(zero_infinity, reduction):
    tg, il, tl = CTC_IMPOSSIBLE
    t_out, e_out = check_op(lambda lib, x, t: _ctc(lib, x, t, il, tl, reduction=reduction,
                                                    zero_infinity=zero_infinity), (5, 2, 5), tg)
    if reduction == "none":
        assert e_out[0].item() == (0.0 if zero_infinity else float("inf")) and np.isfinite(e_out[1].item())
    else:
        assert np.isinf(e_out.item()) != zero_infinity


def test_ctc_loss_gradient_is_the_posterior_after_log_softmax():
    """The test above passes log_softmax's output, where torch's gradient and the function's agree; on raw
    log-probabilities torch's kernel adds exp(log_probs): documented, and checked to stay that way."""
    x = ember.randn(4, 1, 3, requires_grad=True)
    ember.nn.functional.ctc_loss(x, ember.tensor([[1, 2]]), (4,), (2,)).backward()
    import torch
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    torch.nn.functional.ctc_loss(xt, torch.tensor([[1, 2]]), (4,), (2,)).backward()
    np.testing.assert_allclose(xt.grad.numpy() - np.exp(xt.detach().numpy()) / 2, x.grad.numpy(), atol=1e-5)


@pytest.mark.parametrize("call,message", [
    (lambda F, lp, t: F.ctc_loss(lp, t, (5,), (2, 2)), "ctc_loss: input_lengths must be of size batch_size 2, got 1"),
    (lambda F, lp, t: F.ctc_loss(lp, t, (5, 5), (2,)), "ctc_loss: target_lengths must be of size batch_size 2, got 1"),
    (lambda F, lp, t: F.ctc_loss(lp, t, (5, 6), (2, 2)), "ctc_loss: expected input_lengths to have values in [0, 5], but got value 6"),
    (lambda F, lp, t: F.ctc_loss(lp, t, (5, 5), (-1, 2)), "ctc_loss: expected target_lengths to have value at least 0, but got value -1"),
    (lambda F, lp, t: F.ctc_loss(lp, t, (5, 5), (2, 3)), "ctc_loss: expected targets of shape (N=2, S >= max(target_lengths)=3) or concatenated 1-D, got (2, 2)"),
    (lambda F, lp, t: F.ctc_loss(lp, t, (5, 5), (2, 2), blank=4), "ctc_loss: blank must be in label range [0, 4), got 4"),
    (lambda F, lp, t: F.ctc_loss(lp, t.flatten()[:3], (5, 5), (2, 2)), "ctc_loss: expected concatenated targets of size sum(target_lengths) = 4, got 3"),
    (lambda F, lp, t: F.ctc_loss(lp, t + 3, (5, 5), (2, 2)), "ctc_loss: targets must be class indices in [0, 4), got 4"),
    (lambda F, lp, t: F.ctc_loss(lp[0, 0], t, (5, 5), (2, 2)), "ctc_loss: expected log_probs of shape (T, N, C) or (T, C), got (4,)"),
])
def test_ctc_loss_errors(call, message):
    lp = ember.randn(5, 2, 4).log_softmax(2)
    t = ember.tensor([[1, 2], [3, 3]])
    raises_exactly(lambda: call(ember.nn.functional, lp, t), RuntimeError if "class indices" not in message
                   else IndexError, message)


def test_ctc_loss_bad_reduction():
    lp = ember.randn(5, 2, 4).log_softmax(2)
    raises_exactly(lambda: ember.nn.functional.ctc_loss(lp, ember.tensor([[1, 2], [3, 3]]), (5, 5), (2, 2),
                                                         reduction="bad"),
                   ValueError, "ctc_loss: bad is not a valid value for reduction")
    with pytest.raises(ValueError, match="reduction"):
        ember.nn.CTCLoss(reduction="avg")


# ------------------------------------------------------------------ AdaptiveLogSoftmaxWithLoss
ASM_TARGET = np.array([0, 3, 5, 9, 14, 19, 2, 12], dtype=np.int64)   # shortlist and both clusters


@pytest.mark.parametrize("kw", [dict(cutoffs=[4, 10]), dict(cutoffs=[6], div_value=2.0, head_bias=True),
                                dict(cutoffs=[2, 8, 15], div_value=1.5)])
def test_adaptive_log_softmax_forward_matches_torch(kw):
    check_module(lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, **kw), (8, 16), ASM_TARGET,
                 modes=("train",), return_buffers=False)
    check_module(lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, **kw), (16,), np.array(13),
                 modes=("train",), return_buffers=False)


def _asm_pair(**kw):
    import torch
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, **kw).double()
    em = ember.nn.AdaptiveLogSoftmaxWithLoss(16, 20, **kw).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("kw", [dict(cutoffs=[4, 10]), dict(cutoffs=[6], head_bias=True)])
def test_adaptive_log_softmax_log_prob_and_predict_match_torch(kw):
    import torch
    tm, em = _asm_pair(**kw)
    x = np.random.default_rng(5).standard_normal((6, 16)) * 3
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    lt, le = tm.log_prob(xt), em.log_prob(xe)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), atol=1e-10)
    g = np.random.default_rng(6).standard_normal((6, 20))
    lt.backward(torch.tensor(g))
    le.backward(ember.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(em.head.weight.grad.numpy(), tm.head.weight.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(em.tail[0][1].weight.grad.numpy(), tm.tail[0][1].weight.grad.numpy(), atol=1e-10)
    np.testing.assert_array_equal(em.predict(xe).numpy(), tm.predict(xt).numpy())
    assert em.log_prob(xe[0]).shape == (20,)   # torch 2.13 raises here (its head sees the 1-D input)
    out = em(xe, ember.tensor(ASM_TARGET[:6]))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")


def test_adaptive_log_softmax_errors():
    for bad in ([], [4, 2], [0, 4], [4, 20], [4, 4], [2.5]):
        with pytest.raises(ValueError, match="cutoffs should be"):
            ember.nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=bad)
    m = ember.nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[4, 10])
    raises_exactly(lambda: m(ember.randn(3, 16), ember.tensor([0, 1, 20])), RuntimeError,
                   "AdaptiveLogSoftmaxWithLoss: Target values should be in [0, 19], but values in range [0, 20] "
                   "were found.")
    raises_exactly(lambda: m(ember.randn(3, 16), ember.tensor([0, 1])), RuntimeError,
                   "AdaptiveLogSoftmaxWithLoss: Input and target should have the same size in the batch dimension, "
                   "got input (3, 16) and target (2,)")
    raises_exactly(lambda: m(ember.randn(16), ember.tensor([0])), RuntimeError,
                   "AdaptiveLogSoftmaxWithLoss: Input and target should have the same size in the batch dimension, "
                   "got input (16,) and target (1,)")
    raises_exactly(lambda: m(ember.randn(2, 16), ember.tensor(0)), RuntimeError,
                   "AdaptiveLogSoftmaxWithLoss: 0D target tensor expects 1D input tensors, but found inputs with "
                   "size (2, 16)")
    raises_exactly(lambda: m(ember.randn(2, 16), ember.zeros(2, 1, dtype=ember.int64)), RuntimeError,
                   "AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not supported, got "
                   "target (2, 1)")
# ------------------------------------------------------------------ NaN and infinities in ignored rows
_LOGITS = np.array([[np.nan, 1.0, 2.0], [0.5, np.inf, 1.0], [1.0, 2.0, 3.0], [-4.0, 0.3, -1.0]])
_TARGET = np.array([0, 0, 2, 1])   # rows 0 and 1 ignored (ignore_index=0)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.2}, {"weight": "w"}, {"weight": "w", "label_smoothing": 0.3}],
                         ids=["plain", "smoothing", "weight", "weight_smoothing"])
def test_cross_entropy_and_nll_loss_ignore_rows_with_nan_and_inf(reduction, kw):
    # an ignored row gives 0 and leaves the mean and sum alone, whatever its logits (not 0 * NaN)
    w = np.array([0.5, 2.0, 1.5])
    def call(lib, x, t, weight, fn):
        extra = dict(kw, weight=weight) if "weight" in kw else kw
        return getattr(lib.nn.functional, fn)(x, t, ignore_index=0, reduction=reduction, **extra)
    t_out, _ = check_op(lambda lib, x, t, weight: call(lib, x, t, weight, "cross_entropy"),
                        _LOGITS, _TARGET, NoGrad(w))
    assert np.isfinite(t_out.detach().numpy()).all()
    if "label_smoothing" not in kw:
        check_op(lambda lib, x, t, weight: call(lib, x, t, weight, "nll_loss"), _LOGITS, _TARGET, NoGrad(w))


# NaN and infinities: an infinite |x - y| gives +-1 (times delta), not the unused square's 0 * inf = NaN,
# and a NaN difference a NaN gradient, as torch's smooth_l1/huber backward
X_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -0.5, 0.2, np.inf, 3.0])
Y_SPECIAL = np.array([0.3, np.nan, 1.0, np.inf, -np.inf, 0.5, 0.0, np.inf, 2.5])


@pytest.mark.parametrize("fn", [
    lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, reduction="none"),
    lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, reduction="sum", beta=0.5),
    lambda L, x, y: L.nn.functional.huber_loss(x, y, reduction="none", delta=2.0),
    lambda L, x, y: L.nn.functional.huber_loss(x, y, reduction="mean"),
    lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y.abs().clamp(max=1), reduction="none"),
    lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="none"),
], ids=["smooth_l1", "smooth_l1_beta", "huber", "huber_mean", "bce_logits", "kl_div"])
def test_losses_at_nan_and_infinities_as_torch(fn):
    check_op(fn, X_SPECIAL, NoGrad(Y_SPECIAL) if "kl_div" in fn.__code__.co_names else Y_SPECIAL)
    check_op(fn, Y_SPECIAL, NoGrad(X_SPECIAL) if "kl_div" in fn.__code__.co_names else X_SPECIAL)


def test_weights_that_require_grad_are_accepted_without_grad_mode_as_torch():
    # torch raises only when it would record the op: under no_grad a weight that requires grad is fine
    import torch
    x, t, w = RNG.standard_normal((4, 3)), np.array([0, 2, 1, 1]), np.array([0.5, 2.0, 1.0])
    with torch.no_grad():
        want = torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(t),
                                                     weight=torch.tensor(w, requires_grad=True)).item()
    with ember.no_grad():
        got = ember.nn.functional.multi_margin_loss(ember.tensor(x), ember.tensor(t),
                                                    weight=ember.tensor(w, requires_grad=True)).item()
        ember.nn.functional.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(x),
                                                             pos_weight=ember.ones(3, requires_grad=True))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _bce_call(kind, module, reduction="mean", pos_weight=False, x_grad=False, w_shape=(3,)):
    """A binary cross-entropy call, as a function of the library, with a weight that requires grad."""
    def call(L):
        x = L.tensor(RNG_W.uniform(0.1, 0.9, (4, 3)), requires_grad=x_grad)
        t = L.tensor(RNG_W.uniform(0.0, 1.0, (4, 3)))
        w = L.tensor(RNG_W.uniform(0.5, 2.0, w_shape), requires_grad=True)
        kw = {"pos_weight": L.tensor([1.0, 2.0, 0.5])} if pos_weight else {}
        if module:
            cls = L.nn.BCELoss if kind == "binary_cross_entropy" else L.nn.BCEWithLogitsLoss
            return cls(weight=w, reduction=reduction, **kw)(x, t)
        return getattr(L.nn.functional, kind)(x, t, weight=w, reduction=reduction, **kw)
    return call


RNG_W = np.random.default_rng(5)
BCE_WEIGHT_GRAD = [(kind, module, reduction, pw, x_grad, w_shape)
                   for kind, pws in (("binary_cross_entropy", (False,)),
                                     ("binary_cross_entropy_with_logits", (False, True)))
                   for pw in pws
                   for module in (False, True)
                   for reduction, x_grad, w_shape in (("mean", True, (3,)), ("none", False, (4, 3)),
                                                      ("sum", True, ()))]


@pytest.mark.parametrize("kind,module,reduction,pos_weight,x_grad,w_shape", BCE_WEIGHT_GRAD)
def test_binary_cross_entropy_weight_that_requires_grad_raises_as_torch(kind, module, reduction, pos_weight,
                                                                        x_grad, w_shape):
    # torch has no derivative for weight: it raises whenever it would record the op, even with an input that
    # needs no grad (Ember differentiated the weight)
    call = _bce_call(kind, module, reduction, pos_weight, x_grad, w_shape)
    e = raises_as_torch(call, RuntimeError, f"{kind}: is not differentiable with respect to argument 'weight'; "
                        "this input cannot have requires_grad True (pass weight.detach())",
                        f"The function '{kind}' is not differentiable with respect to argument 'weight'. This "
                        "input cannot have requires_grad True.")
    assert "test_loss.py:" in str(e)


@pytest.mark.parametrize("kind,module,reduction,pos_weight,x_grad,w_shape", BCE_WEIGHT_GRAD)
def test_binary_cross_entropy_weight_that_requires_grad_is_accepted_under_no_grad_as_torch(
        kind, module, reduction, pos_weight, x_grad, w_shape):
    import torch
    call = _bce_call(kind, module, reduction, pos_weight, x_grad, w_shape)
    state = RNG_W.bit_generator.state
    with torch.no_grad():
        want = call(torch)
    RNG_W.bit_generator.state = state   # the same inputs for Ember
    with ember.no_grad():
        got = call(ember)
    assert not got.requires_grad
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call,message", [
    # torch checks bce's weight shape (it expands the weight) before its requires_grad and the values' range
    (lambda L: L.nn.functional.binary_cross_entropy(L.full((4, 3), 2.0), L.full((4, 3), 0.5),
                                                    weight=L.ones(5, requires_grad=True)),
     "binary_cross_entropy: weight shape (5,) does not broadcast to input shape (4, 3)"),
    # the requires_grad before the range (Ember checked the range first)
    (lambda L: L.nn.functional.binary_cross_entropy(L.full((4, 3), 2.0), L.full((4, 3), 0.5),
                                                    weight=L.ones(3, requires_grad=True)),
     "binary_cross_entropy: is not differentiable with respect to argument 'weight'"),
    # a weight larger than the loss is refused (Ember broadcast the loss up to the weight's shape)
    (lambda L: L.nn.functional.binary_cross_entropy(L.full((4, 3), 0.5), L.full((4, 3), 0.5),
                                                    weight=L.ones(2, 4, 3)),
     "binary_cross_entropy: weight shape (2, 4, 3) does not broadcast to input shape (4, 3)"),
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.zeros(4, 3), L.zeros(4, 3), weight=L.ones(2, 4, 3)),
     "binary_cross_entropy_with_logits: weight shape (2, 4, 3) does not broadcast to input shape (4, 3)"),
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.zeros(4, 3), L.zeros(4, 3), weight=L.ones(5)),
     "binary_cross_entropy_with_logits: weight shape (5,) does not broadcast to input shape (4, 3)"),
    # with logits, both requires_grad checks come before the shapes, the weight's first
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.zeros(4, 3), L.zeros(4, 3),
                                                                weight=L.ones(3, requires_grad=True),
                                                                pos_weight=L.ones(5, requires_grad=True)),
     "binary_cross_entropy_with_logits: is not differentiable with respect to argument 'weight'"),
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.zeros(4, 3), L.zeros(4, 3),
                                                                weight=L.ones(5, requires_grad=True)),
     "binary_cross_entropy_with_logits: is not differentiable with respect to argument 'weight'"),
])
def test_binary_cross_entropy_weight_errors_in_torchs_order(call, message):
    import torch
    with pytest.raises(RuntimeError) as want:
        call(torch)
    if "not differentiable" in message:   # the same check first: torch words it its way
        assert "not differentiable with respect to argument 'weight'" in str(want.value)
    else:
        assert "not differentiable" not in str(want.value) and "between 0 and 1" not in str(want.value)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call(ember)


# nll_loss / cross_entropy with class weights that require grad: torch has no derivative for them and raises
# wherever it would record the op (Ember differentiated them: nll's term detached, the smoothing term not)
RNG_CW = np.random.default_rng(7)
CLASS_WEIGHT_GRAD = [   # (name, call(L, x, t, w), input shape)
    ("nll", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w), (4, 3)),
    ("nll_none", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w, reduction="none"), (4, 3)),
    ("nll_sum_ignore", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w, reduction="sum",
                                                                   ignore_index=1), (4, 3)),
    ("nll_unbatched", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w), (3,)),
    ("nll_3d", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w), (2, 3, 4)),
    ("nll_4d", lambda L, x, t, w: L.nn.functional.nll_loss(x, t, weight=w), (2, 3, 2, 2)),
    ("NLLLoss", lambda L, x, t, w: L.nn.NLLLoss(weight=w)(x, t), (4, 3)),
    ("ce", lambda L, x, t, w: L.nn.functional.cross_entropy(x, t, weight=w), (4, 3)),
    ("ce_smoothing", lambda L, x, t, w: L.nn.functional.cross_entropy(x, t, weight=w, label_smoothing=0.2), (4, 3)),
    ("ce_smoothing_none_5d", lambda L, x, t, w: L.nn.functional.cross_entropy(x, t, weight=w, reduction="none",
                                                                              label_smoothing=0.2), (2, 3, 2, 1, 2)),
    ("CrossEntropyLoss", lambda L, x, t, w: L.nn.CrossEntropyLoss(weight=w)(x, t), (4, 3)),
    ("linear_cross_entropy", lambda L, x, t, w: L.nn.functional.linear_cross_entropy(
        x, L.ones(3, 4, dtype=x.dtype), t, weight=w), (4, 4)),
]


def _class_weight_args(L, shape, x_grad):
    n_cls = 3
    target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    x = L.tensor(RNG_CW.standard_normal(shape), requires_grad=x_grad)
    t = L.tensor(RNG_CW.integers(0, n_cls, target_shape))
    w = L.tensor(RNG_CW.uniform(0.5, 2.0, n_cls), requires_grad=True)
    return x, t, w


@pytest.mark.parametrize("x_grad", [True, False], ids=["input_grad", "input_no_grad"])
@pytest.mark.parametrize("name,call,shape", CLASS_WEIGHT_GRAD, ids=[c[0] for c in CLASS_WEIGHT_GRAD])
def test_nll_and_cross_entropy_weight_that_requires_grad_raises_as_torch(name, call, shape, x_grad):
    op = "linear_cross_entropy" if name == "linear_cross_entropy" else \
        "nll_loss" if name.lower().startswith("nll") else "cross_entropy"
    kernel = "nll_loss2d_forward" if len(shape) > 2 and name != "linear_cross_entropy" else "nll_loss_forward"
    op = "cross_entropy" if op == "linear_cross_entropy" else op   # it calls cross_entropy
    e = raises_as_torch(lambda L: call(L, *_class_weight_args(L, shape, x_grad)), RuntimeError,
                        f"{op}: is not differentiable with respect to argument 'weight'; this input cannot have "
                        "requires_grad True (pass weight.detach())",
                        f"The function '{kernel}' is not differentiable with respect to argument 'weight'. This "
                        "input cannot have requires_grad True.")
    assert "test_loss.py:" in str(e)


@pytest.mark.parametrize("name,call,shape", CLASS_WEIGHT_GRAD, ids=[c[0] for c in CLASS_WEIGHT_GRAD])
def test_nll_and_cross_entropy_weight_that_requires_grad_is_accepted_under_no_grad_as_torch(name, call, shape):
    import torch
    state = RNG_CW.bit_generator.state
    with torch.no_grad():
        want = call(torch, *_class_weight_args(torch, shape, True))
    RNG_CW.bit_generator.state = state   # the same inputs for Ember
    with ember.no_grad():
        got = call(ember, *_class_weight_args(ember, shape, True))
    assert not got.requires_grad
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_cross_entropy_probability_target_differentiates_its_weight_as_torch():
    # with class probabilities torch's cross_entropy is a composite: the weight gets its gradient
    check_op(lambda L, x, p, w: L.nn.functional.cross_entropy(x, p, weight=w), (5, 4), NoGrad(PROBS), W4)
    check_op(lambda L, x, p, w: L.nn.functional.cross_entropy(x, p, weight=w, label_smoothing=0.1, reduction="none"),
             (5, 4), NoGrad(PROBS), W4)
    check_op(lambda L, x, p, w: L.nn.CrossEntropyLoss(weight=w, reduction="sum")(x, p), (5, 4), NoGrad(PROBS), W4)


@pytest.mark.parametrize("x_shape,t_shape,t_dtype,first", [
    # torch checks the target's batch size, and for 3-d and 5-d inputs its whole shape, before it records the
    # op; the target's dtype, its other shapes and its values after the weight's requires_grad
    ((4, 3), (5,), "int64", "shape"),
    ((4, 3), (), "int64", "shape"),
    ((2, 3, 4), (2, 5), "int64", "shape"),
    ((2, 3, 2, 1, 2), (2, 2, 1, 3), "int64", "shape"),
    ((4, 3), (4, 1), "int64", "weight"),
    ((2, 3, 4, 5), (2, 4, 6), "int64", "weight"),
    ((4, 3), (4,), "float32", "weight"),
    ((4, 3), (4,), "out_of_range", "weight"),
])
def test_nll_loss_weight_requires_grad_checked_in_torchs_order(x_shape, t_shape, t_dtype, first):
    import torch

    def call(L, fn):
        x = L.zeros(x_shape, requires_grad=True)
        t = L.full(t_shape, 5) if t_dtype == "out_of_range" else L.zeros(t_shape, dtype=getattr(L, t_dtype))
        return getattr(L.nn.functional, fn)(x, t, weight=L.ones(3, requires_grad=True))
    for fn in ("nll_loss", "cross_entropy"):
        with pytest.raises((RuntimeError, ValueError)) as want:
            call(torch, fn)
        with pytest.raises((RuntimeError, ValueError)) as got:
            call(ember, fn)
        assert ("not differentiable with respect to argument 'weight'" in str(want.value)) == (first == "weight")
        assert ("not differentiable with respect to argument 'weight'" in str(got.value)) == (first == "weight"), \
            str(got.value)


# pos_weight at non-finite targets, pos_weights and logits: torch's backward formulas, x: (pw t + 1 - t)
# sigmoid(x) - pw t (NaN where t or pw is infinite, inf - inf; the composite gave +-inf) and t:
# logsigmoid(-x) - pw logsigmoid(x) (pw * inf at x = -inf; the composite's inf - inf gave NaN)
PW_SPECIAL = np.array([2.0, 0.5, 1.0, np.inf, 0.0, 3.0, 0.5, 1.0, np.inf])


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_binary_cross_entropy_with_logits_pos_weight_at_nan_and_infinities_as_torch(reduction):
    fn = (lambda L, x, y, pw: L.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=pw,
                                                                               reduction=reduction))
    check_op(fn, X_SPECIAL, Y_SPECIAL, NoGrad(PW_SPECIAL))
    check_op(fn, Y_SPECIAL, X_SPECIAL, NoGrad(PW_SPECIAL))
    x = np.array([[-np.inf, -np.inf, -np.inf, np.inf, 0.3, -2.0]] * 2)
    y = np.array([[0.3, 1.0, 0.0, 0.5, np.inf, -np.inf], [np.nan, 0.2, 1.0, 0.0, 0.5, 2.0]])
    check_op(fn, x, y, NoGrad(np.array([2.0, 0.5, 1.0, 3.0, 0.5, 2.0])))
    check_op(fn, x, y, NoGrad(np.array([[np.inf], [0.5]])))   # broadcast over the classes


def test_binary_cross_entropy_with_logits_pos_weight_double_backward():
    def fn(lib, x, t, pw):
        gx, gt = lib.autograd.grad(lib.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
                                   (x, t), create_graph=True)
        return (gx * gx.detach().sin()).sum() + (gt * gt.detach().cos()).sum()
    check_op(fn, (4, 3), P01[:4], NoGrad(np.array([1.0, 2.0, 0.5])), dtypes=("float64",))


def test_binary_cross_entropy_with_logits_pos_weight_gradients_keep_their_inputs_dtypes():
    x = ember.randn(4, 3, requires_grad=True)
    t = ember.rand(4, 3, dtype=ember.float64, requires_grad=True)
    ember.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=ember.ones(3, dtype=ember.float64)).backward()
    assert (x.grad.dtype, t.grad.dtype) == (ember.float32, ember.float64)
