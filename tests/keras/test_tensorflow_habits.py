"""The notes' TensorFlow 2 listings, in Ember's names: a two-layer net trained under `GradientTape`
with `Variable.assign` / `assign_sub`, and with a Keras optimizer's `apply_gradients(zip(grads, vars))`.

tf -> ember: tf.convert_to_tensor -> ember.tensor, tf.Variable -> keras.Variable, tf.random.uniform ->
ember.rand, tf.matmul -> ember.matmul, tf.maximum -> ember.maximum, tf.reduce_mean / reduce_sum ->
.mean() / .sum(), tf.GradientTape -> ember.GradientTape, tf.optimizers.SGD -> keras.optimizers.SGD,
tf.losses.MeanSquaredError -> keras.losses.MeanSquaredError.
"""
import numpy as np
import pytest
import torch

import ember
from ember import keras

N, D, H = 64, 1000, 100


def setup():
    x = ember.tensor(np.random.randn(N, D), dtype=ember.float32)
    y = ember.tensor(np.random.randn(N, D), dtype=ember.float32)
    w1 = keras.Variable(ember.rand(D, H))        # tf.Variable(tf.random.uniform((D, H)))
    w2 = keras.Variable(ember.rand(H, D))
    return x, y, w1, w2


def test_gradient_tape_with_assign():
    x, y, w1, w2 = setup()

    def model(x):
        h = ember.maximum(ember.matmul(x, w1), ember.zeros(()))
        y_pred = ember.matmul(h, w2)
        return y_pred

    learning_rate = 1e-6
    losses = []
    w1_start, w2_start = w1.numpy().copy(), w2.numpy().copy()
    for t in range(5):
        with ember.GradientTape() as tape:
            y_pred = model(x)
            diff = y_pred - y
            loss = (diff ** 2).sum(dim=1).mean()
        gradients = tape.gradient(loss, [w1, w2])
        if t == 0:   # the first step's gradients against torch
            tw1, tw2 = torch.tensor(w1_start, requires_grad=True), torch.tensor(w2_start, requires_grad=True)
            tl = ((torch.relu(torch.tensor(x.numpy()) @ tw1) @ tw2 - torch.tensor(y.numpy())) ** 2).sum(1).mean()
            tl.backward()
            for g, tg in ((gradients[0], tw1.grad), (gradients[1], tw2.grad)):   # float32 sums of ~1e5
                np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-4, atol=1e-6 * float(tg.abs().max()))
        w1.assign(w1 - learning_rate * gradients[0])
        w2.assign_sub(learning_rate * gradients[1])
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert w1.grad is None and w1.is_leaf and w1.requires_grad


def test_gradient_tape_with_keras_optimizer_apply_gradients():
    x, y, w1, w2 = setup()

    def model(x):
        h = ember.maximum(ember.matmul(x, w1), ember.zeros(()))
        return ember.matmul(h, w2)

    optimizer = keras.optimizers.SGD(1e-6)
    start = [w1.numpy().copy(), w2.numpy().copy()]
    losses = []
    for t in range(5):
        with ember.GradientTape() as tape:
            y_pred = model(x)
            loss = keras.losses.MeanSquaredError()(y_pred, y)
        gradients = tape.gradient(loss, [w1, w2])
        if t == 0:
            expected = [s - 1e-6 * g.numpy() for s, g in zip(start, gradients)]
        optimizer.apply_gradients(zip(gradients, [w1, w2]))
        if t == 0:
            np.testing.assert_allclose(w1.numpy(), expected[0], rtol=1e-6)
            np.testing.assert_allclose(w2.numpy(), expected[1], rtol=1e-6)
        losses.append(loss.item())
    assert losses[-1] < losses[0] and optimizer.iterations == 5


def test_keras_adam_apply_gradients_matches_torch_adam():
    w = keras.Variable(np.array([1.0, -2.0, 3.0], np.float32))
    tw = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt, topt = keras.optimizers.Adam(learning_rate=0.1), torch.optim.Adam([tw], lr=0.1, eps=1e-7)
    for _ in range(3):
        with ember.GradientTape() as tape:
            loss = (w * w).sum()
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        topt.zero_grad()
        (tw * tw).sum().backward()
        topt.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown variable"):
        opt.apply_gradients([(ember.ones(3), keras.Variable(np.zeros(3)))])


def test_optimizer_defaults_are_keras():
    assert keras.optimizers.get("adam").learning_rate == 0.001
    assert keras.optimizers.get("sgd").learning_rate == 0.01
    assert keras.optimizers.get("rmsprop").learning_rate == 0.001
    adam = keras.optimizers.Adam()
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-7)
    assert keras.optimizers.RMSprop().rho == 0.9


@pytest.mark.parametrize("use_optimizer", [True, False])
def test_example_script_learns(use_optimizer):
    import pathlib
    import runpy
    path = pathlib.Path(__file__).parents[2] / "examples" / "keras" / "gradient_tape.py"
    losses = runpy.run_path(str(path), run_name="example")["main"](steps=5, use_optimizer=use_optimizer)
    assert len(losses) == 5 and losses[-1] < 0.5 * losses[0]
