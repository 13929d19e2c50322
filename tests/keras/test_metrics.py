"""ember.keras.metrics: Keras 3's stateful means (metrics/reduction_metrics.py: one mean per sample,
weighted by its sample weight) and its accuracy functions (metrics/accuracy_metrics.py)."""
import numpy as np
import pytest

import ember
from ember.keras import losses, metrics


def test_mean_counts_samples_weights_and_resets():
    m = metrics.Mean(name="m")
    assert m.result() == 0.0 and m.name == "m" and m.get_config() == {"name": "m"}
    m.update_state(ember.tensor([1.0, 2.0, 6.0]))
    assert m.result() == 3.0
    m.update_state(np.array([[1.0, 3.0], [5.0, 7.0]]))            # (N, T): one mean per sample (2 and 6)
    assert m.result() == pytest.approx((1 + 2 + 6 + 2 + 6) / 5)
    m.update_state(np.array([[0.0, 0.0, 0.0, 12.0]]))             # another T: still one value per sample
    assert m.result() == pytest.approx((1 + 2 + 6 + 2 + 6 + 3) / 6)
    m.reset_state()
    assert m.result() == 0.0
    m.update_state(np.array([[1.0, 3.0], [5.0, 7.0]]), sample_weight=np.array([3.0, 1.0]))
    assert m.result() == pytest.approx((2 * 3 + 6 * 1) / 4)
    m.update_state(np.array([10.0]), sample_weight=ember.tensor([0.0]))
    assert m.result() == pytest.approx((2 * 3 + 6 * 1) / 4)
    m.reset_state()
    m.update_state(np.array([[1.0, 3.0], [5.0, 7.0]]), sample_weight=np.array([[1.0, 0.0], [1.0, 3.0]]))
    assert m.result() == pytest.approx((1 + 5 + 21) / 5)           # per-entry weights: sum(v * w) / sum(w)
    assert metrics.Mean()(np.array([4.0])) == 4.0 and metrics.Mean().name == "mean"
    # float64 sums: a float32 input is not summed in float32, float weights are not rounded to float32
    assert metrics.Mean()(np.array([16777216.0, 1.0, 1.0], np.float32)) == pytest.approx(16777218 / 3, rel=1e-12)
    big = metrics.Mean()
    big.update_state(np.array([1.0, 3.0]), sample_weight=[16777217.0, 1.0])
    assert big.result() == pytest.approx((16777217 + 3) / 16777218, rel=1e-15)


def test_accuracy_functions():
    p = ember.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.0, 0.4, 0.6]])
    acc = metrics.SparseCategoricalAccuracy()
    assert acc(ember.tensor([1, 0, 1, 2]), p) == 0.75 and acc.name == "sparse_categorical_accuracy"
    assert metrics.SparseCategoricalAccuracy(name="s")(ember.tensor([[1], [0], [1], [1]]), p) == 0.5
    cat = metrics.CategoricalAccuracy()
    assert cat(ember.tensor(np.eye(3)[[1, 1, 2, 2]]), p) == 0.75 and cat.name == "categorical_accuracy"
    y = ember.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    probs = ember.tensor([[0.9, 0.5], [0.2, 0.6], [0.51, 0.7]])
    b = metrics.BinaryAccuracy()
    assert b(y, probs) == pytest.approx(5 / 6) and b.name == "binary_accuracy"  # 0.5 is not above 0.5
    assert metrics.BinaryAccuracy(threshold=0.55)(y, probs) == pytest.approx(4 / 6)
    assert metrics.BinaryAccuracy()(ember.tensor([1.0, 0.0]), ember.tensor([[0.7], [0.7]])) == 0.5   # (N,) vs (N, 1)
    a = metrics.Accuracy()
    assert a(ember.tensor([1, 2, 3, 4]), ember.tensor([1.0, 2.0, 0.0, 4.0])) == 0.75 and a.name == "accuracy"


def test_error_metrics_and_weights():
    y, p = np.array([[0.0, 1.0], [2.0, 2.0]]), ember.tensor([[1.0, 1.0], [0.0, 5.0]])
    mse = metrics.MeanSquaredError()
    assert mse(ember.tensor(y), p) == pytest.approx((0.5 + 6.5) / 2) and mse.name == "mean_squared_error"
    mae = metrics.MeanAbsoluteError()
    assert mae(ember.tensor(y), p) == pytest.approx((0.5 + 2.5) / 2) and mae.name == "mean_absolute_error"
    w = metrics.MeanAbsoluteError()
    w.update_state(ember.tensor(y), p, sample_weight=np.array([1.0, 3.0]))
    assert w.result() == pytest.approx((0.5 + 3 * 2.5) / 4)
    assert metrics.MeanMetricWrapper(losses.mean_squared_error).name == "mean_squared_error"


def test_get_and_resolve():
    for name, cls in [("mse", metrics.MeanSquaredError), ("mean_absolute_error", metrics.MeanAbsoluteError),
                      ("binary_accuracy", metrics.BinaryAccuracy)]:
        m = metrics.get(name)
        assert type(m) is cls and m.name == name
    mine = metrics.Mean(name="x")
    assert metrics.get(mine) is mine

    def top(y_true, y_pred):
        return y_pred.amax(dim=-1)
    assert metrics.get(top).name == "top"
    p = ember.tensor([[0.2, 0.8], [0.6, 0.4]])
    one_hot, labels = ember.tensor([[0.0, 1.0], [0.0, 1.0]]), ember.tensor([1, 1])
    def resolved(identifier, loss, *shapes):
        m = metrics.resolve(identifier, loss, *shapes)
        assert m.name == identifier                     # the name in the logs stays as given
        return m._fn
    # by the loss
    sparse, cat, binary = (metrics.sparse_categorical_accuracy, metrics.categorical_accuracy,
                           metrics.binary_accuracy)
    assert resolved("acc", losses.get("sparse_categorical_crossentropy")) is sparse
    assert resolved("accuracy", losses.get("sparse_categorical_crossentropy")) is sparse
    assert resolved("accuracy", losses.get("categorical_crossentropy")) is cat
    assert resolved("acc", losses.get("binary_crossentropy"), (2,), (2, 3)) is binary   # the loss decides first
    # by the shapes (Keras's rule when the loss says nothing)
    assert resolved("accuracy", None, (2,), (2, 1)) is binary
    assert resolved("accuracy", None, (2, 5), (2, 5, 1)) is binary
    assert resolved("accuracy", losses.get("mse"), (2, 1), (2, 5, 1)) is binary
    assert resolved("accuracy", None, (2,), (2, 2)) is sparse
    assert resolved("accuracy", None, (2, 1), (2, 2)) is sparse
    assert resolved("accuracy", None, (2, 5, 1), (2, 5, 3)) is sparse
    assert resolved("accuracy", None, (2, 2), (2, 2)) is cat
    assert resolved("accuracy", None, (2, 1, 2), (2, 1, 2)) is cat
    assert resolved("accuracy", None, None, (2, 2)) is cat
    assert resolved("accuracy", None) is cat and resolved("acc", None) is cat
    assert metrics.resolve("acc", None)(one_hot, p) == 0.5 and metrics.resolve("acc", None, (2,), (2, 2))(labels, p) == 0.5
    assert metrics.resolve(top, None).name == "top"

    class Scaled:                                       # a callable without a __name__
        def __call__(self, y_true, y_pred):
            return y_pred.sum(dim=-1)
    assert metrics.resolve(Scaled(), None).name == "metric"
    with pytest.raises(ValueError, match=r"^Could not interpret metric identifier: 'f1'. Known metrics: acc, "
                                         r"accuracy, binary_accuracy, categorical_accuracy, mae, "):
        metrics.get("f1")
    with pytest.raises(ValueError, match=r"^Could not interpret metric identifier: 3\."):
        metrics.get(3)
    with pytest.raises(NotImplementedError):
        metrics.Metric().update_state(1)


def test_accuracies_count_each_sample_once():
    """Keras 3's binary_accuracy and accuracy return one match per entry, and Mean averages each sample's:
    with (N,) outputs a batch is N samples, not one value (Ember used to average inside the batch, so a
    partial last batch weighed as much as a full one)."""
    for m in (metrics.BinaryAccuracy(), metrics.Accuracy()):
        m.update_state(ember.tensor([1.0, 0.0, 1.0]), ember.tensor([1.0, 1.0, 1.0]))
        m.update_state(ember.tensor([1.0]), ember.tensor([1.0]))
        assert m.result() == pytest.approx(3 / 4)
    b = metrics.BinaryAccuracy()
    b.update_state(ember.tensor([[1.0, 0.0], [1.0, 1.0]]), ember.tensor([[0.9, 0.9], [0.9, 0.9]]),
                   sample_weight=np.array([1.0, 3.0]))
    assert b.result() == pytest.approx((0.5 + 3 * 1.0) / 4)
    assert metrics.BinaryAccuracy()(ember.tensor([1.0, 0.0]), ember.tensor([0.9, 0.9]), sample_weight=[3.0, 1.0]) \
        == pytest.approx(0.75)                         # __call__ passes the sample weights on


def test_accuracies_of_sequences():
    p = ember.tensor(np.array([[[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], [[0.6, 0.4], [0.4, 0.6], [0.5, 0.5]]]))
    labels = np.array([[1, 1, 1], [0, 0, 0]])
    right = np.array([[1, 0, 1], [1, 0, 1]])
    for y in (labels, labels[..., None]):              # (N, T) or (N, T, 1) labels
        assert metrics.SparseCategoricalAccuracy()(ember.tensor(y), p) == pytest.approx(right.mean())
    one_step = metrics.SparseCategoricalAccuracy()      # T = 1: labels (N, 1) against (N, 1, C)
    assert one_step(ember.tensor([[1], [0]]), p[:, :1]) == 1.0
    assert metrics.CategoricalAccuracy()(ember.tensor(np.eye(2)[labels]), p) == pytest.approx(right.mean())


def test_custom_names_and_the_loss_rule():
    for cls in (metrics.Accuracy, metrics.BinaryAccuracy, metrics.CategoricalAccuracy,
                metrics.SparseCategoricalAccuracy, metrics.MeanSquaredError, metrics.MeanAbsoluteError):
        assert cls(name="m").name == "m"
    assert metrics.BinaryAccuracy(name="b", threshold=0.8)(ember.tensor([1.0]), ember.tensor([0.7])) == 0.0
    m = metrics.resolve("accuracy", losses.get("categorical_crossentropy"), (2, 1), (2, 1))
    assert m._fn is metrics.categorical_accuracy            # the loss decides before the shapes would
