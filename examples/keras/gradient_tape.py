"""The notes' TensorFlow 2 two-layer net, in Ember: weights as Variables, the forward pass recorded by a
GradientTape, and a Keras optimizer applying the gradients (or `Variable.assign` by hand).

tf.Variable -> ember.keras.Variable, tf.random.uniform -> ember.rand, tf.matmul -> ember.matmul,
tf.maximum -> ember.maximum, tf.GradientTape -> ember.GradientTape, tf.optimizers.SGD -> keras.optimizers.SGD.

Run: python examples/keras/gradient_tape.py
"""
import numpy as np

import ember
from ember import keras

N, D, H = 64, 1000, 100


def main(steps=50, learning_rate=1e-6, use_optimizer=True, seed=0):
    ember.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((N, D)), dtype=ember.float32)
    y = ember.tensor(rng.standard_normal((N, D)), dtype=ember.float32)
    w1 = keras.Variable(ember.rand(D, H))
    w2 = keras.Variable(ember.rand(H, D))

    def model(x):
        h = ember.maximum(ember.matmul(x, w1), ember.zeros(()))
        return ember.matmul(h, w2)

    optimizer = keras.optimizers.SGD(learning_rate)
    losses = []
    for t in range(steps):
        with ember.GradientTape() as tape:
            y_pred = model(x)
            diff = y_pred - y
            loss = (diff ** 2).sum(dim=1).mean()        # tf.reduce_mean(tf.reduce_sum(diff ** 2, axis=1))
        gradients = tape.gradient(loss, [w1, w2])
        if use_optimizer:
            optimizer.apply_gradients(zip(gradients, [w1, w2]))
        else:
            w1.assign(w1 - learning_rate * gradients[0])
            w2.assign_sub(learning_rate * gradients[1])
        losses.append(loss.item())
        if t % 10 == 9:
            print(f"step {t + 1}: loss {loss.item():.1f}")
    return losses


if __name__ == "__main__":
    main()
