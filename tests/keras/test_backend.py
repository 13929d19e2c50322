"""ember.keras.backend and ember.keras.utils: Keras's snake-case layer names and per-session counts,
the training flag, Variable's construction paths and methods, KerasTensor, `flatten`, and
`utils.to_categorical` against Keras 3 (keras/src/utils/numerical_utils.py)."""
import copy
import pickle
import threading

import numpy as np
import pytest

import ember
from ember import keras
from ember.keras import backend as B
from ember.keras import layers
from ember.keras.utils import to_categorical


@pytest.mark.parametrize("cls,snake", [
    ("Conv2D", "conv2d"), ("MaxPooling2D", "max_pooling2d"), ("BatchNormalization", "batch_normalization"),
    ("Dense", "dense"), ("LSTM", "lstm"), ("GlobalAveragePooling1D", "global_average_pooling1d"),
    ("InputLayer", "input_layer"), ("HTTPResponse", "http_response"), ("My.Layer-2", "my_layer2"),
    ("already_snake", "already_snake"), ("aB", "a_b")])
def test_to_snake_case_as_keras(cls, snake):
    assert B.to_snake_case(cls) == snake


def test_unique_names_count_per_base_until_clear_session():
    keras.clear_session()
    assert [B.unique_name("dense"), B.unique_name("dense"), B.unique_name("conv2d"), B.unique_name("dense")] == \
        ["dense", "dense_1", "conv2d", "dense_2"]
    assert [layers.Dense(1).name, layers.Dense(1).name] == ["dense_3", "dense_4"]
    keras.clear_session()
    assert layers.Dense(1).name == "dense" and B.unique_name("conv2d") == "conv2d"
    assert B.floatx() == "float32"


def test_training_phase_nests_and_is_per_thread():
    assert B.in_training() is False
    with B.training_phase(True):
        assert B.in_training() is True
        with B.training_phase(None):                 # None keeps the enclosing phase
            assert B.in_training() is True
        with B.training_phase(0):                    # any falsy value: inference
            assert B.in_training() is False
            with B.training_phase(None):
                assert B.in_training() is False
        seen = []
        t = threading.Thread(target=lambda: seen.append(B.in_training()))
        t.start()
        t.join()
        assert seen == [False]                       # another thread starts in inference
        assert B.in_training() is True
    assert B.in_training() is False
    phase = B.training_phase(True)
    with pytest.raises(KeyError):
        with phase:
            raise KeyError("inside")                  # an error is not swallowed, and the phase is popped
    assert B.in_training() is False


def test_variable_construction_paths():
    v = keras.Variable(keras.initializers.Constant(2.0), shape=[2, 3], name="w")
    assert v.shape == (2, 3) and v.numpy().tolist() == [[2.0] * 3] * 2 and v.dtype == ember.float32
    assert (v.name, v.path) == ("w", "w") and v.trainable and v.requires_grad
    s = keras.Variable("ones", shape=(2,), dtype="float64")
    assert s.dtype == ember.float64 and s.numpy().tolist() == [1.0, 1.0] and s.name == s.path == "variable"
    with pytest.raises(ValueError, match=r"^Variable: an initializer needs a `shape`, got shape=None$"):
        keras.Variable(keras.initializers.Zeros())
    assert keras.Variable(np.array([1.5])).dtype == ember.float32          # float64 data becomes floatx
    assert keras.Variable(np.array([1.5]), dtype="float64").dtype == ember.float64
    assert keras.Variable(np.array([1.5], np.float16)).dtype == ember.float16
    i = keras.Variable([1, 2])
    assert i.dtype == ember.int64 and not i.requires_grad and not i.trainable   # integers take no gradient
    assert keras.Variable(np.array([1, 2]), dtype="float32").dtype == ember.float32
    t = ember.tensor([1.0, 2.0])
    c = keras.Variable(t)
    assert c.dtype == ember.float32 and c.data_ptr() != t.data_ptr()       # a copy of the tensor
    c.assign([5.0, 6.0])
    assert t.tolist() == [1.0, 2.0]
    assert keras.Variable(t, dtype="float64").dtype == ember.float64
    assert keras.Variable(t, dtype=ember.float64).dtype == ember.float64
    assert keras.Variable(ember.tensor([1.0], dtype=ember.float64), dtype="float64").dtype == ember.float64
    assert keras.Variable(lambda shape, dtype: ember.zeros(*shape), shape=(1, 2)).shape == (1, 2)
    got = {}
    keras.Variable(lambda shape, dtype: got.setdefault("dtype", dtype) and ember.zeros(*shape), shape=(1,))
    assert got["dtype"] == "float32"
    g = ember.tensor([1.0], requires_grad=True) * 2
    d = keras.Variable(g)
    assert d.is_leaf and d.grad_fn is None                                 # detached from its history


def test_variable_trainable_value_and_repr():
    v = keras.Variable(np.zeros((2, 2), np.float32), trainable=False, name="moving_mean")
    assert not v.trainable and not v.requires_grad and v._own_trainable is False
    v.trainable = True
    assert v.trainable and v.requires_grad and v._own_trainable is True
    v.trainable = 0
    assert v.trainable is False and v._own_trainable is False
    assert repr(v) == "<Variable path=moving_mean, shape=(2, 2), dtype=float32>"
    w = keras.Variable([1.0, 2.0])
    val = w.value
    assert not val.requires_grad and val.tolist() == [1.0, 2.0]
    assert isinstance(w.numpy(), np.ndarray) and w.numpy().tolist() == [1.0, 2.0]


def test_variable_assign_keeps_dtype_checks_shape_and_records_nothing():
    v = keras.Variable(np.array([1.0, 2.0], np.float64), dtype="float64")
    out = v.assign(np.array([0.1, 0.2]))
    assert out is v and v.numpy().tolist() == [0.1, 0.2] and v.dtype == ember.float64   # no float32 rounding
    assert v.assign_add([1.0, 1.0]) is v and v.assign_sub(ember.tensor([0.5, 0.5], dtype=ember.float64)) is v
    np.testing.assert_allclose(v.numpy(), [0.6, 0.7])
    assert v.grad_fn is None and v.is_leaf
    src = ember.tensor([3.0, 4.0], dtype=ember.float64, requires_grad=True)
    v.assign(src * 1.0)
    assert v.grad_fn is None and v.tolist() == [3.0, 4.0]
    for method in (v.assign, v.assign_add, v.assign_sub):
        with pytest.raises(ValueError, match=r"^Variable\.assign: variable 'variable' has shape \(2,\), got a value "
                                             r"of shape \(2, 1\)$"):
            method([[1.0], [2.0]])
    assert v.tolist() == [3.0, 4.0]
    # a value is cast to the variable's dtype first (as Keras): float32(0.1) + float32(0.123456789), not the sum
    # in float64 rounded once (0.22345679)
    f = keras.Variable(np.array([0.1], np.float32))
    f.assign_add([0.123456789])
    assert f.numpy()[0] == np.float32(0.1) + np.float32(0.123456789) == np.float32(0.2234568)


def test_variable_deepcopy_and_no_pickle():
    v = keras.Variable([1.0, 2.0], trainable=False, name="k")
    c = copy.deepcopy(v)
    assert isinstance(c, keras.Variable) and c is not v and c.name == "k" and c.tolist() == [1.0, 2.0]
    assert not c.trainable and not c.requires_grad and c._own_trainable is False
    c.assign([0.0, 0.0])
    assert v.tolist() == [1.0, 2.0]
    w = keras.Variable([1.0])
    w.requires_grad = False                                  # frozen by its layer, still "trainable" on its own
    cw = copy.deepcopy(w)
    assert cw._own_trainable is True and cw.requires_grad is False
    memo = {}
    pair = copy.deepcopy([w, w], memo)
    assert pair[0] is pair[1]
    with pytest.raises(TypeError, match=r"^ember\.keras\.Variable is not pickled; save models with "
                                        r"model\.save\(path\)$"):
        pickle.dumps(v)


def test_keras_tensor_and_flatten():
    kt = B.KerasTensor([None, 3], name="x")
    assert kt.shape == (None, 3) and isinstance(kt.shape, tuple) and kt.ndim == 2 and kt.dtype == "float32"
    assert kt._keras_history is None
    assert repr(kt) == "<KerasTensor shape=(None, 3), dtype=float32, name=x>"
    assert repr(B.KerasTensor((None,), "int64")) == "<KerasTensor shape=(None,), dtype=int64, name=None>"
    assert B.is_keras_tensor(kt) and not B.is_keras_tensor(ember.ones(1)) and not B.is_keras_tensor(None)
    with pytest.raises(TypeError, match=r"^A KerasTensor is symbolic \(the output of a layer called on "
                                        r"keras\.Input\): it has no values\. Build a Model\(inputs, outputs\) and "
                                        r"call it on data instead\.$"):
        np.asarray(kt)
    assert B.flatten(1) == [1]
    assert B.flatten([1, (2, [3, 4]), {"b": 6, "a": 5}]) == [1, 2, 3, 4, 5, 6]
    assert B.flatten({"z": [1, 2], "a": 0}) == [0, 1, 2]
    assert B.flatten([]) == [] and B.flatten(()) == []
    node = B.Node("layer", [kt, {"y": 2, "x": 1}], (3, [4]))
    assert node.layer == "layer" and node.call_inputs == [kt, {"y": 2, "x": 1}]
    assert node.input_tensors == [kt, 1, 2] and node.output_tensors == [3, 4] and node.outputs == (3, [4])


def test_to_categorical_as_keras3():
    out = to_categorical([0, 2, 1])
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert to_categorical([1], num_classes=4).tolist() == [[0, 1, 0, 0]]
    assert to_categorical(np.array([[0], [3]])).tolist() == [[1, 0, 0, 0], [0, 0, 0, 1]]   # (N, 1) -> (N, C)
    assert to_categorical(np.array([[0, 1], [1, 0]]), 2).shape == (2, 2, 2)                # (N, T) -> (N, T, C)
    assert to_categorical(np.array([[[1]], [[0]]])).shape == (2, 1, 2)                     # only the last 1 goes
    assert to_categorical(np.array([[[1], [0], [1]], [[0], [0], [1]]])).shape == (2, 3, 2)     # (N, T, 1) -> (N, T, C)
    assert to_categorical(np.array([2.0, 0.0])).tolist() == [[0, 0, 1], [1, 0, 0]]          # float labels
    assert to_categorical(np.array([3]), num_classes=0).shape == (1, 4)                    # falsy: inferred
    assert to_categorical(ember.tensor([0, 1])).tolist() == [[1, 0], [0, 1]]
    assert to_categorical(ember.tensor([[1], [0]])).tolist() == [[0, 1], [1, 0]]
    assert to_categorical(np.array(2), num_classes=3).tolist() == [0, 0, 1]                 # a 0-d label
    assert to_categorical(np.zeros(0, np.int64), num_classes=3).shape == (0, 3)
    with pytest.raises(ValueError, match=r"^to_categorical: labels must be in \[0, 3\), got values from 0 to 3$"):
        to_categorical([0, 3], num_classes=3)
    with pytest.raises(ValueError, match=r"^to_categorical: labels must be in \[0, 2\), got values from -1 to 1$"):
        to_categorical([-1, 1])
