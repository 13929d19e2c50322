"""ember.keras.layers' core, merge and normalization layers: values against NumPy/torch with Keras 3's
conventions, their configs, symbolic output shapes and errors."""
import numpy as np
import pytest
import torch

from ember import keras
from ember.keras import layers

RNG = np.random.default_rng(7)


def n(x):
    return x.detach().numpy()


def test_merge_layers_values_and_shapes():
    a, b, c = (RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(n(layers.Add()([a, b, c])), a + b + c, rtol=1e-6)
    np.testing.assert_allclose(n(layers.Subtract()([a, b])), a - b, rtol=1e-6)
    np.testing.assert_allclose(n(layers.Multiply()([a, b, c])), a * b * c, rtol=1e-6)
    np.testing.assert_allclose(n(layers.Average()([a, b, c])), (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_allclose(n(layers.Concatenate(axis=0)([a, b])), np.concatenate([a, b], 0))
    x3, y3 = np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32)
    assert layers.Concatenate(axis=1)([x3, y3]).shape == (2, 8, 4)
    p, q = keras.Input((3, 4)), keras.Input((5, 4))
    assert layers.Concatenate(axis=1)([p, q]).shape == (None, 8, 4)
    assert layers.Concatenate(axis=1)([p, keras.Input((None, 4))]).shape == (None, None, 4)
    assert layers.Concatenate(axis=1, name="cat").get_config()["axis"] == 1
    for layer in (layers.Add(), layers.Subtract(), layers.Multiply(), layers.Average()):
        assert layer([keras.Input((3,)), keras.Input((3,))]).shape == (None, 3)


def test_merge_layer_errors():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r'^A merge layer "add\w*" \(Add\) should be called on a list of at least 2 '
                                         r"inputs. Received: "):
        layers.Add()(a)
    with pytest.raises(ValueError, match=r"\(Add\) should be called on a list of at least 2 inputs"):
        layers.Add()([a])
    with pytest.raises(ValueError, match=r"\(Subtract\) should be called on a list of exactly 2 inputs"):
        layers.Subtract()([a, a, a])
    with pytest.raises(ValueError, match=r'^Inputs of layer "multiply\w*" \(Multiply\) must have the same shape. '
                                         r"Received: input_shape=\[\(2, 3\), \(2, 4\)\]$"):
        layers.Multiply()([a, np.ones((2, 4), np.float32)])
    layers.Add()([a, np.ones((5, 3), np.float32)[:2]])        # the batch size is not compared
    with pytest.raises(ValueError, match=r'^A `Concatenate` layer "concatenate\w*" requires inputs with matching '
                                         r"shapes except for the concatenation axis. Received: input_shape="
                                         r"\[\(2, 3, 4\), \(2, 5, 5\)\]$"):
        layers.Concatenate(axis=1)([np.ones((2, 3, 4)), np.ones((2, 5, 5))])
    with pytest.raises(ValueError, match=r"requires inputs with matching shapes"):
        layers.Concatenate()([np.ones((2, 3)), np.ones((2, 3, 1))])
    with pytest.raises(ValueError, match=r"should be called on a list of at least 2 inputs"):
        layers.Concatenate()([a])


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False), (False, False)])
def test_batch_normalization_channels_first_against_torch(center, scale):
    x = (RNG.standard_normal((4, 3, 5, 2)) * 2 + 1).astype(np.float32)
    bn = layers.BatchNormalization(axis=1, momentum=0.9, epsilon=1e-2, center=center, scale=scale,
                                   beta_initializer="random_normal", gamma_initializer="random_normal")
    y = n(bn(x, training=True))
    ref = torch.nn.BatchNorm2d(3, eps=1e-2, momentum=0.1, affine=True)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(bn.gamma.numpy()) if scale else torch.ones(3))
        ref.bias.copy_(torch.tensor(bn.beta.numpy()) if center else torch.zeros(3))
    np.testing.assert_allclose(y, ref(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), ref.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    biased = x.var(axis=(0, 2, 3))                            # Keras: the biased batch variance
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * biased, rtol=1e-5)
    assert [w.name for w in bn.weights] == ["gamma"] * scale + ["beta"] * center + ["moving_mean", "moving_variance"]
    inference = n(bn(x))
    want = (x - bn.moving_mean.numpy()[:, None, None]) / np.sqrt(bn.moving_variance.numpy()[:, None, None] + 1e-2)
    if scale:
        want = want * bn.gamma.numpy()[:, None, None]
    if center:
        want = want + bn.beta.numpy()[:, None, None]
    np.testing.assert_allclose(inference, want, rtol=1e-4, atol=1e-5)
    cfg = bn.get_config()
    assert {k: cfg[k] for k in ("axis", "momentum", "epsilon", "center", "scale")} == {
        "axis": 1, "momentum": 0.9, "epsilon": 1e-2, "center": center, "scale": scale}


def test_batch_normalization_initializers_shape_and_errors():
    bn = layers.BatchNormalization(moving_mean_initializer="ones", moving_variance_initializer="zeros")
    x = np.ones((2, 5), np.float32)
    np.testing.assert_allclose(n(bn(x)), np.zeros((2, 5)) + 0.0, atol=1e-6)   # (1 - 1) / sqrt(0 + eps)
    assert layers.BatchNormalization()(keras.Input((4, 6))).shape == (None, 4, 6)
    with pytest.raises(ValueError, match=r'^BatchNormalization "\w+": axis 1 of input shape \(None, None, 3\) must '
                                         r"be known$"):
        layers.BatchNormalization(axis=1)(keras.Input((None, 3)))


def test_dense_dropout_flatten_reshape_embedding_details():
    d = layers.Dense(3, use_bias=False, kernel_initializer="ones", activation="relu")
    np.testing.assert_allclose(n(d(np.array([[1.0, -3.0]], np.float32))), [[0.0, 0.0, 0.0]])
    assert [w.name for w in d.weights] == ["kernel"]
    cfg = d.get_config()
    assert (cfg["units"], cfg["activation"], cfg["use_bias"]) == (3, "relu", False)
    assert layers.Dense(4)(keras.Input((2, 5))).shape == (None, 2, 4)
    for bad in (0, -1, 2.0):
        with pytest.raises(ValueError, match=rf"^Received an invalid value for `units`, expected a positive integer. "
                                             rf"Received: units={bad!r}$"):
            layers.Dense(bad)
    with pytest.raises(ValueError, match=r'^Dense layer "dense\w*" needs a known last dimension'):
        layers.Dense(2)(keras.Input((None,)))
    np.testing.assert_allclose(n(layers.Activation("relu")(np.array([[-1.0, 2.0]], np.float32))), [[0.0, 2.0]])
    assert layers.Activation("tanh").get_config()["activation"] == "tanh"
    for bad in (-0.1, 1.5, "0.5"):
        with pytest.raises(ValueError, match=r"^Invalid value received for argument `rate`. Expected a float value "
                                             r"between 0 and 1. Received: rate="):
            layers.Dropout(bad)
    x = np.ones((4, 5), np.float32)
    np.testing.assert_array_equal(n(layers.Dropout(0.0)(x, training=True)), x)
    assert layers.Dropout(0.25).get_config()["rate"] == 0.25
    img = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)      # channels first
    np.testing.assert_array_equal(n(layers.Flatten(data_format="channels_first")(img)),
                                  img.transpose(0, 2, 3, 1).reshape(2, -1))
    np.testing.assert_array_equal(n(layers.Flatten()(img)), img.reshape(2, -1))
    assert layers.Flatten()(np.ones((3,), np.float32)).shape == (3, 1)
    assert layers.Flatten()(keras.Input((2, 3))).shape == (None, 6)
    assert layers.Flatten()(keras.Input((None, 3))).shape == (None, None)
    assert layers.Flatten().get_config()["data_format"] == "channels_last"
    assert layers.Reshape((3, 2))(keras.Input((6,))).shape == (None, 3, 2)
    assert layers.Reshape((-1, 2))(keras.Input((6,))).shape == (None, 3, 2)
    assert layers.Reshape((-1, 2))(keras.Input((None,))).shape == (None, None, 2)
    assert layers.Reshape((3, 2)).get_config()["target_shape"] == [3, 2]
    with pytest.raises(ValueError, match=r'^Reshape layer "reshape\w*": cannot reshape input of shape \(None, 7\) to '
                                         r"\(-1, 2\)$"):
        layers.Reshape((-1, 2))(keras.Input((7,)))
    with pytest.raises(ValueError, match=r'^Reshape layer "reshape\w*": total size of the input shape \(None, 6\) '
                                         r"\(6 per sample\) does not match target_shape \(4, 2\) \(8\)$"):
        layers.Reshape((4, 2))(keras.Input((6,)))
    emb = layers.Embedding(5, 2, embeddings_initializer="ones")
    np.testing.assert_array_equal(n(emb(np.array([[1.0, 4.0]], np.float32))), np.ones((1, 2, 2)))
    assert emb(keras.Input((3,))).shape == (None, 3, 2)
    assert {k: emb.get_config()[k] for k in ("input_dim", "output_dim")} == {"input_dim": 5, "output_dim": 2}
    with pytest.raises(NotImplementedError, match=r"mask_zero"):
        layers.Embedding(5, 2, mask_zero=True)
    with pytest.raises(NotImplementedError, match=r"noise_shape"):
        layers.Dropout(0.5, noise_shape=(1, 5))


def test_built_layers_check_their_inputs():
    d = layers.Dense(2, bias_initializer="ones", kernel_initializer="ones")
    np.testing.assert_allclose(n(d(np.array([[1.0, 2.0, 3.0]], np.float32))), [[7.0, 7.0]])   # x @ k + b
    with pytest.raises(ValueError, match=r"min_ndim=2, found ndim=1"):
        d(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"incompatible"):
        d(np.ones((2, 4), np.float32))
    bn = layers.BatchNormalization()
    bn(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"incompatible"):
        bn(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"expected ndim=2, found ndim=3"):
        bn(np.ones((2, 5, 3), np.float32))
    assert layers.Activation("relu")(keras.Input((4, 2))).shape == (None, 4, 2)
    sub = layers.Subtract()
    sub([np.ones((2, 3), np.float32)] * 2)
    with pytest.raises(ValueError, match=r'^A merge layer "subtract\w*" \(Subtract\) should be called on a list of '
                                         r"exactly 2 inputs"):
        sub([np.ones((2, 3), np.float32)] * 3)
    with pytest.raises(ValueError, match=r"\(Subtract\) should be called on a list of exactly 2 inputs"):
        layers.Subtract()([keras.Input((3,))] * 3)
    cat = layers.Concatenate()
    cat([np.ones((2, 3), np.float32)] * 2)
    with pytest.raises(ValueError, match=r'^A merge layer "concatenate\w*" \(Concatenate\) should be called on a list'):
        cat([np.ones((2, 3), np.float32)])


def test_dropout_rates_and_unsupported_options():
    x = np.ones((100, 100), np.float32)
    np.testing.assert_array_equal(n(layers.Dropout(1.0)(x, training=True)), np.zeros((100, 100)))   # Keras: 0..1
    y = n(layers.Dropout(0.9)(x, training=True))
    assert 0.85 < (y == 0).mean() < 0.95 and set(np.unique(y)) <= {0.0, np.float32(10.0)}
    with pytest.raises(NotImplementedError, match=r"^Dropout\(noise_shape=...\) is not supported by ember.keras$"):
        layers.Dropout(0.5, noise_shape=(1, 5))
    with pytest.raises(NotImplementedError, match=r"^Embedding\(mask_zero=True\): masking is not supported by "
                                                  r"ember.keras$"):
        layers.Embedding(5, 2, mask_zero=True)
    emb = layers.Embedding(5, 2, name="emb", embeddings_initializer="zeros")
    emb(np.array([[1]]))
    assert [w.path for w in emb.weights] == ["emb/embeddings"]
    assert emb.get_config()["embeddings_initializer"] == keras.initializers.serialize(
        keras.initializers.get("zeros"))
    seq = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)            # (N, C, L), channels first
    np.testing.assert_array_equal(n(layers.Flatten(data_format="channels_first")(seq)),
                                  seq.transpose(0, 2, 1).reshape(2, -1))


def test_concatenate_keeps_the_first_inputs_other_sizes():
    """Keras's compute_output_shape starts from the first input's shape: a size it leaves unknown stays so."""
    assert layers.Concatenate()([keras.Input((None, 4)), keras.Input((3, 4))]).shape == (None, None, 8)
    assert layers.Concatenate()([keras.Input((3, 4)), keras.Input((None, 4))]).shape == (None, 3, 8)
