"""A two-layer ReLU network fit to random data with NumPy alone: forward, backward and update by hand.

The starting point of the progression: every later example does the same job with more of Ember.
Run: python examples/01_numpy_two_layer_net.py
"""
import numpy as np

N, D_in, H, D_out = 64, 1000, 100, 10   # batch, input, hidden, output sizes


def main(steps=500, learning_rate=1e-6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D_in))
    y = rng.standard_normal((N, D_out))
    w1 = rng.standard_normal((D_in, H))
    w2 = rng.standard_normal((H, D_out))
    losses = []
    for t in range(steps):
        h = x @ w1                              # (N, H)
        h_relu = np.maximum(h, 0)
        y_pred = h_relu @ w2                    # (N, D_out)
        loss = np.square(y_pred - y).sum()
        losses.append(loss)
        if t % 100 == 99:
            print(t, loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.T @ grad_y_pred
        grad_h = grad_y_pred @ w2.T
        grad_h[h < 0] = 0                       # ReLU passes gradient only where it was active
        grad_w1 = x.T @ grad_h
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return losses


if __name__ == "__main__":
    main()
