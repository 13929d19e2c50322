"""The two-layer net with Ember tensors, gradients still written by hand (NumPy's code, Ember's arrays).

Run: python examples/02_tensors_manual_grad.py
"""
import ember

N, D_in, H, D_out = 64, 1000, 100, 10


def main(steps=500, learning_rate=1e-6, seed=0):
    ember.manual_seed(seed)
    x = ember.randn(N, D_in)
    y = ember.randn(N, D_out)
    w1 = ember.randn(D_in, H)
    w2 = ember.randn(H, D_out)
    losses = []
    for t in range(steps):
        h = x.mm(w1)                            # (N, H)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)                  # (N, D_out)
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)
        if t % 100 == 99:
            print(t, loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h = grad_y_pred.mm(w2.t())
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return losses


if __name__ == "__main__":
    main()
