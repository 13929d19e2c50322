"""Keras-quality errors: each bad input gets a message that says what was expected, what came, and
what to do, ending with the user's line."""
import numpy as np
import pytest

from ember import keras
from ember.keras import layers, models

HERE = "test_errors.py:"


def mlp(compile_with=None):
    m = models.Sequential([layers.Flatten(input_shape=(28, 28)), layers.Dense(10, activation="softmax")])
    if compile_with:
        m.compile("adam", compile_with, metrics=["accuracy"])
    return m


def test_fit_before_compile():
    with pytest.raises(RuntimeError, match=r"You must call `compile\(\)` before using the model in `fit\(\)`"):
        mlp().fit(np.zeros((4, 28, 28)), np.zeros(4))
    for call in ("evaluate",):
        with pytest.raises(RuntimeError, match=f"before using the model in `{call}"):
            getattr(mlp(), call)(np.zeros((4, 28, 28)), np.zeros(4))


def test_one_hot_targets_for_sparse_loss():
    with pytest.raises(ValueError) as e:
        mlp("sparse_categorical_crossentropy").fit(np.zeros((4, 28, 28)), np.eye(10)[[1, 2, 3, 4]], verbose=0)
    msg = str(e.value)
    assert "sparse_categorical_crossentropy: expected integer class labels y of shape (4,) for predictions of " \
           "shape (4, 10) (10 classes), got y of shape (4, 10); y looks one-hot encoded: use " \
           "loss='categorical_crossentropy'" in msg


def test_errors_end_with_the_users_line():
    """The message ends with the line of the user's call (deselected under mutmut, whose trampoline adds a
    frame: scripts/mutation.py)."""
    calls = [lambda: mlp().fit(np.zeros((4, 28, 28)), np.zeros(4)),
             lambda: mlp("sparse_categorical_crossentropy").fit(np.zeros((4, 28, 28)), np.eye(10)[[1, 2, 3, 4]],
                                                                verbose=0),
             lambda: mlp("sparse_categorical_crossentropy").predict(np.zeros((4, 784)), verbose=0)]
    for call in calls:
        with pytest.raises((RuntimeError, ValueError)) as e:
            call()
        assert HERE in str(e.value)


def test_integer_labels_for_categorical_loss():
    with pytest.raises(ValueError, match=r"categorical_crossentropy: Arguments `target` and `output` must have the "
                                         r"same shape. Received: target.shape=\(4,\), output.shape=\(4, 10\); y "
                                         r"looks like integer class labels: use "
                                         r"loss='sparse_categorical_crossentropy'"):
        mlp("categorical_crossentropy").fit(np.zeros((4, 28, 28)), np.arange(4), verbose=0)


def test_label_out_of_range():
    with pytest.raises(ValueError, match=r"Received a label value of 10 which is outside the valid range of "
                                         r"\[0, 10\)"):
        mlp("sparse_categorical_crossentropy").fit(np.zeros((4, 28, 28)), np.array([0, 1, 10, 2]), verbose=0)


def test_binary_crossentropy_with_many_classes():
    with pytest.raises(ValueError, match=r"binary_crossentropy: .*target.shape=\(4,\), output.shape=\(4, 10\).*"
                                         r"use 'sparse_categorical_crossentropy'"):
        mlp("binary_crossentropy").fit(np.zeros((4, 28, 28)), np.zeros(4), verbose=0)


def test_x_and_y_sample_counts():
    with pytest.raises(ValueError, match="x has 4 samples but y has 3 samples"):
        mlp("mse").fit(np.zeros((4, 28, 28)), np.zeros((3, 10)), verbose=0)


@pytest.mark.parametrize("kind,name,known", [
    ("optimizer", "adamm", "adadelta, adagrad, adam, adamw, rmsprop, sgd"),
    ("loss", "sparse_crossentropy", "binary_crossentropy, categorical_crossentropy"),
    ("metrics", "acuracy", "acc, accuracy, binary_accuracy"),
])
def test_unknown_string_names_list_the_known_ones(kind, name, known):
    args = {"optimizer": "adam", "loss": "mse", "metrics": None}
    args[kind] = [name] if kind == "metrics" else name
    with pytest.raises(ValueError) as e:
        mlp().compile(**args)
    singular = {"optimizer": "optimizer", "loss": "loss", "metrics": "metric"}[kind]
    assert f"Could not interpret {singular} identifier: {name!r}" in str(e.value)
    assert known in str(e.value)


def test_unknown_activation_and_layer_arguments():
    with pytest.raises(ValueError, match="Could not interpret activation function identifier: 'softmaxx'. Known "
                                         "activations: .*softmax"):
        layers.Dense(3, activation="softmaxx")
    with pytest.raises(TypeError, match=r"Dense: unrecognized keyword argument\(s\) \['unit'\]"):
        layers.Dense(3, unit=4)


def test_model_input_shape_mismatch_names_the_model():
    m = mlp("sparse_categorical_crossentropy")
    with pytest.raises(ValueError) as e:
        m.predict(np.zeros((4, 784)), verbose=0)
    assert str(e.value).startswith('Input 0 of layer "sequential" is incompatible with the layer: expected '
                                   'shape=(None, 28, 28), found shape=(4, 784)')


def test_layer_input_shape_mismatch_names_the_layer():
    m = models.Sequential([layers.Dense(8), layers.Dense(2)])
    m(np.zeros((2, 5)))                                   # built for 5 features
    with pytest.raises(ValueError, match=r'Input 0 of layer "dense" is incompatible with the layer: expected axis '
                                         r"-1 of input shape to have value 5, but received input with shape "
                                         r"\(2, 7\)"):
        m.layers[0](np.zeros((2, 7)))
    with pytest.raises(ValueError, match=r'Input 0 of layer "conv2d" is incompatible with the layer: expected '
                                         r"ndim=4, found ndim=3"):
        layers.Conv2D(4, 3)(np.zeros((2, 28, 28)))


def test_functional_graph_errors():
    a, b = keras.Input(shape=(3,)), keras.Input(shape=(3,))
    out = layers.Dense(1)(layers.Add()([a, b]))
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(a, out)
    model = keras.Model([a, b], out)
    with pytest.raises(ValueError, match=f'Layer "{model.name}" expects 2 input'):
        model.predict(np.zeros((2, 3)), verbose=0)
    with pytest.raises(ValueError, match=r"Concatenate. layer \"concatenate\" requires inputs with matching shapes"):
        layers.Concatenate()([keras.Input(shape=(2, 3)), keras.Input(shape=(4, 3))])


def test_sequential_add_non_layer():
    with pytest.raises(ValueError, match="Only instances of `keras.Layer` can be added to a Sequential model"):
        models.Sequential([layers.Dense(2), "relu"])


def test_set_weights_wrong_count_and_shape():
    m = mlp()
    with pytest.raises(ValueError, match=r'with a weight list of length 1, but the layer was expecting 2 weights'):
        m.set_weights([np.zeros((784, 10))])
    with pytest.raises(ValueError, match=r"weight shape \(784, 10\) is not compatible with provided weight shape "
                                         r"\(10, 784\)"):
        m.set_weights([np.zeros((10, 784)), np.zeros(10)])


def test_count_params_of_unbuilt_layer():
    with pytest.raises(ValueError, match="You tried to call `count_params` on layer 'dense', but the layer isn't "
                                         "built"):
        layers.Dense(3).count_params()


def test_data_argument_errors():
    from ember.utils.data import DataLoader, TensorDataset
    import ember
    x, y = np.zeros((10, 28, 28), np.float32), np.arange(10) % 10
    m = mlp("sparse_categorical_crossentropy")
    for bs in (0, -1, 1.5, "8"):
        with pytest.raises(ValueError) as e:
            m.fit(x, y, batch_size=bs, verbose=0)
        assert str(e.value) == f"fit: batch_size must be a positive integer, got {bs!r}"
    with pytest.raises(ValueError, match=r"^evaluate: batch_size must be a positive integer, got 0$"):
        m.evaluate(x, y, batch_size=0, verbose=0)
    loader = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=5)
    with pytest.raises(ValueError, match=r"^fit: when x is a DataLoader its batches carry the targets: pass y=None "
                                         r"\(at "):
        m.fit(loader, y, verbose=0)
    with pytest.raises(ValueError, match=r"^fit: the DataLoader sets the batch size: pass batch_size=None \(at "):
        m.fit(loader, batch_size=5, verbose=0)
    with pytest.raises(ValueError, match=r"^predict: no input data x was given \(at "):
        m.predict(None, verbose=0)
    four = DataLoader(TensorDataset(*[ember.tensor(x)] * 4), batch_size=5)
    with pytest.raises(ValueError, match=r"^a DataLoader batch must be \(x, y\) or \(x, y, sample_weight\), got 4 "
                                         r"items$"):
        m.fit(four, verbose=0)
    for split in (1.0, -0.1, 0.0001):
        with pytest.raises(ValueError) as e:
            m.fit(x, y, validation_split=split, verbose=0)
        assert str(e.value) == (f"validation_split must be in (0, 1), got {split}" if split != 0.0001 else
                                "validation_split=0.0001 leaves no training or no validation samples out of 10")
    with pytest.raises(ValueError, match=r"^`validation_split` is only supported for NumPy arrays and tensors, not "
                                         r"for a DataLoader: pass validation_data=another DataLoader$"):
        m.fit(loader, validation_split=0.5, verbose=0)
    for bad in (x, (x,), (x, y, y, y)):
        with pytest.raises(ValueError) as e:
            m.fit(x, y, validation_data=bad, verbose=0)
        assert str(e.value) == ("validation_data must be (x_val, y_val), (x_val, y_val, sample_weight) or a "
                                f"DataLoader, got {type(bad).__name__}")
    with pytest.raises(ValueError, match=r"^evaluate: the data has no samples$"):
        m.evaluate(x[:0], y[:0], verbose=0)
    with pytest.raises(ValueError, match=r"^predict: the data has no samples$"):
        m.predict(x[:0], verbose=0)
    a, b = keras.Input((4,)), keras.Input((2,))
    two = keras.Model([a, b], layers.Dense(1)(layers.Concatenate()([a, b])))
    two.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"^x: all arrays must have the same number of samples, got \[10, 9\]$"):
        two.fit([np.zeros((10, 4)), np.zeros((9, 2))], np.zeros(10), verbose=0)
    multi = keras.Model(a, [layers.Dense(1)(a), layers.Dense(1)(a)])
    multi.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"^`class_weight` is only supported for models with a single output.$"):
        multi.fit(np.zeros((4, 4)), [np.zeros(4), np.zeros(4)], class_weight={0: 1.0}, verbose=0)


def test_class_weight_and_sample_weight_together_are_refused():
    """Keras 3 refuses the pair (trainers/data_adapters: array_data_adapter.py and the class-weight map of
    datasets; `train_on_batch` in trainers/trainer.py); Ember used to multiply them."""
    from ember import tensor
    from ember.utils.data import DataLoader, TensorDataset
    m = models.Sequential([keras.Input((4,)), layers.Dense(2, activation="softmax")])
    m.compile("sgd", "sparse_categorical_crossentropy")
    x, y, w = np.zeros((4, 4), np.float32), np.array([0, 1, 0, 1]), np.ones(4, np.float32)
    with pytest.raises(ValueError, match=r"^You cannot `class_weight` and `sample_weight` at the same time.$"):
        m.fit(x, y, sample_weight=w, class_weight={0: 2.0}, verbose=0)
    loader = DataLoader(TensorDataset(tensor(x), tensor(y), tensor(w)), batch_size=2)
    with pytest.raises(ValueError, match=r"^You cannot `class_weight` and `sample_weight` at the same time.$"):
        m.fit(loader, class_weight={0: 2.0}, verbose=0)
    with pytest.raises(ValueError, match=r"^Arguments `sample_weight` and `class_weight` cannot be specified at "
                                         r"the same time. Received: sample_weight=\[1. 1. 1. 1.\], "
                                         r"class_weight=\{0: 2.0\}$"):
        m.train_on_batch(x, y, sample_weight=w, class_weight={0: 2.0})
