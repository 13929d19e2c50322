"""ember/keras/layers/rnn.py's TimeDistributed against Keras 3's semantics: values and gradients against
torch (the wrapped layer's torch equivalent applied to each time step), one call of the wrapped layer per
step (a BatchNormalization normalises each step with its own batch statistics, a Dropout draws a mask per
step), shared weights, output shapes, configs, errors, and a model saved, loaded and summarised."""
import numpy as np
import pytest
import torch

import ember
from ember import keras
from ember.keras import layers, models

from .test_layers_conv_rnn import n, run_both, t

RNG = np.random.default_rng(31)


def test_time_distributed_dense_against_torch():
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    dense = layers.Dense(6, activation="tanh", bias_initializer="random_normal")
    td = layers.TimeDistributed(dense)
    td.build((3, 5, 4))
    assert td.weights == dense.weights and len(td.weights) == 2            # the wrapped layer's own weights
    assert td.name == "time_distributed" and td.layer is dense

    def ref(xt, kernel, bias):
        return torch.stack([torch.tanh(xt[:, i] @ kernel + bias) for i in range(5)], dim=1)
    out, = run_both(td, x, ref, td.weights)
    assert tuple(out.shape) == (3, 5, 6)
    assert td.compute_output_shape((None, 5, 4)) == (None, 5, 6)
    assert td(keras.Input((5, 4))).shape == (None, 5, 6)


def test_time_distributed_conv2d_against_torch_per_step():
    x = RNG.standard_normal((2, 3, 7, 6, 2)).astype(np.float32)            # (batch, time, h, w, channels)
    td = layers.TimeDistributed(layers.Conv2D(4, (3, 2), strides=(2, 1), bias_initializer="random_normal"))
    td.build(x.shape)
    assert tuple(td.layer.kernel.shape) == (3, 2, 2, 4)

    def ref(xt, kernel, bias):
        steps = [torch.nn.functional.conv2d(xt[:, i].permute(0, 3, 1, 2), kernel.permute(3, 2, 0, 1), bias,
                                            stride=(2, 1)).permute(0, 2, 3, 1) for i in range(3)]
        return torch.stack(steps, dim=1)
    out, = run_both(td, x, ref, td.weights, rtol=1e-4, atol=1e-5)
    assert tuple(out.shape) == (2, 3, 3, 5, 4)
    assert td.compute_output_shape((None, 3, 7, 6, 2)) == (None, 3, 3, 5, 4)
    assert td(keras.Input((None, 7, 6, 2))).shape == (None, None, 3, 5, 4)  # an unknown number of steps


def test_time_distributed_runs_the_layer_once_per_step():
    # Keras 3 calls the wrapped layer on each step: in training a BatchNormalization normalises each step
    # with that step's statistics over the batch (not over batch and time together) and updates its moving
    # statistics once per step
    x = (RNG.standard_normal((8, 3, 2)) * np.array([1.0, 3.0, 0.2])[None, :, None]
         + np.array([0.0, 5.0, -2.0])[None, :, None]).astype(np.float32)
    bn = layers.BatchNormalization()
    td = layers.TimeDistributed(bn)
    out = n(td(x, training=True))
    mean, var = x.mean(axis=0, keepdims=True), x.var(axis=0, keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    moving = np.zeros(2, np.float32)
    for i in range(3):
        moving = 0.99 * moving + 0.01 * x[:, i].mean(axis=0)
    np.testing.assert_allclose(bn.moving_mean.numpy(), moving, rtol=1e-5, atol=1e-6)
    # in inference it uses the moving statistics at every step, and the training flag reaches it through
    # the wrapper (a plain call is inference)
    np.testing.assert_allclose(n(td(x)), n(bn(x.reshape(24, 2))).reshape(8, 3, 2), rtol=1e-6)


def test_time_distributed_dropout_draws_a_mask_per_step():
    x = np.ones((4, 6, 50), np.float32)
    td = layers.TimeDistributed(layers.Dropout(0.5))
    np.testing.assert_array_equal(n(td(x)), x)                             # inference: identity
    ember.manual_seed(3)
    out = n(td(x, training=True))
    assert set(np.unique(out)) == {0.0, 2.0}
    assert not any(np.array_equal(out[:, 0], out[:, i]) for i in range(1, 6))


def test_time_distributed_config_errors_save_load_and_summary(tmp_path, capsys):
    td = layers.TimeDistributed(layers.Dense(3, activation="relu", name="inner"), name="td")
    cfg = td.get_config()
    assert cfg["name"] == "td" and cfg["layer"]["class_name"] == "Dense"
    assert cfg["layer"]["config"]["units"] == 3 and cfg["layer"]["config"]["name"] == "inner"
    again = layers.TimeDistributed.from_config(cfg)
    assert type(again.layer) is layers.Dense and again.layer.name == "inner" and again.get_config() == cfg
    with pytest.raises(ValueError, match=r"^Please initialize `TimeDistributed` layer with a `keras.layers.Layer` "
                                         r"instance. Received: 3$"):
        layers.TimeDistributed(3)
    with pytest.raises(ValueError, match=r"^`TimeDistributed` Layer should be passed an `input_shape` with at "
                                         r"least 3 dimensions, received: \(2, 4\)$"):
        layers.TimeDistributed(layers.Dense(2))(np.ones((2, 4), np.float32))

    model = models.Sequential([keras.Input((5, 4)), layers.TimeDistributed(layers.Dense(8)),
                               layers.LSTM(2, return_sequences=True), layers.TimeDistributed(layers.Dense(1))])
    model.compile(optimizer="sgd", loss="mse")
    x = RNG.standard_normal((6, 5, 4)).astype(np.float32)
    y = RNG.standard_normal((6, 5, 1)).astype(np.float32)
    before = model.get_weights()
    model.fit(x, y, epochs=1, batch_size=3, verbose=0)
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    path = tmp_path / "td.keras"
    model.save(path)
    loaded = models.load_model(path)
    assert [type(la).__name__ for la in loaded.layers] == ["TimeDistributed", "LSTM", "TimeDistributed"]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loaded.summary()
    text = capsys.readouterr().out
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]
    assert [r[1:] for r in rows if r[1]] == [["(None, 5, 8)", "40"], ["(None, 5, 2)", "88"], ["(None, 5, 1)", "3"]]
    assert rows[0][0].startswith("time_distributed")
