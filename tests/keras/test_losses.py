"""ember.keras.losses against torch (values and gradients) with Keras 3's conventions (losses/losses.py):
probabilities clipped to [1e-7, 1 - 1e-7] before the log, `label_smoothing`, `ignore_class`, and the
reductions of a Loss object ("sum_over_batch_size", "sum", "none", a mask's mean over its valid entries)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.keras import losses

EPS = 1e-7
RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 4))
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
LABELS = np.array([0, 3, 1, 1, 2, 3])
ONE_HOT = np.eye(4)[LABELS]


def both(a):
    """The same values as an ember leaf and a torch leaf that need their gradients."""
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def check(ember_fn, torch_fn, pred, *targets):
    pe, pt = both(pred)
    got, want = ember_fn(pe, *[ember.tensor(t) for t in targets]), torch_fn(pt, *[torch.tensor(t) for t in targets])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-8, atol=1e-12)


def clipped_log(p):
    return torch.log((p / p.sum(-1, keepdim=True)).clamp(EPS, 1 - EPS))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_categorical_crossentropy(smoothing):
    soft = lambda y: y * (1 - smoothing) + smoothing / 4   # noqa: E731
    check(lambda p, y: losses.categorical_crossentropy(y, p, from_logits=True, label_smoothing=smoothing),
          lambda p, y: TF.cross_entropy(p, y, reduction="none", label_smoothing=smoothing), LOGITS, ONE_HOT)
    check(lambda p, y: losses.categorical_crossentropy(y, p, label_smoothing=smoothing),
          lambda p, y: -(soft(y) * clipped_log(p)).sum(-1), PROBS * 3, ONE_HOT)   # unnormalised: Keras divides
    obj = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=smoothing)
    assert obj.name == "categorical_crossentropy"
    assert obj(ONE_HOT, ember.tensor(LOGITS)).item() == pytest.approx(
        TF.cross_entropy(torch.tensor(LOGITS), torch.tensor(ONE_HOT), label_smoothing=smoothing).item(), rel=1e-12)


def test_sparse_categorical_crossentropy():
    check(lambda p, y: losses.sparse_categorical_crossentropy(y, p, from_logits=True),
          lambda p, y: TF.cross_entropy(p, y, reduction="none"), LOGITS, LABELS)
    check(lambda p, y: losses.sparse_categorical_crossentropy(y, p),
          lambda p, y: TF.nll_loss(clipped_log(p), y, reduction="none"), PROBS * 2, LABELS)
    # (N, 1) labels, float labels, int32 labels and (N, T, C) predictions
    want = TF.cross_entropy(torch.tensor(LOGITS), torch.tensor(LABELS), reduction="none").numpy()
    for y in (LABELS[:, None], LABELS.astype(np.float32), LABELS.astype(np.int32)):
        np.testing.assert_allclose(losses.sparse_categorical_crossentropy(
            ember.tensor(y), ember.tensor(LOGITS), from_logits=True).numpy(), want, rtol=1e-12)
    seq = losses.sparse_categorical_crossentropy(ember.tensor(LABELS.reshape(2, 3)),
                                                 ember.tensor(LOGITS.reshape(2, 3, 4)), from_logits=True)
    np.testing.assert_allclose(seq.numpy(), want.reshape(2, 3), rtol=1e-12)


def test_sparse_categorical_crossentropy_ignore_class():
    """Keras: an ignored label's loss is 0 and the Loss object averages over the other entries (torch's
    ignore_index); Ember used to accept ignore_class and ignore it."""
    y = np.array([0, -1, 1, 3, -1, 3])
    values = losses.sparse_categorical_crossentropy(ember.tensor(y), ember.tensor(LOGITS), from_logits=True,
                                                    ignore_class=-1).numpy()
    want = TF.cross_entropy(torch.tensor(LOGITS), torch.tensor(y), ignore_index=-1, reduction="none").numpy()
    np.testing.assert_allclose(values, want, rtol=1e-12)
    obj = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    pe, pt = both(LOGITS)
    got, ref = obj(ember.tensor(y), pe), TF.cross_entropy(pt, torch.tensor(y), ignore_index=-1)
    assert got.item() == pytest.approx(ref.item() * 4 / (4 + EPS), rel=1e-12)     # Keras's mask: valid + epsilon
    got.backward()
    ref.backward()
    np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-6)
    w = np.array([1.0, 5.0, 2.0, 0.5, 5.0, 1.0])
    assert obj(y, ember.tensor(LOGITS), sample_weight=w).item() == pytest.approx((want * w).sum() / (4 + EPS), rel=1e-12)
    summed = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction="sum")
    assert summed(y, ember.tensor(LOGITS), sample_weight=w).item() == pytest.approx((want * w).sum(), rel=1e-12)
    none = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction="none")
    np.testing.assert_allclose(none(y, ember.tensor(LOGITS), sample_weight=w).numpy(), want * w, rtol=1e-12)
    # an ignored class inside the range; (N, 1) labels; probabilities
    y2 = np.array([[2], [0], [2], [1], [2], [3]])
    p2 = losses.SparseCategoricalCrossentropy(ignore_class=2)(y2, ember.tensor(PROBS)).item()
    assert p2 == pytest.approx(-np.log(PROBS[[1, 3, 5], [0, 1, 3]]).sum() / (3 + EPS), rel=1e-10)
    assert losses.get(losses.serialize(obj)).kwargs["ignore_class"] == -1


def test_binary_crossentropy():
    z = RNG.standard_normal((5, 3))
    y = (RNG.random((5, 3)) > 0.5).astype(np.float64)
    sig = 1 / (1 + np.exp(-z))
    for s in (0.0, 0.3):
        ys = y * (1 - s) + 0.5 * s
        check(lambda p, t: losses.binary_crossentropy(t, p, from_logits=True, label_smoothing=s),
              lambda p, t: TF.binary_cross_entropy_with_logits(p, ys_t(t, s), reduction="none").mean(-1), z, y)
        check(lambda p, t: losses.binary_crossentropy(t, p, label_smoothing=s),
              lambda p, t: TF.binary_cross_entropy(p.clamp(EPS, 1 - EPS), ys_t(t, s), reduction="none").mean(-1),
              sig, y)
        assert losses.BinaryCrossentropy(label_smoothing=s)(y, ember.tensor(sig)).item() == pytest.approx(
            TF.binary_cross_entropy(torch.tensor(sig), torch.tensor(ys)).item(), rel=1e-10)
    # a probability of exactly 0 or 1 is clipped to 1e-7 away: a finite loss (log(1e-7))
    edge = losses.binary_crossentropy(ember.tensor(np.array([[1.0, 0.0]])), ember.tensor(np.array([[0.0, 1.0]]))).item()
    assert edge == pytest.approx(-np.log(EPS), rel=1e-6)
    # (N,) targets against (N, 1) predictions
    assert losses.binary_crossentropy(ember.tensor(y[:, 0]), ember.tensor(sig[:, :1])).shape == (5,)


def ys_t(t, s):
    return t * (1 - s) + 0.5 * s


@pytest.mark.parametrize("name, torch_fn", [
    ("mean_squared_error", lambda p, y: TF.mse_loss(p, y, reduction="none").mean(-1)),
    ("mean_absolute_error", lambda p, y: TF.l1_loss(p, y, reduction="none").mean(-1)),
    ("huber", lambda p, y: TF.huber_loss(p, y, reduction="none", delta=1.0).mean(-1)),
])
def test_regression_losses(name, torch_fn):
    pred, y = RNG.standard_normal((5, 3)) * 2, RNG.standard_normal((5, 3))
    check(lambda p, t: getattr(losses, name)(t, p), torch_fn, pred, y)
    check(lambda p, t: getattr(losses, name)(t, p), lambda p, t: torch_fn(p, t[:, None]), pred[:, :1],
          y[:, 0])                                                                      # (N,) against (N, 1)
    obj = losses.get(name)
    assert obj(y, pred).item() == pytest.approx(torch_fn(torch.tensor(pred), torch.tensor(y)).mean().item())


def test_huber_delta():
    pred, y = np.array([[0.0, 3.0, -0.5]]), np.zeros((1, 3))
    got = losses.Huber(delta=2.0)(y, pred).item()
    assert got == pytest.approx((0 + (2 * 3 - 0.5 * 4) + 0.5 * 0.25) / 3)
    assert losses.Huber().name == "huber_loss" and losses.Huber(delta=2.0).get_config()["delta"] == 2.0


def test_reductions_and_sample_weights():
    pred, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    per = ((pred - y) ** 2).mean(-1)
    w = np.array([0.0, 1.0, 2.0, 0.5])
    assert losses.MeanSquaredError()(y, pred, sample_weight=w).item() == pytest.approx((per * w).sum() / 4)
    assert losses.MeanSquaredError(reduction="mean")(y, pred).item() == pytest.approx(per.mean())
    assert losses.MeanSquaredError(reduction="sum")(y, pred).item() == pytest.approx(per.sum())
    assert losses.MeanSquaredError(reduction="sum")(y, pred, sample_weight=w).item() == pytest.approx((per * w).sum())
    none = losses.MeanSquaredError(reduction="none")   # NumPy inputs become float32 tensors (Keras's floatx)
    np.testing.assert_allclose(none(y, pred).numpy(), per, rtol=1e-6)
    np.testing.assert_allclose(none(y, pred, sample_weight=w).numpy(), per * w, rtol=1e-6)
    # per-timestep losses (N, T) with per-sample weights (N,)
    seq = losses.SparseCategoricalCrossentropy(from_logits=True)
    got = seq(LABELS.reshape(2, 3), ember.tensor(LOGITS.reshape(2, 3, 4)), sample_weight=np.array([1.0, 3.0])).item()
    want = TF.cross_entropy(torch.tensor(LOGITS), torch.tensor(LABELS), reduction="none").numpy().reshape(2, 3)
    assert got == pytest.approx((want * np.array([[1.0], [3.0]])).sum() / 6, rel=1e-12)
    with pytest.raises(ValueError, match=r"^MeanSquaredError: reduction must be 'sum_over_batch_size', 'sum', "
                                         r"'mean' or 'none', got 'avg'$"):
        losses.MeanSquaredError(reduction="avg")


def test_get_serialize_and_names():
    assert losses.get("mse").name == "mean_squared_error" and losses.get("mae").name == "mean_absolute_error"
    assert type(losses.get("MeanAbsoluteError")) is losses.MeanAbsoluteError
    assert type(losses.get("huber")) is losses.Huber and losses.get("huber").name == "huber_loss"
    loss = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, name="cce")
    back = losses.get(losses.serialize(loss))
    assert type(back) is losses.CategoricalCrossentropy and back.get_config() == loss.get_config()
    assert back.get_config() == {"name": "cce", "reduction": "sum_over_batch_size", "from_logits": True,
                                 "label_smoothing": 0.1}

    def my_loss(y_true, y_pred):
        return (y_pred - y_true).abs().sum(dim=-1)
    f = losses.get(my_loss)
    assert f.name == "my_loss" and f(np.zeros((2, 2)), np.ones((2, 2))).item() == 2.0
    with pytest.raises(ValueError, match=r"cannot be saved with the model"):
        losses.serialize(f)
    with pytest.raises(ValueError, match=r"^Could not interpret loss identifier: 'nope'. Known losses: "
                                         r"binary_crossentropy, categorical_crossentropy, huber, "):
        losses.get("nope")
    with pytest.raises(ValueError, match=r"^Could not interpret loss identifier: 3"):
        losses.get(3)


def test_target_forms_and_dtypes():
    """Integer targets become the predictions' dtype; (N, 1) and (N,) targets meet (N,) and (N, 1)
    predictions (Keras's squeeze_or_expand_to_same_rank); the result has one value per sample."""
    p = ember.tensor(np.array([[0.9, 0.2], [0.3, 0.6]]))
    y_int = ember.tensor(np.array([[1, 0], [0, 1]]))
    want = losses.binary_crossentropy(ember.tensor(np.array([[1.0, 0.0], [0.0, 1.0]])), p).numpy()
    got = losses.binary_crossentropy(y_int, p)
    assert got.dtype == ember.float64 and got.shape == (2,)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got = losses.categorical_crossentropy(y_int, p)
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), [-np.log(0.9 / 1.1), -np.log(0.6 / 0.9)], rtol=1e-12)
    pred = ember.tensor(np.array([1.0, 2.0, 4.0]))
    for y in (np.array([[1], [2], [3]]), np.array([1, 2, 3])):   # (N,) predictions: Keras's mean over the last
        got = losses.mean_squared_error(ember.tensor(y), pred)   # axis is then over the batch (one value)
        assert got.dtype == ember.float64 and got.shape == ()
        assert got.item() == pytest.approx(1 / 3)
    got = losses.mean_absolute_error(ember.tensor(np.array([1, 2, 3])), ember.tensor(np.array([[1.0], [0.0], [5.0]])))
    assert got.shape == (3,)
    np.testing.assert_allclose(got.numpy(), [0.0, 2.0, 2.0])
    got = losses.huber(ember.tensor(np.array([0, 0])), ember.tensor(np.array([[3.0], [0.5]])))
    np.testing.assert_allclose(got.numpy(), [2.5, 0.125])


def test_shape_errors():
    p = ember.tensor(np.full((4, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"^mean_squared_error: y of shape \(4, 2\) does not match the model's output "
                                         r"shape \(4, 3\) \(at "):
        losses.mean_squared_error(ember.ones(4, 2), p)
    with pytest.raises(ValueError, match=r"^categorical_crossentropy: Arguments `target` and `output` must have the "
                                         r"same shape. Received: target.shape=\(4, 1\), output.shape=\(4, 3\); y looks "
                                         r"like integer class labels: use loss='sparse_categorical_crossentropy', or "
                                         r"one-hot encode y to shape \(4, 3\) \(at "):
        losses.categorical_crossentropy(ember.zeros(4, 1), p)
    with pytest.raises(ValueError, match=r"target.shape=\(4, 2\), output.shape=\(4, 3\) \(at "):   # no hint
        losses.categorical_crossentropy(ember.zeros(4, 2), p)
    with pytest.raises(ValueError, match=r"^sparse_categorical_crossentropy: predictions must have a class axis, "
                                         r"shape \(batch, classes\); got y_pred of shape \(4,\) \(at "):
        losses.sparse_categorical_crossentropy(ember.zeros(4), ember.zeros(4))
    with pytest.raises(ValueError, match=r"^sparse_categorical_crossentropy: expected integer class labels y of shape "
                                         r"\(4,\) for predictions of shape \(4, 3\) \(3 classes\), got y of shape "
                                         r"\(4, 2\) \(at "):
        losses.sparse_categorical_crossentropy(ember.zeros(4, 2), p)
    for bad, value in ((np.array([0, 1, 3, 2]), 3), (np.array([0, -1, 2, 2]), -1)):
        with pytest.raises(ValueError, match=rf"^sparse_categorical_crossentropy: Received a label value of {value} "
                                             r"which is outside the valid range of \[0, 3\): the model has 3 output "
                                             r"units \(classes 0..2\) \(at "):
            losses.sparse_categorical_crossentropy(ember.tensor(bad), p)
    assert losses.sparse_categorical_crossentropy(ember.zeros(0, dtype=ember.int64), ember.zeros(0, 3)).shape == (0,)


@pytest.mark.parametrize("cls, name, y, kwargs", [
    (losses.SparseCategoricalCrossentropy, "sparse_categorical_crossentropy", LABELS, {"from_logits": True}),
    (losses.CategoricalCrossentropy, "categorical_crossentropy", ONE_HOT, {"from_logits": True, "label_smoothing": 0.1}),
    (losses.BinaryCrossentropy, "binary_crossentropy", ONE_HOT, {"from_logits": True, "label_smoothing": 0.1}),
    (losses.MeanSquaredError, "mean_squared_error", ONE_HOT, {}),
    (losses.MeanAbsoluteError, "mean_absolute_error", ONE_HOT, {}),
    (losses.Huber, "huber_loss", ONE_HOT, {"delta": 0.5}),
])
def test_each_loss_class_passes_its_arguments_on(cls, name, y, kwargs):
    pred = ember.tensor(LOGITS)
    assert cls().name == name and cls().reduction == "sum_over_batch_size"
    obj = cls(reduction="sum", name="mine", **kwargs)
    assert obj.name == "mine" and obj.reduction == "sum"
    assert obj.get_config() == {"name": "mine", "reduction": "sum", **kwargs, **(
        {"ignore_class": None} if cls is losses.SparseCategoricalCrossentropy else {})}
    per = type(obj).fn(ember.tensor(y), pred, **obj.kwargs).numpy()
    assert obj(y, pred).item() == pytest.approx(per.sum(), rel=1e-12)
    assert cls(**kwargs)(y, pred).item() == pytest.approx(per.mean(), rel=1e-12)
    if kwargs:   # the arguments change the value
        assert cls()(y, pred).item() != pytest.approx(per.mean(), rel=1e-6)


def test_a_loss_function_without_a_name():
    import functools

    def scaled(y_true, y_pred, k):
        return k * (y_pred - y_true).abs().mean(dim=-1)
    loss = losses.get(functools.partial(scaled, k=3.0))
    assert loss.name == "loss" and loss(np.zeros((2, 2)), np.ones((2, 2))).item() == 3.0
    assert losses._FunctionLoss(scaled, name="mine").name == "mine"


def test_same_rank_for_sequences_and_a_batch_of_one():
    """Keras's squeeze_or_expand_to_same_rank on (N, T) targets against (N, T, 1) predictions and back,
    and on a batch of one."""
    y, p = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    want = (p - y) ** 2
    for yt, yp in ((y, p[..., None]), (y[..., None], p)):
        got = losses.mean_squared_error(ember.tensor(yt), ember.tensor(yp))
        np.testing.assert_allclose(got.numpy(), want if yp.ndim == 3 else want.mean(-1), rtol=1e-12)
    one = losses.mean_squared_error(ember.tensor(np.array([[2.0]])), ember.tensor(np.array([5.0])))
    assert one.shape == () and one.item() == 9.0
    one = losses.mean_squared_error(ember.tensor(np.array([2.0])), ember.tensor(np.array([[5.0]])))
    assert one.shape == (1,) and one.item() == 9.0


def test_sequence_outputs_reduce_the_class_axis_only():
    """(N, T, C) predictions: the class axis is the last one, one value per sample and time step."""
    z = RNG.standard_normal((2, 3, 4))
    y = np.eye(4)[RNG.integers(0, 4, (2, 3))]
    probs = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    for smoothing in (0.0, 0.1):
        check(lambda p, t: losses.categorical_crossentropy(t, p, from_logits=True, label_smoothing=smoothing),
              lambda p, t: TF.cross_entropy(p.permute(0, 2, 1), t.permute(0, 2, 1), reduction="none",
                                            label_smoothing=smoothing), z, y)
    check(lambda p, t: losses.categorical_crossentropy(t, p),
          lambda p, t: -(t * clipped_log(p)).sum(-1), probs * 2, y)
    check(lambda p, t: losses.binary_crossentropy(t, p, from_logits=True),
          lambda p, t: TF.binary_cross_entropy_with_logits(p, t, reduction="none").mean(-1), z, y)
    with pytest.raises(ValueError, match=r"target.shape=\(2, 3\), output.shape=\(2, 3, 4\) \(binary_crossentropy "
                                         r"compares each output unit with a 0/1 target; for 4 classes use "):
        losses.binary_crossentropy(ember.zeros(2, 3), ember.tensor(z))
    with pytest.raises(ValueError, match=r"target.shape=\(2, 3, 1\), output.shape=\(2, 3, 4\); y looks like integer "):
        losses.categorical_crossentropy(ember.zeros(2, 3, 1), ember.tensor(z))
    with pytest.raises(ValueError, match=r"target.shape=\(2, 3\), output.shape=\(2, 3, 4\); y looks like integer "):
        losses.categorical_crossentropy(ember.zeros(2, 3), ember.tensor(z))


def test_probabilities_of_zero_and_one_are_clipped():
    """Keras clips probabilities to [1e-7, 1 - 1e-7] before the log: a zero probability for the true class
    costs -log(1e-7), a certain one -log(1 - 1e-7) (not 0)."""
    p = ember.tensor(np.array([[1.0, 0.0], [0.0, 1.0]]))
    y = np.array([1, 1])
    want = [-np.log(EPS), -np.log(1 - EPS)]
    for got in (losses.sparse_categorical_crossentropy(ember.tensor(y), p),
                losses.categorical_crossentropy(ember.tensor(np.eye(2)[y]), p)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=0)
    np.testing.assert_allclose(losses.binary_crossentropy(ember.tensor(np.array([[0.0, 1.0]])), p[1:]).numpy(),
                               [-np.log(1 - EPS)], rtol=1e-9, atol=0)


def test_sparse_labels_of_sequences():
    z = RNG.standard_normal((2, 3, 4))
    labels = RNG.integers(0, 4, (2, 3))
    want = TF.cross_entropy(torch.tensor(z).permute(0, 2, 1), torch.tensor(labels), reduction="none").numpy()
    for y in (labels, labels[..., None]):             # (N, T) or (N, T, 1) labels
        got = losses.sparse_categorical_crossentropy(ember.tensor(y), ember.tensor(z), from_logits=True)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"^sparse_categorical_crossentropy: expected integer class labels y of shape "
                                         r"\(2, 3\) for predictions of shape \(2, 3, 4\) \(4 classes\), got y of shape "
                                         r"\(2, 4\) \(at "):
        losses.sparse_categorical_crossentropy(ember.zeros(2, 4), ember.tensor(z))
    with pytest.raises(ValueError, match=r"^sparse_categorical_crossentropy: expected integer class labels y of shape "
                                         r"\(2, 3\) for predictions of shape \(2, 3, 4\) \(4 classes\), got y of shape "
                                         r"\(2, 3, 4\); y looks one-hot encoded: use loss='categorical_crossentropy' "
                                         r"for one-hot targets, or pass the class indices \(y.argmax\(axis=-1\)\) "
                                         r"\(at "):
        losses.sparse_categorical_crossentropy(ember.zeros(2, 3, 4), ember.tensor(z))


def test_default_names_of_subclasses():
    """Keras 3: a Loss subclass is named auto_name(class name) (snake case, made unique); a subclass of a
    built-in loss keeps the built-in's name (passed by its __init__)."""
    class HingeLikeLoss(losses.Loss):
        def call(self, y_true, y_pred):
            return (1 - y_true * y_pred).clip(min=0).mean(dim=-1)

    class MyMSE(losses.MeanSquaredError):
        pass
    first, second = HingeLikeLoss(), HingeLikeLoss()
    assert first.name.startswith("hinge_like_loss") and second.name.startswith("hinge_like_loss_")
    assert first.name != second.name and HingeLikeLoss(name="h").name == "h"
    assert first(np.ones((2, 2)), np.full((2, 2), 0.25)).item() == 0.75
    assert MyMSE().name == "mean_squared_error"
    assert losses.get({"class_name": "mse"}).get_config() == losses.MeanSquaredError().get_config()


def test_regression_losses_of_sequences_and_their_errors():
    y, p = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))
    for name, fn in (("mean_squared_error", lambda d: (d ** 2).mean(-1)), ("mean_absolute_error",
                     lambda d: np.abs(d).mean(-1)), ("huber", lambda d: np.where(np.abs(d) <= 1, 0.5 * d ** 2,
                                                                                 np.abs(d) - 0.5).mean(-1))):
        got = getattr(losses, name)(ember.tensor(y), ember.tensor(p))
        np.testing.assert_allclose(got.numpy(), fn(p - y), rtol=1e-12)
        with pytest.raises(ValueError, match=rf"^{name}: y of shape \(2, 5\) does not match the model's output shape "
                                             r"\(2, 3, 4\) \(at "):
            getattr(losses, name)(ember.zeros(2, 5), ember.tensor(p))


def test_weights_dtype_and_a_batch_of_one():
    y32, p32 = ember.zeros(3, 2), ember.ones(3, 2)
    w64 = ember.tensor(np.array([1.0, 2.0, 3.0]))
    assert losses.MeanSquaredError()(y32, p32, sample_weight=w64).dtype == ember.float32   # the loss's dtype
    ignore = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    got = ignore(ember.tensor([1, 0, 1]), ember.zeros(3, 2), sample_weight=w64)
    assert got.dtype == ember.float32 and got.item() == pytest.approx(np.log(2) * 4 / (2 + EPS), rel=1e-6)
    assert losses.MeanSquaredError(reduction="sum")(ember.zeros(1, 2), ember.ones(1, 2)).item() == 1.0
    one = ignore(ember.tensor([1]), ember.zeros(1, 2)).item()
    assert one == pytest.approx(np.log(2) / (1 + EPS), rel=1e-6)
    mean = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0, reduction="mean")
    assert mean(ember.tensor([1, 0, 1]), ember.zeros(3, 2)).item() == pytest.approx(np.log(2) * 2 / (2 + EPS))
    labels_of_one = losses.sparse_categorical_crossentropy(ember.tensor([[1]]), ember.zeros(1, 2), from_logits=True)
    assert labels_of_one.shape == (1,)
    # an ignored label counts as class 0 (Keras), so one class is enough
    single = losses.sparse_categorical_crossentropy(ember.tensor([0, -1]), ember.zeros(2, 1), from_logits=True,
                                                    ignore_class=-1)
    np.testing.assert_array_equal(single.numpy(), [0.0, 0.0])


def test_ignore_class_of_sequences_and_unreduced_dtype():
    z = RNG.standard_normal((2, 3, 4))
    labels = np.array([[1, 0, 3], [0, 0, 2]])
    per = TF.cross_entropy(torch.tensor(z).permute(0, 2, 1), torch.tensor(labels), reduction="none").numpy()
    valid = labels != 0
    obj = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    got = obj(ember.tensor(labels[..., None]), ember.tensor(z)).item()     # (N, T, 1) labels
    assert got == pytest.approx((per * valid).sum() / (valid.sum() + EPS), rel=1e-12)
    none = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0, reduction="none")
    out = none(ember.tensor([1, 0]), ember.zeros(2, 2), sample_weight=ember.tensor(np.array([2.0, 1.0])))
    assert out.dtype == ember.float32                                      # float64 weights: the loss's dtype
    np.testing.assert_allclose(out.numpy(), [2 * np.log(2), 0.0], rtol=1e-6)
