"""ember/keras/layers: Keras's weight layouts and parameter counts, values against torch (the oracle)
with the weights mapped from Keras's layout, and the symbolic shapes of the functional API."""
import numpy as np
import pytest
import torch

import ember
from ember import keras
from ember.keras import layers


def n(x):
    return x.detach().numpy()


def t(a):
    return torch.tensor(np.asarray(a))


def test_dense_layout_initialisers_and_values():
    d = layers.Dense(5, activation="relu")
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    out = d(x)
    assert [tuple(w.shape) for w in d.weights] == [(3, 5), (5,)]
    assert [w.path for w in d.weights] == ["dense/kernel", "dense/bias"]
    assert np.all(d.bias.numpy() == 0)                       # Keras: zeros bias
    limit = np.sqrt(6 / (3 + 5))                              # glorot_uniform
    assert np.abs(d.kernel.numpy()).max() <= limit
    np.testing.assert_allclose(n(out), np.maximum(x @ d.kernel.numpy(), 0), rtol=1e-6)
    assert layers.Dense(2)(np.ones((2, 7, 3))).shape == (2, 7, 2)   # applies to the last axis


def test_initializers_by_name_and_errors():
    init = keras.initializers.get("he_normal")
    w = init((400, 300))
    assert abs(float(w.numpy().std()) - np.sqrt(2 / 400)) < 0.01
    assert np.abs(w.numpy()).max() <= 2 * np.sqrt(2 / 400) / 0.87962566103423978 + 1e-6   # truncated at 2 std
    assert keras.initializers.get("GlorotUniform").name == "glorot_uniform"
    q = n(keras.initializers.get("orthogonal")((6, 6)))
    np.testing.assert_allclose(q @ q.T, np.eye(6), atol=1e-5)
    with pytest.raises(ValueError, match="Known initializers: .*glorot_uniform"):
        layers.Dense(3, kernel_initializer="glorot")


def test_activation_names():
    x = np.linspace(-3, 3, 7).astype(np.float32)
    np.testing.assert_allclose(n(layers.Activation("softmax")(x[None]))[0], torch.softmax(t(x), 0).numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(n(layers.Activation("gelu")(x)),
                               torch.nn.functional.gelu(t(x), approximate="none").numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(layers.Activation("leaky_relu")(x)),
                               torch.nn.functional.leaky_relu(t(x), 0.2).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="Could not interpret activation function identifier: 'relux'.*relu"):
        layers.Dense(3, activation="relux")


@pytest.mark.parametrize("padding,strides", [("valid", 1), ("same", 1), ("same", 2), ("valid", 2)])
def test_conv2d_channels_last_against_torch(padding, strides):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    conv = layers.Conv2D(4, (3, 2), strides=strides, padding=padding, bias_initializer="random_normal")
    y = n(conv(x))
    assert tuple(conv.kernel.shape) == (3, 2, 3, 4)
    xt = t(x).permute(0, 3, 1, 2)
    if padding == "same":   # TensorFlow's rule: out = ceil(n / s), the odd pad after
        pads = []
        for size, k in ((8, 2), (9, 3)):
            out = -(-size // strides)
            total = max((out - 1) * strides + k - size, 0)
            pads += [total // 2, total - total // 2]
        xt = torch.nn.functional.pad(xt, pads)
    ref = torch.nn.functional.conv2d(xt, t(conv.kernel.numpy()).permute(3, 2, 0, 1), t(conv.bias.numpy()),
                                     stride=strides).permute(0, 2, 3, 1).numpy()
    assert y.shape == ref.shape == conv.compute_output_shape((2, 9, 8, 3))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_pooling_valid_and_same():
    x = np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2) % 7
    assert layers.MaxPooling2D()(x).shape == (2, 2, 2, 2)
    same = n(layers.MaxPooling2D(padding="same")(x))
    assert same.shape == (2, 3, 3, 2)
    np.testing.assert_allclose(same[0, 2, 2], x[0, 4, 4])     # the last window holds one real value
    avg = n(layers.AveragePooling2D(padding="same")(x))
    np.testing.assert_allclose(avg[0, 2, 2], x[0, 4, 4])       # padding is left out of the mean (Keras)
    np.testing.assert_allclose(avg[0, 0, 0], x[0, :2, :2].mean(axis=(0, 1)))
    np.testing.assert_allclose(n(layers.GlobalAveragePooling2D()(x)), x.mean(axis=(1, 2)), rtol=1e-6)


def test_batch_normalization_keras_conventions():
    bn = layers.BatchNormalization()
    x = np.random.default_rng(2).standard_normal((16, 3)).astype(np.float32) * 3 + 1
    y = n(bn(x, training=True))
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-5)
    # momentum 0.99 keeps 99% of the old statistic; the biased batch variance goes in
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.99 + 0.01 * x.var(0), rtol=1e-5)
    assert [w.name for w in bn.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert [w.name for w in bn.non_trainable_weights] == ["moving_mean", "moving_variance"]
    before = bn.moving_mean.numpy().copy()
    bn(x)                                            # a plain call is inference: statistics untouched
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    bn.trainable = False                             # frozen BN runs in inference mode even in training
    bn(x, training=True)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)


def test_dropout_only_in_training():
    d = layers.Dropout(0.5)
    x = np.ones((200, 10), np.float32)
    np.testing.assert_array_equal(n(d(x)), x)
    y = n(d(x, training=True))
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.3 < (y == 0).mean() < 0.7


def test_lstm_against_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    lstm = layers.LSTM(4, return_sequences=True, return_state=True)
    seq, h, c = lstm(x)
    assert lstm.count_params() == 4 * (3 * 4 + 4 * 4 + 4)
    np.testing.assert_array_equal(lstm.bias.numpy()[4:8], 1.0)     # unit_forget_bias
    ref = torch.nn.LSTM(3, 4, batch_first=True)
    with torch.no_grad():   # Keras's (in, 4u) kernel with gates i, f, c, o is torch's weight_ih transposed
        ref.weight_ih_l0.copy_(t(lstm.kernel.numpy()).T)
        ref.weight_hh_l0.copy_(t(lstm.recurrent_kernel.numpy()).T)
        ref.bias_ih_l0.copy_(t(lstm.bias.numpy()))
        ref.bias_hh_l0.zero_()
    out, (hr, cr) = ref(t(x))
    np.testing.assert_allclose(n(seq), out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(h), hr[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(c), cr[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_gru_reset_after_against_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    gru = layers.GRU(4, bias_initializer="random_normal")
    y = n(gru(x))
    assert tuple(gru.bias.shape) == (2, 12) and gru.count_params() == 3 * (3 * 4 + 4 * 4 + 2 * 4)

    def reorder(a):   # Keras's gates z, r, h -> torch's r, z, n
        z, r, h = np.split(a, 3, axis=-1)
        return np.concatenate([r, z, h], axis=-1)
    ref = torch.nn.GRU(3, 4, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(t(reorder(gru.kernel.numpy())).T)
        ref.weight_hh_l0.copy_(t(reorder(gru.recurrent_kernel.numpy())).T)
        ref.bias_ih_l0.copy_(t(reorder(gru.bias.numpy()[0])))
        ref.bias_hh_l0.copy_(t(reorder(gru.bias.numpy()[1])))
    out, _ = ref(t(x))
    np.testing.assert_allclose(y, out[:, -1].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_reshape_merge():
    emb = layers.Embedding(10, 3)
    out = emb(np.array([[1, 2], [3, 9]]))
    assert out.shape == (2, 2, 3) and np.abs(emb.embeddings.numpy()).max() <= 0.05
    np.testing.assert_array_equal(n(out)[1, 1], emb.embeddings.numpy()[9])
    assert layers.Reshape((2, -1))(np.ones((4, 6))).shape == (4, 2, 3)
    a, b = np.ones((2, 3), np.float32), np.full((2, 3), 2, np.float32)
    assert layers.Concatenate()([a, b]).shape == (2, 6)
    np.testing.assert_array_equal(n(layers.Add()([a, b])), a + b)


def test_symbolic_shapes_and_functional_graph():
    inp = keras.Input(shape=(None, 7), dtype="int64")
    assert inp.shape == (None, None, 7)
    x = keras.Input(shape=(12, 12, 1))
    y = layers.Conv2D(5, 3, strides=2, padding="same")(x)
    assert y.shape == (None, 6, 6, 5)
    seq = keras.Input(shape=(None, 4))
    assert layers.LSTM(3, return_sequences=True)(seq).shape == (None, None, 3)
    model = keras.Model(x, layers.Dense(2)(layers.Flatten()(y)))
    assert model(np.zeros((3, 12, 12, 1))).shape == (3, 2)
    assert [la.name for la in model.layers] == ["input_layer_1", "conv2d", "flatten", "dense"]


def test_custom_layer_with_add_weight_trains():
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.w

    inp = keras.Input(shape=(3,))
    model = keras.Model(inp, Scale()(inp))
    model.compile(keras.optimizers.SGD(0.5), "mse")
    model.fit(np.ones((8, 3)), np.full((8, 3), 2.0), epochs=20, verbose=0)
    np.testing.assert_allclose(model.get_weights()[0], 2.0, atol=0.05)


def test_variable_assign_methods():
    v = keras.Variable(np.array([1.0, 2.0]))
    assert v.dtype == ember.float32 and v.trainable
    v.assign([3.0, 4.0])
    v.assign_add(ember.ones(2))
    v.assign_sub(np.array([0.5, 0.5]))
    assert v.numpy().tolist() == [3.5, 4.5]
    with pytest.raises(ValueError, match=r"has shape \(2,\), got a value of shape \(3,\)"):
        v.assign([1.0, 2.0, 3.0])
    frozen = keras.Variable(keras.initializers.Zeros(), shape=(2, 2), trainable=False)
    assert not frozen.requires_grad and frozen.shape == (2, 2)
